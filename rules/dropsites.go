package rules

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/sandboxctl/sandboxctl/trace"
)

// Drop sites that are also notification and sharing APIs (issue 30, item
// 3). Chat webhooks, bot APIs and gists keep what a client posts for
// whoever holds the webhook, the bot or the link: an attacker reads a
// secret back from there as from a paste site. The user's own notification
// skill posts there too, with the webhook or bot the user configured, so
// contact stays low (destinations.tsv) and what was posted decides
// (data/dropsites.tsv):
//
//   - a planted secret in the stored content (the message text, embeds,
//     a gist's files, an attachment, a query's text) is SBX-EXFIL-001,
//     even when the secret belongs to the service itself: the user's Slack
//     token in a message posted to a Slack webhook is read back by whoever
//     reads the channel. A token in the place the API takes its credential
//     (the Authorization header, Telegram's /bot<token>/ path, Slack's
//     token field) is the user's own bot at work (SBX-EXFIL-006);
//   - opaque stored content (a field or a word of 40 bytes or more that
//     reads as encrypted or encoded, not a digest, a public key or a media
//     file) is a drop for the rules that judge what leaves after a secret
//     read (SBX-EXFIL-004, -005, -007), as a raw IP or a paste site is. A
//     status line, a commit hash, a changed file's path or a chart is not.

// A dropSite is one entry of data/dropsites.tsv.
type dropSite struct {
	host    string
	segs    []string // path patterns, one per segment; nil: any path
	methods []string
	cred    []string // fields that hold the API's credential
	kind    string
	source  string
}

var dropSites = loadDropSites("data/dropsites.tsv")

func loadDropSites(name string) []dropSite {
	b, err := dataFS.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("rules: read %s: %v", name, err))
	}
	var out []dropSite
	for i, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 6 {
			panic(fmt.Sprintf("rules: %s:%d: %d fields, want 6", name, i+1, len(f)))
		}
		s := dropSite{host: strings.ToLower(f[0]), methods: strings.Split(f[2], ","), kind: f[4], source: f[5]}
		if f[1] != "-" {
			s.segs = strings.Split(strings.Trim(f[1], "/"), "/")
			for _, p := range s.segs {
				if _, err := path.Match(p, ""); err != nil {
					panic(fmt.Sprintf("rules: %s:%d: bad pattern %q", name, i+1, f[1]))
				}
			}
		}
		if f[3] != "-" {
			s.cred = strings.Split(f[3], ",")
		}
		out = append(out, s)
	}
	return out
}

func (s dropSite) match(host, method, p string) bool {
	host = normHost(host)
	if host != s.host && !strings.HasSuffix(host, "."+s.host) || !slices.Contains(s.methods, strings.ToUpper(method)) {
		return false
	}
	got := strings.Split(strings.Trim(p, "/"), "/")
	if len(got) < len(s.segs) {
		return false
	}
	for i, pat := range s.segs {
		if ok, _ := path.Match(pat, got[i]); !ok {
			return false
		}
	}
	return true
}

// dropSiteOf returns the drop site an HTTP request posted to.
func dropSiteOf(x *trace.HTTPExchange) (dropSite, bool) {
	host, p := hostPath(x.URL)
	if host == "" {
		host = normHost(x.Host)
	}
	for _, s := range dropSites {
		if s.match(host, x.Method, p) {
			return s, true
		}
	}
	return dropSite{}, false
}

// maxStored caps the bytes of a request read as stored content.
const maxStored = 1 << 20

// storedContent returns what a drop site keeps of a request: the values of
// its query and of its body's fields (JSON strings at any depth, form
// values, multipart parts; the raw body when it is none of these), each
// once, without the fields in cred.
func storedContent(x *trace.HTTPExchange, cred []string) [][]byte {
	var out [][]byte
	keep := func(k string, v []byte) {
		if len(v) > 0 && !slices.ContainsFunc(cred, func(c string) bool { return strings.EqualFold(c, k) }) {
			out = append(out, v)
		}
	}
	if _, q, ok := strings.Cut(x.URL, "?"); ok {
		q, _, _ = strings.Cut(q, "#")
		if vals, err := url.ParseQuery(q); err == nil {
			for _, k := range sortedKeys(vals) {
				for _, v := range vals[k] {
					keep(k, []byte(v))
				}
			}
		}
	}
	body := x.Body[:min(len(x.Body), maxStored)]
	if len(body) == 0 {
		return out
	}
	ctype := ""
	for k, vs := range x.Headers {
		if strings.EqualFold(k, "Content-Type") && len(vs) > 0 {
			ctype = vs[0]
		}
	}
	mt, params, _ := mime.ParseMediaType(ctype)
	switch {
	case mt == "multipart/form-data" && params["boundary"] != "":
		r := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		n := 0
		for {
			part, err := r.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(io.LimitReader(part, maxStored))
			keep(part.FormName(), b)
			if n++; n >= 64 {
				break
			}
		}
		if n > 0 {
			return out
		}
	case mt == "application/x-www-form-urlencoded":
		if vals, err := url.ParseQuery(string(body)); err == nil {
			for _, k := range sortedKeys(vals) {
				for _, v := range vals[k] {
					keep(k, []byte(v))
				}
			}
			return out
		}
	}
	if t := bytes.TrimSpace(body); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		var v any
		if json.Unmarshal(t, &v) == nil {
			jsonStrings("", v, keep)
			return out
		}
	}
	keep("", body)
	return out
}

func sortedKeys(v url.Values) []string {
	ks := make([]string, 0, len(v))
	for k := range v {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// jsonStrings hands every string of v to keep with the key it is under.
func jsonStrings(key string, v any, keep func(string, []byte)) {
	switch x := v.(type) {
	case string:
		keep(key, []byte(x))
	case []any:
		for _, e := range x {
			jsonStrings(key, e, keep)
		}
	case map[string]any:
		ks := make([]string, 0, len(x))
		for k := range x {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		for _, k := range ks {
			jsonStrings(k, x[k], keep)
		}
	}
}

// rePublicKey matches public material a message or a gist shares on
// purpose: PEM public keys and certificates, PGP public key blocks and
// signatures, SSH signatures, and OpenSSH public key lines.
var rePublicKey = regexp.MustCompile(`(?s)-----BEGIN (?:(?:RSA |EC )?PUBLIC KEY|CERTIFICATE|PGP PUBLIC KEY BLOCK|PGP SIGNATURE|SSH SIGNATURE|SSH2 PUBLIC KEY)-----.*?-----END [A-Z0-9 ]+-----` +
	`|(?:ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp\d+|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)\s+[A-Za-z0-9+/=]+`)

// mediaFile reports bytes that open as an image, a document or a program
// a message attaches (PNG, JPEG, GIF, WebP, PDF, ELF, PE, Mach-O, wasm: a
// chart, a report, a build), or as an archive the canary detector reads
// through (gzip, bzip2, an unencrypted zip): not data hidden from the
// rules.
func mediaFile(b []byte) bool {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG")), bytes.HasPrefix(b, []byte("\xff\xd8\xff")),
		bytes.HasPrefix(b, []byte("GIF8")), bytes.HasPrefix(b, []byte("%PDF-")),
		len(b) > 12 && bytes.HasPrefix(b, []byte("RIFF")) && string(b[8:12]) == "WEBP",
		bytes.HasPrefix(b, []byte("\x1f\x8b")), bytes.HasPrefix(b, []byte("BZh")),
		bytes.HasPrefix(b, []byte("\x7fELF")), bytes.HasPrefix(b, []byte("MZ")), bytes.HasPrefix(b, []byte("\x00asm")),
		bytes.HasPrefix(b, []byte("\xcf\xfa\xed\xfe")), bytes.HasPrefix(b, []byte("\xca\xfe\xba\xbe")):
		return true
	case bytes.HasPrefix(b, []byte("PK\x03\x04")) && len(b) > 8:
		return b[6]&1 == 0 // general purpose flag bit 0: encrypted entry
	}
	return false
}

var reDataURI = regexp.MustCompile(`data:[a-z]+/[a-z0-9.+-]+;base64,[A-Za-z0-9+/]+=*`)

// mediaURI reports a data: URI of an image or a PDF inlined in a message
// (a badge, a chart in markdown), whose bytes open as such.
func mediaURI(w string) bool {
	rest, ok := strings.CutPrefix(w, "data:")
	if !ok {
		return false
	}
	mt, b64, ok := strings.Cut(rest, ";base64,")
	if !ok || !strings.HasPrefix(mt, "image/") && mt != "application/pdf" {
		return false
	}
	b, err := base64.StdEncoding.DecodeString(b64[:len(b64)/4*4])
	return err == nil && mediaFile(b) || strings.HasPrefix(mt, "image/svg")
}

// opaqueContent reports stored content that reads as encrypted or encoded
// data: a field, or a word of one, of 40 bytes or more that opaque
// accepts and that is no digest, no run of words, no public key and no
// media file.
func opaqueContent(fields [][]byte) bool {
	for _, f := range fields {
		if mediaFile(f) {
			continue
		}
		s := rePublicKey.ReplaceAllString(string(f), " ")
		s = reDataURI.ReplaceAllStringFunc(s, func(u string) string {
			if mediaURI(u) {
				return " "
			}
			return u
		})
		if opaque([]byte(s)) && !digestShaped(strings.TrimSpace(s)) && wordiness(s)*2 < len(s) {
			return true
		}
		for _, w := range strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune("\"'`()[]{}<>", r) }) {
			w = strings.Trim(w, ",;:.!?*")
			if len(w) >= 40 && opaque([]byte(w)) && !digestShaped(w) && wordiness(w)*2 < len(w) {
				return true
			}
		}
	}
	return false
}

// dropSiteWhy says why an HTTP request to a drop site of the list is a
// drop: its stored content is opaque. "" otherwise.
func dropSiteWhy(x *trace.HTTPExchange) string {
	s, ok := dropSiteOf(x)
	if !ok || !opaqueContent(storedContent(x, s.cred)) {
		return ""
	}
	return s.kind + " carrying opaque content, read back by whoever holds it"
}

// storedAtDropSite reports a canary hit whose token a drop site of the
// list keeps: the token is in the request's stored content, not (only)
// where the API takes its credential.
func (c *ctx) storedAtDropSite(h *trace.CanaryHit) bool {
	if h.Channel != ChannelHTTP || c.in.Canaries == nil {
		return false
	}
	src := c.bySeq[h.EventSeq]
	if src == nil {
		return false
	}
	x, ok := src.Data.(*trace.HTTPExchange)
	if !ok {
		return false
	}
	s, ok := dropSiteOf(x)
	if !ok {
		return false
	}
	for _, hit := range c.in.Canaries.Find(bytes.Join(storedContent(x, s.cred), []byte("\n"))) {
		if hit.Token.ID == h.TokenID {
			return true
		}
	}
	return false
}

// ownServiceUse reports a planted token sent to its own service as the
// service takes it (SBX-EXFIL-006), not posted into what a drop site of
// the same service keeps for others to read (SBX-EXFIL-001).
func (c *ctx) ownServiceUse(h *trace.CanaryHit) bool {
	return c.toOwnService(h) && !c.storedAtDropSite(h)
}
