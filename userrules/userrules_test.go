package userrules_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
	"github.com/sandboxctl/sandboxctl/userrules"
)

const good = `id: T-ONE
title: A rule
severity: high
on: event
when: event.type == "exec"
`

// TestParseErrors: each mistake is reported with its file, its line and
// what is wrong.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		line       int
		want       string
	}{
		{name: "yaml syntax", text: "id: x\ntitle: a\n  on: event\n", line: 3, want: "not valid YAML"},
		{name: "unknown key", text: good + "severty: high\n", line: 6, want: `unknown key "severty"`},
		{name: "bad severity", text: strings.Replace(good, "severity: high", "severity: severe", 1), line: 3, want: `unknown severity "severe"`},
		{name: "no severity", text: strings.Replace(good, "severity: high\n", "", 1), line: 1, want: "has no severity"},
		{name: "bad on", text: strings.Replace(good, "on: event", "on: events", 1), line: 4, want: `on: "events": want event or incident`},
		{name: "bad harm", text: good + "harm: theft\n", line: 6, want: `unknown harm "theft"`},
		{name: "bad confidence", text: good + "confidence: sure\n", line: 6, want: `unknown confidence "sure"`},
		{name: "builtin id", text: strings.Replace(good, "T-ONE", "SBX-EXFIL-001", 1), line: 1, want: "SBX- prefix"},
		{name: "bad id", text: strings.Replace(good, "T-ONE", "has space", 1), line: 1, want: `id "has space"`},
		{name: "no when", text: strings.Replace(good, `when: event.type == "exec"`, "", 1), line: 1, want: "has no when"},
		{name: "cel syntax", text: strings.Replace(good, `event.type == "exec"`, `event.type == "exec" &&`, 1), line: 5, want: "when: ERROR"},
		{name: "cel not bool", text: strings.Replace(good, `event.type == "exec"`, `size(event.type)`, 1), line: 5, want: "want a bool"},
		{name: "cel unknown variable", text: strings.Replace(good, `event.type == "exec"`, `evnt.type == "exec"`, 1), line: 5, want: "undeclared reference to 'evnt'"},
		{name: "wrong variable for on", text: strings.Replace(good, `event.type == "exec"`, `incident.kind == "exfiltration"`, 1), line: 5, want: "a rule on event cannot read incident"},
		{name: "rules not a list", text: "rules: 3\n", line: 1, want: "want a list of rules"},
		{name: "not a mapping", text: "- a\n- b\n", line: 1, want: "want a mapping"},
		{name: "empty", text: "", line: 0, want: "empty file"},
		{name: "second rule of a list", text: "rules:\n  - id: A1\n    title: a\n    severity: low\n    on: event\n    when: 'true'\n  - id: A2\n    title: b\n    severity: lowest\n    on: event\n    when: 'true'\n", line: 9, want: `unknown severity "lowest"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, errs := userrules.Parse("r.yaml", []byte(tc.text), nil)
			if len(errs) == 0 {
				t.Fatalf("no error; rules %v", rs)
			}
			e := errs[0]
			if e.File != "r.yaml" || e.Line != tc.line || !strings.Contains(e.Msg, tc.want) {
				t.Errorf("error %q (line %d), want line %d and %q", e.Error(), e.Line, tc.line, tc.want)
			}
			if strings.Contains(e.Error(), "\n") {
				t.Errorf("error is more than one line: %q", e.Error())
			}
		})
	}
}

func TestLoadDirs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", good)
	write("b.yml", strings.Replace(good, "T-ONE", "T-TWO", 1))
	write("notes.txt", "not a rule")
	set, err := userrules.LoadDirs([]string{dir, filepath.Join(dir, "absent")}, true)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range set.Rules {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []string{"T-ONE", "T-TWO"}) {
		t.Errorf("rules %v", ids)
	}
	if _, err := userrules.LoadDirs([]string{filepath.Join(dir, "absent")}, false); err == nil {
		t.Error("a missing --rules folder is not an error")
	}
	write("c.yaml", good) // T-ONE again
	_, err = userrules.LoadDirs([]string{dir}, false)
	var errs userrules.Errors
	if !errors.As(err, &errs) || len(errs) != 1 || !strings.Contains(errs[0].Error(), "c.yaml:1: rule id T-ONE is already defined at "+filepath.Join(dir, "a.yaml")+":1") {
		t.Errorf("duplicate id: %v", err)
	}
}

// TestExampleRulesLoad: the example rule files are valid.
func TestExampleRulesLoad(t *testing.T) {
	set, err := userrules.LoadDirs([]string{"../examples/rules"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Rules) < 3 {
		t.Errorf("%d example rules, want at least 3", len(set.Rules))
	}
}

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// timeline is a small exfiltration: env dumped, the AWS profile read and
// posted to a webhook with the key in the body.
func timeline(key string) []trace.Event {
	args, _ := json.Marshal(map[string]string{"command": "bash sync.sh"})
	evs := []trace.Event{
		{Source: trace.SourceTool, Type: trace.TypeToolCall, ToolCallID: "t1", Data: &trace.ToolCall{ID: "t1", Tool: "bash", Arguments: args, Started: t0, Duration: time.Second, SkillFile: "SKILL.md", SkillLine: 7}},
		{Source: trace.SourceSyscall, Type: trace.TypeExec, ToolCallID: "t1", PID: 10, Data: &trace.Exec{Path: "/usr/local/bin/env", Argv: []string{"env"}, Errno: "ENOENT"}},
		{Source: trace.SourceSyscall, Type: trace.TypeExec, ToolCallID: "t1", PID: 10, Data: &trace.Exec{Path: "/usr/bin/env", Argv: []string{"env"}}},
		{Source: trace.SourceSyscall, Type: trace.TypeOpen, ToolCallID: "t1", PID: 11, Data: &trace.File{Path: "/home/u/.aws/credentials", Flags: "O_RDONLY"}},
		{Source: trace.SourceSyscall, Type: trace.TypeOpen, ToolCallID: "t1", PID: 11, Data: &trace.File{Path: "/home/u/.bashrc", Flags: "O_WRONLY|O_APPEND", Write: true}},
		{Source: trace.SourceDNS, Type: trace.TypeDNSQuery, Data: &trace.DNSQuery{Name: "webhook.site.", QType: "A", Rcode: "NOERROR"}},
		{Source: trace.SourceHTTP, Type: trace.TypeHTTP, Data: &trace.HTTPExchange{Method: "POST", URL: "https://webhook.site/x", Host: "webhook.site", TLS: true,
			Body: []byte("aws_access_key_id=" + key), BodySize: 40, Status: 200}},
		{Source: trace.SourceHTTP, Type: trace.TypeHTTP, Data: &trace.HTTPExchange{Method: "GET", URL: "http://203.0.113.7/stage2", Host: "203.0.113.7", Status: 200}},
	}
	for i := range evs {
		evs[i].Time = t0.Add(time.Duration(i+1) * 10 * time.Millisecond)
	}
	return trace.Merge(evs)
}

// TestExampleRulesFire: on a timeline with what each example rule looks
// for, each fires once, with its evidence, and its findings weigh in the
// verdict; without the rules, none of their ids appear.
func TestExampleRulesFire(t *testing.T) {
	set, err := userrules.LoadDirs([]string{"../examples/rules"}, false)
	if err != nil {
		t.Fatal(err)
	}
	const key = "AKIAQSBXCTL7Q2X4ZT3M"
	in := rules.Input{Events: timeline(key), Home: "/home/u",
		Canaries: canary.NewSet(canary.Token{ID: "aws-1", Kind: canary.AWSAccessKey, Value: key, Location: "~/.aws/credentials"})}
	base := rules.Evaluate(in)
	in.Extra = set.Extra()
	res := rules.Evaluate(in)
	got := map[string]rules.Finding{}
	for _, f := range res.Findings {
		if strings.HasPrefix(f.RuleID, "ACME-") {
			if _, dup := got[f.RuleID]; dup {
				t.Errorf("%s fired twice", f.RuleID)
			}
			got[f.RuleID] = f
		}
	}
	for _, id := range []string{"ACME-AWS-EXFIL", "ACME-ENV-DUMP", "ACME-SHELL-RC", "ACME-RAW-IP-FETCH"} {
		f, ok := got[id]
		if !ok {
			t.Errorf("%s did not fire; findings: %v", id, ruleIDs(res.Findings))
			continue
		}
		if len(f.Evidence) == 0 || f.Message == "" || f.Title == "" {
			t.Errorf("%s: finding without evidence or text: %+v", id, f)
		}
		if strings.Contains(f.Message, key) || strings.Contains(f.Evidence[0].Summary, key) {
			t.Errorf("%s: a planted value in the finding: %+v", id, f)
		}
	}
	if f := got["ACME-ENV-DUMP"]; len(f.Evidence) != 1 || f.ToolCallID != "t1" || f.SkillLine != 7 {
		t.Errorf("ACME-ENV-DUMP: %d evidence (the failed exec counts not), call %q line %d", len(f.Evidence), f.ToolCallID, f.SkillLine)
	}
	if !slices.ContainsFunc(res.Reasons, func(r string) bool { return strings.Contains(r, "ACME-AWS-EXFIL") }) {
		t.Errorf("the user rule's harm is not among the verdict's reasons: %v", res.Reasons)
	}
	// the incident rule's finding joins the exfiltration it describes
	incs := reports.GroupIncidents(res.Events, res.Findings, "/home/u")
	joined := false
	for _, inc := range incs {
		if slices.Contains(inc.RuleIDs, "ACME-AWS-EXFIL") {
			joined = inc.Kind == reports.KindExfiltration && slices.Contains(inc.RuleIDs, "SBX-EXFIL-001")
		}
	}
	if !joined {
		t.Errorf("ACME-AWS-EXFIL is not in the exfiltration incident: %+v", incs)
	}
	if len(res.Findings) != len(base.Findings)+len(got) {
		t.Errorf("%d findings with the rules, %d without, %d user: the built-in findings changed", len(res.Findings), len(base.Findings), len(got))
	}
	for _, f := range base.Findings {
		if strings.HasPrefix(f.RuleID, "ACME-") {
			t.Errorf("%s fired without the user rules", f.RuleID)
		}
	}
}

// TestUserRuleDecidesVerdict: a user rule with a harm class makes a trace
// the built-in rules find clean malicious, and evaluation errors (a key
// the event lacks) are conditions that do not hold.
func TestUserRuleDecidesVerdict(t *testing.T) {
	rs, errs := userrules.Parse("p.yaml", []byte(`rules:
  - id: P-CURL
    title: curl ran
    severity: critical
    harm: remote-code
    on: event
    when: event.type == "exec" && event.data.argv[0] == "curl"
  - id: P-MISSING
    title: never
    severity: critical
    on: event
    when: event.data.no_such_key == 1
`), nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	set := &userrules.Set{Rules: rs}
	evs := trace.Merge([]trace.Event{
		{Time: t0, Source: trace.SourceSyscall, Type: trace.TypeExec, PID: 3, Data: &trace.Exec{Path: "/usr/bin/curl", Argv: []string{"curl", "-s", "https://example.org"}}},
	})
	in := rules.Input{Events: evs}
	if v := rules.Evaluate(in).Verdict; v == rules.Malicious {
		t.Fatalf("without the rule the verdict is already %s", v)
	}
	in.Extra = set.Extra()
	res := rules.Evaluate(in)
	if res.Verdict != rules.Malicious || !slices.Equal(ruleIDs(res.Findings), []string{"P-CURL"}) {
		t.Errorf("verdict %s, findings %v; want malicious by P-CURL alone", res.Verdict, ruleIDs(res.Findings))
	}
}

func ruleIDs(fs []rules.Finding) []string {
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.RuleID)
	}
	return ids
}

// FuzzParse: rule files are user input; Parse never panics and reports
// every problem as a line-numbered error in the file.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"../examples/rules/*.yaml", "testdata/*.yaml"} {
		files, _ := filepath.Glob(p)
		for _, file := range files {
			b, _ := os.ReadFile(file)
			f.Add(b)
		}
	}
	f.Add([]byte(good))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, errs := userrules.Parse("f.yaml", data, nil)
		for _, e := range errs {
			if e.File != "f.yaml" || e.Msg == "" {
				t.Errorf("bad error %+v", e)
			}
		}
		if len(errs) == 0 && len(rs) == 0 {
			t.Errorf("no rules and no error")
		}
	})
}
