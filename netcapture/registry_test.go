package netcapture

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/trace"
)

func TestRegistryRecognisesRequests(t *testing.T) {
	r := newResponder(testConfig(t).withDefaults(), time.Now)
	npmUA := "npm/9.2.0 node/v18.20.4 linux x64 workspaces/false"
	pipUA := `pip/23.0.1 {"ci":null}`
	tests := []struct {
		name, url, ua, accept string
		wantLabel             string
		wantPkg               *trace.PackageFetch // nil: no package event
	}{
		{name: "npm packument on the default registry", url: "https://registry.npmjs.org/left-pad", ua: npmUA,
			wantLabel: "npm:packument", wantPkg: &trace.PackageFetch{Ecosystem: "npm", Name: "left-pad", Registry: "registry.npmjs.org", Default: true, What: "metadata"}},
		{name: "npm scoped, escaped", url: "https://registry.npmjs.org/@types%2fnode", ua: npmUA,
			wantLabel: "npm:packument", wantPkg: &trace.PackageFetch{Ecosystem: "npm", Name: "@types/node", Registry: "registry.npmjs.org", Default: true, What: "metadata"}},
		{name: "npm on a registry the skill names, by its headers", url: "https://npm.corp-mirror.example/internal-utils", accept: "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*",
			wantLabel: "npm:packument", wantPkg: &trace.PackageFetch{Ecosystem: "npm", Name: "internal-utils", Registry: "npm.corp-mirror.example", What: "metadata"}},
		{name: "npm under a path prefix", url: "https://art.example/api/npm/npm-remote/chalk", ua: "yarn/1.22.19 npm/? node/v18",
			wantLabel: "npm:packument", wantPkg: &trace.PackageFetch{Ecosystem: "npm", Name: "chalk", Registry: "art.example", What: "metadata"}},
		{name: "npm tarball", url: "https://registry.npmjs.org/@acme/util/-/util-1.2.0.tgz", ua: npmUA,
			wantLabel: "npm:tarball", wantPkg: &trace.PackageFetch{Ecosystem: "npm", Name: "@acme/util", Version: "1.2.0", Registry: "registry.npmjs.org", Default: true, What: "tarball"}},
		{name: "npm audit", url: "https://registry.npmjs.org/-/npm/v1/security/advisories/bulk", ua: npmUA, wantLabel: "npm:audit"},
		{name: "pip simple", url: "https://pypi.org/simple/requests/", ua: pipUA, accept: "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01",
			wantLabel: "pypi:simple", wantPkg: &trace.PackageFetch{Ecosystem: "pypi", Name: "requests", Registry: "pypi.org", Default: true, What: "metadata"}},
		{name: "pip on another index, normalised name", url: "https://pkgs.evil.example/simple/Req_Uests/", ua: pipUA,
			wantLabel: "pypi:simple", wantPkg: &trace.PackageFetch{Ecosystem: "pypi", Name: "req-uests", Registry: "pkgs.evil.example", What: "metadata"}},
		{name: "pypi json api", url: "https://pypi.org/pypi/flask/json", ua: "curl/8.5.0",
			wantLabel: "pypi:json", wantPkg: &trace.PackageFetch{Ecosystem: "pypi", Name: "flask", Registry: "pypi.org", Default: true, What: "metadata"}},
		{name: "wheel on the file host", url: "https://files.pythonhosted.org/packages/ab/cd/ef/my_tool-1.4.0-py3-none-any.whl", ua: pipUA,
			wantLabel: "pypi:wheel", wantPkg: &trace.PackageFetch{Ecosystem: "pypi", Name: "my-tool", Version: "1.4.0", Registry: "files.pythonhosted.org", Default: true, What: "wheel"}},
		{name: "sdist", url: "https://pkgs.evil.example/packages/x/my_tool-1.4.0.tar.gz", ua: "uv/0.4.0",
			wantLabel: "pypi:sdist", wantPkg: &trace.PackageFetch{Ecosystem: "pypi", Name: "my-tool", Version: "1.4.0", Registry: "pkgs.evil.example", What: "sdist"}},
		{name: "a browser on npmjs.com is not a registry client", url: "https://www.npmjs.com/package/chalk", ua: "Mozilla/5.0", accept: "text/html", wantLabel: "html"},
		{name: "curl of a tarball elsewhere is a file", url: "https://cdn.example/app-1.0.tar.gz", ua: "curl/8.5.0", wantLabel: "file:tar.gz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", tt.url, nil)
			req.Header.Set("User-Agent", tt.ua)
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			resp := r.respond(req, req.URL.Hostname(), nil)
			if resp.Label != tt.wantLabel || resp.Status != 200 {
				t.Fatalf("respond = %d %q, want 200 %q", resp.Status, resp.Label, tt.wantLabel)
			}
			var got *trace.PackageFetch
			for _, e := range resp.Extra {
				if p, ok := e.Data.(*trace.PackageFetch); ok {
					got = p
				}
			}
			if tt.wantPkg == nil {
				if got != nil {
					t.Errorf("package event %+v, want none", got)
				}
				return
			}
			if got == nil {
				t.Fatal("no package event")
			}
			if got.URL != tt.url || got.Stub != StubNote {
				t.Errorf("url %q stub %q", got.URL, got.Stub)
			}
			got.URL, got.Stub, got.Client = "", "", ""
			if diff := cmp.Diff(tt.wantPkg, got); diff != "" {
				t.Errorf("package event (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPackumentMatchesItsTarballs(t *testing.T) {
	cfg := testConfig(t).withDefaults()
	cfg.PackageVersions = map[string][]string{"npm:@acme/util": {"3.7.1"}}
	r := newResponder(cfg, time.Now)
	req := httptest.NewRequest("GET", "https://registry.npmjs.org/@acme%2futil", nil)
	req.Header.Set("User-Agent", "npm/9.2.0")
	resp := r.respond(req, "registry.npmjs.org", nil)
	var doc struct {
		DistTags map[string]string `json:"dist-tags"`
		Versions map[string]struct {
			Version string `json:"version"`
			Dist    struct{ Tarball, Integrity string }
			Scripts map[string]string `json:"scripts"`
		} `json:"versions"`
	}
	if err := json.Unmarshal(resp.Body, &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Versions["3.7.1"]; !ok {
		t.Errorf("the configured version is missing: %v", doc.Versions)
	}
	if _, ok := doc.Versions[doc.DistTags["latest"]]; !ok {
		t.Errorf("latest %q is not a version", doc.DistTags["latest"])
	}
	for v, m := range doc.Versions {
		if !strings.HasPrefix(m.Dist.Tarball, "https://registry.npmjs.org/@acme/util/-/util-"+v+".tgz") {
			t.Errorf("%s tarball %q", v, m.Dist.Tarball)
		}
		treq := httptest.NewRequest("GET", m.Dist.Tarball, nil)
		treq.Header.Set("User-Agent", "npm/9.2.0")
		tgz := r.respond(treq, "registry.npmjs.org", nil).Body
		sum := sha512.Sum512(tgz)
		if want := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); m.Dist.Integrity != want {
			t.Errorf("%s integrity %s, tarball has %s", v, m.Dist.Integrity, want)
		}
		files := untgz(t, tgz)
		var pj map[string]any
		if err := json.Unmarshal(files["package/package.json"], &pj); err != nil || pj["version"] != v || pj["scripts"] != nil {
			t.Errorf("%s package.json = %s (%v): want this version and no scripts", v, files["package/package.json"], err)
		}
	}
}

func untgz(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name], _ = io.ReadAll(tr)
	}
}

func TestWheelIsValid(t *testing.T) {
	w := wheel("my-tool", "1.4.0", nil)
	zr, err := zip.NewReader(bytes.NewReader(w), int64(len(w)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	want := []string{"my_tool-1.4.0.dist-info/METADATA", "my_tool-1.4.0.dist-info/RECORD", "my_tool-1.4.0.dist-info/WHEEL",
		"my_tool-1.4.0.dist-info/entry_points.txt", "my_tool-1.4.0.dist-info/top_level.txt", "my_tool/__init__.py", "my_tool/__main__.py"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("wheel files (-want +got):\n%s", diff)
	}
	if !bytes.Equal(w, buildWheel("my-tool", "1.4.0", nil)) {
		t.Error("wheel is not deterministic: the index's hashes would not match")
	}
}

// TestWheelProvidesImportNames: a distribution whose modules have other
// names (beautifulsoup4: bs4) gets them in its stub wheel, so that `pip
// install beautifulsoup4` followed by `from bs4 import BeautifulSoup` runs.
func TestWheelProvidesImportNames(t *testing.T) {
	w := wheel("beautifulsoup4", "4.12.3", nil)
	zr, err := zip.NewReader(bytes.NewReader(w), int64(len(w)))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range zr.File {
		rc, _ := f.Open()
		b, _ := io.ReadAll(rc)
		rc.Close()
		files[f.Name] = string(b)
	}
	if files["bs4/__init__.py"] == "" || files["bs4/__init__.py"] != files["beautifulsoup4/__init__.py"] {
		t.Errorf("bs4/__init__.py missing or not the stand-in (files %v)", slices.Sorted(maps.Keys(files)))
	}
	if got := files["beautifulsoup4-4.12.3.dist-info/top_level.txt"]; got != "beautifulsoup4\nbs4\n" {
		t.Errorf("top_level.txt = %q", got)
	}
	if !strings.Contains(files["beautifulsoup4-4.12.3.dist-info/RECORD"], "bs4/__init__.py,sha256=") {
		t.Error("RECORD does not list bs4/__init__.py")
	}
}

func TestSimpleIndexHashesMatchFiles(t *testing.T) {
	r := newResponder(testConfig(t).withDefaults(), time.Now)
	req := httptest.NewRequest("GET", "https://pypi.org/simple/requests/", nil)
	req.Header.Set("User-Agent", "pip/23.0.1")
	page := r.respond(req, "pypi.org", nil).Body
	links := regexp.MustCompile(`href="([^"#]+)#sha256=([0-9a-f]{64})"`).FindAllStringSubmatch(string(page), -1)
	if len(links) < 4 {
		t.Fatalf("index page has %d links:\n%s", len(links), page)
	}
	for _, l := range links {
		freq := httptest.NewRequest("GET", l[1], nil)
		freq.Header.Set("User-Agent", "pip/23.0.1")
		resp := r.respond(freq, freq.URL.Hostname(), nil)
		if !strings.HasPrefix(l[1], "https://files.pythonhosted.org/packages/") || resp.Status != 200 || sha256hex(resp.Body) != l[2] {
			t.Errorf("%s: status %d label %s, hash mismatch or wrong host", l[1], resp.Status, resp.Label)
		}
	}
}

func TestVersionsIncludeConfiguredAndSort(t *testing.T) {
	cfg := testConfig(t).withDefaults()
	cfg.PackageVersions = map[string][]string{"pypi:requests": {"2.31.0", "bad version"}}
	r := newResponder(cfg, time.Now)
	vs := r.versions("pypi", "requests")
	if !slices.Contains(vs, "2.31.0") || slices.Contains(vs, "bad version") {
		t.Errorf("versions = %v", vs)
	}
	if !slices.IsSortedFunc(vs, compareVersions) || !slices.Equal(vs, r.versions("pypi", "requests")) {
		t.Errorf("versions not sorted or not stable: %v", vs)
	}
}

// TestRealNPMAndPipInstall runs the real npm and pip against the sink on
// loopback, with the sink as their registry: both installs complete with
// the stub, and the package events name what was asked.
func TestRealNPMAndPipInstall(t *testing.T) {
	t.Parallel() // most of its time is npm's and pip's
	cfg := testConfig(t)
	cfg.PackageBins = map[string][]string{"npm:@acme/shipit-cli": {"shipit"}, "pypi:acme-shipit": {"shipit"}}
	addr, col := startTransparent(t, cfg, nil, netip.MustParseAddrPort("104.16.3.35:80"))
	run := func(t *testing.T, dir string, env []string, name string, argv ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, argv...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(argv, " "), err, out)
		}
		return string(out)
	}
	t.Run("npm", func(t *testing.T) {
		t.Parallel() // a folder each; the sink is safe for concurrent use
		if _, err := exec.LookPath("npm"); err != nil {
			t.Skip("no npm")
		}
		dir := t.TempDir()
		env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "npm_config_cache=" + filepath.Join(dir, ".npm"),
			"npm_config_update_notifier=false", "npm_config_fund=false"}
		run(t, dir, env, "npm", "install", "--registry", "http://"+addr+"/", "left-pad", "@acme/util")
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@acme", "util", "index.js")); err != nil {
			t.Errorf("scoped package not installed: %v", err)
		}
		// npx fetches as npm install does (the packument, then the
		// tarball): -short leaves it to make test.
		if !testing.Short() {
			out := run(t, dir, env, "npx", "--registry", "http://"+addr+"/", "--yes", "cowsay-lite")
			if !strings.Contains(out, "cowsay-lite") {
				t.Errorf("npx printed %q", out)
			}
		}
		// A global install into the user's prefix (~/.npm-global, as the
		// seeded home's ~/.npmrc sets) links the executables the skill runs.
		prefix := filepath.Join(dir, ".npm-global")
		run(t, dir, append(env, "npm_config_prefix="+prefix), "npm", "install", "-g", "--registry", "http://"+addr+"/", "@acme/shipit-cli")
		if out := run(t, dir, env, filepath.Join(prefix, "bin", "shipit"), "deploy", "--prod"); out != "shipit deploy: done\n" {
			t.Errorf("shipit deploy --prod printed %q", out)
		}
		if _, err := os.Stat(filepath.Join(prefix, "bin", "shipit-cli")); err != nil {
			t.Errorf("the package's own executable is missing: %v", err)
		}
		col.waitFor(t, "npm tarball event", func(e trace.Event) bool {
			p, ok := e.Data.(*trace.PackageFetch)
			return ok && p.Ecosystem == "npm" && p.Name == "@acme/util" && p.What == "tarball" && !p.Default
		})
	})
	t.Run("pip", func(t *testing.T) {
		t.Parallel()
		if _, err := exec.LookPath("pip3"); err != nil {
			t.Skip("no pip3")
		}
		dir := t.TempDir()
		env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_CACHE_DIR=1"}
		run(t, dir, env, "pip3", "install", "--index-url", "http://"+addr+"/simple", "--target", filepath.Join(dir, "site"), "Col_Orama")
		if _, err := os.Stat(filepath.Join(dir, "site", "col_orama", "__init__.py")); err != nil {
			t.Errorf("stub module not installed: %v", err)
		}
		// pip leaves an existing --target's bin/ alone: another target.
		// -short leaves this second pip run to make test (TestStubExecutables
		// runs the stub's entry point either way).
		if !testing.Short() {
			run(t, dir, env, "pip3", "install", "--index-url", "http://"+addr+"/simple", "--target", filepath.Join(dir, "site2"), "acme-shipit")
			if b, err := os.ReadFile(filepath.Join(dir, "site2", "bin", "shipit")); err != nil || !strings.Contains(string(b), "acme_shipit.__main__") {
				t.Errorf("console script shipit: %q, %v", b, err)
			}
		}
		col.waitFor(t, "pip wheel event", func(e trace.Event) bool {
			p, ok := e.Data.(*trace.PackageFetch)
			return ok && p.Ecosystem == "pypi" && p.Name == "col-orama" && p.What == "wheel"
		})
	})
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestAcceptQ(t *testing.T) {
	pip := "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01"
	uv := "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
	for _, tc := range []struct {
		accept, typ string
		want        float64
	}{{pip, "application/vnd.pypi.simple.v1+json", 1}, {pip, "text/html", 0.01}, {uv, "application/vnd.pypi.simple.v1+html", 0.2},
		{"text/html", "application/vnd.pypi.simple.v1+json", 0}, {"a/b;q=0", "a/b", 0}} {
		if got := acceptQ(tc.accept, tc.typ); got != tc.want {
			t.Errorf("acceptQ(%q, %q) = %v, want %v", tc.accept, tc.typ, got, tc.want)
		}
	}
}
