package testenv_test

import (
	"debug/elf"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
)

func TestTraceID(t *testing.T) {
	a, b := testenv.TraceID(t), testenv.TraceID(t)
	if a == b {
		t.Errorf("two TraceIDs are equal: %s", a)
	}
	if !regexp.MustCompile(`^test-testtraceid-[0-9a-f]{8}$`).MatchString(a) {
		t.Errorf("TraceID = %q", a)
	}
	t.Run("Odd/Name With Spaces & ünïcode", func(t *testing.T) {
		id := testenv.TraceID(t)
		if !regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`).MatchString(id) || len(id) > 64 {
			t.Errorf("TraceID = %q: not safe as a container name", id)
		}
	})
}

func TestSandboxctlBinaryIsStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	path := testenv.SandboxctlBinary(t)
	if again := testenv.SandboxctlBinary(t); again != path {
		t.Errorf("second call built again: %s, %s", path, again)
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked: it cannot run in the sandbox image", path)
		}
	}
}

func TestDockerGate(t *testing.T) {
	down := errors.New("connection refused")
	tests := []struct {
		name    string
		short   bool
		require string
		err     error
		want    string // substring; "" runs the test
	}{
		{name: "engine up", want: ""},
		{name: "engine up, required", require: "1", want: ""},
		{name: "short, engine up", short: true, want: "skipped under -short"},
		{name: "short, engine down", short: true, err: down, want: "skipped under -short"},
		{name: "short wins over required", short: true, require: "1", err: down, want: "skipped under -short"},
		{name: "engine down", err: down, want: "no docker engine: connection refused"},
		{name: "engine down, required", require: "1", err: down, want: "SANDBOXCTL_REQUIRE_DOCKER=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := testenv.DockerGate(tt.short, tt.require, tt.err)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("DockerGate(%v, %q, %v) = %q, want %q", tt.short, tt.require, tt.err, got, tt.want)
			}
		})
	}
}

// TestRequireDockerShort: under -short the gate skips without asking the
// engine (DOCKER_HOST points nowhere, so asking would fail, not skip, with
// SANDBOXCTL_REQUIRE_DOCKER=1).
func TestRequireDockerShort(t *testing.T) {
	if !testing.Short() {
		t.Skip("checks the -short path")
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	t.Setenv("SANDBOXCTL_REQUIRE_DOCKER", "1")
	ran := false
	t.Run("gate", func(t *testing.T) {
		testenv.RequireDocker(t)
		ran = true
	})
	if ran {
		t.Errorf("RequireDocker let a test run under -short")
	}
}
