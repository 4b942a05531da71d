package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
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
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// runAgent is the drive stage of a pass: it starts sampling the sandbox's
// resources (and, in an unwatched pass, its processes), then runs the
// driver's loop until it ends or ctx does. How the loop ended is in st.
func (r *Runner) runAgent(ctx context.Context, st *run) {
	st.resources = startSampler(ctx, st.sandbox, time.Second)
	if st.plan.Unwatched {
		st.procs = startProcSampler(ctx, st.sandbox, r.now)
	}
	r.phase("agent", "%s driver", st.plan.Driver.Kind)
	loopErr := r.drive(ctx, st)
	st.loopErr = causeOf(ctx, loopErr)
	st.deadline = errors.Is(context.Cause(ctx), ErrTimeout)
}

// drive runs the driver loop against the MCP tool server in the sandbox.
func (r *Runner) drive(ctx context.Context, st *run) error {
	t0 := time.Now()
	drv, err := r.driver(st)
	if err != nil {
		return err
	}
	r.log().Debug("drive: driver ready", "took", time.Since(t0))
	conn := st.tools
	if conn == nil {
		if conn, err = connectTools(ctx, st); err != nil {
			return err
		}
	}
	defer conn.close()
	client := conn.client
	if st.skillReady != nil {
		// A warm pair's skill is unpacked while the tool server starts; the
		// first call waits for it (and for the stamp).
		if err := st.skillReady(); err != nil {
			return err
		}
	}
	loop := r.agentLoop(st, &mcpSession{client: client, now: r.now})
	st.loop, err = loop.Run(ctx, drv)
	if err != nil {
		return fmt.Errorf("agent loop: %w", err)
	}
	return nil
}

// agentLoop is the driver loop of st over session: its budgets, its
// transcript, and the progress and tool-call events of each call.
func (r *Runner) agentLoop(st *run, session agent.ToolSession) agent.Loop {
	p := st.plan
	loop := agent.Loop{
		Session:    session,
		Budget:     agent.Budget{Turns: p.Limits.Turns, Tokens: p.Limits.Tokens, Wall: p.Limits.Timeout},
		Transcript: &st.transcr,
		Now:        r.Now,
		DriverName: p.Driver.Kind,
		OnCall: func(c agent.ToolCall) {
			st.firstCall.Do(func() { r.lap(st, "first call") })
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
	return loop
}

// toolConn is a tool server and the MCP session on it.
type toolConn struct {
	srv    *toolServer
	client *mcptools.Client
}

// connectTools starts st's tool server and opens the MCP session on it.
func connectTools(ctx context.Context, st *run) (*toolConn, error) {
	srv := startToolServer(ctx, st)
	hctx, hcancel := context.WithTimeout(ctx, 30*time.Second)
	client, err := mcptools.NewClient(hctx, srv.stdin, srv.stdout)
	hcancel()
	if err != nil {
		srv.stop()
		return nil, fmt.Errorf("connect to tool server: %w (%s)", err, tail(srv.stderr.String(), 300))
	}
	return &toolConn{srv: srv, client: client}, nil
}

// close ends the session and the server; it may be called more than once.
func (c *toolConn) close() {
	c.client.Close()
	c.srv.stop()
}

// toolServer is the MCP tool server running in the sandbox as one exec: the
// client writes its stdin and reads its stdout; its stderr is kept (capped)
// for errors, and may be read while the exec still writes it.
type toolServer struct {
	stdin  *io.PipeWriter
	stdout *io.PipeReader
	stderr *capbuf.Buffer
	done   chan error // the exec's error, once it ended
	cancel context.CancelFunc
	once   sync.Once
}

// startToolServer starts the tool server's exec. It outlives ctx's
// deadline (stop ends it), so that the calls in flight can be recorded.
func startToolServer(ctx context.Context, st *run) *toolServer {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &toolServer{stdin: inW, stdout: outR, stderr: capbuf.New(64 << 10), done: make(chan error, 1), cancel: cancel}
	go func() {
		_, err := st.sandbox.Exec(sctx, ExecSpec{
			Argv:   mcpArgv(st.plan, st.home),
			User:   "0:0",
			Env:    append(append(slices.Clone(st.home.Env), clockEnv(st.system.Clock)...), entropyEnv(st.plan)...),
			Dir:    st.home.HomeDir,
			Stdin:  inR,
			Stdout: outW,
			Stderr: s.stderr,
		})
		outW.CloseWithError(io.EOF)
		inR.Close()
		s.done <- err
	}()
	return s
}

// stop closes the server's stdin, which ends it, and waits for the exec;
// after 5 seconds it cancels the exec instead. Calls after the first
// return at once.
func (s *toolServer) stop() {
	s.once.Do(func() { endExec(s.stdin, s.done, s.cancel) })
}

// mcpArgv is the tool server's command line; an unwatched pass runs the
// tools without the syscall tracer (--direct: the skill can read this
// command line, and must find no "strace" in it).
func mcpArgv(p traceplan.Plan, home *canaryfs.Home) []string {
	argv := []string{AgentBin, "__mcp",
		"--user", home.User, "--uid", strconv.Itoa(UserUID), "--gid", strconv.Itoa(UserGID),
		"--home", home.HomeDir, "--max-output", strconv.FormatInt(p.Limits.OutputBytes, 10),
		"--timeout", p.Limits.ToolTimeout.String(), "--log-dir", CallLogDir}
	if p.Unwatched {
		argv = append(argv, "--direct")
	}
	return argv
}

func (r *Runner) driver(st *run) (agent.Driver, error) {
	p := st.plan
	switch p.Driver.Kind {
	case traceplan.DriverLiteral:
		return literal.New(st.skill, literalConfig(st)), nil
	case traceplan.DriverReplay:
		d, err := replay.Open(p.Driver.Transcript)
		if err != nil {
			return nil, fmt.Errorf("replay driver: %w", err)
		}
		return d, nil
	case traceplan.DriverLLM:
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
