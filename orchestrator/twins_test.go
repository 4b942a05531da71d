package orchestrator

import (
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/mcptools"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

func TestTwinReason(t *testing.T) {
	sent := rules.Finding{RuleID: "SBX-EXFIL-004", Title: "Credentials read, then data sent out", Severity: rules.High, Confidence: rules.ConfMedium}
	leak := rules.Finding{RuleID: "SBX-EXFIL-001", Severity: rules.Critical, Confidence: rules.ConfHigh, Harm: rules.HarmExfil}
	blob := []trace.Event{{Seq: 1, Type: trace.TypeHTTP, Data: &trace.HTTPExchange{URL: "https://x.example/u",
		Body: []byte(strings.Repeat("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", 2))}}}
	rep := func(st reports.Status, v rules.Verdict, evs []trace.Event, fs ...rules.Finding) *reports.Report {
		return &reports.Report{Status: st, Verdict: v, Findings: fs, Events: evs}
	}
	for _, tt := range []struct {
		name string
		plan traceplan.Plan
		rep  *reports.Report
		want string
	}{
		{"credentials read, opaque data sent", traceplan.Plan{}, rep(reports.StatusCompleted, rules.Suspicious, nil, sent), "SBX-EXFIL-004 (Credentials read, then data sent out)"},
		{"a high-entropy payload", traceplan.Plan{}, rep(reports.StatusCompleted, rules.Clean, blob), "a high-entropy payload to x.example"},
		{"nothing", traceplan.Plan{}, rep(reports.StatusCompleted, rules.Clean, nil), ""},
		{"harm already proven", traceplan.Plan{}, rep(reports.StatusCompleted, rules.Malicious, nil, sent, leak), ""},
		{"always", traceplan.Plan{Twins: traceplan.TwinsAlways}, rep(reports.StatusCompleted, rules.Clean, nil), "--twins"},
		{"off", traceplan.Plan{Twins: traceplan.TwinsOff}, rep(reports.StatusCompleted, rules.Suspicious, nil, sent), ""},
		{"the trace failed", traceplan.Plan{Twins: traceplan.TwinsAlways}, rep(reports.StatusError, rules.Inconclusive, nil), ""},
		{"a twin runs no twins", traceplan.Plan{Twins: traceplan.TwinsAlways, Twin: &traceplan.TwinSpec{Role: TwinSame}}, rep(reports.StatusCompleted, rules.Clean, nil), ""},
		{"an unwatched pass runs no twins", traceplan.Plan{Unwatched: true}, rep(reports.StatusCompleted, rules.Suspicious, nil, sent), ""},
		{"no report", traceplan.Plan{Twins: traceplan.TwinsAlways}, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := twinReason(tt.plan, tt.rep); got != tt.want {
				t.Errorf("twinReason = %q, want %q", got, tt.want)
			}
		})
	}
}

// A twin plan makes the original's home again, its secrets other for the
// other twin, from the original's start; it runs no second pass and no
// twins of its own.
func TestTwinPlan(t *testing.T) {
	start := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	p := traceplan.Plan{TraceID: strings.Repeat("a", 60), SkillPath: "x", Keep: true, Stealth: traceplan.StealthAlways, Limits: traceplan.DefaultLimits(),
		Driver: traceplan.Driver{Kind: traceplan.DriverLiteral}}
	st := &run{seed: []byte("seed"), started: start, home: &canaryfs.Home{User: "jchen", Hostname: "jchen-xps13"},
		system: system{TimeZone: "Europe/Paris"}}
	for _, role := range []string{TwinSame, TwinOther, TwinControl} {
		tp := twinPlan(p, st, traceplan.TwinSpec{Role: role, Start: start, Key: []byte("k"), Grow: TwinGrow})
		if err := tp.Validate(); err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		if string(tp.Seed) != "seed" || tp.User != "jchen" || tp.Hostname != "jchen-xps13" || tp.TimeZone != "Europe/Paris" ||
			tp.Keep || tp.Stealth != traceplan.StealthOff || tp.Twins != traceplan.TwinsOff || !tp.Twin.Start.Equal(start) {
			t.Errorf("%s: plan %+v", role, tp)
		}
		if !strings.HasSuffix(tp.TraceID, "-twin-"+role) || len(tp.TraceID) > 63 {
			t.Errorf("%s: trace id %q", role, tp.TraceID)
		}
		if got := canaryTwin(tp.Twin) != nil; got != (role == TwinOther) {
			t.Errorf("%s: other secrets %v", role, got)
		}
	}
	// Twins share one randomness, told to the tool server in its
	// environment; a trace that is no twin has the real one.
	tp := twinPlan(p, st, traceplan.TwinSpec{Role: TwinSame, Start: start, Entropy: []byte{1, 2}})
	if got := entropyEnv(tp); len(got) != 1 || got[0] != mcptools.EntropyEnv+"=0102" {
		t.Errorf("twin's entropy env %q", got)
	}
	if got := entropyEnv(p); got != nil {
		t.Errorf("original's entropy env %q", got)
	}
}
