package netcapture

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// Response policy: keep the skill's chain going so its next stage shows,
// in the protocol the client asked for. Every request gets a plausible,
// harmless answer: configured rules first; then protocols spoken over HTTP,
// recognised by the request's shape (the second stage's callback, git
// smart HTTP, npm and PyPI registries); then the well-known IP and
// geolocation lookups; then, for a GET, what content negotiation picks
// (negotiate.go): a file by extension, the type Accept names, JSON for API
// shapes and anything unknown, the second-stage script only for installer
// shapes, HTML for pages. Nothing served can do harm: the script prints a
// line, writes the trace's marker and calls back, the ELF exits 0, the
// archives hold a README and that same script, the packages print a line.

const maxRuleFile = 16 << 20

// response is what the HTTP sink serves.
type response struct {
	Status int
	Header http.Header
	Body   []byte
	Label  string // recorded as HTTPExchange.Response
	// Extra are events recorded after the request's HTTP event: what a
	// protocol handler (git, a registry) understood of it.
	Extra []trace.Event
}

// responder picks responses. It is safe for concurrent use.
type responder struct {
	cfg   Config
	now   func() time.Time // the sandbox's clock
	files staticFiles
}

func newResponder(cfg Config, now func() time.Time) *responder {
	return &responder{cfg: cfg, now: now, files: buildFiles(cfg.Marker)}
}

func (r *responder) newResponse(status int, ctype string, body []byte, label string) response {
	h := http.Header{}
	h.Set("Date", r.now().UTC().Format(http.TimeFormat))
	h.Set("Server", "nginx")
	if ctype != "" {
		h.Set("Content-Type", ctype)
	}
	return response{Status: status, Header: h, Body: body, Label: label}
}

// respond chooses the answer to req; host is the request's host without
// port, lower-cased, and body the request body the sink kept.
func (r *responder) respond(req *http.Request, host string, body []byte) response {
	p := req.URL.Path
	if p == "" {
		p = "/"
	}
	for _, rule := range r.cfg.HTTPRules {
		if rule.matches(req.Method, host, p) {
			return r.ruleResponse(rule)
		}
	}
	// Protocols spoken over HTTP, recognised by the shape of the request
	// (path, headers, client), not by host: a skill can name any server.
	if resp, ok := r.callback(req, p); ok {
		return resp
	}
	if resp, ok := r.git(req, host, p, body); ok {
		return resp
	}
	if resp, ok := r.registry(req, host, p); ok {
		return resp
	}
	if resp, ok := r.lookup(req, host, p); ok {
		return resp
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodOptions:
		resp := r.newResponse(http.StatusNoContent, "", nil, "options")
		resp.Header.Set("Allow", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
		return resp
	default:
		if strings.HasSuffix(p, "/graphql") {
			return r.newResponse(http.StatusOK, "application/json", []byte(`{"data":{}}`+"\n"), "json:graphql")
		}
		return r.newResponse(http.StatusOK, "application/json",
			[]byte(fmt.Sprintf(`{"ok":true,"status":"received","id":"%s"}`+"\n", randHex(8))), "json:accepted")
	}
	return r.negotiate(req, host, p)
}

// looksLikeBinaryName reports names like "tool-linux-amd64" or "agent_x86_64".
func looksLikeBinaryName(base string) bool {
	for _, s := range []string{"linux-amd64", "linux_amd64", "x86_64", "linux-x64", "linux64"} {
		if strings.Contains(base, s) && path.Ext(strings.ReplaceAll(base, "x86_64", "")) == "" {
			return true
		}
	}
	return false
}

func (rule HTTPRule) matches(method, host, p string) bool {
	if rule.Method != "" && !strings.EqualFold(rule.Method, method) {
		return false
	}
	if rule.Host != "" {
		if ok, _ := path.Match(strings.ToLower(rule.Host), host); !ok {
			return false
		}
	}
	if rule.Path != "" {
		if ok, _ := path.Match(rule.Path, p); !ok {
			return false
		}
	}
	return true
}

func (r *responder) ruleResponse(rule HTTPRule) response {
	status := rule.Status
	if status == 0 {
		status = http.StatusOK
	}
	body := []byte(rule.Body)
	if rule.File != "" {
		f, err := os.Open(rule.File)
		if err == nil {
			body, err = io.ReadAll(io.LimitReader(f, maxRuleFile))
			f.Close()
		}
		if err != nil {
			// A broken rule still answers; the label says what went wrong.
			return r.newResponse(http.StatusInternalServerError, "text/plain", nil, "rule:"+rule.Name+":error")
		}
	}
	resp := r.newResponse(status, "", body, "rule:"+rule.Name)
	for k, v := range rule.Headers {
		resp.Header.Set(k, v)
	}
	if resp.Header.Get("Content-Type") == "" && len(body) > 0 {
		resp.Header.Set("Content-Type", http.DetectContentType(body))
	}
	return resp
}

// lookup answers the well-known "what is my IP" and geolocation services
// with the configured fake public address.
func (r *responder) lookup(req *http.Request, host, p string) (response, bool) {
	ip := r.cfg.PublicIP
	wantJSON := strings.Contains(p, "json") || req.URL.Query().Get("format") == "json" ||
		strings.Contains(req.Header.Get("Accept"), "application/json")
	geo := fmt.Sprintf(`{"ip":%q,"hostname":"cpc%d-mant13-2-0-cust%d.7-1.cable.virginm.net","city":"Manchester","region":"England","country":"GB","loc":"53.4809,-2.2374","org":"AS5089 Virgin Media Limited","postal":"M1","timezone":"Europe/London"}`+"\n",
		ip, 150+len(ip), 400+len(host))
	text := func(label string) (response, bool) {
		return r.newResponse(http.StatusOK, "text/plain; charset=utf-8", []byte(ip+"\n"), label), true
	}
	js := func(label, body string) (response, bool) {
		return r.newResponse(http.StatusOK, "application/json; charset=utf-8", []byte(body), label), true
	}
	switch host {
	case "api.ipify.org", "api4.ipify.org", "api64.ipify.org":
		if wantJSON {
			return js("lookup:ipify", fmt.Sprintf(`{"ip":%q}`, ip))
		}
		return r.newResponse(http.StatusOK, "text/plain", []byte(ip), "lookup:ipify"), true
	case "ipinfo.io":
		if p == "/ip" {
			return text("lookup:ipinfo")
		}
		return js("lookup:ipinfo", geo)
	case "ip-api.com":
		return js("lookup:ip-api", fmt.Sprintf(`{"status":"success","country":"United Kingdom","countryCode":"GB","region":"ENG","regionName":"England","city":"Manchester","zip":"M1","lat":53.4809,"lon":-2.2374,"timezone":"Europe/London","isp":"Virgin Media","org":"Virgin Media Limited","as":"AS5089 Virgin Media Limited","query":%q}`+"\n", ip))
	case "ipapi.co", "ipwho.is", "freeipapi.com", "ipwhois.app":
		return js("lookup:geo", geo)
	case "ifconfig.me", "ifconfig.co", "icanhazip.com", "ipv4.icanhazip.com", "ipecho.net",
		"checkip.amazonaws.com", "ident.me", "v4.ident.me", "myip.dnsomatic.com", "wtfismyip.com", "ipaddr.site":
		if wantJSON {
			return js("lookup:ip", geo)
		}
		return text("lookup:ip")
	}
	return response{}, false
}

// secondStage is the harmless script served to downloads that look like
// installers: it prints, writes the marker under the home directory, and
// calls back to where it came from so the jail sees it ran.
func (r *responder) secondStage(host string) response {
	return r.newResponse(http.StatusOK, "text/x-shellscript; charset=utf-8", SecondStage(r.cfg.Marker, host), "second-stage")
}

// callback answers the second stage's callback (/.well-known/<token>) with
// an empty 204, so nothing of the token comes back in a body.
func (r *responder) callback(req *http.Request, p string) (response, bool) {
	tok := r.cfg.Marker.Token
	if tok == "" || p != "/.well-known/"+tok {
		return response{}, false
	}
	return r.newResponse(http.StatusNoContent, "", nil, "second-stage-callback"), true
}

// tokenAlphabet is every character a marker token may hold (safeToken);
// '-' is last so that tr reads it literally in both sets.
const tokenAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"

// SecondStage returns the second-stage script for marker. When host is a
// plain host name, the script also fetches http://host/.well-known/<token>
// so that its run shows in the jail's events as well as in the file diff.
//
// The token is never in the script's bytes: the script holds it encoded
// with a random substitution, in two pieces stored out of order, and
// derives it with tr when it runs. Printing, saving or reading the script
// shows neither the token nor a standard encoding of it; only running it
// writes the marker file and makes the callback, which is what proves
// execution.
func SecondStage(m Marker, host string) []byte {
	set2, enc := encodeToken(m.Token)
	cut := len(enc) / 2
	var b strings.Builder
	dir := path.Dir(m.Path)
	fmt.Fprintf(&b, "#!/bin/sh\n# installer\n")
	fmt.Fprintf(&b, "echo \"Installing components... done\"\n")
	fmt.Fprintf(&b, "d=\"${HOME:-/tmp}\"\n")
	fmt.Fprintf(&b, "b='%s'\na='%s'\n", enc[cut:], enc[:cut])
	fmt.Fprintf(&b, "k=$(printf '%%s%%s' \"$a\" \"$b\" | tr '%s' '%s')\n", tokenAlphabet, set2)
	if dir != "." {
		fmt.Fprintf(&b, "mkdir -p \"$d/%s\" 2>/dev/null\n", dir)
	}
	fmt.Fprintf(&b, "printf '%%s\\n' \"$k\" > \"$d/%s\" 2>/dev/null || printf '%%s\\n' \"$k\" > \"/tmp/%s\"\n",
		m.Path, path.Base(m.Path))
	if validLeafName(host) && !strings.Contains(host, "*") {
		url := "http://" + host + "/.well-known/"
		fmt.Fprintf(&b, "(curl -fsS -m 3 \"%s$k\" || wget -q -T 3 -O- \"%s$k\") >/dev/null 2>&1\n", url, url)
	}
	fmt.Fprintf(&b, "echo \"Setup complete.\"\nexit 0\n")
	return []byte(b.String())
}

// encodeToken picks a random permutation of tokenAlphabet (keeping '-' in
// place) and returns it with tok encoded so that tr tokenAlphabet set2
// turns the encoding back into tok. A token that is not all in the
// alphabet (Validate refuses those) is returned as is.
func encodeToken(tok string) (set2, enc string) {
	alpha := []byte(tokenAlphabet)
	perm := append([]byte(nil), alpha[:len(alpha)-1]...)
	for i := len(perm) - 1; i > 0; i-- {
		j := randIntn(i + 1)
		perm[i], perm[j] = perm[j], perm[i]
	}
	perm = append(perm, '-')
	out := make([]byte, len(tok))
	for i := 0; i < len(tok); i++ {
		k := bytes.IndexByte(perm, tok[i])
		if k < 0 {
			return tokenAlphabet, tok
		}
		out[i] = alpha[k]
	}
	if string(out) == tok && strings.Trim(tok, "-") != "" {
		return encodeToken(tok) // a permutation that fixed every character
	}
	return string(perm), string(out)
}

func htmlPage(host string) []byte {
	title := "Welcome"
	if validLeafName(host) {
		title = host
	}
	return []byte("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + title +
		"</title></head><body><h1>" + title + "</h1><p>It works.</p></body></html>\n")
}

// staticFiles are the files served by extension; the archives carry the
// trace's second stage as install.sh.
type staticFiles struct{ zip, tgz, png, jpeg, gif, elf []byte }

func buildFiles(m Marker) staticFiles {
	script := SecondStage(m, "")
	readme := []byte("Package\n=======\n\nRun ./install.sh to install.\n")

	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	for _, f := range []struct {
		name string
		mode os.FileMode
		data []byte
	}{{"README.txt", 0o644, readme}, {"install.sh", 0o755, script}} {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: time.Date(2024, 3, 14, 9, 26, 53, 0, time.UTC)}
		h.SetMode(f.mode)
		w, _ := zw.CreateHeader(h) // writes to memory: cannot fail
		_, _ = w.Write(f.data)
	}
	_ = zw.Close()

	var tb bytes.Buffer
	gz := gzip.NewWriter(&tb)
	tw := tar.NewWriter(gz)
	mt := time.Date(2024, 3, 14, 9, 26, 53, 0, time.UTC)
	_ = tw.WriteHeader(&tar.Header{Name: "package/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mt})
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"package/README.txt", 0o644, readme}, {"package/install.sh", 0o755, script}} {
		_ = tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: mt, Typeflag: tar.TypeReg})
		_, _ = tw.Write(f.data)
	}
	_ = tw.Close()
	_ = gz.Close()

	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	for y := range 16 {
		for x := range 16 {
			img.Set(x, y, color.RGBA{R: uint8(x * 16), G: uint8(y * 16), B: 160, A: 255})
		}
	}
	var pb, jb, gb bytes.Buffer
	_ = png.Encode(&pb, img)
	_ = jpeg.Encode(&jb, img, &jpeg.Options{Quality: 85})
	_ = gif.Encode(&gb, img, nil)

	return staticFiles{zip: zb.Bytes(), tgz: tb.Bytes(), png: pb.Bytes(), jpeg: jb.Bytes(), gif: gb.Bytes(), elf: tinyELF()}
}

// tinyELF is a static x86-64 executable of 129 bytes that exits 0: an ELF
// header, one PT_LOAD program header, and mov eax,60; xor edi,edi; syscall.
func tinyELF() []byte {
	const base = 0x400000
	code := []byte{0xb8, 0x3c, 0, 0, 0, 0x31, 0xff, 0x0f, 0x05}
	size := uint64(64 + 56 + len(code))
	b := make([]byte, 0, size)
	le := binary.LittleEndian
	b = append(b, 0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	b = le.AppendUint16(b, 2)          // ET_EXEC
	b = le.AppendUint16(b, 0x3e)       // EM_X86_64
	b = le.AppendUint32(b, 1)          // EV_CURRENT
	b = le.AppendUint64(b, base+64+56) // entry
	b = le.AppendUint64(b, 64)         // phoff
	b = le.AppendUint64(b, 0)          // shoff
	b = le.AppendUint32(b, 0)          // flags
	b = le.AppendUint16(b, 64)         // ehsize
	b = le.AppendUint16(b, 56)         // phentsize
	b = le.AppendUint16(b, 1)          // phnum
	b = le.AppendUint16(b, 64)         // shentsize
	b = le.AppendUint16(b, 0)          // shnum
	b = le.AppendUint16(b, 0)          // shstrndx
	b = le.AppendUint32(b, 1)          // PT_LOAD
	b = le.AppendUint32(b, 5)          // PF_R|PF_X
	b = le.AppendUint64(b, 0)          // offset
	b = le.AppendUint64(b, base)       // vaddr
	b = le.AppendUint64(b, base)       // paddr
	b = le.AppendUint64(b, size)       // filesz
	b = le.AppendUint64(b, size)       // memsz
	b = le.AppendUint64(b, 0x1000)     // align
	return append(b, code...)
}
