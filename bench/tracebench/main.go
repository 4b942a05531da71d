// Command tracebench measures a whole `sandboxctl trace` of a trivial skill
// (one echo block, literal driver), from command start to report written,
// against the floor of two bare `docker run --rm` of the same image (a trace
// needs two containers), measured in the same run, and reports the ratio,
// sandboxctl's peak memory, and the median time of each phase of the trace
// and of each timed step inside them (the "took" lines of SANDBOXCTL_DEBUG=1).
// It is run by `make bench`, not by the tests.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	bin := flag.String("bin", "bin/sandboxctl", "the sandboxctl binary")
	n := flag.Int("n", 5, "runs of each")
	flag.Parse()
	if err := run(*bin, *n); err != nil {
		fmt.Fprintln(os.Stderr, "tracebench:", err)
		os.Exit(1)
	}
}

func run(bin string, n int) error {
	out, err := exec.Command(bin, "image", "build").Output()
	if err != nil {
		return fmt.Errorf("image build: %w", err)
	}
	// The sandbox image (first line; the second is the agent image, the
	// same image with the binary baked in).
	image, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	dir, err := os.MkdirTemp("", "tracebench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	skill := filepath.Join(dir, "trivial")
	os.MkdirAll(skill, 0o755)
	os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: trivial\ndescription: echo\n---\n\n```bash\necho hello\n```\n"), 0o644)

	label := fmt.Sprintf("sandboxctl.trace=bench-%d", os.Getpid())
	var floor, traces []time.Duration
	var peakKB int64
	steps := map[string][]time.Duration{}
	var order []string
	for i := 0; i < n; i++ {
		start := time.Now()
		for j := 0; j < 2; j++ {
			c := exec.Command("docker", "run", "--rm", "--network", "none", "--label", label, image, "true")
			if b, err := c.CombinedOutput(); err != nil {
				return fmt.Errorf("docker run: %v: %s", err, b)
			}
		}
		floor = append(floor, time.Since(start))

		start = time.Now()
		c := exec.Command(bin, "trace", "--out", filepath.Join(dir, fmt.Sprint("run", i)), "--format", "json", skill)
		c.Stdout = nil
		var stderr bytes.Buffer
		c.Stderr = &stderr
		c.Env = append(os.Environ(), "SANDBOXCTL_DEBUG=1")
		if err := c.Run(); err != nil {
			return fmt.Errorf("trace: %w: %s", err, tailOf(stderr.String(), 2000))
		}
		for _, s := range tookLines(stderr.String()) {
			if _, ok := steps[s.name]; !ok {
				order = append(order, s.name)
			}
			steps[s.name] = append(steps[s.name], s.took)
		}
		traces = append(traces, time.Since(start))
		if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peakKB = max(peakKB, ru.Maxrss)
		}
	}
	mf, mt := median(floor), median(traces)
	fmt.Printf("floor (2x docker run --rm %s true): median %v over %d\n", image, mf.Round(time.Millisecond), n)
	fmt.Printf("trace (trivial skill, literal driver): median %v over %d\n", mt.Round(time.Millisecond), n)
	fmt.Printf("ratio trace/floor: %.2f\n", float64(mt)/float64(mf))
	fmt.Printf("sandboxctl peak RSS: %.1f MiB\n", float64(peakKB)/1024)
	fmt.Println("median per phase (phase NAME) and timed step inside it:")
	for _, name := range order {
		fmt.Printf("  %-40s %8v  (n=%d)\n", name, median(steps[name]).Round(time.Millisecond), len(steps[name]))
	}
	return nil
}

type step struct {
	name string
	took time.Duration
}

var (
	msgRe  = regexp.MustCompile(`\bmsg=("[^"]*"|\S+)`)
	nameRe = regexp.MustCompile(`\bname=("[^"]*"|\S+)`)
	tookRe = regexp.MustCompile(`\btook=(\S+)`)
)

// tookLines reads the debug log's lines that carry a "took" duration:
// "phase" lines by their phase name, the others by their message.
func tookLines(log string) []step {
	var out []step
	for _, line := range strings.Split(log, "\n") {
		t, m := tookRe.FindStringSubmatch(line), msgRe.FindStringSubmatch(line)
		if t == nil || m == nil {
			continue
		}
		d, err := time.ParseDuration(t[1])
		if err != nil {
			continue
		}
		name := strings.Trim(m[1], `"`)
		if n := nameRe.FindStringSubmatch(line); name == "phase" && n != nil {
			name = "phase " + strings.Trim(n[1], `"`)
		}
		out = append(out, step{name: name, took: d})
	}
	return out
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
