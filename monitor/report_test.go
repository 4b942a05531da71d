package monitor

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// activationReport is the monitor of a skill that activates at run 3 on a
// counter it keeps, through the fake tracer.
func activationReport(t *testing.T) Report {
	t.Helper()
	var traces []Spec
	f := fakeSkill{counter: "/home/u/.cache/counter", active: func(n int) bool { return n >= 3 }}
	r, err := Run(t.Context(), f.tracer(&traces), Options{Runs: 3, Cells: []string{Chained, Independent}})
	if err != nil {
		t.Fatal(err)
	}
	r.Skill = "counter-skill"
	r.Audit = &Audit{Checkpoint: "o\n1\nAAAA\n\n— o abc\n", VerifierKey: "o+1+AAAA"}
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
	var benign []Spec
	consistent, err := Run(t.Context(), (&fakeSkill{}).tracer(&benign), Options{Runs: 2, Cells: []string{Independent}})
	if err != nil {
		t.Fatal(err)
	}
	var tz []Spec
	vary, err := Run(t.Context(), (&fakeSkill{when: Condition{"tz", "Asia/Tokyo"}}).tracer(&tz),
		Options{Runs: 2, Cells: []string{Independent}, Vary: []Condition{{"tz", "Asia/Tokyo"}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		r    Report
	}{
		{name: "activation", r: activationReport(t)},
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
	golden := filepath.Join("testdata", "activation.txt")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("text report differs from %s (go test -update):\n%s", golden, buf.String())
	}
}
