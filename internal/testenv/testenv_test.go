package testenv_test

import (
	"debug/elf"
	"regexp"
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
