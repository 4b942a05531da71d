package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/sweep"
)

// sweepSources are the end-to-end sweep's sources: the project's own
// example skills (a folder of skills) and a list file naming three of
// eval/'s. 12 skills, malicious and benign.
func sweepSources(t *testing.T) []string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(t.TempDir(), "eval-three.txt")
	body := "# three of eval/\n"
	for _, s := range []string{"pdf-merge-pro", "rust-toolchain-setup", "weather-forecast"} {
		body += filepath.Join(root, "eval", "skills", s) + "\n"
	}
	if err := os.WriteFile(list, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{filepath.Join(root, "examples", "skills"), list}
}

// sweepRun runs the sandboxctl binary and returns its exit code and
// output.
func sweepRun(t *testing.T, ctx context.Context, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.Run()
	return cmd.ProcessState.ExitCode(), so.String(), se.String()
}

func sweepResults(t *testing.T, dir string) []sweep.Result {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, sweep.FileResults))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := sweep.ReadResults(f)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// cleanupPrefix removes, before and after, every container whose trace id
// starts with prefix (the sweep's --trace-prefix): by label value only.
func cleanupPrefix(t *testing.T, prefix string) {
	rt := testenv.RequireDocker(t)
	gc := func() {
		out, err := exec.Command("docker", "ps", "-a", "--filter", "label="+orchestrator.LabelTrace,
			"--format", `{{.Label "`+orchestrator.LabelTrace+`"}}`).Output()
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		seen := map[string]bool{}
		for _, id := range strings.Fields(string(out)) {
			if strings.HasPrefix(id, prefix+"-") && !seen[id] {
				seen[id] = true
				if _, err := rt.GC(ctx, id); err != nil {
					t.Errorf("cleanup %s: %v", id, err)
				}
			}
		}
	}
	gc()
	t.Cleanup(gc)
}

func leftovers(t *testing.T, prefix string) []string {
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label="+orchestrator.LabelTrace,
		"--format", `{{.Label "`+orchestrator.LabelTrace+`"}}`).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	var got []string
	for _, id := range strings.Fields(string(out)) {
		if strings.HasPrefix(id, prefix+"-") {
			got = append(got, id)
		}
	}
	return got
}

func newPrefix(t *testing.T) string {
	var b [3]byte
	rand.Read(b[:])
	p := "swt" + hex.EncodeToString(b[:])
	cleanupPrefix(t, p)
	return p
}

// TestSweepEndToEnd sweeps 12 skills on the real engine with --parallel 3
// through 2 warm pairs and checks the verdicts against single (cold)
// traces, a second sweep that runs nothing, kill -9 and --resume, export,
// and two shards merged.
func TestSweepEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	testenv.Image(t)
	bin := testenv.SandboxctlBinary(t)
	srcs := sweepSources(t)
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Minute)
	defer cancel()
	prefix := newPrefix(t)
	common := []string{"--timeout", "3m", "--trace-prefix", prefix}

	out := filepath.Join(t.TempDir(), "sweep")
	start := time.Now()
	code, so, se := sweepRun(t, ctx, bin, append(append([]string{"sweep", "--parallel", "3", "--warm", "2", "--out", out}, common...), srcs...)...)
	sweepTime := time.Since(start)
	if code != exitFindings {
		t.Fatalf("sweep exit %d, want 1 (malicious skills found)\nstdout:\n%s\nstderr:\n%s", code, so, se)
	}
	res := sweepResults(t, out)
	if len(res) != 12 {
		t.Fatalf("%d results, want 12", len(res))
	}
	for _, r := range res {
		if r.Status != sweep.StatusDone || r.DoneCount != 1 || r.Cached {
			t.Errorf("%s: status %s, recorded %d times, cached %v (%s)", r.Skill.ID, r.Status, r.DoneCount, r.Cached, r.Error)
		}
		if _, err := os.Stat(filepath.Join(out, r.RunDir, "report.json")); err != nil {
			t.Errorf("%s: %v", r.Skill.ID, err)
		}
	}
	for _, f := range []string{sweep.FileSummary, sweep.FileIndex} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	t.Logf("sweep of 12 skills, --parallel 3 --warm 2: %v", sweepTime.Round(time.Second))

	// Checked against single traces: four of the twelve, malicious and
	// clean, from both sources (every example's single-trace verdict is
	// also checked against its expect.json by the examples' end-to-end
	// test); tracing all twelve again would double the test's time in CI.
	single := map[string]bool{"aws-sync-helper": true, "hello-world": true, "weather-report": true, "pdf-merge-pro": true}
	t.Run("same verdicts as single traces", func(t *testing.T) {
		start := time.Now()
		for _, r := range res {
			if !single[filepath.Base(r.Skill.Path)] {
				continue
			}
			code, so, se := sweepRun(t, ctx, bin, "trace", "--format", "json", "--timeout", "3m", "--out", filepath.Join(t.TempDir(), "run"),
				"--trace-id", prefix+"-single-"+r.Key[:8], r.Skill.Path)
			if code == exitFailed {
				t.Errorf("%s: trace failed: %s", r.Skill.ID, se)
				continue
			}
			var rep struct {
				Verdict string `json:"verdict"`
			}
			if err := json.Unmarshal([]byte(so), &rep); err != nil {
				t.Errorf("%s: %v", r.Skill.ID, err)
				continue
			}
			if rep.Verdict != r.Verdict {
				t.Errorf("%s: sweep %s, single trace %s", r.Skill.ID, r.Verdict, rep.Verdict)
			}
		}
		t.Logf("%d single traces, one at a time: %v (sweep of 12: %v)", len(single), time.Since(start).Round(time.Second), sweepTime.Round(time.Second))
	})

	t.Run("second sweep runs nothing", func(t *testing.T) {
		code, so, se := sweepRun(t, ctx, bin, append(append([]string{"sweep", "--parallel", "3", "--out", out}, common...), srcs...)...)
		if code != exitFindings || !strings.Contains(se, "12 skill(s), 0 to trace") {
			t.Fatalf("exit %d\n%s\n%s", code, so, se)
		}
		var sum sweep.Summary
		b, _ := os.ReadFile(filepath.Join(out, sweep.FileSummary))
		if err := json.Unmarshal(b, &sum); err != nil {
			t.Fatal(err)
		}
		if sum.Traced != 0 || sum.Cached != 12 || sum.Diff == nil || len(sum.Diff.ChangedVerdicts) != 0 || len(sum.Diff.NewMalicious) != 0 {
			t.Errorf("summary %+v diff %+v", sum, sum.Diff)
		}
	})

	t.Run("export writes the malicious ones", func(t *testing.T) {
		to := t.TempDir()
		code, so, se := sweepRun(t, ctx, bin, "sweep", "export", out, "--to", to, "--osv")
		if code != exitClean {
			t.Fatalf("exit %d\n%s\n%s", code, so, se)
		}
		var want []string
		for _, r := range res {
			if r.Verdict == "malicious" {
				want = append(want, r.Skill.ID)
			}
		}
		if len(want) < 3 {
			t.Fatalf("only %d malicious skills among the 12: %v", len(want), want)
		}
		entries, _ := os.ReadDir(filepath.Join(to, sweep.ExportRoot))
		if len(entries) != len(want) {
			t.Errorf("%d examples exported, want %d", len(entries), len(want))
		}
		c := jsonschema.NewCompiler()
		doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader(sweep.ManifestSchema))
		c.AddResource("manifest.schema.json", doc)
		sch, err := c.Compile("manifest.schema.json")
		if err != nil {
			t.Fatal(err)
		}
		// Every planted value of every malicious trace: none may be
		// exported.
		var values []string
		for _, r := range res {
			b, err := os.ReadFile(filepath.Join(out, r.RunDir, "rules-input.json"))
			if err != nil {
				continue
			}
			var in struct {
				Canaries []struct {
					Value string `json:"value"`
				} `json:"canaries"`
			}
			json.Unmarshal(b, &in)
			for _, tk := range in.Canaries {
				if len(tk.Value) >= 12 {
					values = append(values, tk.Value)
				}
			}
		}
		if len(values) == 0 {
			t.Error("no planted values found in the run folders: the leak check would prove nothing")
		}
		var got []string
		for _, e := range entries {
			dir := filepath.Join(to, sweep.ExportRoot, e.Name())
			b, err := os.ReadFile(filepath.Join(dir, sweep.FileManifest))
			if err != nil {
				t.Fatal(err)
			}
			v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err := sch.Validate(v); err != nil {
				t.Errorf("%s: manifest: %v", e.Name(), err)
			}
			var m sweep.Manifest
			json.Unmarshal(b, &m)
			got = append(got, m.Skill.ID)
			if m.Verdict != "malicious" || m.TraceID != e.Name() || len(m.RuleIDs) == 0 {
				t.Errorf("%s: manifest %+v", e.Name(), m)
			}
			if _, err := os.Stat(filepath.Join(dir, sweep.FileOSV)); err != nil {
				t.Errorf("%s: %v", e.Name(), err)
			}
			filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, _ := os.ReadFile(p)
				for _, val := range values {
					if bytes.Contains(b, []byte(val)) {
						t.Errorf("%s holds a planted secret value", p)
					}
				}
				return nil
			})
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("exported %v, want %v", got, want)
		}
	})

	t.Run("kill -9 then resume", func(t *testing.T) {
		kout := filepath.Join(t.TempDir(), "killed")
		cmd := exec.CommandContext(ctx, bin, append(append([]string{"sweep", "--parallel", "2", "--lease", "20s", "--out", kout}, common...), srcs...)...)
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill it after its second verdict, with traces in flight.
		var mu sync.Mutex
		var lines []string
		killed := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(stderr)
			done := 0
			for sc.Scan() {
				mu.Lock()
				lines = append(lines, sc.Text())
				mu.Unlock()
				if strings.Contains(sc.Text(), "] ") && strings.Contains(sc.Text(), "sandboxctl: [") {
					done++
					if done == 2 {
						cmd.Process.Signal(syscall.SIGKILL)
						close(killed)
					}
				}
			}
			io.Copy(io.Discard, stderr)
		}()
		cmd.Wait()
		select {
		case <-killed:
		default:
			mu.Lock()
			t.Fatalf("the sweep ended before it could be killed:\n%s", strings.Join(lines, "\n"))
		}
		code, so, se := sweepRun(t, ctx, bin, append([]string{"sweep", "--resume", "--out", kout, "--parallel", "2", "--lease", "20s"}, common...)...)
		if code != exitFindings {
			t.Fatalf("resume exit %d\n%s\n%s", code, so, se)
		}
		kres := sweepResults(t, kout)
		if len(kres) != 12 {
			t.Fatalf("%d results after resume", len(kres))
		}
		retried := 0
		for _, r := range kres {
			if r.Status != sweep.StatusDone || r.DoneCount != 1 {
				t.Errorf("%s: %s, recorded %d times", r.Skill.ID, r.Status, r.DoneCount)
			}
			if r.Attempts > 1 {
				retried++
			}
			if !strings.HasSuffix(r.TraceID, fmt.Sprintf("-%d", r.Attempts)) {
				t.Errorf("%s: trace %s is not attempt %d", r.Skill.ID, r.TraceID, r.Attempts)
			}
		}
		if retried == 0 {
			t.Error("no skill was in flight at the kill: the test proves nothing about leases")
		}
		// One run folder per skill, each with its report.
		dirs, _ := os.ReadDir(filepath.Join(kout, "runs"))
		if len(dirs) != 12 {
			t.Errorf("%d run folders, want 12", len(dirs))
		}
		for _, r := range kres {
			var rep struct {
				TraceID string `json:"trace_id"`
			}
			b, err := os.ReadFile(filepath.Join(kout, r.RunDir, "report.json"))
			if err != nil || json.Unmarshal(b, &rep) != nil || rep.TraceID != r.TraceID {
				t.Errorf("%s: run folder's report is of trace %q, want %q (%v)", r.Skill.ID, rep.TraceID, r.TraceID, err)
			}
		}
		// The killed traces' containers were removed by the resume.
		if left := leftovers(t, prefix); len(left) > 0 {
			t.Errorf("containers left: %v", left)
		}
	})

	// The shards sweep the list file's three skills (each a separate
	// process), compared with those three of the unsharded sweep.
	t.Run("two shards merged equal one sweep", func(t *testing.T) {
		base := t.TempDir()
		listed := srcs[1:]
		var wg sync.WaitGroup
		codes := make([]int, 2)
		errs := make([]string, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i], _, errs[i] = sweepRun(t, ctx, bin, append(append([]string{"sweep", "--shard", fmt.Sprintf("%d/2", i),
					"--parallel", "1", "--out", filepath.Join(base, fmt.Sprint(i))}, common...), listed...)...)
			}()
		}
		wg.Wait()
		for i, c := range codes {
			if c != exitClean && c != exitFindings {
				t.Fatalf("shard %d: exit %d\n%s", i, c, errs[i])
			}
		}
		merged := filepath.Join(base, "merged")
		code, so, se := sweepRun(t, ctx, bin, "sweep", "merge", "--out", merged, filepath.Join(base, "0"), filepath.Join(base, "1"))
		if code != exitFindings {
			t.Fatalf("merge exit %d\n%s\n%s", code, so, se)
		}
		key := func(rs []sweep.Result) []string {
			var out []string
			for _, r := range rs {
				out = append(out, strings.Join([]string{r.Skill.ID, r.Skill.SHA256, r.Key, r.Status, r.Verdict}, " "))
			}
			slices.Sort(out)
			return out
		}
		var want []sweep.Result
		for _, r := range res {
			if !strings.HasPrefix(r.Skill.Path, filepath.Join(filepath.Dir(filepath.Dir(srcs[0])), "eval")) {
				continue
			}
			want = append(want, r)
		}
		if len(want) != 3 {
			t.Fatalf("%d of the unsharded results come from the list file, want 3", len(want))
		}
		if a, b := key(want), key(sweepResults(t, merged)); !slices.Equal(a, b) {
			t.Errorf("merged shards differ from the unsharded sweep:\n%s\n---\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
		}
	})
}
