package evaluation_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/evaluation"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/traceplan"
	"github.com/sandboxctl/sandboxctl/tracing"
)

// fakeTracer answers each slug with a scripted report, counting how many
// traces run at once.
type fakeTracer struct {
	reports map[string]*reports.Report
	errs    map[string]error
	delay   time.Duration
	running atomic.Int32
	peak    atomic.Int32
	mu      sync.Mutex
	dirs    []string
}

// slugOf is the slug in a trace id Run made: eval-<slug>-<random>.
func slugOf(id string) string {
	id = strings.TrimPrefix(id, "eval-")
	return id[:strings.LastIndex(id, "-")]
}

func (f *fakeTracer) Trace(ctx context.Context, p traceplan.Plan, dir string) (*reports.Report, error) {
	slug := slugOf(p.TraceID)
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	select {
	case <-time.After(f.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if dir != "" {
		f.mu.Lock()
		f.dirs = append(f.dirs, dir)
		f.mu.Unlock()
	}
	rep, ok := f.reports[slug]
	if !ok && f.errs[slug] == nil {
		rep = report(rules.Clean)
	}
	return rep, f.errs[slug]
}

func finding(id string, sev rules.Severity, conf rules.Confidence) rules.Finding {
	return rules.Finding{RuleID: id, Severity: sev, Confidence: conf}
}

func report(v rules.Verdict, fs ...rules.Finding) *reports.Report {
	return &reports.Report{Verdict: v, Status: reports.StatusCompleted, Findings: fs, DurationMS: 1500, ToolCalls: make([]reports.ToolCall, 2)}
}

func TestRun(t *testing.T) {
	cases := []evaluation.Case{
		{Corpus: "c", Slug: "weather", Label: "benign", Category: "web-api"},
		{Corpus: "c", Slug: "stealer", Label: "malicious", Category: "other", Family: "exfiltration"},
		{Corpus: "c", Slug: "broken", Label: "malicious", Category: "other"},
		{Corpus: "c", Slug: "partial", Label: "benign", Category: "git"},
	}
	ft := &fakeTracer{
		delay: 20 * time.Millisecond,
		reports: map[string]*reports.Report{
			"weather": report(rules.Suspicious, finding("SBX-NET-001", rules.Medium, rules.ConfMedium), finding("SBX-INFO-1", rules.Info, rules.ConfHigh)),
			"stealer": report(rules.Malicious,
				finding("SBX-EXFIL-001", rules.Critical, rules.ConfHigh), finding("SBX-CRED-001", rules.High, rules.ConfHigh),
				finding("SBX-EXFIL-002", rules.Critical, rules.ConfMedium), finding("SBX-EXFIL-001", rules.Critical, rules.ConfHigh)),
			"partial": {Verdict: rules.Inconclusive, Status: reports.StatusError, Error: "jail stopped"},
		},
		errs: map[string]error{"broken": errors.New("create sandbox: no such image"), "partial": errors.New("jail: stopped")},
	}
	var progress []string
	got, err := evaluation.Run(t.Context(), cases, evaluation.Options{
		Tracer: ft, Parallel: 2,
		Progress: func(done, total int, r evaluation.Result) {
			progress = append(progress, fmt.Sprintf("%d/%d", done, total))
		},
		Now: func() time.Time { return time.Unix(0, 0) },
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []evaluation.Result{
		{Corpus: "c", Slug: "weather", Label: "benign", Group: "web-api", Category: "web-api", Verdict: "suspicious", Status: "completed",
			Rules: []string{"SBX-INFO-1", "SBX-NET-001"}, Deciding: []string{"SBX-NET-001"}, ToolCalls: 2, DurationMS: 1500},
		{Corpus: "c", Slug: "stealer", Label: "malicious", Group: "exfiltration", Category: "other", Family: "exfiltration", Verdict: "malicious", Status: "completed",
			Rules: []string{"SBX-CRED-001", "SBX-EXFIL-001", "SBX-EXFIL-002"}, Deciding: []string{"SBX-EXFIL-001"}, ToolCalls: 2, DurationMS: 1500},
		{Corpus: "c", Slug: "broken", Label: "malicious", Group: "other", Category: "other", Verdict: "error",
			Error: "create sandbox: no such image", Rules: []string{}, Deciding: []string{}},
		{Corpus: "c", Slug: "partial", Label: "benign", Group: "git", Category: "git", Verdict: "inconclusive", Status: "error",
			Error: "jail: stopped", Rules: []string{}, Deciding: []string{}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Run() mismatch (-want +got):\n%s", diff)
	}
	if p := ft.peak.Load(); p > 2 {
		t.Errorf("%d traces ran at once, want at most 2", p)
	}
	if diff := cmp.Diff([]string{"1/4", "2/4", "3/4", "4/4"}, progress); diff != "" {
		t.Errorf("progress mismatch (-want +got):\n%s", diff)
	}
	if len(ft.dirs) != 0 {
		t.Errorf("run folders %v asked for without KeepRuns", ft.dirs)
	}
}

func TestRunKeepRuns(t *testing.T) {
	keep := t.TempDir()
	stale := filepath.Join(keep, "c", "a", "old.txt")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ft := &fakeTracer{reports: map[string]*reports.Report{"a": report(rules.Clean)}}
	got, err := evaluation.Run(t.Context(), []evaluation.Case{{Corpus: "c", Slug: "a", Label: "benign"}},
		evaluation.Options{Tracer: ft, KeepRuns: keep})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(keep, "c", "a")
	if len(ft.dirs) != 1 || ft.dirs[0] != want || got[0].RunDir != want {
		t.Errorf("run folders %v, result's %q; want %s", ft.dirs, got[0].RunDir, want)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a file of an earlier run folder is still there: %v", err)
	}
}

func TestRunCancelled(t *testing.T) {
	var cases []evaluation.Case
	for i := range 20 {
		cases = append(cases, evaluation.Case{Corpus: "c", Slug: fmt.Sprint("s", i), Label: "benign"})
	}
	ctx, cancel := context.WithCancel(t.Context())
	ft := &fakeTracer{delay: 30 * time.Millisecond}
	got, err := evaluation.Run(ctx, cases, evaluation.Options{
		Tracer: ft, Parallel: 2,
		Progress: func(done, total int, r evaluation.Result) {
			if done == 3 {
				cancel()
			}
		},
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run err = %v, want context.Canceled", err)
	}
	if len(got) < 3 || len(got) >= len(cases) {
		t.Errorf("Run returned %d results after a cancel at 3, want the finished ones only", len(got))
	}
	for _, r := range got {
		if r.Verdict == evaluation.VerdictError {
			t.Errorf("%s: a cancelled trace counted as a failure", r.Slug)
		}
	}
	if n := ft.running.Load(); n != 0 {
		t.Errorf("%d traces still running after Run returned", n)
	}
}

// TestRunPlans: each case is traced with the template plan, its folder as
// the skill and a trace id of its own, with the prefix asked for.
func TestRunPlans(t *testing.T) {
	var mu sync.Mutex
	plans := map[string]traceplan.Plan{}
	tr := tracing.Func(func(ctx context.Context, p traceplan.Plan, dir string) (*reports.Report, error) {
		mu.Lock()
		plans[p.SkillPath] = p
		mu.Unlock()
		return report(rules.Clean), nil
	})
	tmpl := traceplan.Plan{Driver: traceplan.Driver{Kind: traceplan.DriverLiteral}, Limits: traceplan.DefaultLimits(), Image: "img:1",
		TraceID: "template", SkillPath: "/template"}
	cases := []evaluation.Case{{Corpus: "c", Slug: "Weather API", Label: "benign", Dir: "/corpus/weather"},
		{Corpus: "c", Slug: "stealer", Label: "malicious", Dir: "/corpus/stealer"}}
	if _, err := evaluation.Run(t.Context(), cases, evaluation.Options{Tracer: tr, Plan: tmpl, TraceIDPrefix: "Night"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		p := plans[c.Dir]
		if !regexp.MustCompile(`^night-` + strings.ReplaceAll(strings.ToLower(c.Slug), " ", "-") + `-[0-9a-f]{8}$`).MatchString(p.TraceID) {
			t.Errorf("%s: trace id %q", c.Slug, p.TraceID)
		}
		want := tmpl
		want.SkillPath, want.TraceID = c.Dir, p.TraceID
		if diff := cmp.Diff(want, p); diff != "" {
			t.Errorf("%s: plan mismatch (-want +got):\n%s", c.Slug, diff)
		}
	}
}

func TestRunNeedsTracer(t *testing.T) {
	if _, err := evaluation.Run(t.Context(), nil, evaluation.Options{}); err == nil {
		t.Error("Run without a tracer: no error")
	}
}

// TestRescore: the rules run again on a kept run folder whose stored
// verdict is stale, the verdict comes from the events, and the kept folder
// itself is left as it was.
func TestRescore(t *testing.T) {
	b, err := os.ReadFile("../reports/testdata/canary-exfil.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var rep reports.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	from := t.TempDir()
	src := filepath.Join(from, "c", "leaky")
	stale := rep
	stale.Verdict, stale.Findings = rules.Clean, nil // what an older rule set said
	if err := reports.WriteRunDir(src, &stale, nil); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(src, reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	cases := []evaluation.Case{{Corpus: "c", Slug: "leaky", Label: "malicious"}, {Corpus: "c", Slug: "never-kept", Label: "benign"}}
	for _, keep := range []string{"", t.TempDir()} {
		got, err := evaluation.Run(t.Context(), cases, evaluation.Options{Rescore: &evaluation.Rescorer{From: from}, KeepRuns: keep})
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Verdict != string(rep.Verdict) || got[0].Verdict != string(rules.Malicious) {
			t.Errorf("keep %q: rescored verdict %s, want %s (the run's own)", keep, got[0].Verdict, rep.Verdict)
		}
		if got[1].Verdict != evaluation.VerdictError {
			t.Errorf("keep %q: a skill with no kept run got %s, want %s", keep, got[1].Verdict, evaluation.VerdictError)
		}
		if after, _ := os.ReadFile(filepath.Join(src, reports.FileJSON)); string(after) != string(before) {
			t.Errorf("keep %q: the kept run folder was changed", keep)
		}
	}
}
