package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/agent/agenttest"
	"github.com/sandboxctl/sandboxctl/toolspec"
	"github.com/sandboxctl/sandboxctl/trace"
)

func bash(cmd string) agent.Proposal {
	args, _ := json.Marshal(map[string]string{"command": cmd})
	return agent.Proposal{ToolCall: agent.ToolCall{Name: toolspec.Bash, Arguments: args}}
}

func records(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("transcript line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func types(recs []map[string]any) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r["type"].(string))
	}
	return out
}

func TestLoopRunsStepsAndAssignsIDs(t *testing.T) {
	sess := &agenttest.Session{}
	d := &agenttest.Script{Steps: []agent.Step{
		{Messages: []agent.Message{{Role: "user", Content: "hi"}}, Calls: []agent.Proposal{bash("echo a"), bash("echo b")}, Usage: agent.Usage{PromptTokens: 10, CompletionTokens: 5}},
		{Calls: []agent.Proposal{bash("echo c"), {ToolCall: agent.ToolCall{Name: "nope"}, Reject: "unknown tool nope"}}},
	}}
	var tr bytes.Buffer
	var progress []string
	l := &agent.Loop{Session: sess, Transcript: &tr, OnCall: func(c agent.ToolCall) { progress = append(progress, c.ID) }}
	res, err := l.Run(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop != agent.StopDone || res.Turns != 2 || res.Usage.TotalTokens != 15 {
		t.Errorf("stop %q turns %d usage %+v", res.Stop, res.Turns, res.Usage)
	}
	var ids []string
	for _, c := range sess.Calls() {
		ids = append(ids, c.ID)
	}
	if diff := cmp.Diff([]string{"t001", "t002", "t003"}, ids); diff != "" {
		t.Errorf("session call ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"t001", "t002", "t003"}, progress); diff != "" {
		t.Errorf("OnCall ids (-want +got):\n%s", diff)
	}
	if len(res.Calls) != 4 || res.Calls[3].Call.ID != "t004" || !res.Calls[3].Result.IsError || res.Calls[3].Result.Text != "unknown tool nope" {
		t.Errorf("rejected call: %+v", res.Calls)
	}
	// The driver saw each step's exchanges.
	if len(d.Seen) != 3 || d.Seen[0] != nil || len(d.Seen[1]) != 2 || len(d.Seen[2]) != 2 || d.Seen[1][1].Result.Stdout != "ok bash\n" {
		t.Errorf("driver saw %+v", d.Seen)
	}
	want := []string{"start", "message", "turn", "result", "result", "turn", "result", "result", "turn", "end"}
	if diff := cmp.Diff(want, types(records(t, tr.Bytes()))); diff != "" {
		t.Errorf("transcript record types (-want +got):\n%s", diff)
	}
}

func TestLoopBudgets(t *testing.T) {
	forever := func() agent.Driver { return &endless{} }
	tests := []struct {
		name   string
		budget agent.Budget
		handle func(ctx context.Context, c agent.ToolCall) (agent.ToolResult, error)
		want   string
		turns  int
	}{
		{name: "turns", budget: agent.Budget{Turns: 3}, want: agent.StopTurns, turns: 3},
		{name: "tokens", budget: agent.Budget{Tokens: 250}, want: agent.StopTokens, turns: 3},
		{name: "output", budget: agent.Budget{OutputBytes: 20}, want: agent.StopOutput, turns: 3,
			handle: func(ctx context.Context, c agent.ToolCall) (agent.ToolResult, error) {
				return agent.ToolResult{Stdout: "1234567"}, nil
			}},
		{name: "wall", budget: agent.Budget{Wall: 50 * time.Millisecond}, want: agent.StopWall,
			handle: func(ctx context.Context, c agent.ToolCall) (agent.ToolResult, error) {
				<-ctx.Done()
				return agent.ToolResult{}, ctx.Err()
			}, turns: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &agent.Loop{Session: &agenttest.Session{Handle: tt.handle}, Budget: tt.budget}
			res, err := l.Run(t.Context(), forever())
			if err != nil {
				t.Fatal(err)
			}
			if res.Stop != tt.want || res.Turns != tt.turns {
				t.Errorf("stop %q after %d turns, want %q after %d", res.Stop, res.Turns, tt.want, tt.turns)
			}
		})
	}
}

// endless calls a tool forever, 100 tokens a step.
type endless struct{}

func (endless) Next(ctx context.Context, prev []agent.Exchange) (agent.Step, error) {
	return agent.Step{Calls: []agent.Proposal{bash("yes")}, Usage: agent.Usage{TotalTokens: 100}}, nil
}

func TestLoopCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	sess := &agenttest.Session{Handle: func(context.Context, agent.ToolCall) (agent.ToolResult, error) {
		cancel()
		return agent.ToolResult{}, nil
	}}
	res, err := (&agent.Loop{Session: sess}).Run(ctx, endless{})
	if err != nil || res.Stop != agent.StopCancelled {
		t.Errorf("Run = %q, %v; want cancelled, nil", res.Stop, err)
	}
}

type panicky struct{}

func (panicky) Next(context.Context, []agent.Exchange) (agent.Step, error) { panic("boom") }

type failing struct{}

func (failing) Next(context.Context, []agent.Exchange) (agent.Step, error) {
	return agent.Step{}, errors.New("model down")
}

func TestLoopErrors(t *testing.T) {
	tests := []struct {
		name    string
		driver  agent.Driver
		session agent.ToolSession
		want    string
	}{
		{name: "driver panic", driver: panicky{}, session: &agenttest.Session{}, want: "driver panicked: boom"},
		{name: "driver error", driver: failing{}, session: &agenttest.Session{}, want: "agent driver: model down"},
		{name: "transport error", driver: endless{}, want: "tool call t001 (bash): pipe closed",
			session: &agenttest.Session{Handle: func(context.Context, agent.ToolCall) (agent.ToolResult, error) {
				return agent.ToolResult{}, errors.New("pipe closed")
			}}},
		{name: "no session", driver: endless{}, want: "no tool session"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr bytes.Buffer
			res, err := (&agent.Loop{Session: tt.session, Transcript: &tr}).Run(t.Context(), tt.driver)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if res.Stop != agent.StopError {
				t.Errorf("stop = %q", res.Stop)
			}
			recs := records(t, tr.Bytes())
			if last := recs[len(recs)-1]; last["type"] != "end" || !strings.Contains(last["error"].(string), tt.want) {
				t.Errorf("last transcript record = %v", last)
			}
		})
	}
}

func TestLoopRedacts(t *testing.T) {
	const key = "sk-test-SECRET-0123456789"
	d := &agenttest.Script{Steps: []agent.Step{{Messages: []agent.Message{{Role: "system", Content: "key is " + key}}, Calls: []agent.Proposal{bash("echo " + key)}}}}
	var tr bytes.Buffer
	res, err := (&agent.Loop{Session: &agenttest.Session{Handle: func(context.Context, agent.ToolCall) (agent.ToolResult, error) {
		return agent.ToolResult{}, errors.New("failed with " + key)
	}}, Transcript: &tr, Redact: []string{key}}).Run(t.Context(), d)
	if err == nil || strings.Contains(err.Error(), key) {
		t.Errorf("err = %v", err)
	}
	if bytes.Contains(tr.Bytes(), []byte(key)) || !bytes.Contains(tr.Bytes(), []byte(agent.Redacted)) {
		t.Errorf("transcript not redacted:\n%s", tr.String())
	}
	_ = res
}

func TestExchangeEvent(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := t0
	now := func() time.Time { clock = clock.Add(time.Second); return clock }
	d := &agenttest.Script{Steps: []agent.Step{{Calls: []agent.Proposal{
		{ToolCall: agent.ToolCall{Name: "bash", Arguments: []byte(`{"command":"ls"}`), SkillFile: "SKILL.md", SkillLine: 7, PlanReason: agent.ReasonCodeBlock}},
		{ToolCall: agent.ToolCall{Name: "nope", Arguments: []byte(`{}`), PlanReason: agent.ReasonPlaceholder}, Reject: "no such tool"},
	}}}}
	res, err := (&agent.Loop{Session: &agenttest.Session{}, Now: now}).Run(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	ev := res.Calls[0].Event()
	tc := ev.Data.(*trace.ToolCall)
	if ev.Source != trace.SourceTool || ev.Type != trace.TypeToolCall || ev.ToolCallID != "t001" || tc.Tool != "bash" ||
		tc.SkillLine != 7 || tc.PlanReason != agent.ReasonCodeBlock || tc.Stdout != "ok bash\n" || tc.Duration != time.Second || ev.Time.IsZero() {
		t.Errorf("Event() = %+v %+v", ev, tc)
	}
	if tc := res.Calls[1].Event().Data.(*trace.ToolCall); !tc.IsError || tc.Error != "no such tool" || tc.PlanReason != agent.ReasonPlaceholder {
		t.Errorf("rejected Event() = %+v", tc)
	}
}
