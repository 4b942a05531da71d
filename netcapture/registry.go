package netcapture

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"html"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/pyimport"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Package registry policy: npm and PyPI are emulated well enough that
// `npm install X`, `npx X`, `pip install X` and `uvx X` complete with a
// harmless stub, so the skill's flow goes on and the package it asked
// for is on record. A request is taken as a registry request by its
// shape, not its host: the client (npm, yarn, pnpm, pip, uv, poetry in
// the User-Agent or npm's own headers), the Accept types of the
// registries' APIs, and their paths (/simple/<name>/, /pypi/<name>/json,
// <name>/-/<file>.tgz, .../packages/.../<file>.whl). So a skill that
// names its own registry (`--registry https://npm.evil.example/`,
// `--index-url https://pkgs.example/simple`) gets the same stubs from it,
// and the event says which registry it was.
//
// Every package gets the same stub: npm tarballs hold a package.json
// without install scripts, an index.js exporting a stand-in for whatever
// the real package exports (jsIndex) and its executables; wheels and sdists
// hold a module standing in for whatever the real one provides (pyInit) and
// its console scripts. The
// executables are the package's own name and the names the configuration
// gives it (Config.PackageBins: the names the skill runs after installing
// it, see AddPackageBins), so `npm i -g @scope/tool-cli` followed by `tool
// deploy` finds a `tool`. Each answers --version and --help, prints `{}`
// when asked for JSON and a short success line otherwise, and exits 0, as
// the image's vendor CLI stubs do: its exec, with the arguments, is the
// evidence. The real package, and its install scripts, never run.
// Versions: a plausible ladder per name (stable in a trace) plus the
// versions the configuration names for it (Config.PackageVersions), so an
// exact pin of a version outside both fails as "no matching version",
// like a real registry missing it.

// StubNote is what a package event's Stub says.
const StubNote = "stub package served by the jail: the real package and its install scripts were not run"

// Default public registries.
var (
	npmDefaultHosts  = []string{"registry.npmjs.org", "registry.yarnpkg.com", "registry.npmjs.com"}
	pypiDefaultHosts = []string{"pypi.org", "files.pythonhosted.org", "pypi.python.org"}
)

// pkgTime is the publication time of every stub (stable, so tarballs
// and wheels are identical from request to request).
var pkgTime = time.Date(2024, 3, 14, 9, 26, 53, 0, time.UTC)

// registry answers a package registry request, if req is one.
func (r *responder) registry(req *http.Request, host, p string) (response, bool) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead && req.Method != http.MethodPost {
		return response{}, false
	}
	switch {
	case r.isPyPI(req, host, p):
		return r.pypi(req, host, p)
	case r.isNPM(req, host, p):
		return r.npm(req, host, p)
	}
	return response{}, false
}

func (r *responder) isNPM(req *http.Request, host, p string) bool {
	ua := strings.ToLower(req.UserAgent())
	for _, c := range []string{"npm/", "yarn/", "pnpm/", "bun/"} {
		if strings.HasPrefix(ua, c) {
			return true
		}
	}
	if req.Header.Get("Npm-Command") != "" || req.Header.Get("Pacote-Req-Type") != "" ||
		strings.Contains(req.Header.Get("Accept"), "application/vnd.npm.install-v1+json") {
		return true
	}
	return slices.Contains(npmDefaultHosts, host) && p != "/"
}

func (r *responder) isPyPI(req *http.Request, host, p string) bool {
	if strings.Contains(req.Header.Get("Accept"), "application/vnd.pypi.simple") {
		return true
	}
	if slices.Contains(pypiDefaultHosts, host) {
		return strings.Contains(p, "/simple") || strings.HasPrefix(p, "/pypi/") || strings.HasPrefix(p, "/packages/")
	}
	ua := strings.ToLower(req.UserAgent())
	pyClient := false
	for _, c := range []string{"pip/", "uv/", "poetry/", "pdm/", "pipenv/", "pex/", "hatch/"} {
		if strings.HasPrefix(ua, c) {
			pyClient = true
		}
	}
	if !pyClient {
		return false
	}
	_, _, isFile := pyFile(path.Base(p))
	return strings.Contains(p, "/simple") || strings.Contains(p, "/pypi/") || isFile
}

// pkgEvent makes the package event of a response.
func pkgEvent(req *http.Request, host, eco, name, version, what string) trace.Event {
	reg := requestHostPort(req, host)
	def := npmDefaultHosts
	if eco == "pypi" {
		def = pypiDefaultHosts
	}
	return trace.Event{Type: trace.TypePackage, Data: &trace.PackageFetch{
		Ecosystem: eco, Name: capString(name, 214), Version: capString(version, 64), Registry: reg,
		Default: slices.Contains(def, strings.ToLower(reg)), What: what, URL: requestURL(req, host),
		Client: userAgentProduct(req.UserAgent()), Stub: StubNote,
	}}
}

// ---- npm ----

// npmName matches a package name (scoped or not) as npm accepts it.
var npmName = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)

func (r *responder) npm(req *http.Request, host, p string) (response, bool) {
	js := func(v any, label string) response {
		b, _ := json.Marshal(v) // plain values: cannot fail
		return r.newResponse(http.StatusOK, "application/json", append(b, '\n'), label)
	}
	raw := req.URL.EscapedPath()
	switch {
	case strings.Contains(raw, "/-/npm/v1/security/"):
		return js(map[string]any{}, "npm:audit"), true
	case strings.HasSuffix(raw, "/-/ping"):
		return js(map[string]any{}, "npm:ping"), true
	case strings.HasSuffix(raw, "/-/v1/search"):
		return js(map[string]any{"objects": []any{}, "total": 0, "time": pkgTime.Format(time.RFC1123)}, "npm:search"), true
	case strings.HasSuffix(raw, "/-/whoami"):
		return js(map[string]any{"username": "dev"}, "npm:whoami"), true
	}
	if req.Method == http.MethodPost {
		return response{}, false
	}
	// Tarball: <base>/<name>/-/<basename>-<version>.tgz
	if i := strings.LastIndex(raw, "/-/"); i >= 0 && strings.HasSuffix(raw, ".tgz") {
		name, _, ok := npmSplit(raw[:i])
		file := raw[i+3:]
		short := name[strings.LastIndex(name, "/")+1:]
		if !ok || !strings.HasPrefix(file, short+"-") {
			return response{}, false
		}
		version := strings.TrimSuffix(strings.TrimPrefix(file, short+"-"), ".tgz")
		if !validVersion(version) {
			return response{}, false
		}
		tgz := npmTarball(name, version, r.bins("npm", name))
		resp := r.newResponse(http.StatusOK, "application/octet-stream", tgz, "npm:tarball")
		resp.Extra = append(resp.Extra, pkgEvent(req, host, "npm", name, version, "tarball"))
		return resp, true
	}
	name, base, ok := npmSplit(raw)
	if !ok {
		return response{}, false
	}
	versions := r.versions("npm", name)
	doc := r.packument(requestBase(req, host)+base, name, versions,
		strings.Contains(req.Header.Get("Accept"), "application/vnd.npm.install-v1+json"))
	resp := js(doc, "npm:packument")
	if strings.Contains(req.Header.Get("Accept"), "application/vnd.npm.install-v1+json") {
		resp.Header.Set("Content-Type", "application/vnd.npm.install-v1+json")
	}
	resp.Extra = append(resp.Extra, pkgEvent(req, host, "npm", name, "", "metadata"))
	return resp, true
}

// npmSplit reads a package name off the end of an escaped path, and
// returns it with the registry's base path before it. "/@scope%2fname",
// "/@scope/name" and "/prefix/name" are understood. The name keeps its
// case, as the registry does for the names published before npm required
// lower case: a look-alike written with a capital I for an l stays one.
func npmSplit(raw string) (name, base string, ok bool) {
	raw = strings.TrimSuffix(raw, "/")
	segs := strings.Split(raw, "/")
	if len(segs) < 2 {
		return "", "", false
	}
	last, err := url.PathUnescape(segs[len(segs)-1])
	if err != nil {
		return "", "", false
	}
	n := 1
	if len(segs) >= 3 && strings.HasPrefix(segs[len(segs)-2], "@") && !strings.Contains(last, "/") {
		last = segs[len(segs)-2] + "/" + last
		n = 2
	}
	name = last
	if !npmName.MatchString(strings.ToLower(name)) || len(name) > 214 {
		return "", "", false
	}
	return name, strings.Join(segs[:len(segs)-n], "/"), true
}

// packument is npm's package document for name, with tarballs under base.
func (r *responder) packument(base, name string, versions []string, corgi bool) map[string]any {
	short := name[strings.LastIndex(name, "/")+1:]
	bins := r.bins("npm", name)
	vs := map[string]any{}
	times := map[string]any{"created": pkgTime.AddDate(-2, 0, 0).Format(time.RFC3339), "modified": pkgTime.Format(time.RFC3339)}
	for i, v := range versions {
		tgz := npmTarball(name, v, bins)
		s1 := sha1.Sum(tgz)
		s512 := sha512.Sum512(tgz)
		m := npmManifest(name, v, bins)
		m["_id"] = name + "@" + v
		m["dist"] = map[string]any{
			"tarball":   base + "/" + name + "/-/" + short + "-" + v + ".tgz",
			"shasum":    hex.EncodeToString(s1[:]),
			"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
		}
		vs[v] = m
		times[v] = pkgTime.AddDate(0, 0, -7*(len(versions)-1-i)).Format(time.RFC3339)
	}
	doc := map[string]any{
		"name":      name,
		"dist-tags": map[string]any{"latest": versions[len(versions)-1]},
		"versions":  vs,
		"modified":  pkgTime.Format(time.RFC3339),
	}
	if !corgi {
		doc["_id"] = name
		doc["time"] = times
		doc["description"] = "Utilities for " + short
		doc["license"] = "MIT"
		doc["readme"] = "# " + name + "\n"
	}
	return doc
}

// npmManifest is the stub's package.json: no install scripts, a main that
// exports an empty object, and its executables: cli.js under the package's
// own name, bin/NAME.js under each of bins.
func npmManifest(name, version string, bins []string) map[string]any {
	short := name[strings.LastIndex(name, "/")+1:]
	bin := map[string]any{short: "cli.js"}
	for _, b := range bins {
		if b != short {
			bin[b] = "bin/" + b + ".js"
		}
	}
	return map[string]any{
		"name":         name,
		"version":      version,
		"description":  "Utilities for " + short,
		"main":         "index.js",
		"bin":          bin,
		"license":      "MIT",
		"dependencies": map[string]any{},
	}
}

// stubCache keeps built stub archives: npm and pip ask for the same ones
// several times (metadata lists every version's hash). Bounded.
var stubCache = struct {
	sync.Mutex
	m map[string][]byte
}{m: map[string][]byte{}}

const maxStubCache = 2048

func cachedStub(kind, name, version string, bins []string, build func() []byte) []byte {
	k := kind + "\x00" + name + "\x00" + version + "\x00" + strings.Join(bins, ",")
	stubCache.Lock()
	b, ok := stubCache.m[k]
	stubCache.Unlock()
	if ok {
		return b
	}
	b = build()
	stubCache.Lock()
	if len(stubCache.m) < maxStubCache {
		stubCache.m[k] = b
	}
	stubCache.Unlock()
	return b
}

// npmTarball is the stub package's tarball, identical for the same name,
// version and executables.
func npmTarball(name, version string, bins []string) []byte {
	return cachedStub("npm", name, version, bins, func() []byte { return buildNPMTarball(name, version, bins) })
}

func buildNPMTarball(name, version string, bins []string) []byte {
	manifest, _ := json.MarshalIndent(npmManifest(name, version, bins), "", "  ")
	short := name[strings.LastIndex(name, "/")+1:]
	files := []tarFile{
		{"package/package.json", 0o644, append(manifest, '\n')},
		{"package/index.js", 0o644, []byte(jsIndex)},
		{"package/cli.js", 0o755, []byte(nodeCLI(short, version))},
		{"package/README.md", 0o644, []byte("# " + name + "\n")},
	}
	for _, b := range bins {
		if b != short {
			files = append(files, tarFile{"package/bin/" + b + ".js", 0o755, []byte(nodeCLI(b, version))})
		}
	}
	return tarGz(files, pkgTime)
}

// nodeCLI is a stub executable in JavaScript: it behaves as the image's
// vendor CLI stubs do (sandbox-image/vendor-cli).
func nodeCLI(name, version string) string {
	return "#!/usr/bin/env node\n'use strict';\n" +
		"const name = " + strconv.Quote(name) + ";\nconst version = " + strconv.Quote(version) + ";\n" +
		"const args = process.argv.slice(2);\n" +
		"const first = args.length ? args[0] : '';\n" +
		"if (['--version', '-v', '-V', 'version'].includes(first)) {\n  console.log(version);\n" +
		"} else if (['', '--help', '-h', 'help'].includes(first)) {\n" +
		"  console.log(`Usage: ${name} <command> [options]\\n\\nRun ${name} help <command> for more information on a command.`);\n" +
		"} else if (args.some((a) => /^(--json|--format=json|--output=json|-ojson|-o=json)$/.test(a))) {\n  console.log('{}');\n" +
		"} else {\n  const sub = args.find((a) => !a.startsWith('-'));\n  console.log(`${name} ${sub === undefined ? first : sub}: done`);\n}\n"
}

type tarFile struct {
	name string
	mode int64
	data []byte
}

func tarGz(files []tarFile, mt time.Time) []byte {
	var b bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		_ = tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: mt, Typeflag: tar.TypeReg, Format: tar.FormatUSTAR})
		_, _ = tw.Write(f.data)
	}
	_ = tw.Close()
	_ = gz.Close()
	return b.Bytes()
}

// ---- PyPI ----

// pyNormalize is PEP 503's normalised project name.
var pyRun = regexp.MustCompile(`[-_.]+`)

func pyNormalize(name string) string { return strings.ToLower(pyRun.ReplaceAllString(name, "-")) }

// pyEscape is a name as wheel and sdist file names spell it.
func pyEscape(name string) string { return strings.ReplaceAll(pyNormalize(name), "-", "_") }

var pyName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// pyFile parses a stub's file name: NAME-VERSION-py3-none-any.whl or
// NAME-VERSION.tar.gz.
func pyFile(base string) (name, version string, ok bool) {
	if rest, found := strings.CutSuffix(base, "-py3-none-any.whl"); found {
		name, version, ok = strings.Cut(rest, "-")
	} else if rest, found := strings.CutSuffix(base, ".tar.gz"); found {
		i := strings.LastIndex(rest, "-")
		if i <= 0 {
			return "", "", false
		}
		name, version, ok = rest[:i], rest[i+1:], true
	}
	if !ok || !validVersion(version) || !pyName.MatchString(pyNormalize(name)) {
		return "", "", false
	}
	return pyNormalize(name), version, true
}

func (r *responder) pypi(req *http.Request, host, p string) (response, bool) {
	base := requestBase(req, host)
	if name, version, ok := pyFile(path.Base(p)); ok {
		what, body, ctype := "wheel", wheel(name, version, r.bins("pypi", name)), "application/octet-stream"
		if strings.HasSuffix(p, ".tar.gz") {
			what, body, ctype = "sdist", sdist(name, version), "application/x-tar"
		}
		resp := r.newResponse(http.StatusOK, ctype, body, "pypi:"+what)
		resp.Extra = append(resp.Extra, pkgEvent(req, host, "pypi", name, version, what))
		return resp, true
	}
	segs := strings.Split(strings.Trim(p, "/"), "/")
	var name, prefix string
	jsonAPI := false
	for i, s := range segs {
		switch {
		case s == "simple" && i+1 < len(segs):
			name, prefix = segs[i+1], strings.Join(segs[:i], "/")
		case s == "pypi" && i+1 < len(segs) && segs[len(segs)-1] == "json":
			name, prefix, jsonAPI = segs[i+1], strings.Join(segs[:i], "/"), true
		}
	}
	if prefix != "" {
		prefix = "/" + prefix
	}
	if name == "" {
		if segs[len(segs)-1] == "simple" {
			// The index root: PyPI lists every project; a short page will do.
			return r.newResponse(http.StatusOK, "text/html; charset=utf-8",
				[]byte("<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" content=\"1.1\"><title>Simple index</title></head><body></body></html>\n"),
				"pypi:index"), true
		}
		return response{}, false
	}
	name = pyNormalize(name)
	if !pyName.MatchString(name) || len(name) > 128 {
		return response{}, false
	}
	files := base + prefix
	if slices.Contains(pypiDefaultHosts, host) {
		files = "https://files.pythonhosted.org"
	}
	versions := r.versions("pypi", name)
	bins := r.bins("pypi", name)
	type pyf struct{ name, url, sha string }
	var all []pyf
	for _, v := range versions {
		for _, f := range []struct {
			file string
			data []byte
		}{{pyEscape(name) + "-" + v + ".tar.gz", sdist(name, v)}, {pyEscape(name) + "-" + v + "-py3-none-any.whl", wheel(name, v, bins)}} {
			sum := sha256.Sum256(f.data)
			h := hex.EncodeToString(sum[:])
			all = append(all, pyf{f.file, files + "/packages/" + h[:2] + "/" + h[2:4] + "/" + h[4:] + "/" + f.file, h})
		}
	}
	var resp response
	accept := req.Header.Get("Accept")
	switch {
	case jsonAPI:
		latest := versions[len(versions)-1]
		rel := map[string]any{}
		var urls []any
		for _, f := range all {
			_, v, _ := pyFile(f.name)
			d := map[string]any{"filename": f.name, "url": f.url, "digests": map[string]string{"sha256": f.sha},
				"packagetype": map[bool]string{true: "bdist_wheel", false: "sdist"}[strings.HasSuffix(f.name, ".whl")],
				"upload_time": pkgTime.Format("2006-01-02T15:04:05")}
			rel[v] = append(asSlice(rel[v]), d)
			if v == latest {
				urls = append(urls, d)
			}
		}
		b, _ := json.Marshal(map[string]any{
			"info": map[string]any{"name": name, "version": latest, "summary": "Utilities for " + name,
				"license": "MIT", "requires_python": ">=3.8", "home_page": "", "author": "", "package_url": base + prefix + "/project/" + name + "/"},
			"releases": rel, "urls": urls,
		})
		resp = r.newResponse(http.StatusOK, "application/json", append(b, '\n'), "pypi:json")
	case acceptQ(accept, "application/vnd.pypi.simple.v1+json") > acceptQ(accept, "application/vnd.pypi.simple.v1+html") &&
		acceptQ(accept, "application/vnd.pypi.simple.v1+json") > acceptQ(accept, "text/html"):
		var fl []any
		for _, f := range all {
			fl = append(fl, map[string]any{"filename": f.name, "url": f.url, "hashes": map[string]string{"sha256": f.sha}, "requires-python": ">=3.8"})
		}
		b, _ := json.Marshal(map[string]any{"meta": map[string]string{"api-version": "1.1"}, "name": name, "files": fl, "versions": versions})
		resp = r.newResponse(http.StatusOK, "application/vnd.pypi.simple.v1+json", append(b, '\n'), "pypi:simple")
	default:
		var b strings.Builder
		b.WriteString("<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:repository-version\" content=\"1.1\">\n    <title>Links for " + html.EscapeString(name) + "</title>\n  </head>\n  <body>\n    <h1>Links for " + html.EscapeString(name) + "</h1>\n")
		for _, f := range all {
			fmt.Fprintf(&b, "    <a href=\"%s#sha256=%s\" data-requires-python=\"&gt;=3.8\">%s</a><br />\n", html.EscapeString(f.url), f.sha, html.EscapeString(f.name))
		}
		b.WriteString("  </body>\n</html>\n")
		resp = r.newResponse(http.StatusOK, "text/html; charset=utf-8", []byte(b.String()), "pypi:simple")
	}
	resp.Extra = append(resp.Extra, pkgEvent(req, host, "pypi", name, "", "metadata"))
	return resp, true
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// pyModule is the stub's import name.
func pyModule(name string) string {
	m := pyEscape(name)
	if m == "" || m[0] >= '0' && m[0] <= '9' {
		m = "_" + m
	}
	return m
}

// wheel is the stub's wheel: a module whose main behaves as the image's
// vendor CLI stubs do, its console scripts (the project's name and bins),
// and the dist-info pip checks (METADATA, WHEEL, RECORD).
func wheel(name, version string, bins []string) []byte {
	return cachedStub("wheel", name, version, bins, func() []byte { return buildWheel(name, version, bins) })
}

// pyInit is the stub module's __init__: it stands in for whatever the real
// package provides, so that a script that installed it and imports from it
// (from anthropic import Anthropic; import pandas as pd; from mcp.server
// import Server) goes on to do what it was written to do, which is what the
// trace is there to see. Any name is a class of stand-ins (capitalised: it
// can be subclassed and checked with isinstance) or a stand-in; a
// stand-in can be called (a decorator hands back what it decorates),
// indexed, iterated (two stand-ins: enough to unpack a pair, as
// "read, write = streams" and "for key, value in d.items()" do), entered,
// awaited, compared and formatted (as ""); submodules are stand-in modules
// too.
func pyInit(version string) string {
	return "__version__ = " + strconv.Quote(version) + "\n" + pyStandIn
}

const pyStandIn = `
import importlib.abc as _abc
import importlib.util as _util
import sys as _sys
import types as _types


class _Stand:
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return _Stand()

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Stand()

    def __getitem__(self, key):
        return _Stand()

    def __setitem__(self, key, value):
        pass

    def __delitem__(self, key):
        pass

    def __iter__(self):
        return iter((_Stand(), _Stand()))

    def __aiter__(self):
        return self

    async def __anext__(self):
        raise StopAsyncIteration

    def __len__(self):
        return 0

    def __bool__(self):
        return True

    def __contains__(self, item):
        return False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False

    def __await__(self):
        return iter(())

    def __str__(self):
        return ""

    def __repr__(self):
        return "<%s object>" % __name__

    def __format__(self, spec):
        return ""

    def __int__(self):
        return 0

    def __index__(self):
        return 0

    def __float__(self):
        return 0.0

    def __mro_entries__(self, bases):
        return (_Stand,)

    def _same(self, *args):
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same
    __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = __pow__ = _same
    __and__ = __or__ = __xor__ = __neg__ = __pos__ = __invert__ = _same
    __rfloordiv__ = __rmod__ = __rpow__ = __lshift__ = __rshift__ = _same
    __rand__ = __ror__ = __rxor__ = __abs__ = _same
    __lt__ = __le__ = __gt__ = __ge__ = lambda self, other: False

    def __round__(self, ndigits=None):
        return 0

    def __trunc__(self):
        return 0

    __floor__ = __ceil__ = __trunc__


def _stand(name):
    if name[:1].isupper():
        return type(name, (_Stand,), {"__module__": __name__})
    return _Stand()


def __getattr__(name):
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    value = _stand(name)
    globals()[name] = value
    return value


class _Finder(_abc.MetaPathFinder, _abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith(__name__ + "."):
            return _util.spec_from_loader(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _types.ModuleType(spec.name)
        module.__path__ = []

        def attr(name):
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)
            value = _stand(name)
            setattr(module, name, value)
            return value

        module.__getattr__ = attr
        return module

    def exec_module(self, module):
        pass


_sys.meta_path.append(_Finder())

import json as _json

_json_default = _json.JSONEncoder.default


def _default(self, o):
    # What a stand-in stands for is unknown: JSON writes it as null, so
    # that a script that reports what it got goes on.
    if isinstance(o, _Stand):
        return None
    return _json_default(self, o)


_json.JSONEncoder.default = _default
`

// jsIndex is the stub package's main: a stand-in for whatever the real
// package exports (require('x').Client, new X(), x.fn().then(...),
// await x.connect()), so that a script that installed it goes on.
const jsIndex = `'use strict';
function stand() {
  const target = function () {};
  return new Proxy(target, {
    get(t, key) {
      if (key === Symbol.toPrimitive) return () => '';
      if (key === Symbol.iterator) return function* () {};
      if (key === 'then') return undefined;
      if (key === 'toString' || key === 'valueOf') return () => '';
      if (key === '__esModule') return false;
      if (typeof key === 'symbol') return undefined;
      return stand();
    },
    apply(t, self, args) {
      if (args.length === 1 && typeof args[0] === 'function') return args[0];
      return stand();
    },
    construct() { return stand(); },
    has() { return true; },
  });
}
module.exports = stand();
`

// pyMain is the stub module's __main__: main() answers as NAME, the name
// it was run under.
func pyMain(name, version string) string {
	return "import os\nimport sys\n\nVERSION = " + strconv.Quote(version) + "\n\n\n" +
		"def main():\n" +
		"    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] and not sys.argv[0].endswith(\".py\") else " + strconv.Quote(name) + "\n" +
		"    args = sys.argv[1:]\n" +
		"    first = args[0] if args else \"\"\n" +
		"    if first in (\"--version\", \"-v\", \"-V\", \"version\"):\n        print(VERSION)\n" +
		"    elif first in (\"\", \"--help\", \"-h\", \"help\"):\n" +
		"        print(\"Usage: %s <command> [options]\\n\\nRun %s help <command> for more information on a command.\" % (name, name))\n" +
		"    elif any(a in (\"--json\", \"--format=json\", \"--output=json\", \"-ojson\", \"-o=json\") for a in args):\n        print(\"{}\")\n" +
		"    else:\n        sub = next((a for a in args if not a.startswith(\"-\")), first)\n        print(\"%s %s: done\" % (name, sub))\n" +
		"    return 0\n\n\nif __name__ == \"__main__\":\n    sys.exit(main())\n"
}

func buildWheel(name, version string, bins []string) []byte {
	mod := pyModule(name)
	di := pyEscape(name) + "-" + version + ".dist-info"
	main := pyMain(name, version)
	scripts := "[console_scripts]\n" + name + " = " + mod + ".__main__:main\n"
	for _, b := range bins {
		if b != name {
			scripts += b + " = " + mod + ".__main__:main\n"
		}
	}
	// The modules the real distribution provides under other names
	// (beautifulsoup4: bs4), each the same stand-in.
	tops := []string{mod}
	for _, m := range pyimport.Modules(name) {
		if !slices.Contains(tops, m) {
			tops = append(tops, m)
		}
	}
	type file struct {
		name string
		data []byte
	}
	files := []file{
		{mod + "/__init__.py", []byte(pyInit(version))},
		{mod + "/__main__.py", []byte(main)},
	}
	for _, m := range tops[1:] {
		files = append(files, file{m + "/__init__.py", []byte(pyInit(version))})
	}
	files = append(files,
		file{di + "/METADATA", []byte("Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\nSummary: Utilities for " + name + "\nLicense: MIT\nRequires-Python: >=3.8\n")},
		file{di + "/WHEEL", []byte("Wheel-Version: 1.0\nGenerator: bdist_wheel (0.42.0)\nRoot-Is-Purelib: true\nTag: py3-none-any\n")},
		file{di + "/entry_points.txt", []byte(scripts)},
		file{di + "/top_level.txt", []byte(strings.Join(tops, "\n") + "\n")},
	)
	var record strings.Builder
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	add := func(n string, data []byte) {
		h := &zip.FileHeader{Name: n, Method: zip.Deflate, Modified: pkgTime}
		h.SetMode(0o644)
		w, _ := zw.CreateHeader(h) // in memory: cannot fail
		_, _ = w.Write(data)
	}
	for _, f := range files {
		add(f.name, f.data)
		sum := sha256.Sum256(f.data)
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.data))
	}
	record.WriteString(di + "/RECORD,,\n")
	add(di+"/RECORD", []byte(record.String()))
	_ = zw.Close()
	return b.Bytes()
}

// sdist is the stub's source distribution (PKG-INFO, pyproject.toml and
// the module).
func sdist(name, version string) []byte {
	return cachedStub("sdist", name, version, nil, func() []byte { return buildSdist(name, version) })
}

func buildSdist(name, version string) []byte {
	mod := pyModule(name)
	root := pyEscape(name) + "-" + version + "/"
	return tarGz([]tarFile{
		{root + "PKG-INFO", 0o644, []byte("Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\nSummary: Utilities for " + name + "\n")},
		{root + "pyproject.toml", 0o644, []byte("[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = " + strconv.Quote(name) + "\nversion = " + strconv.Quote(version) + "\n")},
		{root + mod + "/__init__.py", 0o644, []byte(pyInit(version))},
	}, pkgTime)
}

// ---- versions ----

var versionRe = regexp.MustCompile(`^[0-9]+(\.[0-9]+){0,3}([-.+]?[a-z0-9.]+)?$`)

func validVersion(v string) bool { return len(v) <= 64 && versionRe.MatchString(v) }

// versions returns the versions a stub package has, oldest first: a
// ladder derived from the name (so two names differ, and one name is
// stable), plus the configured ones for it.
func (r *responder) versions(eco, name string) []string {
	h := fnv.New32a()
	h.Write([]byte(eco + ":" + strings.ToLower(name)))
	x := h.Sum32()
	major := int(x%4) + 1
	minor := int(x/4%18) + 2
	patch := int(x / 72 % 9)
	set := map[string]bool{}
	for m := 0; m <= major; m++ {
		set[fmt.Sprintf("%d.0.0", m)] = true
		if m < major {
			set[fmt.Sprintf("%d.%d.%d", m, int(x>>uint(m))%6+1, int(x>>uint(m+8))%4)] = true
		}
	}
	set["0.1.0"] = true
	for m := 1; m <= minor; m += max(1, minor/4) {
		set[fmt.Sprintf("%d.%d.0", major, m)] = true
	}
	set[fmt.Sprintf("%d.%d.%d", major, minor, patch)] = true
	for _, v := range r.cfg.PackageVersions[eco+":"+strings.ToLower(name)] {
		if validVersion(v) {
			set[v] = true
		}
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	slices.SortFunc(out, compareVersions)
	return out
}

// bins returns the executables the configuration gives a stub package
// besides its own name (Config.PackageBins), valid names only, sorted.
func (r *responder) bins(eco, name string) []string {
	var out []string
	for _, b := range r.cfg.PackageBins[eco+":"+strings.ToLower(name)] {
		if validBin(b) && !slices.Contains(out, b) && len(out) < maxBinsPerPackage {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return out
}

// compareVersions orders dotted numeric versions (a suffix sorts after
// its release's numbers, as text).
func compareVersions(a, b string) int {
	as, bs := strings.FieldsFunc(a, isVersionSep), strings.FieldsFunc(b, isVersionSep)
	for i := 0; i < len(as) && i < len(bs); i++ {
		ai, aerr := strconv.Atoi(as[i])
		bi, berr := strconv.Atoi(bs[i])
		switch {
		case aerr == nil && berr == nil && ai != bi:
			return ai - bi
		case aerr != nil || berr != nil:
			if c := strings.Compare(as[i], bs[i]); c != 0 {
				return c
			}
		}
	}
	return len(as) - len(bs)
}

func isVersionSep(r rune) bool { return r == '.' || r == '-' || r == '+' }

// acceptQ is the quality an Accept header gives a media type (0 when it
// is not listed; wildcards are not expanded).
func acceptQ(accept, mediaType string) float64 {
	for _, part := range strings.Split(accept, ",") {
		fields := strings.Split(part, ";")
		if !strings.EqualFold(strings.TrimSpace(fields[0]), mediaType) {
			continue
		}
		q := 1.0
		for _, p := range fields[1:] {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.TrimSpace(k) == "q" {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		return q
	}
	return 0
}
