// Command sweepbench measures throughput: n trivial skills (one echo block
// each, literal driver) traced through an orchestrator.Pool with bounded
// parallelism, against the same n traced one after the other cold, in the
// same run. It prints skills per minute for both, the claim-to-first-tool-
// call latency of the warm traces, and what the machine was doing (load
// average, the host's CPU busy share, sandboxctl's own CPU time), which
// says what bounds the rate. It is run by `make bench`, not by the tests.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/orchestrator/docker"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

func main() {
	bin := flag.String("bin", "bin/sandboxctl", "the static sandboxctl binary baked into the agent image")
	n := flag.Int("n", 30, "skills per mode")
	size := flag.Int("pool", 2, "warm pairs kept ready")
	par := flag.Int("parallel", 2, "traces at once through the pool")
	cold := flag.Bool("cold", true, "also run the n skills sequentially cold")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *bin, *n, *size, *par, *cold); err != nil {
		fmt.Fprintln(os.Stderr, "sweepbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, bin string, n, size, par int, cold bool) error {
	rt, err := docker.New(ctx)
	if err != nil {
		return err
	}
	defer rt.Close()
	dir, err := os.MkdirTemp("", "sweepbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	skills := make([]string, n)
	for i := range skills {
		skills[i] = filepath.Join(dir, fmt.Sprintf("trivial-%02d", i))
		os.MkdirAll(skills[i], 0o755)
		md := fmt.Sprintf("---\nname: trivial-%02d\ndescription: echo\n---\n\n```bash\necho hello %d\n```\n", i, i)
		if err := os.WriteFile(filepath.Join(skills[i], "SKILL.md"), []byte(md), 0o644); err != nil {
			return err
		}
	}
	stamp := time.Now().Format("150405")
	plan := func(id string, skill string) traceplan.Plan {
		p := traceplan.Plan{TraceID: id, SkillPath: skill, Driver: traceplan.Driver{Kind: traceplan.DriverLiteral},
			Limits: traceplan.DefaultLimits(), Stealth: traceplan.StealthOff}
		p.Limits.Grace = 0
		return p
	}
	r := &orchestrator.Runner{Runtime: rt, Binary: bin}
	// The image is built (or found) once, by a first trace outside both
	// measurements.
	if _, err := r.Run(ctx, plan("sweepbench-"+stamp+"-warmup", skills[0]), ""); err != nil {
		return fmt.Errorf("warm-up trace: %w", err)
	}

	if cold {
		m := measure()
		for i, s := range skills {
			if _, err := r.Run(ctx, plan(fmt.Sprintf("sweepbench-%s-cold-%d", stamp, i), s), ""); err != nil {
				return fmt.Errorf("cold trace %d: %w", i, err)
			}
		}
		m.report("sequential cold", n)
	}

	m := measure()
	pool, err := orchestrator.NewPool(ctx, r, plan("sweepbench-"+stamp+"-pool", skills[0]), size)
	if err != nil {
		return err
	}
	defer pool.Close()
	wr := *r
	wr.Pool = pool
	var mu sync.Mutex
	var claims []time.Duration
	var errs []string
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, s := range skills {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out, err := wr.Run(ctx, plan(fmt.Sprintf("sweepbench-%s-warm-%d", stamp, i), s), "")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err.Error())
				return
			}
			if d, ok := untilFirstCall(out.Phases); ok {
				claims = append(claims, d)
			}
		})
	}
	wg.Wait()
	m.report(fmt.Sprintf("pool of %d, %d at once", size, par), n)
	if len(claims) > 0 {
		slices.Sort(claims)
		fmt.Printf("  claim to first tool call: median %v, min %v, max %v (n=%d)\n", claims[len(claims)/2].Round(time.Millisecond),
			claims[0].Round(time.Millisecond), claims[len(claims)-1].Round(time.Millisecond), len(claims))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d warm traces failed: %s", len(errs), strings.Join(errs, "; "))
	}
	return pool.Close()
}

// untilFirstCall sums a warm trace's laps from its claim to its first tool
// call.
func untilFirstCall(phases []orchestrator.PhaseTime) (time.Duration, bool) {
	if len(phases) == 0 || phases[0].Phase != "claim" {
		return 0, false
	}
	var d time.Duration
	for _, p := range phases {
		d += p.Took
		if p.Phase == "first call" {
			return d, true
		}
	}
	return 0, false
}

type meter struct {
	start     time.Time
	busy, all uint64
	cpu       time.Duration
	load0     string
}

func measure() meter {
	busy, all := cpuTicks()
	return meter{start: time.Now(), busy: busy, all: all, cpu: selfCPU(), load0: loadavg()}
}

func (m meter) report(name string, n int) {
	d := time.Since(m.start)
	busy, all := cpuTicks()
	share := 0.0
	if all > m.all {
		share = float64(busy-m.busy) / float64(all-m.all)
	}
	fmt.Printf("%s: %d skills in %v = %.1f skills/min; host CPU busy %.0f%%, sandboxctl CPU %v, load %s -> %s\n",
		name, n, d.Round(time.Millisecond), float64(n)/d.Minutes(), share*100, (selfCPU() - m.cpu).Round(time.Millisecond), m.load0, loadavg())
}

// cpuTicks reads the host's busy and total CPU ticks from /proc/stat.
func cpuTicks() (busy, all uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, s := range f[1:] {
		var v uint64
		fmt.Sscan(s, &v)
		all += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, all
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
