package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/orchestrator"
)

// responsiveness measures the host side while f runs: the worst delay of a
// 50 ms ticker, and whether a file write and read on the host kept working.
func responsiveness(t *testing.T, f func()) time.Duration {
	t.Helper()
	var worst atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	probe := filepath.Join(t.TempDir(), "probe")
	go func() { // ends when done is closed
		defer close(stopped)
		last := time.Now()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				if d := now.Sub(last) - 50*time.Millisecond; d > time.Duration(worst.Load()) {
					worst.Store(int64(d))
				}
				last = now
				if err := os.WriteFile(probe, []byte("x"), 0o600); err != nil {
					t.Errorf("host write during the bomb: %v", err)
				}
			}
		}
	}()
	func() {
		// Also when f calls t.Fatal: the prober must end before the test.
		defer func() { close(done); <-stopped }()
		f()
	}()
	return time.Duration(worst.Load())
}

func TestForkBombContained(t *testing.T) {
	image := testenv.Image(t)
	rt := testenv.RequireDocker(t)
	trace := testenv.TraceID(t)
	testenv.CleanupLabel(t, trace)
	spec := hardened(t, image, trace)
	spec.PIDs = 64
	spec.NanoCPUs = 500_000_000
	sb := start(t, rt, spec)

	var peak int64
	worst := responsiveness(t, func() {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		begin := time.Now()
		// The bomb runs in the background as the user, detached from the
		// exec's output (a process that keeps the exec's stdout open keeps
		// Exec waiting), so the exec returns.
		code, err := sb.Exec(ctx, orchestrator.ExecSpec{
			Argv: []string{"bash", "-c", "(b() { b | b & }; b) </dev/null >/dev/null 2>&1 &"},
			User: "1000:1000",
		})
		t.Logf("bomb exec: exit %d, err %v, after %s", code, err, time.Since(begin).Round(time.Millisecond))
		// The engine can be slow to answer while the bomb runs: each
		// sample has its own bound, and a slow one is only logged.
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
			sctx, scancel := context.WithTimeout(ctx, 3*time.Second)
			st, err := sb.Stats(sctx)
			scancel()
			if err != nil {
				t.Logf("Stats: %v", err)
				continue
			}
			peak = max(peak, st.PIDs)
		}
	})
	t.Logf("peak pids %d (limit %d); worst host tick delay %s", peak, spec.PIDs, worst)
	if peak > spec.PIDs {
		t.Errorf("peak pids %d above the limit %d", peak, spec.PIDs)
	}
	if peak < spec.PIDs/2 {
		t.Errorf("peak pids %d: the bomb did not run", peak)
	}
	if worst > 2*time.Second {
		t.Errorf("host ticker stalled %s during the bomb", worst)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	begin := time.Now()
	if err := sb.Remove(ctx); err != nil {
		t.Fatalf("Remove under a fork bomb: %v", err)
	}
	t.Logf("removed in %s", time.Since(begin).Round(time.Millisecond))
}

func TestMemoryBombContained(t *testing.T) {
	image := testenv.Image(t)
	rt := testenv.RequireDocker(t)
	trace := testenv.TraceID(t)
	testenv.CleanupLabel(t, trace)
	spec := hardened(t, image, trace)
	spec.Memory = 96 << 20
	sb := start(t, rt, spec)

	var code int
	var err error
	worst := responsiveness(t, func() {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		code, err = sb.Exec(ctx, orchestrator.ExecSpec{
			Argv: []string{"python3", "-c", "a = []\nwhile True: a.append(bytearray(8 << 20))"},
			User: "1000:1000",
		})
	})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	st, serr := sb.State(t.Context())
	if serr != nil {
		t.Fatal(serr)
	}
	t.Logf("memory bomb: exit %d, state %+v, worst host tick delay %s", code, st, worst)
	if code == 0 {
		t.Errorf("memory bomb exited 0 under a %d MiB limit", spec.Memory>>20)
	}
	if code != 137 && !st.OOMKilled {
		t.Errorf("memory bomb exit %d and not OOMKilled: was it the limit that stopped it?", code)
	}
	if worst > 2*time.Second {
		t.Errorf("host ticker stalled %s during the bomb", worst)
	}
	out, _, _ := run(t, sb, "", "cat", "/sys/fs/cgroup/memory/memory.max_usage_in_bytes", "/sys/fs/cgroup/memory.peak")
	t.Logf("peak memory in the cgroup: %s", strings.TrimSpace(out))
}
