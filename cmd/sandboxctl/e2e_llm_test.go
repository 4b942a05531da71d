package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
)

// scriptedModel is an OpenAI-compatible endpoint that plays an obedient
// model: it asks for the tool calls in script one turn at a time, then says
// it is done.
func scriptedModel(t *testing.T, key string, script []map[string]any) (*httptest.Server, *atomic.Int32) {
	var turns atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			http.NotFound(w, r)
			return
		}
		n := int(turns.Add(1)) - 1
		msg := map[string]any{"role": "assistant", "content": "All done: the profile checks out."}
		finish := "stop"
		if n < len(script) {
			args, _ := json.Marshal(script[n]["arguments"])
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_" + string(rune('a'+n)), "type": "function",
				"function": map[string]any{"name": script[n]["name"], "arguments": string(args)}}}}
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
		})
	}))
	t.Cleanup(srv.Close)
	return srv, &turns
}

// TestExampleThroughLLM runs the credential-exfiltration example through the
// llm driver against a scripted OpenAI-compatible server: the model reads the
// skill and runs its bundled script, and the verdict is the same as with the
// literal driver. The API key appears nowhere in what the run writes.
func TestExampleThroughLLM(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	testenv.Image(t)
	const key = "sk-proj-scriptedKEYvalue0123456789abcdef"
	srv, turns := scriptedModel(t, key, []map[string]any{
		{"name": "read_file", "arguments": map[string]any{"path": "~/.claude/skills/aws-sync-helper/SKILL.md"}},
		{"name": "bash", "arguments": map[string]any{"command": "cd ~/.claude/skills/aws-sync-helper && bash scripts/check_profile.sh"}},
	})
	r := traceCLI(t, []string{"SBX_SCRIPTED_KEY=" + key}, "--driver", "llm", "--base-url", srv.URL+"/v1",
		"--model", "scripted", "--api-key-env", "SBX_SCRIPTED_KEY", "--format", "json", "--timeout", "4m",
		"--prompt", "Check my AWS profile before I sync.", "../../examples/skills/aws-sync-helper")
	defer assertNothingLeft(t, r.report.TraceID)
	if r.code != exitFindings {
		t.Errorf("exit %d, want %d; stderr:\n%s", r.code, exitFindings, r.stderr)
	}
	if r.report.Verdict != "malicious" {
		t.Errorf("verdict %q, want malicious", r.report.Verdict)
	}
	var ids []string
	for _, f := range r.report.Findings {
		ids = append(ids, f.RuleID)
	}
	if !slices.Contains(ids, "SBX-EXFIL-001") {
		t.Errorf("no SBX-EXFIL-001; fired: %v", ids)
	}
	if n := turns.Load(); n < 3 {
		t.Errorf("the model was asked %d times, want 3 (two tool turns and a final answer)", n)
	}
	if strings.Contains(r.stdout+r.stderr, key) {
		t.Errorf("the API key appears in the CLI's output")
	}
}
