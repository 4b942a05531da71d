package monitor

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// activationReport is the monitor of a skill that activates at run 3 on a
// counter it keeps, through the fake tracer.
func activationReport(t *testing.T) Report {
	t.Helper()
	var traces []runSpec
	f := fakeSkill{counter: "/home/u/.cache/counter", active: func(n int) bool { return n >= 3 }, cpu: func(n int) float64 { return 0.1 + 0.2*float64(n) }}
	d := DeclaredEnvelope([]string{"Bash(python3:*)"}, map[string]any{"metadata": map[string]any{"domains": []any{"api.example.com"}}})
	r, err := runWith(t.Context(), f.tracer(&traces), Options{Runs: 3, Cells: []string{Chained, Independent}, Declared: d})
	if err != nil {
		t.Fatal(err)
	}
	r.Skill = "counter-skill"
	r.Audit = &Audit{Checkpoint: "o\n1\nAAAA\n\n— o abc\n", VerifierKey: "o+1+AAAA", KeyFingerprint: "sha256:" + strings.Repeat("0f", 32)}
	return r
}

func TestSchema(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("monitor.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("monitor.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var benign []runSpec
	consistent, err := runWith(t.Context(), (&fakeSkill{}).tracer(&benign), Options{Runs: 2, Cells: []string{Independent}})
	if err != nil {
		t.Fatal(err)
	}
	var tz []runSpec
	vary, err := runWith(t.Context(), (&fakeSkill{when: Condition{"tz", "Asia/Tokyo"}}).tracer(&tz),
		Options{Runs: 2, Cells: []string{Independent}, Vary: []Condition{{"tz", "Asia/Tokyo"}}})
	if err != nil {
		t.Fatal(err)
	}
	outside, err := runWith(t.Context(), envelopeSkill(2), Options{Runs: 3, Cells: []string{Independent}, Tier: TierHigh,
		Declared: DeclaredEnvelope([]string{"Bash(git:*)"}, map[string]any{"network": "none"})})
	if err != nil {
		t.Fatal(err)
	}
	if outside.Cells[0].Deviation == nil || len(outside.Envelope.Outside) == 0 || len(outside.Cells[0].Observations[2].OutputHashes) != 2 {
		t.Fatalf("the envelope case does not exercise the new fields: %+v", outside)
	}
	tests := []struct {
		name string
		r    Report
	}{
		{name: "activation", r: activationReport(t)},
		{name: "outside the envelope, output hashes, a tier asked for", r: outside},
		{name: "condition", r: vary},
		{name: "consistent", r: consistent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.r)
			if err != nil {
				t.Fatal(err)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(inst); err != nil {
				t.Errorf("report does not match the schema: %v\n%s", err, b)
			}
		})
	}
}

func TestWriteTextGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteText(&buf, activationReport(t)); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, buf.Bytes(), filepath.Join("testdata", "activation.txt"))
}

func TestWriteHTMLGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, activationReport(t)); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, buf.Bytes(), filepath.Join("testdata", "activation.html"))
}

// TestWriteHTMLSelfContained: the page fetches nothing and runs nothing.
func TestWriteHTMLSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, activationReport(t)); err != nil {
		t.Fatal(err)
	}
	page := strings.ToLower(buf.String())
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "src=", "href=", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("monitor.html holds %q", bad)
		}
	}
	if !strings.Contains(page, `class="dev"`) || !strings.Contains(page, `class="b dev"`) {
		t.Error("the deviating run is not highlighted in the table and the charts")
	}
	if n := strings.Count(page, "<svg"); n != 10 {
		t.Errorf("%d charts, want 5 per cell", n)
	}
}

// TestWriteHTMLEscapes: what a skill controls (a label, a written path, a
// declared entry, a bidi override) comes out as text, never markup.
func TestWriteHTMLEscapes(t *testing.T) {
	r := activationReport(t)
	const hostile = `<script>alert(1)</script>`
	r.Skill = hostile + "\u202e"
	c := &r.Cells[0]
	c.Observations[0].Label = hostile
	c.Observations[1].Written = append(c.Observations[1].Written, "/tmp/"+hostile+"\"><img src=x onerror=alert(1)>")
	c.Varied = append(c.Varied, hostile)
	r.Envelope.Declared.Network = append(r.Envelope.Declared.Network, hostile)
	r.Envelope.Outside = append(r.Envelope.Outside, Outside{What: "file write " + hostile, Runs: []string{hostile}})
	r.Actions = append(r.Actions, hostile)
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, bad := range []string{"<script", "<img", "\u202e"} {
		if strings.Contains(page, bad) {
			t.Errorf("monitor.html holds %q unescaped", bad)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the hostile label is not shown escaped")
	}
}

func checkGolden(t *testing.T, got []byte, golden string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("report differs from %s (go test -update):\n%s", golden, got)
	}
}

func TestInvariantsByClass(t *testing.T) {
	r := Report{Cells: []Cell{
		{Kind: Chained, Verdict: Activation, Why: "activates at run 3", Deviation: &Deviation{Run: 3, NewRules: []string{"SBX-EXFIL-001"}},
			Observations: make([]Observation, 3)},
		{Kind: Independent, Verdict: Marginal, Varied: []string{"output of call 1 (bash): differs in run 2", "cpu seconds: run 2 9, median 0.1"},
			Observations: make([]Observation, 2)},
		{Kind: Varied, Condition: "tz=UTC", Verdict: Consistent, Observations: make([]Observation, 2)},
		{Kind: Varied, Condition: "monitoring=visible", Verdict: Activation, Why: "quiet when monitoring=visible",
			Suppression: &Suppression{VerdictFrom: "malicious", VerdictTo: "clean"}, Observations: make([]Observation, 2)},
	}}
	got := map[string]string{}
	for _, iv := range r.invariants() {
		got[iv[0]] = iv[1]
	}
	for class, want := range map[string]string{
		"output determinism":          "independent: output of call 1",
		"resource usage":              "independent: cpu seconds",
		"side effects":                "chained: run 3 did something new",
		"execution-count sensitivity": "activates at run 3",
		"environmental triggers":      "vary monitoring=visible: quiet when monitoring=visible",
		"constraint envelope":         "nothing declared",
		"audit trail":                 "no log",
	} {
		if !strings.Contains(got[class], want) {
			t.Errorf("%s: %q, want it to say %q", class, got[class], want)
		}
	}
	if want := "vary monitoring=visible: quiet when monitoring=visible; held under tz=UTC"; got["environmental triggers"] != want {
		t.Errorf("environmental triggers %q, want %q", got["environmental triggers"], want)
	}
	quiet := Report{Cells: []Cell{{Kind: Independent, Observations: make([]Observation, 2)},
		{Kind: Varied, Condition: "tz=UTC"}, {Kind: Varied, Condition: "user=alice"}}}
	for _, iv := range quiet.invariants() {
		if iv[0] == "environmental triggers" && iv[1] != "held under tz=UTC, user=alice" {
			t.Errorf("environmental triggers %q, want held under both", iv[1])
		}
		if iv[0] == "output determinism" && iv[1] != "held" {
			t.Errorf("output determinism %q, want held", iv[1])
		}
	}
}
