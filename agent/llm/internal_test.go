package llm

import (
	"encoding/json"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{in: "", ok: false},
		{in: "7", want: 7 * time.Second, ok: true},
		{in: "Mon, 23 Nov 2026 10:00:30 GMT", want: 30 * time.Second, ok: true},
		{in: "Mon, 23 Nov 2026 09:00:00 GMT", want: 0, ok: true},
		{in: "soon", ok: false},
		{in: "-3", ok: false},
	}
	for _, tt := range tests {
		got, ok := retryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestBackoffBounded(t *testing.T) {
	r := &retryDoer{base: time.Second, cap: 10 * time.Second}
	for attempt := 0; attempt < 70; attempt++ {
		d := r.backoff(attempt)
		if d <= 0 || d > 10*time.Second {
			t.Fatalf("backoff(%d) = %v", attempt, d)
		}
	}
	if d := r.backoff(0); d < 500*time.Millisecond || d > time.Second {
		t.Errorf("backoff(0) = %v, want in [0.5s, 1s]", d)
	}
}

// FuzzProposal: whatever a model sends as a tool call, the proposal's
// arguments are valid JSON (the transcript must encode) and a call that is
// not rejected has a known tool and an object.
func FuzzProposal(f *testing.F) {
	f.Add("bash", `{"command":"ls"}`)
	f.Add("bash", `{"command": "ls`)
	f.Add("rm_rf", `[]`)
	f.Add("read_file", `null`)
	f.Add("", "")
	f.Fuzz(func(t *testing.T, name, args string) {
		p := proposal(openai.ToolCall{ID: "x", Function: openai.FunctionCall{Name: name, Arguments: args}})
		if !json.Valid(p.Arguments) {
			t.Fatalf("arguments %q not valid JSON", p.Arguments)
		}
		if p.Reject == "" {
			var m map[string]any
			if json.Unmarshal(p.Arguments, &m) != nil || m == nil {
				t.Fatalf("accepted non-object %s", p.Arguments)
			}
		}
	})
}
