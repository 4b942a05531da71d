package evaluation_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/evaluation"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/sweep"
	"github.com/sandboxctl/sandboxctl/traceplan"
	"github.com/sandboxctl/sandboxctl/tracing"
)

// sweepTracer is a fake tracer of a sweep: it answers each skill (by its
// folder's name) with a scripted report, fails[name] times first with an
// error (the trace could not observe), and writes the report to the run
// folder.
type sweepTracer struct {
	reports map[string]*reports.Report
	fails   map[string]int
	block   chan struct{} // when set, traces wait on it or ctx
	mu      sync.Mutex
	calls   map[string]int
}

func (f *sweepTracer) Trace(ctx context.Context, p traceplan.Plan, dir string) (*reports.Report, error) {
	name := filepath.Base(p.SkillPath)
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[name]++
	n := f.calls[name]
	f.mu.Unlock()
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if n <= f.fails[name] {
		return &reports.Report{Verdict: rules.Inconclusive, Status: reports.StatusError, Error: "engine went away"},
			errors.New("create sandbox: engine went away")
	}
	rep, ok := f.reports[name]
	if !ok {
		rep = report(rules.Clean)
	}
	cp := *rep
	cp.TraceID = p.TraceID
	if err := reports.WriteRunDir(dir, &cp, nil); err != nil {
		return nil, err
	}
	return &cp, nil
}

func (f *sweepTracer) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

// miniCorpus writes a manifest and its skills and returns the cases.
func miniCorpus(t *testing.T, rows map[string]string) []evaluation.Case {
	t.Helper()
	root := filepath.Join(t.TempDir(), "mini")
	var b strings.Builder
	b.WriteString("slug\tlabel\tcategory\n")
	for _, slug := range sortedKeys(rows) {
		fmt.Fprintf(&b, "%s\t%s\tother\n", slug, rows[slug])
		dir := filepath.Join(root, "skills", slug)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		md := "---\nname: " + slug + "\ndescription: test skill " + slug + "\n---\n\n```sh\necho " + slug + "\n```\n"
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "manifest.tsv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cases, err := evaluation.ReadManifest(filepath.Join(root, "manifest.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// sweepOpts are the options of an evaluation through a sweep in dir.
func sweepOpts(t *testing.T, dir string, tr tracing.Tracer) evaluation.SweepOptions {
	t.Helper()
	st, err := sweep.OpenStore(t.Context(), filepath.Join(dir, sweep.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return evaluation.SweepOptions{
		Engine: sweep.Options{Dir: dir, Store: st, Tracer: tr, Parallel: 2, MaxAttempts: 3,
			Backoff: time.Millisecond, MaxBackoff: time.Millisecond, TraceIDPrefix: "eval"},
		PlanHash: strings.Repeat("ab", 32), Image: "sha256:img",
		Run: sweep.RunInfo{Sources: []string{"mini/manifest.tsv"}, Version: "test", Driver: "literal"},
	}
}

func TestRunSweep(t *testing.T) {
	cases := miniCorpus(t, map[string]string{
		"weather": "benign", "stealer": "malicious", "flaky": "benign", "broken": "malicious",
	})
	ft := &sweepTracer{
		reports: map[string]*reports.Report{
			"weather": report(rules.Suspicious, finding("SBX-NET-001", rules.Medium, rules.ConfMedium), finding("SBX-INFO-1", rules.Info, rules.ConfHigh)),
			"stealer": report(rules.Malicious, finding("SBX-EXFIL-001", rules.Critical, rules.ConfHigh), finding("SBX-CRED-001", rules.High, rules.ConfHigh)),
		},
		fails: map[string]int{"flaky": 1, "broken": 99},
	}
	dir := t.TempDir()
	opt := sweepOpts(t, dir, ft)
	var progress, retries []string
	var begun evaluation.SweepBegun
	opt.Begun = func(b evaluation.SweepBegun) { begun = b }
	opt.Progress = func(done, total int, r evaluation.Result) {
		progress = append(progress, fmt.Sprintf("%d/%d %s %s", done, total, r.Slug, r.Verdict))
	}
	opt.Retry = func(done, total int, c evaluation.Case, attempt int, why string) {
		retries = append(retries, fmt.Sprintf("%s %d", c.Slug, attempt))
	}
	got, runID, err := evaluation.RunSweep(t.Context(), cases, opt)
	if err != nil {
		t.Fatalf("RunSweep: %v", err)
	}
	if begun.RunID != runID || begun.Total != 4 || begun.Queued != 4 || begun.Reused != 0 || begun.Resumed {
		t.Errorf("begun %+v, run %s", begun, runID)
	}
	by := map[string]evaluation.Result{}
	for _, r := range got {
		by[r.Slug] = r
	}
	if len(got) != 4 {
		t.Fatalf("%d results, want 4", len(got))
	}
	for i, c := range cases {
		if got[i].Slug != c.Slug {
			t.Errorf("result %d is %s, want %s (the cases' order)", i, got[i].Slug, c.Slug)
		}
	}
	for _, tc := range []struct {
		slug, verdict string
		deciding      []string
		attempts      int
		errPart       string
	}{
		{"weather", "suspicious", []string{"SBX-NET-001"}, 1, ""},
		{"stealer", "malicious", []string{"SBX-EXFIL-001"}, 1, ""},
		{"flaky", "clean", []string{}, 2, ""},
		{"broken", "inconclusive", []string{}, 3, "gave up after 3 attempts: create sandbox: engine went away"},
	} {
		r := by[tc.slug]
		if r.Verdict != tc.verdict || fmt.Sprint(r.Deciding) != fmt.Sprint(tc.deciding) || r.Attempts != tc.attempts || r.Cached ||
			r.Corpus != "mini" || r.Label == "" || r.Group != "other" || r.Rules == nil {
			t.Errorf("%s: %+v, want verdict %s deciding %v after %d attempts", tc.slug, r, tc.verdict, tc.deciding, tc.attempts)
		}
		if !strings.Contains(r.Error, tc.errPart) || (tc.errPart == "" && r.Error != "") {
			t.Errorf("%s: error %q, want %q", tc.slug, r.Error, tc.errPart)
		}
		if tc.verdict != "inconclusive" {
			if _, err := os.Stat(filepath.Join(r.RunDir, reports.FileJSON)); err != nil || !strings.HasPrefix(r.RunDir, filepath.Join(dir, "runs")) {
				t.Errorf("%s: run folder %q: %v", tc.slug, r.RunDir, err)
			}
		}
	}
	if by["weather"].ToolCalls != 2 || by["weather"].DurationMS != 1500 || by["weather"].Status != "completed" {
		t.Errorf("weather: %+v", by["weather"])
	}
	if len(progress) != 4 || !strings.HasPrefix(progress[3], "4/4 ") {
		t.Errorf("progress %v, want four lines ending at 4/4", progress)
	}
	if len(retries) != 3 { // flaky once, broken twice
		t.Errorf("retries %v, want 3", retries)
	}

	t.Run("second evaluation reuses", func(t *testing.T) {
		opt := sweepOpts(t, dir, ft)
		var b evaluation.SweepBegun
		opt.Begun = func(x evaluation.SweepBegun) { b = x }
		n := 0
		opt.Progress = func(done, total int, r evaluation.Result) { n++ }
		before := ft.count("weather") + ft.count("stealer") + ft.count("flaky")
		again, _, err := evaluation.RunSweep(t.Context(), cases, opt)
		if err != nil {
			t.Fatal(err)
		}
		after := ft.count("weather") + ft.count("stealer") + ft.count("flaky")
		if after != before {
			t.Errorf("%d traces of judged skills, want none", after-before)
		}
		// The failed skill is tried anew; the three judged ones are reused.
		if b.Reused != 3 || b.Queued != 1 || n != 4 {
			t.Errorf("begun %+v, %d progress lines; want 3 reused, 1 queued, 4 lines", b, n)
		}
		for _, r := range again {
			if r.Slug != "broken" && (!r.Cached || r.Verdict != by[r.Slug].Verdict || r.RunDir != by[r.Slug].RunDir) {
				t.Errorf("%s: %+v, want the earlier result, cached", r.Slug, r)
			}
		}
		opt = sweepOpts(t, dir, ft)
		opt.Force = true
		if _, _, err := evaluation.RunSweep(t.Context(), cases, opt); err != nil {
			t.Fatal(err)
		}
		if ft.count("weather") != 2 {
			t.Errorf("--force: weather traced %d times in all, want 2", ft.count("weather"))
		}
	})
}

// TestRunSweepResume: an evaluation stopped midway is refused without
// Resume, and Resume finishes it with every skill judged once.
func TestRunSweepResume(t *testing.T) {
	cases := miniCorpus(t, map[string]string{"a": "benign", "b": "benign", "c": "malicious", "d": "benign"})
	dir := t.TempDir()
	block := make(chan struct{})
	ft := &sweepTracer{block: block}
	opt := sweepOpts(t, dir, ft)
	opt.Engine.Parallel = 1
	ctx, cancel := context.WithCancel(t.Context())
	opt.Progress = func(done, total int, r evaluation.Result) {
		if done == 2 {
			cancel()
		}
	}
	go func() {
		for range 2 {
			block <- struct{}{}
		}
	}()
	got, runID, err := evaluation.RunSweep(ctx, cases, opt)
	if !errors.Is(err, context.Canceled) || len(got) != 2 {
		t.Fatalf("stopped run: %d results, err %v; want 2 and context.Canceled", len(got), err)
	}
	if _, _, err := evaluation.RunSweep(t.Context(), cases, sweepOpts(t, dir, ft)); !errors.Is(err, evaluation.ErrUnfinished) {
		t.Errorf("a new evaluation over an unfinished one: %v, want ErrUnfinished", err)
	}
	other := sweepOpts(t, dir, ft)
	other.Resume = true
	if _, _, err := evaluation.RunSweep(t.Context(), cases[:3], other); !errors.Is(err, evaluation.ErrResumeMismatch) {
		t.Errorf("resume with other cases: %v, want ErrResumeMismatch", err)
	}
	other = sweepOpts(t, dir, ft)
	other.Resume, other.PlanHash = true, strings.Repeat("cd", 32)
	if _, _, err := evaluation.RunSweep(t.Context(), cases, other); !errors.Is(err, evaluation.ErrResumeMismatch) {
		t.Errorf("resume with other settings: %v, want ErrResumeMismatch", err)
	}

	close(block)
	opt = sweepOpts(t, dir, ft)
	opt.Resume = true
	var b evaluation.SweepBegun
	opt.Begun = func(x evaluation.SweepBegun) { b = x }
	got, id, err := evaluation.RunSweep(t.Context(), cases, opt)
	if err != nil {
		t.Fatal(err)
	}
	if id != runID || !b.Resumed || b.Queued != 2 || len(got) != 4 {
		t.Errorf("resume: run %s (want %s), begun %+v, %d results", id, runID, b, len(got))
	}
	for _, c := range cases {
		if n := ft.count(c.Slug); n != 1 {
			t.Errorf("%s traced %d times, want once", c.Slug, n)
		}
	}
	// Finished: a new evaluation starts without Resume.
	if _, _, err := evaluation.RunSweep(t.Context(), cases, sweepOpts(t, dir, ft)); err != nil {
		t.Errorf("a new evaluation after a finished one: %v", err)
	}
}

// TestRescoreSweepFolder: --rescore reads the run folders of the sweep
// folder an evaluation kept, as well as the older <corpus>/<slug> layout
// (TestRescore).
func TestRescoreSweepFolder(t *testing.T) {
	b, err := os.ReadFile("../reports/testdata/canary-exfil.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var rep reports.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	stale := rep
	stale.Verdict, stale.Findings = rules.Clean, nil // what an older rule set said
	cases := miniCorpus(t, map[string]string{"leaky": "malicious", "quiet": "benign"})
	dir := t.TempDir()
	ft := &sweepTracer{reports: map[string]*reports.Report{"leaky": &stale}}
	if _, _, err := evaluation.RunSweep(t.Context(), cases[:1], sweepOpts(t, dir, ft)); err != nil {
		t.Fatal(err)
	}
	runs, err := evaluation.KeptRuns(t.Context(), dir)
	if err != nil || len(runs) != 1 {
		t.Fatalf("KeptRuns: %v %v", runs, err)
	}
	got, err := evaluation.Run(t.Context(), cases, evaluation.Options{Rescore: &evaluation.Rescorer{From: dir}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Slug != "leaky" || got[0].Verdict != string(rules.Malicious) {
		t.Errorf("rescored %s: %s, want malicious (the run's own events)", got[0].Slug, got[0].Verdict)
	}
	if got[1].Verdict != evaluation.VerdictError || !strings.Contains(got[1].Error, "no kept run") {
		t.Errorf("a case the sweep never ran: %+v, want error no kept run", got[1])
	}
	if m, err := evaluation.KeptRuns(t.Context(), t.TempDir()); err != nil || len(m) != 0 {
		t.Errorf("a folder without a sweep: %v %v, want nothing", m, err)
	}
}
