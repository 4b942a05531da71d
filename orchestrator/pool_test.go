package orchestrator_test

import (
	"bufio"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/orchestrator/docker"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// poolLeft returns what is left of the pool's pairs on the engine, removing it.
func poolLeft(t *testing.T, rt *docker.Runtime, ids []string) []string {
	t.Helper()
	var left []string
	for _, id := range ids {
		removed, err := rt.GC(context.Background(), id)
		if err != nil {
			t.Errorf("gc %s: %v", id, err)
		}
		left = append(left, removed...)
	}
	return left
}

func lapsUntil(phases []orchestrator.PhaseTime, last string) time.Duration {
	var d time.Duration
	for _, p := range phases {
		d += p.Took
		if p.Phase == last {
			return d
		}
	}
	return -1
}

// TestPoolWarmTraces runs three traces through a pool of two on the real
// engine: each is completed with its own verdict, takes a pair that was
// ready (claim to first tool call measured), and nothing is left once the
// pool is closed.
func TestPoolWarmTraces(t *testing.T) {
	rt := testenv.RequireDocker(t)
	testenv.Image(t)
	r := &orchestrator.Runner{Runtime: rt, Binary: testenv.SandboxctlBinary(t)}
	tmpl := basePlan(writeSkill(t, "tmpl", "true"))
	tmpl.Stealth = traceplan.StealthOff
	tmpl.TraceID = testenv.TraceID(t)
	pool, err := orchestrator.NewPool(t.Context(), r, tmpl, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close(); poolLeft(t, rt, pool.TraceIDs()) })
	r.Pool = pool
	if testing.Verbose() {
		r.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	for i, blocks := range [][]string{{"echo one"}, {"cat ~/.aws/credentials | head -c 20"}, {"echo three"}} {
		p := tmpl
		p.SkillPath = writeSkill(t, "warm"+string(rune('a'+i)), blocks...)
		p.TraceID = testenv.TraceID(t)
		out, err := r.Run(t.Context(), p, t.TempDir())
		if err != nil {
			t.Fatalf("trace %d: %v", i, err)
		}
		if out.Report.Status != reports.StatusCompleted || len(out.Report.ToolCalls) != 1 {
			t.Errorf("trace %d: status %s, %d calls", i, out.Report.Status, len(out.Report.ToolCalls))
		}
		if out.Phases[0].Phase != "claim" {
			t.Errorf("trace %d did not take a warm pair: phases %v", i, out.Phases)
		}
		t.Logf("trace %d: claim to first tool call %v; phases %v", i, lapsUntil(out.Phases, "first call"), out.Phases)
	}
	if err := pool.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if left := poolLeft(t, rt, pool.TraceIDs()); len(left) > 0 {
		t.Errorf("left behind after Close: %v", left)
	}
}

// TestPoolDrains closes a pool while it fills, and after its parent context
// was cancelled (Ctrl-C): nothing is left.
func TestPoolDrains(t *testing.T) {
	rt := testenv.RequireDocker(t)
	testenv.Image(t)
	r := &orchestrator.Runner{Runtime: rt, Binary: testenv.SandboxctlBinary(t)}
	for _, tc := range []struct {
		name   string
		cancel bool
		wait   time.Duration
	}{
		{name: "close while filling", wait: 500 * time.Millisecond},
		{name: "interrupted then closed", cancel: true, wait: 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := basePlan(writeSkill(t, "tmpl", "true"))
			tmpl.TraceID = testenv.TraceID(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			pool, err := orchestrator.NewPool(ctx, r, tmpl, 2)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(tc.wait)
			if tc.cancel {
				cancel()
			}
			pool.Close()
			if left := poolLeft(t, rt, pool.TraceIDs()); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// TestPoolKilledThenGC kills a process that holds a filled pool (kill -9:
// no drain runs) and checks that gc by the pairs' trace labels removes
// everything it left.
func TestPoolKilledThenGC(t *testing.T) {
	if os.Getenv("SANDBOXCTL_POOL_HELPER") == "1" {
		poolHelper(t)
		return
	}
	rt := testenv.RequireDocker(t)
	testenv.Image(t)
	testenv.SandboxctlBinary(t)
	id := testenv.TraceID(t)
	ids := []string{id + "-1", id + "-2", id + "-3"}
	t.Cleanup(func() { poolLeft(t, rt, ids) })
	cmd := exec.Command(os.Args[0], "-test.run=^TestPoolKilledThenGC$", "-test.v")
	cmd.Env = append(os.Environ(), "SANDBOXCTL_POOL_HELPER=1", "SANDBOXCTL_POOL_ID="+id)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	ready := false
	for sc.Scan() {
		if strings.Contains(sc.Text(), "POOL READY") {
			ready = true
			break
		}
	}
	cmd.Process.Kill() // SIGKILL: nothing of the pool's own cleanup runs
	cmd.Wait()
	if !ready {
		t.Fatal("the helper never had a warm pair")
	}
	var removed []string
	for _, pid := range ids {
		got, err := rt.GC(context.Background(), pid)
		if err != nil {
			t.Errorf("gc %s: %v", pid, err)
		}
		removed = append(removed, got...)
	}
	if len(removed) == 0 {
		t.Error("gc removed nothing: the killed pool's pairs were not labelled")
	}
	if left := poolLeft(t, rt, ids); len(left) > 0 {
		t.Errorf("left after gc: %v", left)
	}
}

// poolHelper is the process TestPoolKilledThenGC kills: it fills a pool of
// one and says so once a pair is up.
func poolHelper(t *testing.T) {
	rt := testenv.RequireDocker(t)
	r := &orchestrator.Runner{Runtime: rt, Binary: testenv.SandboxctlBinary(t)}
	tmpl := basePlan(writeSkill(t, "tmpl", "true"))
	tmpl.TraceID = os.Getenv("SANDBOXCTL_POOL_ID")
	if _, err := orchestrator.NewPool(t.Context(), r, tmpl, 1); err != nil {
		t.Fatal(err)
	}
	for {
		b, _ := exec.Command("docker", "ps", "-q", "--filter", "label=sandboxctl.trace="+tmpl.TraceID+"-1",
			"--filter", "label=sandboxctl.role=sandbox").Output()
		if len(strings.TrimSpace(string(b))) > 0 {
			time.Sleep(2 * time.Second) // the setup exec runs; a half-made pair must go too
			os.Stdout.WriteString("POOL READY\n")
			time.Sleep(time.Hour) // until killed
		}
		time.Sleep(200 * time.Millisecond)
	}
}
