package docker_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/orchestrator/docker"
)

// hardened is the sandbox shape the orchestrator uses, minus the jail.
func hardened(t *testing.T, image, trace string) orchestrator.Spec {
	return orchestrator.Spec{
		Name:            trace,
		Role:            orchestrator.RoleSandbox,
		Image:           image,
		Labels:          map[string]string{orchestrator.LabelTrace: trace},
		Cmd:             []string{"sleep", "infinity"},
		User:            "0:0",
		Hostname:        "devbox",
		NetworkMode:     "none",
		CapDrop:         []string{"ALL"},
		CapAdd:          []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETUID", "SETGID", "SYS_PTRACE"},
		NoNewPrivileges: true,
		Memory:          256 << 20,
		PIDs:            128,
		NanoCPUs:        1_000_000_000,
	}
}

// start creates and starts spec, and removes it when the test ends.
func start(t *testing.T, rt *docker.Runtime, spec orchestrator.Spec) orchestrator.Sandbox {
	t.Helper()
	sb, err := rt.Create(t.Context(), spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sb.Remove(ctx); err != nil {
			t.Errorf("Remove: %v", err)
		}
	})
	if err := sb.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return sb
}

// run execs argv and returns its stdout, stderr and exit code.
func run(t *testing.T, sb orchestrator.Sandbox, user string, argv ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code, err := sb.Exec(t.Context(), orchestrator.ExecSpec{Argv: argv, User: user, Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatalf("Exec %q: %v", argv, err)
	}
	return out.String(), errb.String(), code
}

func TestExecAsUser(t *testing.T) {
	image := testenv.Image(t)
	rt := testenv.RequireDocker(t)
	trace := testenv.TraceID(t)
	testenv.CleanupLabel(t, trace)
	sb := start(t, rt, hardened(t, image, trace))

	out, stderr, code := run(t, sb, "1000:1000", "id", "-un")
	if code != 0 || strings.TrimSpace(out) != "mwalker" {
		t.Errorf("id -un as 1000 = %q (stderr %q, exit %d), want mwalker", out, stderr, code)
	}
	_, _, code = run(t, sb, "", "sh", "-c", "exit 7")
	if code != 7 {
		t.Errorf("exit code = %d, want 7", code)
	}
	_, stderr, _ = run(t, sb, "", "sh", "-c", "echo oops >&2")
	if stderr != "oops\n" {
		t.Errorf("stderr = %q, want %q", stderr, "oops\n")
	}
}
