package netcapture

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRespondChoosesByRequest(t *testing.T) {
	cfg := testConfig(t)
	cfg.HTTPRules = []HTTPRule{{Name: "c2", Host: "*.evil.test", Path: "/task/*", Status: 202, Body: "sleep 5", Headers: map[string]string{"X-Task": "1"}}}
	clock := time.Date(2031, 5, 4, 3, 2, 1, 0, time.UTC)
	r := newResponder(cfg.withDefaults(), func() time.Time { return clock })
	tests := []struct {
		name, method, url, ua, accept string
		wantLabel                     string
		wantStatus                    int
	}{
		{name: "rule", method: "GET", url: "http://a.evil.test/task/9", wantLabel: "rule:c2", wantStatus: 202},
		{name: "curl to .sh", method: "GET", url: "https://get.tool.example/install.sh", ua: "curl/8.5.0", accept: "*/*", wantLabel: "second-stage", wantStatus: 200},
		{name: "curl to /install", method: "GET", url: "https://tool.example/install", ua: "Wget/1.21", wantLabel: "second-stage", wantStatus: 200},
		{name: "curl to an installer host", method: "GET", url: "https://sh.rustup.example/", ua: "curl/8.5.0", accept: "*/*", wantLabel: "second-stage", wantStatus: 200},
		{name: "curl to an opaque path gets json, not a script", method: "GET", url: "http://203.0.113.5/x7f2", ua: "curl/8.5.0", accept: "*/*", wantLabel: "json", wantStatus: 200},
		{name: "curl to a weather api", method: "GET", url: "https://wttr.example/London?format=j1", ua: "curl/8.5.0", accept: "*/*", wantLabel: "json", wantStatus: 200},
		{name: "curl to an api path", method: "GET", url: "https://markets.example/v1/quote/AAPL", ua: "curl/8.5.0", accept: "*/*", wantLabel: "json", wantStatus: 200},
		{name: "python requests to an opaque path", method: "GET", url: "https://data.example/prices/latest", ua: "python-requests/2.31.0", accept: "*/*", wantLabel: "json", wantStatus: 200},
		{name: "api host with curl", method: "GET", url: "https://api.example.org/", ua: "curl/8.5.0", accept: "*/*", wantLabel: "json", wantStatus: 200},
		{name: "api host named install path", method: "GET", url: "https://api.example.org/v2/install", ua: "curl/8.5.0", accept: "*/*", wantLabel: "json", wantStatus: 200},
		{name: "curl to a site root", method: "GET", url: "https://www.example.org/", ua: "curl/8.5.0", accept: "*/*", wantLabel: "html", wantStatus: 200},
		{name: "shell script accept", method: "GET", url: "https://tools.example/latest", accept: "text/x-shellscript", wantLabel: "second-stage", wantStatus: 200},
		{name: "jpeg", method: "GET", url: "https://cdn.example/photo.JPG", wantLabel: "file:jpeg", wantStatus: 200},
		{name: "image accept", method: "GET", url: "https://cdn.example/avatar/42", accept: "image/avif,image/webp,*/*", wantLabel: "file:png", wantStatus: 200},
		{name: "graphql post", method: "POST", url: "https://gql.example/graphql", wantLabel: "json:graphql", wantStatus: 200},
		{name: "second stage callback", method: "GET", url: "http://get.tool.example/.well-known/" + cfg.Marker.Token, wantLabel: "second-stage-callback", wantStatus: 204},
		{name: "zip", method: "GET", url: "https://cdn.example/tool.zip", wantLabel: "file:zip", wantStatus: 200},
		{name: "tar.gz", method: "GET", url: "https://cdn.example/tool-1.2.tar.gz", wantLabel: "file:tar.gz", wantStatus: 200},
		{name: "elf by name", method: "GET", url: "https://cdn.example/agent-linux-amd64", wantLabel: "file:elf", wantStatus: 200},
		{name: "png", method: "GET", url: "https://cdn.example/logo.png", wantLabel: "file:png", wantStatus: 200},
		{name: "python", method: "GET", url: "https://raw.example/s/run.py", wantLabel: "file:py", wantStatus: 200},
		{name: "browser", method: "GET", url: "https://docs.example/guide", ua: "Mozilla/5.0", accept: "text/html,*/*", wantLabel: "html", wantStatus: 200},
		{name: "json accept", method: "GET", url: "https://svc.example/status", accept: "application/json", wantLabel: "json", wantStatus: 200},
		{name: "ipify", method: "GET", url: "https://api.ipify.org/?format=json", wantLabel: "lookup:ipify", wantStatus: 200},
		{name: "ipinfo", method: "GET", url: "https://ipinfo.io/json", wantLabel: "lookup:ipinfo", wantStatus: 200},
		{name: "ifconfig.me", method: "GET", url: "http://ifconfig.me/", ua: "curl/8.5.0", wantLabel: "lookup:ip", wantStatus: 200},
		{name: "ip-api", method: "GET", url: "http://ip-api.com/json", wantLabel: "lookup:ip-api", wantStatus: 200},
		{name: "webhook post", method: "POST", url: "https://webhook.site/abc", wantLabel: "json:accepted", wantStatus: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.url, nil)
			if tt.ua != "" {
				req.Header.Set("User-Agent", tt.ua)
			}
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			resp := r.respond(req, req.URL.Hostname(), nil)
			if resp.Label != tt.wantLabel || resp.Status != tt.wantStatus {
				t.Errorf("respond(%s %s) = %d %q, want %d %q", tt.method, tt.url, resp.Status, resp.Label, tt.wantStatus, tt.wantLabel)
			}
			if got := resp.Header.Get("Date"); got != clock.Format(http.TimeFormat) {
				t.Errorf("Date = %q, want the trace clock %q", got, clock.Format(http.TimeFormat))
			}
		})
	}
}

func TestLookupsServeThePublicIP(t *testing.T) {
	cfg := testConfig(t)
	cfg.PublicIP = "81.2.69.160"
	r := newResponder(cfg.withDefaults(), time.Now)
	for _, u := range []string{"https://ipinfo.io/json", "http://ip-api.com/json", "https://api.ipify.org/?format=json"} {
		resp := r.respond(httptest.NewRequest("GET", u, nil), httptest.NewRequest("GET", u, nil).URL.Hostname(), nil)
		var v map[string]any
		if err := json.Unmarshal(resp.Body, &v); err != nil {
			t.Errorf("%s: body %q is not JSON: %v", u, resp.Body, err)
		}
		if !bytes.Contains(resp.Body, []byte("81.2.69.160")) {
			t.Errorf("%s: body %q lacks the public IP", u, resp.Body)
		}
	}
}

func TestSecondStageRunsAndWritesMarker(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	m := Marker{Path: ".cache/.q7w8e9", Token: "tok_5b2d"}
	script := SecondStage(m, "")
	home := t.TempDir()
	cmd := exec.Command("sh")
	cmd.Stdin = bytes.NewReader(script)
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sh < second stage: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Setup complete.") {
		t.Errorf("output = %q", out)
	}
	got, err := os.ReadFile(filepath.Join(home, m.Path))
	if err != nil {
		t.Fatalf("marker not written: %v", err)
	}
	if diff := cmp.Diff(m.Token+"\n", string(got)); diff != "" {
		t.Errorf("marker content (-want +got):\n%s", diff)
	}
	if strings.Contains(string(out), m.Token) {
		t.Errorf("running the second stage printed the token: %q", out)
	}
	if withHost := string(SecondStage(m, "get.tool.example")); !strings.Contains(withHost, "http://get.tool.example/.well-known/") {
		t.Errorf("second stage for a host lacks the callback:\n%s", withHost)
	}
	if s := string(SecondStage(m, "bad'host;rm")); strings.Contains(s, "bad'host") {
		t.Errorf("a hostile host reached the script:\n%s", s)
	}
}

func TestServedFilesAreValid(t *testing.T) {
	cfg := testConfig(t)
	f := buildFiles(cfg.Marker)

	zr, err := zip.NewReader(bytes.NewReader(f.zip), int64(len(f.zip)))
	if err != nil {
		t.Fatalf("zip: %v", err)
	}
	var names []string
	for _, zf := range zr.File {
		names = append(names, zf.Name)
		rc, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(rc); err != nil {
			t.Errorf("zip %s: %v", zf.Name, err)
		}
		rc.Close()
	}
	if diff := cmp.Diff([]string{"README.txt", "install.sh"}, names); diff != "" {
		t.Errorf("zip entries (-want +got):\n%s", diff)
	}

	gz, err := gzip.NewReader(bytes.NewReader(f.tgz))
	if err != nil {
		t.Fatalf("tar.gz: %v", err)
	}
	tr := tar.NewReader(gz)
	names = nil
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		names = append(names, h.Name)
		if h.Name == "package/install.sh" {
			b, _ := io.ReadAll(tr)
			if !bytes.Contains(b, []byte(cfg.Marker.Path)) || h.Mode&0o111 == 0 {
				t.Errorf("install.sh mode %o lacks the marker path or exec bit", h.Mode)
			}
			if bytes.Contains(b, []byte(cfg.Marker.Token)) {
				t.Errorf("install.sh holds the marker token literally")
			}
		}
	}
	if diff := cmp.Diff([]string{"package/", "package/README.txt", "package/install.sh"}, names); diff != "" {
		t.Errorf("tar entries (-want +got):\n%s", diff)
	}

	img, err := png.Decode(bytes.NewReader(f.png))
	if err != nil || img.Bounds().Dx() != 16 {
		t.Errorf("png: %v", err)
	}

	ef, err := elf.NewFile(bytes.NewReader(f.elf))
	if err != nil {
		t.Fatalf("elf: %v", err)
	}
	if ef.Machine != elf.EM_X86_64 || ef.Type != elf.ET_EXEC || len(ef.Progs) != 1 || ef.Progs[0].Type != elf.PT_LOAD {
		t.Errorf("elf header = %+v", ef.FileHeader)
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		p := filepath.Join(t.TempDir(), "tiny")
		if err := os.WriteFile(p, f.elf, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := exec.Command(p).Run(); err != nil {
			t.Errorf("running the tiny ELF: %v", err)
		}
	}
}
