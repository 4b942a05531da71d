package rules_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/rules"
)

var update = flag.Bool("update", false, "rewrite the generated table of docs/verdicts.md")

const verdictsDoc = "../docs/verdicts.md"

// section returns the table rows between <!-- name:begin ... --> and
// <!-- name:end -->, header and separator dropped, cells trimmed.
func section(t *testing.T, doc, name string) [][]string {
	t.Helper()
	i := strings.Index(doc, "<!-- "+name+":begin")
	j := strings.Index(doc, "<!-- "+name+":end -->")
	if i < 0 || j < i {
		t.Fatalf("%s lacks the %s markers", verdictsDoc, name)
	}
	var rows [][]string
	for _, line := range strings.Split(doc[i:j], "\n")[1:] {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	if len(rows) < 2 {
		t.Fatalf("%s: %s table has %d rows", verdictsDoc, name, len(rows))
	}
	return rows[1:]
}

func readDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(verdictsDoc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestVerdictPolicyTable checks every row of the evidence → severity →
// verdict table against the code.
func TestVerdictPolicyTable(t *testing.T) {
	for _, row := range section(t, readDoc(t), "policy") {
		if len(row) != 5 {
			t.Fatalf("row %q: %d cells", row, len(row))
		}
		harm := rules.Harm(row[1])
		if row[1] == "none" {
			harm = rules.HarmNone
		} else if !slices.Contains(rules.Harms, harm) {
			t.Errorf("row %q: unknown harm class %q", row[0], row[1])
		}
		f := rules.Finding{RuleID: "X", Severity: rules.Severity(row[2]), Confidence: rules.Confidence(row[3]), Harm: harm}
		if got := rules.VerdictFor([]rules.Finding{f}, true); string(got) != row[4] {
			t.Errorf("%q: the code says %s, the table %s", row[0], got, row[4])
		}
	}
}

// TestVerdictFailureTable checks the table of traces that saw too little
// against rules.Decide.
func TestVerdictFailureTable(t *testing.T) {
	ran := rules.Coverage{Planned: 1, Run: 1, Succeeded: 1, Decisive: 1}
	facts := map[string]rules.Facts{
		"ended with status":     {Exercised: true, Status: "error", Coverage: ran},
		"reached its deadline":  {Exercised: true, Status: "timeout", Coverage: ran},
		"exhausted the sandbox": {Exercised: true, Exhausted: []string{"pids"}, Coverage: ran},
		"lost evidence":         {Exercised: true, Missing: []string{"3 lines lost"}, Coverage: ran},
		"had a decisive step":   {Exercised: true, Coverage: rules.Coverage{Planned: 1, Run: 1, NotRun: 1, Decisive: 1, DecisiveNotRun: 1}},
		"ran no tool call":      {},
		"ran, completed":        {Exercised: true, Coverage: ran},
	}
	harm := rules.Finding{RuleID: "SBX-EXFIL-001", Severity: rules.Critical, Confidence: rules.ConfHigh, Harm: rules.HarmExfil}
	suspect := rules.Finding{RuleID: "SBX-CRED-001", Severity: rules.Medium, Confidence: rules.ConfHigh}
	rows := section(t, readDoc(t), "failure")
	if len(rows) != len(facts) {
		t.Errorf("failure table has %d rows, the test knows %d", len(rows), len(facts))
	}
	for _, row := range rows {
		var f rules.Facts
		found := false
		for k, v := range facts {
			if strings.HasPrefix(row[0], k) {
				f, found = v, true
			}
		}
		if !found {
			t.Errorf("row %q: the test does not know it", row[0])
			continue
		}
		if got, _ := rules.Decide([]rules.Finding{harm}, f); string(got) != row[1] {
			t.Errorf("%q with harm: the code says %s, the table %s", row[0], got, row[1])
		}
		withSuspect, _ := rules.Decide([]rules.Finding{suspect}, f)
		without, _ := rules.Decide(nil, f)
		var want [2]rules.Verdict
		switch row[2] {
		case "inconclusive":
			want = [2]rules.Verdict{rules.Inconclusive, rules.Inconclusive}
		case "suspicious when a finding is suspect, else inconclusive":
			want = [2]rules.Verdict{rules.Suspicious, rules.Inconclusive}
		case "suspicious or clean, by the findings":
			want = [2]rules.Verdict{rules.Suspicious, rules.Clean}
		default:
			t.Fatalf("row %q: unknown cell %q", row[0], row[2])
		}
		if got := [2]rules.Verdict{withSuspect, without}; got != want {
			t.Errorf("%q: the code says %v (with a suspect finding, without), the table %v", row[0], got, want)
		}
	}
}

// TestHarmPolicy: only rules with a harm class may be critical, and a rule
// without one cannot make a trace malicious.
func TestHarmPolicy(t *testing.T) {
	for _, r := range rules.Catalog() {
		if r.Harm != rules.HarmNone && !slices.Contains(rules.Harms, r.Harm) {
			t.Errorf("%s: unknown harm class %q", r.ID, r.Harm)
		}
		if r.Severity == rules.Critical && r.Harm == rules.HarmNone {
			t.Errorf("%s is critical without a harm class", r.ID)
		}
		f := rules.Finding{RuleID: r.ID, Severity: r.Severity, Confidence: r.Confidence}
		if rules.VerdictFor([]rules.Finding{f}, true) == rules.Malicious {
			t.Errorf("%s without its harm class still makes a trace malicious", r.ID)
		}
	}
}

// TestDocsRuleHarmTable keeps the rule table of docs/verdicts.md in step
// with the catalog; -update rewrites it.
func TestDocsRuleHarmTable(t *testing.T) {
	doc := readDoc(t)
	const begin = "<!-- rules:begin (generated by `go test ./rules -update`; do not edit) -->\n"
	const end = "<!-- rules:end -->"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the rules markers", verdictsDoc)
	}
	var tbl strings.Builder
	tbl.WriteString("| Id | Title | Harm class | Severity | Confidence |\n|---|---|---|---|---|\n")
	for _, r := range rules.Catalog() {
		harm := string(r.Harm)
		if harm == "" {
			harm = "none"
		}
		fmt.Fprintf(&tbl, "| `%s` | %s | %s | %s | %s |\n", r.ID, r.Title, harm, r.Severity, r.Confidence)
	}
	got := doc[:i+len(begin)] + tbl.String() + doc[j:]
	if *update {
		if err := os.WriteFile(filepath.Clean(verdictsDoc), []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(doc, got); diff != "" {
		t.Errorf("%s rule table is stale (run go test ./rules -update):\n%s", verdictsDoc, diff)
	}
}
