package netcapture

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// Git smart HTTP policy, as a real forge behaves: fetching (upload-pack)
// is public and serves a small plausible repository (one commit with a
// README), so clone and fetch succeed; pushing (receive-pack) to a code
// host (forgeHost) asks for credentials with 401 and WWW-Authenticate:
// Basic, as GitHub does, so that git sends the ones it holds (a token in
// the URL, a credential helper); once any are sent, the push is accepted
// with a valid report-status. Any other host advertises to anyone and reads
// the push (its refs and pack on record) before it asks with the 401: a
// push there with no credentials to give used to stop at the discovery's
// 401 with nothing sent; now what it hands over is in the trace, and one
// with a token in its URL still sends the token and is accepted. Every request is recorded as a git event (refs, pack
// size, the pack's objects inflated so planted tokens in pushed files are
// found); the Authorization header is in the request's HTTP event.
// Requests are recognised by path and query (info/refs?service=git-...,
// /git-upload-pack, /git-receive-pack), whatever the host.

const (
	svcUpload  = "git-upload-pack"
	svcReceive = "git-receive-pack"
	zeroID     = "0000000000000000000000000000000000000000"
	gitAgent   = "agent=git/2.43.0"
)

// git answers a git smart-HTTP request, if req is one.
func (r *responder) git(req *http.Request, host, p string, body []byte) (response, bool) {
	var service, phase, repo string
	switch {
	case strings.HasSuffix(p, "/info/refs") && req.Method == http.MethodGet:
		service, phase, repo = req.URL.Query().Get("service"), "discovery", strings.TrimSuffix(p, "/info/refs")
		if service != svcUpload && service != svcReceive {
			return response{}, false
		}
	case strings.HasSuffix(p, "/"+svcUpload) && req.Method == http.MethodPost:
		service, phase, repo = svcUpload, "rpc", strings.TrimSuffix(p, "/"+svcUpload)
	case strings.HasSuffix(p, "/"+svcReceive) && req.Method == http.MethodPost:
		service, phase, repo = svcReceive, "rpc", strings.TrimSuffix(p, "/"+svcReceive)
	default:
		return response{}, false
	}
	ev := &trace.GitExchange{Service: service, Phase: phase, Repo: host + repo, URL: requestURL(req, host)}
	ev.User, ev.Authorized = basicUser(req.Header.Get("Authorization"))
	var resp response
	switch {
	case service == svcReceive && !ev.Authorized && forgeHost(host):
		resp = r.newResponse(http.StatusUnauthorized, "text/plain; charset=utf-8", []byte("Authentication required\n"), "git:auth-required")
		resp.Header.Set("WWW-Authenticate", `Basic realm="`+gitRealm(host)+`"`)
	case service == svcReceive && !ev.Authorized && phase == "rpc":
		// Elsewhere the push is read before anyone is asked who pushes:
		// its refs and pack are on record, then the 401 has git send the
		// credentials it holds (a token in the URL) and push again.
		r.receive(gitBody(req, body), ev)
		resp = r.newResponse(http.StatusUnauthorized, "text/plain; charset=utf-8", []byte("Authentication required\n"), "git:auth-required")
		resp.Header.Set("WWW-Authenticate", `Basic realm="`+gitRealm(host)+`"`)
	case phase == "discovery":
		resp = r.newResponse(http.StatusOK, "application/x-"+service+"-advertisement", r.advertise(service, repo), "git:"+service+":refs")
		resp.Header.Set("Cache-Control", "no-cache, max-age=0, must-revalidate")
	case service == svcUpload:
		resp = r.newResponse(http.StatusOK, "application/x-"+service+"-result", append([]byte(pkt("NAK\n")), gitRepo(repo).pack...), "git:"+service)
	default:
		rb := gitBody(req, body)
		result := r.receive(rb, ev)
		resp = r.newResponse(http.StatusOK, "application/x-"+service+"-result", result, "git:"+service)
	}
	resp.Header.Set("Server", "nginx")
	ev.Status = resp.Status
	resp.Extra = append(resp.Extra, trace.Event{Type: trace.TypeGit, Data: ev})
	return resp, true
}

// advertise is the info/refs answer: the upload side advertises the
// plausible repository, the receive side an empty one, so that any push
// is a creation the client never rejects as a non-fast-forward.
func (r *responder) advertise(service, repo string) []byte {
	var b strings.Builder
	b.WriteString(pkt("# service=" + service + "\n"))
	b.WriteString(pktFlush)
	if service == svcReceive {
		b.WriteString(pkt(zeroID + " capabilities^{}\x00report-status delete-refs ofs-delta " + gitAgent + "\n"))
	} else {
		g := gitRepo(repo)
		b.WriteString(pkt(g.commit + " HEAD\x00symref=HEAD:refs/heads/main ofs-delta no-progress " + gitAgent + "\n"))
		b.WriteString(pkt(g.commit + " refs/heads/main\n"))
	}
	b.WriteString(pktFlush)
	return []byte(b.String())
}

// receive reads a receive-pack request (commands, then the pack) into ev
// and returns the report-status answer.
func (r *responder) receive(body []byte, ev *trace.GitExchange) []byte {
	lines, rest, err := readPktLines(body)
	if err != nil {
		ev.Error = err.Error()
	}
	var refs []string
	for _, l := range lines {
		cmd, _, _ := bytes.Cut(l, []byte{0}) // capabilities follow a NUL on the first line
		cmd = bytes.TrimRight(cmd, "\n")
		f := strings.Fields(string(cmd))
		if len(f) == 3 {
			ev.Refs = append(ev.Refs, string(cmd))
			refs = append(refs, f[2])
		}
	}
	if len(rest) > 0 {
		ev.PackSize = int64(len(rest))
		ps := walkPack(rest, int(r.cfg.BodyCap))
		ev.Objects, ev.Content, ev.ContentTruncated = ps.Objects, ps.Content, ps.Truncated
		if ps.Err != nil && ev.Error == "" {
			ev.Error = ps.Err.Error()
		}
	}
	if len(refs) == 0 {
		return nil // a probe (a lone flush): nothing to report
	}
	var b strings.Builder
	b.WriteString(pkt("unpack ok\n"))
	for _, ref := range refs {
		b.WriteString(pkt("ok " + ref + "\n"))
	}
	b.WriteString(pktFlush)
	return []byte(b.String())
}

// gitBody undoes a gzip Content-Encoding (git compresses large requests).
func gitBody(req *http.Request, body []byte) []byte {
	if !strings.EqualFold(req.Header.Get("Content-Encoding"), "gzip") {
		return body
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return body
	}
	out, _ := io.ReadAll(io.LimitReader(zr, maxBodyDrain))
	return out
}

// basicUser returns the user of a Basic Authorization header, and whether
// any credentials were sent at all (Bearer and token schemes count).
func basicUser(h string) (string, bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || strings.TrimSpace(cred) == "" {
		return "", false
	}
	if !strings.EqualFold(scheme, "basic") {
		return "", true
	}
	dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return "", true
	}
	user, _, _ := strings.Cut(string(dec), ":")
	return capString(user, 256), true
}

// forgeHost says whether host is a code host that asks who pushes: the
// forges and the hosting services' git endpoints. rules.codeHosts is the
// same list, for the rule on pushes elsewhere.
func forgeHost(host string) bool {
	host = strings.ToLower(host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	for _, f := range forgeSuffixes {
		if host == f || strings.HasSuffix(host, "."+f) {
			return true
		}
	}
	return false
}

// forgeSuffixes are the code hosts (and their subdomains) that require
// credentials to push.
var forgeSuffixes = []string{"github.com", "gitlab.com", "bitbucket.org", "codeberg.org", "sr.ht", "dev.azure.com",
	"visualstudio.com", "heroku.com", "huggingface.co", "gitee.com", "amazonaws.com", "source.developers.google.com",
	"ghe.com", "gitea.com", "pagure.io", "launchpad.net", "salsa.debian.org", "sourceforge.net"}

func gitRealm(host string) string {
	switch {
	case strings.Contains(host, "github"):
		return "GitHub"
	case strings.Contains(host, "gitlab"):
		return "GitLab"
	case strings.Contains(host, "bitbucket"):
		return "Bitbucket"
	}
	return "Git"
}

// A fakeRepo is the repository upload-pack serves: one commit holding a
// README named after the repository.
type fakeRepo struct {
	commit string // hex id
	pack   []byte
}

// gitRepo builds the repository for a path ("/owner/tool.git"). It is
// deterministic, so discovery and the pack agree.
func gitRepo(repo string) fakeRepo {
	name := strings.TrimSuffix(repo[strings.LastIndex(repo, "/")+1:], ".git")
	if name == "" || !validLeafName(name) {
		name = "project"
	}
	readme := []byte("# " + name + "\n\nSee the documentation for usage.\n")
	blob := gitObject("blob", readme)
	tree := gitObject("tree", append([]byte("100644 README.md\x00"), blob.id[:]...))
	when := time.Date(2024, 2, 19, 16, 42, 7, 0, time.UTC).Unix()
	commitBody := fmt.Sprintf("tree %x\nauthor Maintainer <maintainer@users.noreply.github.com> %d +0000\n"+
		"committer Maintainer <maintainer@users.noreply.github.com> %d +0000\n\nInitial commit\n", tree.id, when, when)
	commit := gitObject("commit", []byte(commitBody))

	var p bytes.Buffer
	p.WriteString("PACK")
	p.Write([]byte{0, 0, 0, 2, 0, 0, 0, 3})
	for _, o := range []struct {
		typ  byte
		data []byte
	}{{objCommit, commit.data}, {objTree, tree.data}, {objBlob, blob.data}} {
		p.Write(packObjectHeader(o.typ, len(o.data)))
		zw := zlib.NewWriter(&p)
		zw.Write(o.data)
		zw.Close()
	}
	sum := sha1.Sum(p.Bytes())
	p.Write(sum[:])
	return fakeRepo{commit: hex.EncodeToString(commit.id[:]), pack: p.Bytes()}
}

type gitObj struct {
	id   [20]byte
	data []byte
}

func gitObject(kind string, data []byte) gitObj {
	h := sha1.New()
	fmt.Fprintf(h, "%s %d\x00", kind, len(data))
	h.Write(data)
	var o gitObj
	copy(o.id[:], h.Sum(nil))
	o.data = data
	return o
}

func packObjectHeader(typ byte, size int) []byte {
	c := typ<<4 | byte(size&15)
	size >>= 4
	var out []byte
	for size > 0 {
		out = append(out, c|0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	return append(out, c)
}
