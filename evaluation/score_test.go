package evaluation_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/evaluation"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.* files")

func res(corpus, slug, label, group, verdict string, deciding ...string) evaluation.Result {
	if deciding == nil {
		deciding = []string{}
	}
	return evaluation.Result{Corpus: corpus, Slug: slug, Label: label, Group: group, Verdict: verdict,
		Rules: deciding, Deciding: deciding, DurationMS: 1000}
}

// fixtureResults covers every kind of outcome in two corpora.
func fixtureResults() []evaluation.Result {
	exp := res("eval", "sync-notes", "malicious", "exfiltration", "suspicious", "SBX-CRED-001")
	exp.Expect = []rules.Verdict{rules.Malicious}
	twin := res("eval", "backup-home", "benign", "exfiltration", "clean")
	twin.Expect = []rules.Verdict{rules.Clean, rules.Suspicious}
	gated := res("eval", "night-report", "malicious", "gated", "suspicious", "SBX-PROBE-001")
	gated.Expect = []rules.Verdict{rules.Suspicious, rules.Malicious}
	prose := res("corpus", "docs", "benign", "docs", "inconclusive")
	prose.Cause = rules.CauseNeedsModel
	hidden := res("corpus", "hidden", "malicious", "installer", "inconclusive")
	hidden.Cause = rules.CauseToolMissing
	failed := res("corpus", "broken", "benign", "git", "error")
	failed.Error = "create sandbox: no such image | pipe"
	return []evaluation.Result{
		res("corpus", "weather", "benign", "web-api", "malicious", "SBX-EXEC-003"),
		res("corpus", "stocks", "benign", "web-api", "suspicious", "SBX-NET-002", "SBX-NET-003"),
		res("corpus", "maps", "benign", "web-api", "clean"),
		prose,
		failed,
		res("corpus", "pentest", "dual-use", "offensive-security", "malicious", "SBX-SHELL-001"),
		res("corpus", "recon", "dual-use", "offensive-security", "clean"),
		res("corpus", "dropper", "malicious", "installer", "malicious", "SBX-EXEC-001"),
		hidden,
		exp, twin, gated,
		res("eval", "stealer", "malicious", "exfiltration", "malicious", "SBX-EXFIL-001"),
	}
}

func fixtureReport() *evaluation.Report {
	results := fixtureResults()
	return &evaluation.Report{
		SchemaVersion: evaluation.SchemaVersion,
		GeneratedAt:   time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC),
		Commit:        "0123456789ab",
		Driver:        "literal",
		Manifests:     []string{"../shared/corpus/manifest.tsv", "eval/manifest.tsv"},
		Parallel:      2,
		DurationMS:    754000,
		Summary:       evaluation.Summarize(results),
		Results:       results,
	}
}

func TestSummarize(t *testing.T) {
	s := evaluation.Summarize(fixtureResults())
	f := func(x float64) *float64 { return &x }
	want := evaluation.Tally{
		Skills: 13, Malicious: 5, Benign: 6, DualUse: 2,
		CaughtMalicious: 2, CaughtAny: 4, FalseMalicious: 1, FalseSuspicious: 1,
		Inconclusive: 2, Failed: 1, DualUseVerdicts: map[string]int{"malicious": 1, "clean": 1},
		Expected: 3, ExpectMet: 2,
		RecallMalicious: f(2.0 / 5), RecallAny: f(4.0 / 5), FalseMaliciousRate: f(1.0 / 6), FalseSuspiciousRate: f(1.0 / 6),
		InconclusiveRate:   f(2.0 / 13),
		InconclusiveCauses: map[string]int{rules.CauseNeedsModel: 1, rules.CauseToolMissing: 1},
	}
	if diff := cmp.Diff(want, s.Overall); diff != "" {
		t.Errorf("overall mismatch (-want +got):\n%s", diff)
	}
	if len(s.Corpora) != 2 || s.Corpora[0].Corpus != "corpus" || s.Corpora[1].Corpus != "eval" {
		t.Errorf("corpora = %+v", s.Corpora)
	}
	var kinds []string
	for _, d := range s.Disagreements {
		kinds = append(kinds, d.Kind+" "+d.Corpus+"/"+d.Slug)
	}
	wantKinds := []string{
		"false-malicious corpus/weather",
		"false-suspicious corpus/stocks",
		"missed corpus/hidden",
		"suspicious-only eval/sync-notes",
		"failed corpus/broken",
		// Not eval/night-report: it got one of its expected verdicts.
	}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("disagreements mismatch (-want +got):\n%s", diff)
	}
	// The share without needs-model: 1 of the 12 skills that gave the
	// driver something to run.
	if rate, n, d := s.Overall.RunnableInconclusive(); rate == nil || n != 1 || d != 12 {
		t.Errorf("RunnableInconclusive = %v, %d, %d; want 1/12", rate, n, d)
	}
	// A result recorded before causes were: counted, as unknown.
	var old evaluation.Tally
	old.Add(res("corpus", "x", "benign", "docs", "inconclusive"))
	if old.InconclusiveCauses[evaluation.CauseUnknown] != 1 {
		t.Errorf("causes of an inconclusive result without one: %v", old.InconclusiveCauses)
	}
	// No results: rates are unknown, not zero.
	if e := evaluation.Summarize(nil); e.Overall.RecallMalicious != nil || e.Overall.InconclusiveRate != nil {
		t.Errorf("empty summary has rates: %+v", e.Overall)
	}
}

func TestDisagrees(t *testing.T) {
	tests := []struct {
		name    string
		label   string
		verdict string
		expect  []rules.Verdict
		want    string
	}{
		{name: "benign clean", label: "benign", verdict: "clean"},
		{name: "benign inconclusive", label: "benign", verdict: "inconclusive"},
		{name: "benign malicious", label: "benign", verdict: "malicious", want: evaluation.KindFalseMalicious},
		{name: "benign suspicious", label: "benign", verdict: "suspicious", want: evaluation.KindFalseSuspicious},
		{name: "benign suspicious expected", label: "benign", verdict: "suspicious", expect: []rules.Verdict{rules.Suspicious}, want: evaluation.KindFalseSuspicious},
		{name: "malicious caught", label: "malicious", verdict: "malicious"},
		{name: "malicious suspicious", label: "malicious", verdict: "suspicious", want: evaluation.KindUnderJudged},
		{name: "malicious suspicious as expected", label: "malicious", verdict: "suspicious", expect: []rules.Verdict{rules.Suspicious}},
		{name: "malicious clean", label: "malicious", verdict: "clean", want: evaluation.KindMissed},
		{name: "malicious failed", label: "malicious", verdict: "error", want: evaluation.KindMissed},
		{name: "dual-use malicious", label: "dual-use", verdict: "malicious"},
		{name: "dual-use unexpected", label: "dual-use", verdict: "clean", expect: []rules.Verdict{rules.Suspicious}, want: evaluation.KindUnexpected},
		{name: "benign unexpected", label: "benign", verdict: "inconclusive", expect: []rules.Verdict{rules.Clean}, want: evaluation.KindUnexpected},
		{name: "benign failed", label: "benign", verdict: "error", want: evaluation.KindFailed},
		{name: "dual-use failed", label: "dual-use", verdict: "error", want: evaluation.KindFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := evaluation.Result{Label: tt.label, Verdict: tt.verdict, Expect: tt.expect}
			if got := evaluation.Disagrees(r); got != tt.want {
				t.Errorf("Disagrees(%s → %s, expect %v) = %q, want %q", tt.label, tt.verdict, tt.expect, got, tt.want)
			}
		})
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./evaluation -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
	}
}

func TestWriteText(t *testing.T) {
	var buf bytes.Buffer
	if err := evaluation.WriteText(&buf, fixtureReport()); err != nil {
		t.Fatal(err)
	}
	golden(t, "eval.golden.txt", buf.Bytes())
}

func TestUpdateDoc(t *testing.T) {
	doc, err := os.ReadFile("testdata/detection.md")
	if err != nil {
		t.Fatal(err)
	}
	got, err := evaluation.UpdateDoc(doc, fixtureReport())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "detection.golden.md", got)

	// Updating twice at the same commit replaces the rows instead of
	// adding more; the hand-written baseline row stays.
	again, err := evaluation.UpdateDoc(got, fixtureReport())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(got), string(again)); diff != "" {
		t.Errorf("a second update changed the document (-first +second):\n%s", diff)
	}
	if !strings.Contains(string(got), "before (baseline)") {
		t.Error("the baseline row is gone")
	}

	if _, err := evaluation.UpdateDoc([]byte("# no markers\n"), fixtureReport()); err != evaluation.ErrNoMarkers {
		t.Errorf("UpdateDoc without markers: err = %v, want ErrNoMarkers", err)
	}
}

func TestJSONSchema(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(evaluation.Schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("eval.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("eval.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, rep := range map[string]*evaluation.Report{
		"fixture": fixtureReport(),
		"sample": func() *evaluation.Report {
			r := fixtureReport()
			r.Sample, r.Seed = 40, evaluation.DefaultSeed
			return r
		}(),
		"swept": func() *evaluation.Report {
			r := fixtureReport()
			r.Results[0].Attempts, r.Results[0].Cached, r.Results[0].RunDir = 2, true, "/tmp/ev/runs/weather-0123456789abcdef"
			return r
		}(),
		"empty": {SchemaVersion: evaluation.SchemaVersion, Driver: "literal", Manifests: []string{}, Parallel: 1, Summary: evaluation.Summarize(nil), Results: []evaluation.Result{}},
	} {
		var buf bytes.Buffer
		if err := evaluation.WriteJSON(&buf, rep); err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(inst); err != nil {
			t.Errorf("%s: the JSON does not match its schema: %v", name, err)
		}
	}
	// Its causes are the rules' causes.
	var defs struct {
		Defs struct {
			Cause struct {
				Enum []string `json:"enum"`
			} `json:"cause"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(evaluation.Schema, &defs); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(defs.Defs.Cause.Enum, rules.Causes) {
		t.Errorf("schema causes %v, rules.Causes %v", defs.Defs.Cause.Enum, rules.Causes)
	}
	// The schema rejects what it should: a wrong label.
	var buf bytes.Buffer
	bad := fixtureReport()
	bad.Results[0].Label = "evil"
	if err := evaluation.WriteJSON(&buf, bad); err != nil {
		t.Fatal(err)
	}
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
	if err := s.Validate(inst); err == nil {
		t.Error("the schema accepts a result labelled evil")
	}
}
