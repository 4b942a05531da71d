package netcapture

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

// Content negotiation: a GET is answered with what its client asked for,
// in this order of evidence: the path's extension (a file of that type),
// an Accept naming a type (JSON, HTML, an image, a shell script), an API
// shape (api.* hosts, /api/, /vN/, /graphql, a query string) → JSON, an
// installer shape (get.*, install.*, sh.* hosts, /install, /setup, ...) →
// the second stage, a page shape (the root, a trailing slash, a browser)
// → HTML, and anything else → JSON, which every HTTP library and jq
// accept and which prints as text. Scripts go only to installer shapes:
// an API client must never get a shell script.

// negotiate picks the answer to a GET or HEAD that no protocol handler,
// rule or lookup took.
func (r *responder) negotiate(req *http.Request, host, p string) response {
	base := strings.ToLower(path.Base(p))
	ext := path.Ext(base)
	for _, two := range []string{".tar.gz", ".tar.bz2", ".tar.xz"} {
		if strings.HasSuffix(base, two) {
			ext = two
		}
	}
	if resp, ok := r.byExtension(req, host, p, ext); ok {
		return resp
	}
	if looksLikeBinaryName(base) {
		return r.newResponse(http.StatusOK, "application/octet-stream", r.files.elf, "file:elf")
	}

	accept := strings.ToLower(req.Header.Get("Accept"))
	switch {
	case acceptsJSON(accept):
		return r.apiJSON(req, p)
	case strings.Contains(accept, "text/html") || strings.Contains(accept, "application/xhtml"):
		return r.newResponse(http.StatusOK, "text/html; charset=utf-8", htmlPage(host), "html")
	case strings.HasPrefix(accept, "image/"):
		return r.newResponse(http.StatusOK, "image/png", r.files.png, "file:png")
	case strings.Contains(accept, "x-sh") || strings.Contains(accept, "shellscript"):
		return r.secondStage(host)
	}
	switch {
	case apiHost(host) || apiPath(p):
		return r.apiJSON(req, p)
	case installerHost(host) || installerName(base):
		return r.secondStage(host)
	case req.URL.RawQuery != "":
		return r.apiJSON(req, p)
	case p == "/" || strings.HasSuffix(p, "/") || browser(req.UserAgent()):
		return r.newResponse(http.StatusOK, "text/html; charset=utf-8", htmlPage(host), "html")
	}
	return r.apiJSON(req, p)
}

// byExtension answers requests for a named file type.
func (r *responder) byExtension(req *http.Request, host, p, ext string) (response, bool) {
	file := func(ctype string, body []byte, label string) (response, bool) {
		return r.newResponse(http.StatusOK, ctype, body, label), true
	}
	switch ext {
	case ".sh", ".bash", ".zsh", ".command", ".run":
		return r.secondStage(host), true
	case ".zip", ".jar", ".whl", ".nupkg", ".vsix", ".xpi", ".crx":
		return file("application/zip", r.files.zip, "file:zip")
	case ".tar.gz", ".tgz", ".gz":
		return file("application/gzip", r.files.tgz, "file:tar.gz")
	case ".tar", ".tar.bz2", ".tar.xz", ".bz2", ".xz", ".7z", ".rar":
		// No encoder for these here: a gzip tarball, which tar and file
		// recognise by its magic, with the type the client asked for.
		return file("application/octet-stream", r.files.tgz, "file:tar.gz")
	case ".png", ".webp", ".bmp", ".ico":
		return file("image/png", r.files.png, "file:png")
	case ".jpg", ".jpeg":
		return file("image/jpeg", r.files.jpeg, "file:jpeg")
	case ".gif":
		return file("image/gif", r.files.gif, "file:gif")
	case ".svg":
		return file("image/svg+xml", []byte(svgImage), "file:svg")
	case ".json", ".geojson", ".jsonld":
		resp := r.apiJSON(req, p)
		resp.Label = "file:json"
		return resp, true
	case ".xml", ".rss", ".atom":
		return file("application/xml", []byte(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<response><status>ok</status></response>`+"\n"), "file:xml")
	case ".html", ".htm", ".php", ".asp", ".aspx", ".jsp":
		return file("text/html; charset=utf-8", htmlPage(host), "file:html")
	case ".csv":
		return file("text/csv; charset=utf-8", []byte("id,name,value,updated\n1,alpha,10,2024-03-14\n2,beta,20,2024-03-15\n"), "file:csv")
	case ".txt", ".md", ".log", ".cfg", ".conf", ".ini", ".yaml", ".yml", ".toml", ".env":
		return file("text/plain; charset=utf-8", []byte("ok\n"), "file:text")
	case ".py":
		return file("text/x-python", []byte("#!/usr/bin/env python3\nprint(\"ok\")\n"), "file:py")
	case ".js", ".mjs", ".cjs":
		return file("text/javascript", []byte("console.log(\"ok\");\n"), "file:js")
	case ".css":
		return file("text/css", []byte("body{margin:0}\n"), "file:css")
	case ".pdf":
		return file("application/pdf", []byte(tinyPDF), "file:pdf")
	case ".bin", ".elf", ".so", ".appimage", ".out":
		return file("application/octet-stream", r.files.elf, "file:elf")
	}
	return response{}, false
}

func acceptsJSON(accept string) bool {
	return strings.Contains(accept, "application/json") || strings.Contains(accept, "+json") ||
		strings.Contains(accept, "text/json")
}

// apiHost reports hosts that serve APIs: api.example.com, api-eu.x.io,
// eu.api.x.io, *.googleapis.com and the like.
func apiHost(host string) bool {
	first, _, _ := strings.Cut(host, ".")
	if first == "api" || strings.HasPrefix(first, "api-") || strings.HasPrefix(first, "api") && len(first) <= 5 ||
		strings.HasSuffix(first, "-api") || strings.Contains(host, ".api.") {
		return true
	}
	for _, s := range []string{".googleapis.com", ".firebaseio.com", ".execute-api.", ".supabase.co", ".azurewebsites.net"} {
		if strings.Contains(host+".", s) {
			return true
		}
	}
	return false
}

// apiPath reports paths that name an API: /api/..., /v1/..., /rest/...,
// /graphql.
func apiPath(p string) bool {
	lp := strings.ToLower(p)
	for _, seg := range strings.Split(strings.Trim(lp, "/"), "/") {
		switch seg {
		case "api", "rest", "graphql", "rpc", "json", "oauth", "oauth2":
			return true
		}
		if len(seg) >= 2 && len(seg) <= 4 && seg[0] == 'v' {
			if _, err := strconv.Atoi(seg[1:]); err == nil {
				return true
			}
		}
	}
	return false
}

// installerHost reports hosts whose purpose is serving an install script:
// get.docker.com, sh.rustup.rs, install.python-poetry.org.
func installerHost(host string) bool {
	first, rest, ok := strings.Cut(host, ".")
	if !ok || !strings.Contains(rest, ".") {
		return false
	}
	switch first {
	case "get", "install", "installer", "sh", "setup", "bootstrap":
		return true
	}
	return false
}

// installerName reports extensionless script names (/install, /setup).
func installerName(base string) bool {
	switch base {
	case "install", "installer", "get", "setup", "bootstrap", "init.sh", "payload", "stage2", "dropper", "loader":
		return true
	}
	return false
}

func browser(ua string) bool {
	return strings.HasPrefix(ua, "Mozilla/")
}

// apiJSON is a plausible JSON answer for an API path: an array of two
// objects when the last segment names a collection, one object otherwise,
// with an id, a name, timestamps on the trace clock and the query's
// parameters echoed back (as APIs often do). It is stable for a path.
func (r *responder) apiJSON(req *http.Request, p string) response {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	last := strings.ToLower(strings.TrimSuffix(segs[len(segs)-1], path.Ext(segs[len(segs)-1])))
	h := fnv.New64a()
	h.Write([]byte(req.Host + p))
	seed := h.Sum64()
	now := r.now().UTC()
	obj := func(i int) map[string]any {
		o := map[string]any{
			"id":         int64(seed%900000) + 100000 + int64(i),
			"name":       objectName(last, i),
			"status":     "active",
			"created_at": now.AddDate(0, -3, -int(seed%27)-i).Format(time.RFC3339),
			"updated_at": now.Add(-time.Duration(seed%3600) * time.Second).Format(time.RFC3339),
		}
		if n, err := strconv.ParseInt(last, 10, 64); err == nil && i == 0 {
			o["id"] = n
		}
		return o
	}
	var v any
	if collection(last) {
		v = []any{obj(0), obj(1)}
	} else {
		o := obj(0)
		q := req.URL.Query()
		n := 0
		for k, vals := range q {
			if n >= 16 || k == "" || len(k) > 64 || len(vals) == 0 {
				continue
			}
			n++
			if f, err := strconv.ParseFloat(vals[0], 64); err == nil {
				o[k] = f
			} else {
				o[k] = capString(vals[0], 256)
			}
		}
		v = o
	}
	b, _ := json.Marshal(v) // maps of plain values: cannot fail
	return r.newResponse(http.StatusOK, "application/json", append(b, '\n'), "json")
}

// collection reports path segments that name a list of things.
func collection(seg string) bool {
	switch seg {
	case "list", "search", "items", "results", "all", "entries", "feed", "latest", "top":
		return true
	case "status", "news", "address", "stats", "settings", "access", "analysis", "alias", "process", "bus", "class", "canvas":
		return false
	}
	return len(seg) > 3 && strings.HasSuffix(seg, "s") && !strings.HasSuffix(seg, "ss") && !strings.HasSuffix(seg, "us")
}

func objectName(seg string, i int) string {
	if seg == "" || len(seg) > 48 || strings.Trim(seg, "0123456789") == "" {
		seg = "item"
	}
	return fmt.Sprintf("%s-%d", strings.TrimSuffix(seg, "s"), i+1)
}

func capString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

const svgImage = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#3b6ea0"/></svg>` + "\n"

// tinyPDF is a valid one-page PDF with no content.
const tinyPDF = "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n" +
	"3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\n" +
	"trailer<</Root 1 0 R>>\n%%EOF\n"
