package reports_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

// TestSchemaEvidenceEvents: reports holding the jail's and the trace's
// evidence accounting (WebSocket messages, leftover processes, budgets,
// spooled requests) match the schema, and the schema checks their payloads.
func TestSchemaEvidenceEvents(t *testing.T) {
	b := &builder{t: t0}
	b.bash(10, "setsid ./sync-agent &", "", 0)
	b.add(trace.SourceHTTP, trace.TypeHTTP, 0, &trace.HTTPExchange{Method: "GET", URL: "http://cdn.example.net/a", Host: "cdn.example.net",
		Status: 200, HeadersTruncated: true, Spool: "000001.http", Unfinished: true})
	b.add(trace.SourceTCP, trace.TypeConnection, 0, &trace.Connection{Proto: "tcp", DstIP: "198.18.0.9", DstPort: 80,
		FirstBytes: []byte("\x00\x01"), Size: 2, Protocol: "http-trailing", Spool: "000002.tcp"})
	b.add(trace.SourceHTTP, trace.TypeWSMessage, 0, &trace.WSMessage{URL: "wss://relay.example.net/s", Opcode: "text", Payload: []byte("hi"), Size: 2})
	b.add(trace.SourceSyscall, trace.TypeLeftover, 240, &trace.Leftover{PID: 240, PPID: 1, PGID: 240, SID: 240, UID: 1000,
		Argv: []string{"./sync-agent"}, Detached: true, CallID: "t001"})
	b.add(trace.SourceTCP, trace.TypeBudget, 0, &trace.Budget{Name: "jail_events", Limit: 64 << 20, Used: 70 << 20, Dropped: 6 << 20,
		Unit: "bytes", Message: "the jail's event log reached its budget"})
	r := reports.Analyze(meta(reports.StatusCompleted), trace.Merge(b.evs), reports.Options{})
	var buf bytes.Buffer
	if err := reports.WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	s := compileSchema(t, "report.schema.json", reports.Schema)
	if err := validate(t, s, buf.Bytes()); err != nil {
		t.Fatalf("report.json does not match its schema: %v", err)
	}
	for _, typ := range []string{`"type":"ws_message"`, `"type":"leftover"`, `"type":"budget"`} {
		if !strings.Contains(strings.ReplaceAll(buf.String(), `": "`, `":"`), typ) {
			t.Errorf("report lacks %s", typ)
		}
	}
	// The schema checks the new payloads: a budget without its name fails.
	var doc map[string]any
	json.Unmarshal(buf.Bytes(), &doc)
	for _, e := range doc["events"].([]any) {
		ev := e.(map[string]any)
		if ev["type"] == "budget" {
			delete(ev["data"].(map[string]any), "name")
		}
	}
	bad, _ := json.Marshal(doc)
	if validate(t, s, bad) == nil {
		t.Error("the schema accepted a budget event without a name")
	}
}

// TestSchemaCauses: the schema's verdict_cause is exactly rules.Causes,
// and an inconclusive report carries one that matches it.
func TestSchemaCauses(t *testing.T) {
	var doc struct {
		Properties struct {
			Cause struct {
				Enum []string `json:"enum"`
			} `json:"verdict_cause"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(reports.Schema, &doc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(doc.Properties.Cause.Enum, rules.Causes) {
		t.Errorf("schema causes %v, rules.Causes %v", doc.Properties.Cause.Enum, rules.Causes)
	}
	b := &builder{t: t0}
	b.bash(10, "clawhub install weather", "bash: clawhub: command not found", 127)
	r := reports.Analyze(meta(reports.StatusCompleted), trace.Merge(b.evs), reports.Options{})
	if r.Verdict != rules.Inconclusive || r.Cause != rules.CauseToolMissing {
		t.Fatalf("verdict %s, cause %q; want inconclusive, tool-missing", r.Verdict, r.Cause)
	}
	var buf bytes.Buffer
	if err := reports.WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if err := validate(t, compileSchema(t, "report.schema.json", reports.Schema), buf.Bytes()); err != nil {
		t.Fatalf("report.json does not match its schema: %v", err)
	}
}

// TestDriverNotes: what the driver did not plan, and why, is in every form
// of the report.
func TestDriverNotes(t *testing.T) {
	const note = "code blocks not run (a shell this Linux workstation has not): SKILL.md:28 (fish)"
	m := meta(reports.StatusCompleted)
	m.Driver.Notes = []string{note}
	b := &builder{t: t0}
	b.bash(10, "npm run build", "ok", 0)
	r := reports.Analyze(m, trace.Merge(b.evs), reports.Options{})
	var js, txt, html bytes.Buffer
	if err := reports.WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	if err := validate(t, compileSchema(t, "report.schema.json", reports.Schema), js.Bytes()); err != nil {
		t.Fatalf("report.json does not match its schema: %v", err)
	}
	if err := reports.WriteText(&txt, r, reports.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"json": js.String(), "text": strings.Join(strings.Fields(txt.String()), " "), "html": html.String()} {
		if !strings.Contains(out, "SKILL.md:28 (fish)") {
			t.Errorf("the %s report lacks the driver's note", name)
		}
	}
}
