package reports_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/trace"
)

// FuzzRender builds reports from arbitrary stored events (an untrusted
// events.jsonl) and renders them in every format: nothing may fail or
// panic, and no canary value may reach any of them.
func FuzzRender(f *testing.F) {
	for _, name := range []string{"clean", "canary-exfil", "timeout"} {
		var buf bytes.Buffer
		if err := trace.WriteJSONL(&buf, fixture(f, name).Events); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte(`{"seq":1,"type":"tool_call","source":"tool","data":{"id":"<x>","tool":"bash","arguments":{"command":"echo ` + awsKey + `"},"skill_file":"SKILL.md","skill_line":99999}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := trace.ReadJSONL(bytes.NewReader(data), trace.Limits{MaxLine: 1 << 16, MaxEvents: 200})
		if err != nil {
			return
		}
		r := reports.Analyze(meta(reports.StatusCompleted), evs, reports.Options{})
		for name, w := range map[string]func(io.Writer) error{
			"json":  func(w io.Writer) error { return reports.WriteJSON(w, r) },
			"sarif": func(w io.Writer) error { return reports.WriteSARIF(w, r) },
			"text":  func(w io.Writer) error { return reports.WriteText(w, r, reports.TextOptions{}) },
			"html":  func(w io.Writer) error { return reports.WriteHTML(w, r) },
		} {
			var buf bytes.Buffer
			if err := w(&buf); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if bytes.Contains(buf.Bytes(), []byte(awsKey)) {
				t.Fatalf("%s holds a canary value", name)
			}
		}
	})
}
