package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// A Driver decides which tool calls to make. Next is called first with nil,
// then with the exchanges of the calls of the step it returned last (in
// order, results included). It returns the next step: calls to run, or Done.
// A Driver is used by one Loop at a time; it may keep state between calls.
type Driver interface {
	Next(ctx context.Context, prev []Exchange) (Step, error)
}

// A Step is what a driver decided for one turn.
type Step struct {
	// Messages are conversation messages to record before the calls (the
	// llm driver records its system and user prompts and the model's text).
	Messages []Message
	// Calls to run, in order. The loop assigns their IDs.
	Calls []Proposal
	// Done: the driver has nothing more to do. Calls of a Done step still run.
	Done bool
	// Note says something about the run for the report, such as "no
	// runnable content" from the literal driver.
	Note string
	// Usage is what this step cost (model tokens); zero for model-free drivers.
	Usage Usage
}

// A Proposal is one tool call a driver asks for. A non-empty Reject means
// the call is not run (unknown tool, malformed arguments): the loop records
// it and answers with an error result whose text is Reject.
type Proposal struct {
	ToolCall
	Reject string `json:"reject,omitempty"`
}

// A Message is one conversation message, as recorded in the transcript.
type Message struct {
	Role    string `json:"role"` // "system", "user", "assistant", "tool"
	Content string `json:"content"`
}

// Usage counts model tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (u *Usage) add(v Usage) {
	u.PromptTokens += v.PromptTokens
	u.CompletionTokens += v.CompletionTokens
	if v.TotalTokens == 0 {
		v.TotalTokens = v.PromptTokens + v.CompletionTokens
	}
	u.TotalTokens += v.TotalTokens
}

// An Exchange is one call and what came back.
type Exchange struct {
	Call   ToolCall   `json:"call"`
	Reject string     `json:"reject,omitempty"`
	Result ToolResult `json:"result"`
	Turn   int        `json:"turn"`
	// Started is when the loop handed the call to the session (Loop.Now).
	Started time.Time `json:"started_at"`
}

// Event returns the exchange as a trace event of type tool_call (Seq left
// zero for the timeline to assign).
func (ex Exchange) Event() trace.Event {
	tc := &trace.ToolCall{
		ID: ex.Call.ID, Tool: ex.Call.Name, Arguments: ex.Call.Arguments,
		ExitCode: ex.Result.ExitCode, Stdout: ex.Result.Stdout, Stderr: ex.Result.Stderr,
		Truncated: ex.Result.Truncated, IsError: ex.Result.IsError || ex.Reject != "", Error: ex.Reject,
		Started: ex.Started, Duration: ex.Result.Duration,
		SkillFile: ex.Call.SkillFile, SkillLine: ex.Call.SkillLine, PlanReason: ex.Call.PlanReason,
	}
	return trace.Event{Time: ex.Started, Source: trace.SourceTool, Type: trace.TypeToolCall, ToolCallID: ex.Call.ID, Data: tc}
}

// Budget bounds a run. Zero fields are unlimited.
type Budget struct {
	Turns       int           // driver steps
	Tokens      int           // total model tokens
	Wall        time.Duration // wall time of the whole loop
	OutputBytes int64         // stdout+stderr bytes of all tool results
}

// Stop reasons.
const (
	StopDone      = "done"
	StopTurns     = "turns"
	StopTokens    = "tokens"
	StopWall      = "wall"
	StopOutput    = "output"
	StopCancelled = "cancelled"
	StopError     = "error"
)

// Result is the outcome of a run.
type Result struct {
	Calls       []Exchange    `json:"calls"`
	Stop        string        `json:"stop"`
	Turns       int           `json:"turns"`
	Usage       Usage         `json:"usage"`
	OutputBytes int64         `json:"output_bytes"`
	Duration    time.Duration `json:"duration_ns"`
	// Notes collects the drivers' Step.Note values.
	Notes []string `json:"notes,omitempty"`
}

// A Loop runs a driver against a tool session. Session is required.
type Loop struct {
	Session    ToolSession
	Budget     Budget
	Transcript io.Writer        // JSON lines (see docs/drivers.md); nil: none
	Now        func() time.Time // nil: time.Now
	OnCall     func(ToolCall)   // called before each call runs (CLI progress); nil: none
	OnResult   func(Exchange)   // called after each call; nil: none
	// Redact lists secret values (API keys) scrubbed from every transcript
	// line and from the returned error, whatever a driver let through.
	Redact []string
	// DriverName is recorded in the transcript's start record.
	DriverName string
}

var errWall = errors.New("wall-time budget exhausted")

// Run runs d until it is done or a budget ends. The error is non-nil when
// the run could not go on (driver error or panic, tool transport failure,
// transcript write failure): Result is still filled with what happened, and
// Stop is "error". Ending on a budget or on ctx is not an error.
func (l *Loop) Run(ctx context.Context, d Driver) (res Result, err error) {
	now := l.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	tw := &transcript{w: l.Transcript, redact: l.Redact}
	defer func() { err = l.end(tw, &res, err, start, now) }()
	if l.Session == nil {
		res.Stop = StopError
		return res, errors.New("agent loop: no tool session")
	}
	if err := tw.write(map[string]any{"type": "start", "time": start, "driver": l.DriverName, "budget": budgetJSON(l.Budget)}); err != nil {
		res.Stop = StopError
		return res, err
	}
	runCtx := ctx
	if l.Budget.Wall > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, l.Budget.Wall, errWall)
		defer cancel()
	}
	lr := &loopRun{l: l, now: now, tw: tw, res: &res}
	var prev []Exchange
	for {
		next, done, terr := lr.turn(runCtx, d, prev)
		if done {
			return res, terr
		}
		prev = next
	}
}

// end completes res when Run returns with err, and writes the
// transcript's end record. It returns err, or the write's error when err
// is nil, with the secret values redacted.
func (l *Loop) end(tw *transcript, res *Result, err error, start time.Time, now func() time.Time) error {
	res.Duration = now().Sub(start)
	end := map[string]any{"type": "end", "time": now(), "stop": res.Stop, "turns": res.Turns,
		"usage": res.Usage, "output_bytes": res.OutputBytes, "call_count": len(res.Calls)}
	if err != nil {
		end["error"] = err.Error()
	}
	if len(res.Notes) > 0 {
		end["notes"] = res.Notes
	}
	if werr := tw.write(end); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		err = redactErr(err, l.Redact)
	}
	return err
}

// A loopRun is what the turns of one Run share: the loop, its clock, its
// transcript, the result being filled and the number of calls made.
type loopRun struct {
	l   *Loop
	now func() time.Time
	tw  *transcript
	res *Result
	seq int
}

// stopReason is the stop reason of a run whose context ctx has ended.
func stopReason(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), errWall) {
		return StopWall
	}
	return StopCancelled
}

// turn runs one turn under ctx: it asks d for a step, given the exchanges
// of the previous turn, and makes the calls it proposes. It returns this
// turn's exchanges, or done when the run ends, with the error Run returns.
func (lr *loopRun) turn(ctx context.Context, d Driver, prev []Exchange) ([]Exchange, bool, error) {
	res, now, tw := lr.res, lr.now, lr.tw
	if ctx.Err() != nil {
		res.Stop = stopReason(ctx)
		return nil, true, nil
	}
	t0 := now()
	step, derr := safeNext(ctx, d, prev)
	latency := now().Sub(t0)
	if derr != nil {
		if ctx.Err() != nil {
			res.Stop = stopReason(ctx)
			return nil, true, nil
		}
		res.Stop = StopError
		tw.write(map[string]any{"type": "error", "time": now(), "error": derr.Error()})
		return nil, true, fmt.Errorf("agent driver: %w", derr)
	}
	res.Usage.add(step.Usage)
	if step.Note != "" {
		res.Notes = append(res.Notes, step.Note)
	}
	for _, m := range step.Messages {
		if err := tw.write(map[string]any{"type": "message", "time": now(), "role": m.Role, "content": m.Content}); err != nil {
			res.Stop = StopError
			return nil, true, err
		}
	}
	if len(step.Calls) == 0 {
		if err := tw.write(turnRecord(res.Turns+1, now(), latency, step, nil)); err != nil {
			res.Stop = StopError
			return nil, true, err
		}
		res.Stop = StopDone
		if !step.Done {
			res.Notes = append(res.Notes, "driver returned a step with no calls")
		}
		return nil, true, nil
	}
	res.Turns++
	turn := res.Turns
	for i := range step.Calls {
		lr.seq++
		step.Calls[i].ID = fmt.Sprintf("t%03d", lr.seq)
	}
	if err := tw.write(turnRecord(turn, now(), latency, step, step.Calls)); err != nil {
		res.Stop = StopError
		return nil, true, err
	}
	prev, done, err := lr.callTools(ctx, step, turn, prev)
	if done {
		return nil, true, err
	}
	switch {
	case step.Done:
		res.Stop = StopDone
		return nil, true, nil
	case lr.l.Budget.Tokens > 0 && res.Usage.TotalTokens >= lr.l.Budget.Tokens:
		res.Stop = StopTokens
		return nil, true, nil
	case lr.l.Budget.Turns > 0 && res.Turns >= lr.l.Budget.Turns:
		res.Stop = StopTurns
		return nil, true, nil
	}
	return prev, false, nil
}

// callTools makes the calls step proposes in turn (a rejected one gets
// its rejection as result) and returns their exchanges, in a new slice
// made from prev, or done when the run ends, with the error Run returns.
func (lr *loopRun) callTools(ctx context.Context, step Step, turn int, prev []Exchange) ([]Exchange, bool, error) {
	l, res, now, tw := lr.l, lr.res, lr.now, lr.tw
	prev = prev[:0:0]
	for _, p := range step.Calls {
		if ctx.Err() != nil {
			res.Stop = stopReason(ctx)
			return nil, true, nil
		}
		ex := Exchange{Call: p.ToolCall, Reject: p.Reject, Turn: turn, Started: now()}
		if p.Reject != "" {
			ex.Result = ToolResult{ExitCode: -1, IsError: true, Text: p.Reject}
		} else {
			if l.OnCall != nil {
				l.OnCall(p.ToolCall)
			}
			r, cerr := l.Session.CallTool(ctx, p.ToolCall)
			if cerr != nil {
				if ctx.Err() != nil {
					res.Stop = stopReason(ctx)
					return nil, true, nil
				}
				res.Stop = StopError
				ex.Result = ToolResult{ExitCode: -1, IsError: true, Text: "tool call failed: " + cerr.Error()}
				res.Calls = append(res.Calls, ex)
				tw.write(resultRecord(now(), ex))
				return nil, true, fmt.Errorf("tool call %s (%s): %w", p.ID, p.Name, cerr)
			}
			if r.Duration == 0 {
				r.Duration = now().Sub(ex.Started)
			}
			ex.Result = r
			res.OutputBytes += int64(len(r.Stdout) + len(r.Stderr))
		}
		res.Calls = append(res.Calls, ex)
		prev = append(prev, ex)
		if l.OnResult != nil {
			l.OnResult(ex)
		}
		if err := tw.write(resultRecord(now(), ex)); err != nil {
			res.Stop = StopError
			return nil, true, err
		}
		if l.Budget.OutputBytes > 0 && res.OutputBytes >= l.Budget.OutputBytes {
			res.Stop = StopOutput
			return nil, true, nil
		}
	}
	return prev, false, nil
}

// safeNext calls d.Next and turns a panic into an error, so the caller's
// cleanup (sandbox removal, transcript end record) still runs.
func safeNext(ctx context.Context, d Driver, prev []Exchange) (step Step, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("driver panicked: %v\n%s", r, firstLines(string(debug.Stack()), 12))
		}
	}()
	return d.Next(ctx, prev)
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

func budgetJSON(b Budget) map[string]any {
	return map[string]any{"turns": b.Turns, "tokens": b.Tokens, "wall_ms": b.Wall.Milliseconds(), "output_bytes": b.OutputBytes}
}

func turnRecord(turn int, t time.Time, latency time.Duration, step Step, calls []Proposal) map[string]any {
	r := map[string]any{"type": "turn", "turn": turn, "time": t, "latency_ms": latency.Milliseconds(),
		"usage": step.Usage, "done": step.Done || len(calls) == 0}
	if calls != nil {
		r["calls"] = calls
	}
	if step.Note != "" {
		r["note"] = step.Note
	}
	return r
}

func resultRecord(t time.Time, ex Exchange) map[string]any {
	r := map[string]any{"type": "result", "time": t, "turn": ex.Turn, "id": ex.Call.ID, "name": ex.Call.Name,
		"result": ex.Result, "duration_ms": ex.Result.Duration.Milliseconds()}
	if ex.Reject != "" {
		r["reject"] = ex.Reject
	}
	return r
}

// transcript writes JSON lines, scrubbing secrets from each line.
type transcript struct {
	mu     sync.Mutex
	w      io.Writer
	redact []string
}

func (t *transcript) write(rec map[string]any) error {
	if t.w == nil {
		return nil
	}
	// "type" and "time" lead each line, so a person can scan the file.
	typ, err1 := encode(rec["type"])
	tm, err2 := encode(rec["time"])
	delete(rec, "type")
	delete(rec, "time")
	rest, err3 := encode(rec)
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("write transcript: %w", err)
	}
	line := []byte(`{"type":` + string(typ) + `,"time":` + string(tm))
	if len(rec) > 0 {
		line = append(append(line, ','), rest[1:]...)
	} else {
		line = append(line, '}')
	}
	b := []byte(RedactString(string(line), t.redact) + "\n")
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, err := t.w.Write(b); err != nil {
		return fmt.Errorf("write transcript: %w", err)
	}
	return nil
}

// encode marshals v as JSON without HTML escaping (commands read as
// written; arguments stay byte-exact) and without the trailing newline.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
