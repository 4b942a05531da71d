package orchestrator

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/agent/literal"
	"github.com/sandboxctl/sandboxctl/agent/llm"
	"github.com/sandboxctl/sandboxctl/agent/replay"
	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/internal/capbuf"
	"github.com/sandboxctl/sandboxctl/mcptools"
	"github.com/sandboxctl/sandboxctl/trace"
)

// drive runs the driver loop against the MCP tool server in the sandbox.
func (r *Runner) drive(ctx context.Context, st *run) error {
	p := st.plan
	drv, err := r.driver(st)
	if err != nil {
		return err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srvErr := capbuf.New(64 << 10) // read while the server may still write it
	srvDone := make(chan error, 1)
	sctx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServer()
	go func() {
		_, err := st.sandbox.Exec(sctx, ExecSpec{
			Argv:   mcpArgv(p, st.home),
			User:   "0:0",
			Env:    st.home.Env,
			Dir:    st.home.HomeDir,
			Stdin:  inR,
			Stdout: outW,
			Stderr: srvErr,
		})
		outW.CloseWithError(io.EOF)
		inR.Close()
		srvDone <- err
	}()
	defer func() {
		inW.Close()
		select {
		case <-srvDone:
		case <-time.After(5 * time.Second):
			stopServer()
			<-srvDone
		}
	}()

	hctx, hcancel := context.WithTimeout(ctx, 30*time.Second)
	client, err := mcptools.NewClient(hctx, inW, outR)
	hcancel()
	if err != nil {
		return fmt.Errorf("connect to tool server: %w (%s)", err, tail(srvErr.String(), 300))
	}
	defer client.Close()

	session := &mcpSession{client: client, now: r.now}
	loop := agent.Loop{
		Session:    session,
		Budget:     agent.Budget{Turns: p.Limits.Turns, Tokens: p.Limits.Tokens, Wall: p.Limits.Timeout},
		Transcript: &st.transcr,
		Now:        r.Now,
		DriverName: p.Driver.Kind,
		OnCall: func(c agent.ToolCall) {
			if r.Progress != nil {
				r.Progress(Progress{Phase: "agent", Call: &c})
			}
		},
		OnResult: func(x agent.Exchange) {
			st.calls.add(x.Event())
			if r.Progress != nil {
				res := x.Result
				r.Progress(Progress{Phase: "agent", Call: &x.Call, Result: &res})
			}
		},
	}
	if p.Driver.APIKey != "" {
		loop.Redact = []string{p.Driver.APIKey}
	}
	st.loop, err = loop.Run(ctx, drv)
	if err != nil {
		return fmt.Errorf("agent loop: %w", err)
	}
	return nil
}

// mcpArgv is the tool server's command line; an unwatched pass runs the
// tools without the syscall tracer.
func mcpArgv(p Plan, home *canaryfs.Home) []string {
	argv := []string{AgentBin, "__mcp",
		"--user", home.User, "--uid", strconv.Itoa(UserUID), "--gid", strconv.Itoa(UserGID),
		"--home", home.HomeDir, "--max-output", strconv.FormatInt(p.Limits.OutputBytes, 10),
		"--timeout", p.Limits.ToolTimeout.String(), "--log-dir", CallLogDir}
	if p.Unwatched {
		argv = append(argv, "--no-strace")
	}
	return argv
}

func (r *Runner) driver(st *run) (agent.Driver, error) {
	p := st.plan
	switch p.Driver.Kind {
	case DriverLiteral:
		return literal.New(st.skill, literalConfig(st)), nil
	case DriverReplay:
		d, err := replay.Open(p.Driver.Transcript)
		if err != nil {
			return nil, fmt.Errorf("replay driver: %w", err)
		}
		return d, nil
	case DriverLLM:
		d, err := llm.New(llm.Config{
			Provider: p.Driver.Provider, BaseURL: p.Driver.BaseURL, Model: p.Driver.Model,
			APIKey: p.Driver.APIKey, Prompt: p.Prompt, Skill: st.skill, SkillDir: st.skillDir,
			Log: r.Log,
		})
		if err != nil {
			return nil, fmt.Errorf("llm driver: %w", err)
		}
		return d, nil
	}
	return nil, fmt.Errorf("unknown driver %q", p.Driver.Kind)
}

// mcpSession is the agent's ToolSession on the MCP client.
type mcpSession struct {
	client *mcptools.Client
	now    func() time.Time
}

func (s *mcpSession) CallTool(ctx context.Context, call agent.ToolCall) (agent.ToolResult, error) {
	start := s.now()
	res, err := s.client.Call(ctx, call.ID, call.Name, call.Arguments)
	tr := agent.ToolResult{
		ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr,
		Truncated: res.Truncated, IsError: res.IsError, Text: res.Text, Duration: res.Duration,
	}
	if tr.Duration == 0 {
		tr.Duration = s.now().Sub(start)
	}
	return tr, err
}

// callLog collects the tool-call events of the loop as calls end.
type callLog struct {
	mu     sync.Mutex
	events []trace.Event
}

func newCallLog() *callLog { return &callLog{} }

func (l *callLog) add(e trace.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *callLog) all() []trace.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]trace.Event(nil), l.events...)
}
