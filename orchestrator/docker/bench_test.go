package docker_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/orchestrator/docker"
)

// BenchmarkSandboxLifecycle measures one sandbox's lifecycle as the
// orchestrator drives it (create with the hardening, a tmpfs home and the
// agent binary copied in, start, one trivial exec, remove) against the floor
// of a bare `docker run --rm IMAGE true` done through the same API, both in
// the same loop, and reports the ratio.
func BenchmarkSandboxLifecycle(b *testing.B) {
	image := testenv.Image(b)
	rt := testenv.RequireDocker(b)
	trace := testenv.TraceID(b)
	testenv.CleanupLabel(b, trace)
	self, err := os.Executable() // a static-sized stand-in for the agent binary
	if err != nil {
		b.Fatal(err)
	}
	labels := map[string]string{orchestrator.LabelTrace: trace}
	ctx := context.Background()
	var bare, full time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := docker.BareRunForTest(ctx, rt, image, labels); err != nil {
			b.Fatalf("bare run: %v", err)
		}
		t1 := time.Now()
		spec := orchestrator.Spec{
			Name:            "",
			Role:            orchestrator.RoleSandbox,
			Image:           image,
			Labels:          labels,
			Cmd:             []string{"sleep", "infinity"},
			User:            "0:0",
			NetworkMode:     "none",
			CapDrop:         []string{"ALL"},
			CapAdd:          []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETUID", "SETGID", "SYS_PTRACE"},
			NoNewPrivileges: true,
			Memory:          1 << 30,
			PIDs:            256,
			NanoCPUs:        1e9,
			Tmpfs:           map[string]string{"/home": "rw,nosuid,nodev,size=64m,mode=755", "/tmp": "rw,nosuid,nodev,size=64m,mode=1777"},
			Files: []orchestrator.File{
				{Path: "/usr/local/lib/agent/agentd", HostPath: self, Mode: 0o755},
				{Path: "/home/mwalker/.bashrc", Content: []byte("# rc\n"), Mode: 0o644, UID: 1000, GID: 1000},
			},
		}
		sb, err := rt.Create(ctx, spec)
		if err != nil {
			b.Fatalf("Create: %v", err)
		}
		if err := sb.Start(ctx); err != nil {
			sb.Remove(ctx)
			b.Fatalf("Start: %v", err)
		}
		if code, err := sb.Exec(ctx, orchestrator.ExecSpec{Argv: []string{"true"}, User: "1000:1000"}); err != nil || code != 0 {
			sb.Remove(ctx)
			b.Fatalf("Exec: %d, %v", code, err)
		}
		if err := sb.Remove(ctx); err != nil {
			b.Fatalf("Remove: %v", err)
		}
		t2 := time.Now()
		bare += t1.Sub(t0)
		full += t2.Sub(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(full.Milliseconds())/n, "sandbox-ms/op")
	b.ReportMetric(float64(bare.Milliseconds())/n, "bare-ms/op")
	b.ReportMetric(float64(full)/float64(bare), "ratio")
}
