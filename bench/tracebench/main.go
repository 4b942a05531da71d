// Command tracebench measures a whole `sandboxctl trace` of a trivial skill
// (one echo block, literal driver), from command start to report written,
// against the floor of two bare `docker run --rm` of the same image (a trace
// needs two containers), measured in the same run, and reports the ratio and
// sandboxctl's peak memory. It is run by `make bench`, not by the tests.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	image := strings.TrimSpace(string(out))
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
		if err := c.Run(); err != nil {
			return fmt.Errorf("trace: %w", err)
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
	return nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
