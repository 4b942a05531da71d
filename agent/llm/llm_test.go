package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/agent/agenttest"
	"github.com/sandboxctl/sandboxctl/agent/llm"
	"github.com/sandboxctl/sandboxctl/skill"
)

// fakeKey is distinctive so a leak anywhere is found by a plain search.
const fakeKey = "sk-test-LEAKCHECK-7f3a9c21e5b84d06aa1e"

type scripted struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

// server plays testdata/llm/<name>/*.json to POST /chat/completions in order
// (the last one repeats) and records every request.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	resps    []scripted
	i        int
	requests []map[string]any
	auth     []string
}

func newServer(t *testing.T, name string) *server {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "llm", name, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures for %s: %v", name, err)
	}
	sort.Strings(files)
	s := &server{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r scripted
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		s.resps = append(s.resps, r)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

func (s *server) handle(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.auth = append(s.auth, key)
	if r.Method == http.MethodGet && r.URL.Path == "/models" {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"test-model","object":"model"},{"id":"other","object":"model"}]}`)
		return
	}
	var req map[string]any
	json.NewDecoder(r.Body).Decode(&req)
	s.requests = append(s.requests, req)
	resp := s.resps[min(s.i, len(s.resps)-1)]
	s.i++
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	body := []byte(resp.Body)
	var str string
	if json.Unmarshal(body, &str) == nil {
		body = []byte(str) // a non-JSON body, given as a JSON string
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	body = bytes.ReplaceAll(body, []byte("{{KEY}}"), []byte(key)) // a server that echoes the key
	w.WriteHeader(resp.Status)
	w.Write(body)
}

func (s *server) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.requests...)
}

func testSkill(t *testing.T) *skill.Skill {
	t.Helper()
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "SKILL.md"), []byte("---\nname: weather\ndescription: Get the weather for a city.\n---\n# Weather\nRun `curl wttr.in`.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := skill.Load(d, skill.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type run struct {
	res        agent.Result
	err        error
	transcript bytes.Buffer
	logs       bytes.Buffer
	session    *agenttest.Session
}

func runCase(t *testing.T, name string, budget agent.Budget) (*run, *server) {
	t.Helper()
	srv := newServer(t, name)
	r := &run{session: &agenttest.Session{}}
	log := slog.New(slog.NewTextHandler(&r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d, err := llm.New(llm.Config{
		Provider: llm.ProviderCustom, BaseURL: srv.URL, Model: "test-model", APIKey: fakeKey,
		Skill: testSkill(t), SkillDir: "/home/u/.agents/skills/weather",
		BackoffBase: time.Millisecond, MaxBackoff: 10 * time.Millisecond, Log: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	l := &agent.Loop{Session: r.session, Budget: budget, Transcript: &r.transcript, DriverName: "llm"}
	r.res, r.err = l.Run(t.Context(), d)
	// Every byte the run wrote must be free of the key.
	for what, b := range map[string][]byte{"transcript": r.transcript.Bytes(), "logs": r.logs.Bytes()} {
		if bytes.Contains(b, []byte(fakeKey)) {
			t.Errorf("API key found in %s:\n%s", what, b)
		}
	}
	if r.err != nil && strings.Contains(r.err.Error(), fakeKey) {
		t.Errorf("API key found in error: %v", r.err)
	}
	if rb, _ := json.Marshal(r.res); bytes.Contains(rb, []byte(fakeKey)) {
		t.Errorf("API key found in result")
	}
	return r, srv
}

func callNames(res agent.Result) []string {
	var out []string
	for _, ex := range res.Calls {
		out = append(out, ex.Call.ID+" "+ex.Call.Name)
	}
	return out
}

func TestMultiTurn(t *testing.T) {
	r, srv := runCase(t, "multiturn", agent.Budget{})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if diff := cmp.Diff([]string{"t001 bash", "t002 read_file", "t003 fetch_url"}, callNames(r.res)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if r.res.Stop != agent.StopDone || r.res.Turns != 2 || r.res.Usage.TotalTokens != 400 {
		t.Errorf("stop %q turns %d usage %+v", r.res.Stop, r.res.Turns, r.res.Usage)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	// The first request: system prompt with the skill, the derived user prompt, seven tools.
	msgs := reqs[0]["messages"].([]any)
	sys := msgs[0].(map[string]any)["content"].(string)
	user := msgs[1].(map[string]any)["content"].(string)
	if !strings.Contains(sys, "Run `curl wttr.in`.") || !strings.Contains(sys, "/home/u/.agents/skills/weather/SKILL.md") {
		t.Errorf("system prompt lacks the skill:\n%s", sys)
	}
	if !strings.Contains(user, `weather skill on this machine ("Get the weather for a city.")`) {
		t.Errorf("user prompt = %q", user)
	}
	if n := len(reqs[0]["tools"].([]any)); n != 7 {
		t.Errorf("%d tools offered, want 7", n)
	}
	// The third request answers both calls of the second, with the model's ids.
	msgs = reqs[2]["messages"].([]any)
	var toolIDs []string
	for _, m := range msgs {
		mm := m.(map[string]any)
		if mm["role"] == "tool" {
			toolIDs = append(toolIDs, mm["tool_call_id"].(string)+":"+mm["content"].(string))
		}
	}
	want := []string{"call_a:ok bash\n", "call_b:ok read_file\n", "call_c:ok fetch_url\n"}
	if diff := cmp.Diff(want, toolIDs); diff != "" {
		t.Errorf("tool messages (-want +got):\n%s", diff)
	}
	// The key went to the server, and only there.
	for _, a := range srv.auth {
		if a != fakeKey {
			t.Errorf("Authorization = %q", a)
		}
	}
	if !strings.Contains(r.transcript.String(), `"role":"assistant","content":"Let me look around."`) &&
		!strings.Contains(r.transcript.String(), `"content":"Let me look around."`) {
		t.Errorf("transcript lacks the assistant message:\n%s", r.transcript.String())
	}
}

func TestRetries(t *testing.T) {
	for _, name := range []string{"ratelimit", "server-error"} {
		t.Run(name, func(t *testing.T) {
			r, srv := runCase(t, name, agent.Budget{})
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.res.Stop != agent.StopDone {
				t.Errorf("stop = %q", r.res.Stop)
			}
			if got, want := len(srv.Requests()), len(srv.resps); got != want {
				t.Errorf("%d requests, want %d", got, want)
			}
			if !strings.Contains(r.logs.String(), "model request retried") {
				t.Errorf("no retry logged:\n%s", r.logs.String())
			}
		})
	}
}

func TestRetriesBounded(t *testing.T) {
	srv := newServer(t, "unauthorized")
	srv.resps = []scripted{{Status: 503, Body: json.RawMessage(`{"error":{"message":"overloaded"}}`)}}
	d, err := llm.New(llm.Config{Provider: "custom", BaseURL: srv.URL, Model: "m", Skill: testSkill(t),
		MaxRetries: 2, BackoffBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Next(t.Context(), nil)
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.Status != 503 {
		t.Fatalf("err = %v, want ProviderError 503", err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests, want 1 + 2 retries", n)
	}
}

func TestAuthErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		want   string
	}{
		{name: "unauthorized", status: 401, want: "custom refused the API key for model test-model (HTTP 401)"},
		{name: "forbidden", status: 403, want: "custom refused the API key for model test-model (HTTP 403)"},
		{name: "notfound", status: 404, want: "custom has no model test-model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, srv := runCase(t, tt.name, agent.Budget{})
			var pe *llm.ProviderError
			if !errors.As(r.err, &pe) && !strings.Contains(fmt.Sprint(r.err), tt.want) {
				t.Fatalf("err = %v, want %q", r.err, tt.want)
			}
			if !strings.Contains(r.err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", r.err, tt.want)
			}
			if r.res.Stop != agent.StopError || len(srv.Requests()) != 1 {
				t.Errorf("stop %q after %d requests; want error after 1 (no retry)", r.res.Stop, len(srv.Requests()))
			}
		})
	}
}

func toolMessages(req map[string]any) []string {
	var out []string
	for _, m := range req["messages"].([]any) {
		mm := m.(map[string]any)
		if mm["role"] == "tool" {
			out = append(out, mm["content"].(string))
		}
	}
	return out
}

func TestMalformedArguments(t *testing.T) {
	r, srv := runCase(t, "malformed", agent.Budget{})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.res.Calls) != 2 || r.res.Calls[0].Reject == "" || r.res.Calls[1].Reject != "" {
		t.Fatalf("calls = %+v", r.res.Calls)
	}
	if got := string(r.res.Calls[0].Call.Arguments); got != `"{\"command\": \"ls"` {
		t.Errorf("recorded arguments = %s", got)
	}
	for _, c := range r.res.Calls {
		if c.Call.PlanReason != agent.ReasonModel {
			t.Errorf("call %s PlanReason = %q, want %q", c.Call.ID, c.Call.PlanReason, agent.ReasonModel)
		}
	}
	if n := len(r.session.Calls()); n != 1 {
		t.Errorf("%d calls reached the session, want 1 (the malformed one is not run)", n)
	}
	fed := toolMessages(srv.Requests()[1])
	if len(fed) != 1 || !strings.Contains(fed[0], "malformed JSON") {
		t.Errorf("tool messages fed back = %q", fed)
	}
	if !strings.Contains(r.transcript.String(), `"reject":"error: the arguments of bash are malformed JSON`) {
		t.Errorf("transcript does not record the rejection:\n%s", r.transcript.String())
	}
}

func TestUnknownTool(t *testing.T) {
	r, srv := runCase(t, "unknown-tool", agent.Budget{})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if diff := cmp.Diff([]string{"t001 launch_rockets", "t002 bash"}, callNames(r.res)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	fed := toolMessages(srv.Requests()[1])
	if len(fed) != 2 || !strings.Contains(fed[0], `there is no tool named "launch_rockets"`) || fed[1] != "ok bash\n" {
		t.Errorf("tool messages fed back = %q", fed)
	}
	if s := r.session.Calls(); len(s) != 1 || s[0].Name != "bash" {
		t.Errorf("session calls = %+v", s)
	}
}

func TestEndlessModelStoppedByBudget(t *testing.T) {
	r, srv := runCase(t, "endless", agent.Budget{Turns: 4})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.res.Stop != agent.StopTurns || r.res.Turns != 4 || len(srv.Requests()) != 4 {
		t.Errorf("stop %q turns %d requests %d", r.res.Stop, r.res.Turns, len(srv.Requests()))
	}
	r, _ = runCase(t, "endless", agent.Budget{Tokens: 300})
	if r.res.Stop != agent.StopTokens || r.res.Turns != 3 {
		t.Errorf("token budget: stop %q turns %d", r.res.Stop, r.res.Turns)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  llm.Config
		want string
	}{
		{name: "ok openai", cfg: llm.Config{Provider: "openai", Model: "gpt-4o-mini", APIKey: fakeKey}},
		{name: "ok ollama without key", cfg: llm.Config{Provider: "ollama", Model: "llama3.1"}},
		{name: "custom by base url", cfg: llm.Config{BaseURL: "http://127.0.0.1:8000/v1", Model: "m"}},
		{name: "no provider", cfg: llm.Config{Model: "m"}, want: "no model provider given"},
		{name: "unknown provider", cfg: llm.Config{Provider: "acme", Model: "m"}, want: `unknown provider "acme"`},
		{name: "no model", cfg: llm.Config{Provider: "ollama"}, want: "no model given for provider ollama"},
		{name: "no key", cfg: llm.Config{Provider: "openrouter", Model: "m"}, want: "provider openrouter needs an API key"},
		{name: "bad url", cfg: llm.Config{Provider: "custom", BaseURL: "ftp://x", Model: "m"}, want: "not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	srv := newServer(t, "multiturn")
	res, err := llm.Check(t.Context(), llm.Config{Provider: "custom", BaseURL: srv.URL, Model: "test-model", APIKey: fakeKey})
	if err != nil {
		t.Fatal(err)
	}
	if !res.ModelsListed || !res.ModelFound || res.Models != 2 || !res.ToolsSupported {
		t.Errorf("Check = %+v", res)
	}
	srv = newServer(t, "unauthorized")
	srv.resps = []scripted{{Status: 200, Body: json.RawMessage(`{"choices":[{"message":{"role":"assistant","content":"pong"}}]}`)}}
	res, err = llm.Check(t.Context(), llm.Config{Provider: "custom", BaseURL: srv.URL, Model: "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ModelFound || res.ToolsSupported || len(res.Notes) != 2 {
		t.Errorf("Check = %+v", res)
	}
	srv = newServer(t, "unauthorized")
	_, err = llm.Check(t.Context(), llm.Config{Provider: "custom", BaseURL: srv.URL, Model: "test-model", APIKey: fakeKey, MaxRetries: -1})
	if err == nil || strings.Contains(err.Error(), fakeKey) || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("Check with a bad key: %v", err)
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	srv := newServer(t, "unauthorized")
	srv.resps = []scripted{{Status: 429, Headers: map[string]string{"Retry-After": "30"}, Body: json.RawMessage(`{"error":{"message":"slow down"}}`)}}
	// A 1ms backoff would retry many times in 300ms: Retry-After (30s) must win.
	d, err := llm.New(llm.Config{Provider: "custom", BaseURL: srv.URL, Model: "m", Skill: testSkill(t), BackoffBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := d.Next(ctx, nil); err == nil {
		t.Fatal("no error after cancel")
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("backoff ignored the context: %v", time.Since(start))
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests; Retry-After: 30 should have held the retry", n)
	}
}

func TestToolCallsWithoutIDs(t *testing.T) {
	r, srv := runCase(t, "no-ids", agent.Budget{})
	if r.err != nil || len(r.res.Calls) != 1 {
		t.Fatalf("run: %v, %+v", r.err, r.res)
	}
	msgs := srv.Requests()[1]["messages"].([]any)
	asst := msgs[2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["id"]
	tool := msgs[3].(map[string]any)["tool_call_id"]
	if asst != "call_1" || tool != "call_1" {
		t.Errorf("assistant call id %v, tool message id %v; want call_1 both", asst, tool)
	}
}

func TestConfigNeverPrintsKey(t *testing.T) {
	cfg := llm.Config{Provider: "openai", Model: "m", APIKey: fakeKey}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("cfg", "config", cfg)
	//lint:ignore SA1026 HTTPClient is nil here; the JSON of a config must not hold the key either
	b, _ := json.Marshal(cfg)
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%v", &cfg), logs.String(), string(b)} {
		if strings.Contains(s, fakeKey) {
			t.Errorf("key printed: %s", s)
		}
	}
}

func TestCheckModelWithoutTools(t *testing.T) {
	srv := newServer(t, "unauthorized")
	srv.resps = []scripted{{Status: 400, Body: json.RawMessage(`{"error":{"message":"registry.ollama.ai/library/gemma does not support tools"}}`)}}
	res, err := llm.Check(t.Context(), llm.Config{Provider: "custom", BaseURL: srv.URL, Model: "test-model"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ToolsSupported || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "refused a request with tools") {
		t.Errorf("Check = %+v", res)
	}
}
