package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestServeUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad-tokens")
	os.WriteFile(bad, []byte("alice short\n"), 0o600)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no data", []string{"serve"}, "--data"},
		{"argument", []string{"serve", "--data", dir, "extra"}, "no arguments"},
		{"not loopback", []string{"serve", "--data", dir, "--listen", "0.0.0.0:8080"}, "not a loopback address"},
		{"bad listen", []string{"serve", "--data", dir, "--listen", "8080"}, "--listen"},
		{"bad tokens", []string{"serve", "--data", dir, "--tokens", bad}, "shorter than 16"},
		{"missing tokens", []string{"serve", "--data", dir, "--tokens", filepath.Join(dir, "none")}, "no such file"},
		{"timeout over max", []string{"serve", "--data", dir, "--timeout", "1h", "--max-timeout", "10m"}, "--timeout"},
		{"workers", []string{"serve", "--data", dir, "--workers", "0"}, "--workers"},
		{"health needs loopback", []string{"serve-health", "http://192.0.2.1/v1/health"}, "not on loopback"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(t.Context(), c.args, env{stdout: &bytes.Buffer{}, stderr: &stderr, getenv: func(string) string { return "" }})
			if code != exitUsage || !strings.Contains(stderr.String(), c.want) {
				t.Fatalf("exit %d, stderr %q; want %d with %q", code, stderr.String(), exitUsage, c.want)
			}
		})
	}
}

func TestLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8080": true, "[::1]:80": true, "localhost:1": true, "127.9.9.9:1": true,
		"0.0.0.0:8080": false, ":8080": false, "10.0.0.1:80": false, "[::]:80": false, "example.test:80": false} {
		got, err := loopbackAddr(addr)
		if err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", addr, got, err, want)
		}
	}
}

func TestServeHealth(t *testing.T) {
	code := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }))
	defer srv.Close()
	e := env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }}
	if got := run(t.Context(), []string{"serve-health", srv.URL + "/v1/health"}, e); got != exitClean {
		t.Fatalf("healthy: exit %d", got)
	}
	code = http.StatusServiceUnavailable
	if got := run(t.Context(), []string{"serve-health", srv.URL + "/v1/health"}, e); got != exitFailed {
		t.Fatalf("stopping: exit %d", got)
	}
}

// TestServeDeployFlags: the flags the container image and the compose
// file give serve are serve's.
func TestServeDeployFlags(t *testing.T) {
	flags := commandFlags(t)["serve"]
	n := 0
	for _, f := range []string{"../../deploy/docker/Dockerfile", "../../deploy/docker/compose.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`"--([a-z-]+)"`).FindAllStringSubmatch(string(b), -1) {
			n++
			if !slices.Contains(flags, m[1]) {
				t.Errorf("%s: --%s is not a flag of serve (%v)", f, m[1], flags)
			}
		}
	}
	if n < 5 {
		t.Fatalf("only %d flags found", n)
	}
}
