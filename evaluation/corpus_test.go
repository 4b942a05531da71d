package evaluation_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/evaluation"
	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// The CI sample: fixed, stratified, the same skills on every run.
const (
	sharedSample = 40 // skills of ../shared/corpus
	evalSample   = 38 // skills of eval/: one per family and label
	// samplePar traces run at once. Measured on the shared 2-core machine
	// (load average about 12 from other work): 40 shared skills in 6m43s
	// with 3, 7m45s with 4 (CPU contention), 24 eval/ skills in 3m36s.
	samplePar = 3
)

// TestCorpusSample runs a fixed, stratified sample of the shared corpus of
// real skills end to end (real engine, jail, literal driver, rules) and
// fails on any benign skill judged malicious and on any trace that gives no
// report. It skips without the shared corpus (unless
// SANDBOXCTL_REQUIRE_CORPUS=1) or without an engine (unless
// SANDBOXCTL_REQUIRE_DOCKER=1).
func TestCorpusSample(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end corpus traces skipped in -short mode")
	}
	manifest := testenv.SharedCorpus(t)
	cases, err := evaluation.ReadManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	runSample(t, evaluation.Sample(cases, sharedSample, evaluation.DefaultSeed))
}

// TestEvalCorpusSample does the same with a sample of eval/, the project's
// own corpus, and also fails on any skill that does not get one of the
// verdicts its manifest expects.
func TestEvalCorpusSample(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end corpus traces skipped in -short mode")
	}
	cases, err := evaluation.ReadManifest("../eval/manifest.tsv")
	if err != nil {
		t.Fatal(err)
	}
	runSample(t, evaluation.Sample(cases, evalSample, evaluation.DefaultSeed))
}

// runSample traces cases through the real pipeline and checks the results.
func runSample(t *testing.T, cases []evaluation.Case) {
	t.Helper()
	rt := testenv.RequireDocker(t)
	image := testenv.Image(t)
	bin := testenv.SandboxctlBinary(t)

	plan := traceplan.Plan{
		SkillPath: "-", TraceID: "set-per-case",
		Driver: traceplan.Driver{Kind: traceplan.DriverLiteral},
		Limits: traceplan.DefaultLimits(),
		Image:  image,
	}
	plan.Limits.Timeout = 3 * time.Minute
	ids := map[string]string{}
	for _, c := range cases {
		id := testenv.TraceID(t)
		ids[c.ID()] = id
		testenv.CleanupLabel(t, id)
	}

	// A bound on the sample, under make test's own 40 minutes: it takes 12
	// minutes beside the other packages' tests on a 2-core machine, and
	// more than 20 when the machine is busier than that.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	start := time.Now()
	results, err := evaluation.Run(ctx, cases, evaluation.Options{
		Tracer:   &orchestrator.Runner{Runtime: rt, Binary: bin, Version: "test"},
		Plan:     plan,
		TraceID:  func(c evaluation.Case) string { return ids[c.ID()] }, // read-only from here on
		Parallel: samplePar,
		Progress: func(done, total int, r evaluation.Result) {
			t.Logf("[%d/%d] %s/%s %s: %s %v (%.0fs)", done, total, r.Corpus, r.Slug, r.Label, r.Verdict, r.Deciding, float64(r.DurationMS)/1000)
		},
	})
	if err != nil {
		t.Fatalf("evaluation: %v", err)
	}
	t.Logf("%d skills in %s, %d at a time", len(results), time.Since(start).Round(time.Second), samplePar)
	rep := &evaluation.Report{Driver: "literal", Parallel: samplePar, Summary: evaluation.Summarize(results), Results: results}
	var table strings.Builder
	if err := evaluation.WriteText(&table, rep); err == nil {
		t.Logf("\n%s", table.String())
	}

	for _, r := range results {
		switch {
		case r.Verdict == evaluation.VerdictError:
			t.Errorf("%s/%s: the trace gave no report: %s", r.Corpus, r.Slug, r.Error)
		case r.Label == evaluation.Benign && r.Verdict == string(rules.Malicious):
			t.Errorf("%s/%s: benign skill judged malicious, decided by %s", r.Corpus, r.Slug, strings.Join(r.Deciding, ", "))
		case len(r.Expect) > 0 && !slices.Contains(r.Expect, rules.Verdict(r.Verdict)):
			t.Errorf("%s/%s (%s, %s): verdict %s, want %s; decided by %v", r.Corpus, r.Slug, r.Label, r.Group,
				r.Verdict, verdicts(r.Expect), r.Deciding)
		}
	}
}

func verdicts(vs []rules.Verdict) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, "|")
}
