package orchestrator

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/agent/literal"
	"github.com/sandboxctl/sandboxctl/agent/llm"
	"github.com/sandboxctl/sandboxctl/agent/replay"
	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/mcptools"
	"github.com/sandboxctl/sandboxctl/netcapture"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/trace"
)

// ErrTimeout is the cause of a trace that ran into its deadline.
var ErrTimeout = errors.New("trace deadline reached")

// ErrJailNotReady is returned when the network jail did not signal readiness.
var ErrJailNotReady = errors.New("network jail not ready")

// Progress is one step of a trace, for the CLI's progress display.
type Progress struct {
	// Phase is one of "load", "image", "jail", "sandbox", "agent",
	// "collect", "report", "cleanup", "stealth" (the unwatched pass
	// starts).
	Phase   string
	Message string
	// Call is set for a tool call as it starts (Result nil) and ends.
	Call   *agent.ToolCall
	Result *agent.ToolResult
}

// A Runner runs skills in sandboxes. Runtime and Binary are required.
type Runner struct {
	Runtime Runtime
	// Binary is the host path of the static sandboxctl binary copied into
	// the containers (host and sandbox code always match).
	Binary string
	// Version is sandboxctl's version, recorded in the report.
	Version string
	// Progress receives phase changes and tool calls (nil: none). It is
	// called from one goroutine at a time.
	Progress func(Progress)
	// ImageProgress receives image build output (nil: discarded).
	ImageProgress io.Writer
	Now           func() time.Time // nil: time.Now
	Log           *slog.Logger     // nil: discard
	Teardown      time.Duration    // 0: 30s
	// EngineDiff adds the engine's own file diff of the container, read
	// host-side, to the in-sandbox scan of changed files. It is slow on
	// storage drivers without a native diff (fuse-overlayfs).
	EngineDiff bool
	// IncludeSecrets puts planted token values in report.json.
	IncludeSecrets bool
	// Extra adds the user's rules to the built-in ones (nil: none).
	Extra rules.Extra
}

// Outcome is what Run produced besides the report.
type Outcome struct {
	Report     *reports.Report
	Transcript []byte
	// Kept lists the containers left running by Plan.Keep.
	Kept []string
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.New(slog.DiscardHandler)
}

func (r *Runner) phase(phase, format string, a ...any) {
	if r.Progress != nil {
		r.Progress(Progress{Phase: phase, Message: fmt.Sprintf(format, a...)})
	}
}

func (r *Runner) teardown() time.Duration {
	if r.Teardown > 0 {
		return r.Teardown
	}
	return 30 * time.Second
}

// run is the state of one trace, filled in as its steps succeed; the report
// is built from whatever it holds when a step fails.
type run struct {
	plan      Plan
	dir       string // the run folder, "" for none
	skill     *skill.Skill
	home      *canaryfs.Home
	fixtures  canaryfs.Fixtures
	system    system
	jailCfg   netcapture.Config
	image     string
	skillDir  string
	started   time.Time
	jail      Sandbox
	sandbox   Sandbox
	transcr   bytes.Buffer
	loop      agent.Result
	loopErr   error
	calls     *callLog
	jailEv    *jailStream
	spoolHits map[string][]canary.Hit // planted tokens in the jail's spooled payloads
	grace     time.Duration           // what is left of the grace period when the driver is done
	resources *resourceSampler
	events    []trace.Event
	planted   []trace.Event // identities of the planted files, as unpacked
	deadline  bool          // the trace's deadline ended the agent loop
	exhausted bool          // the skill used up the sandbox's pids or memory
	procs     *procSampler  // process sampling, in an unwatched pass
}

// runPass runs one pass of a trace: load, plan, image, jail, seeded home,
// sandbox, driver loop, events, rules, report, cleanup. It writes the run
// folder to dir (unless dir is ""). It returns the pass's state for Run.
func (r *Runner) runPass(ctx context.Context, p Plan, dir string) (out Outcome, st *run, err error) {
	st = &run{plan: p, dir: dir, started: r.now(), calls: newCallLog()}
	out, err = r.pass(ctx, st)
	return out, st, err
}

func (r *Runner) pass(ctx context.Context, st *run) (out Outcome, err error) {
	p, dir := st.plan, st.dir

	r.phase("load", "%s", p.SkillPath)
	st.skill, err = skill.Load(p.SkillPath, skill.Options{})
	if err != nil {
		return out, fmt.Errorf("load skill: %w", err)
	}
	st.home, err = canaryfs.Build(canaryfs.Options{User: p.User, Hostname: p.Hostname, Seed: p.Seed, Now: st.started, Persona: p.Persona})
	if err != nil {
		return out, fmt.Errorf("seed home: %w", err)
	}
	st.fixtures, err = st.home.AddFixtures()
	if err != nil {
		return out, fmt.Errorf("seed home: %w", err)
	}
	st.system, err = newSystem(p, st.home.Hostname, st.started)
	if err != nil {
		return out, err
	}
	st.skillDir = skillDirIn(st.home.HomeDir, skillSlug(st.skill))
	st.jailCfg, err = r.jailConfig(p)
	if err != nil {
		return out, err
	}
	for _, f := range st.skill.Files {
		netcapture.AddPackageHints(&st.jailCfg, f.Content) // versions the skill pins are served
	}

	runErr := r.safeExecute(ctx, st)
	if ctx.Err() != nil && !errors.Is(runErr, context.Canceled) {
		// Interrupted: the trace did not finish what it meant to observe.
		runErr = errors.Join(runErr, context.Cause(ctx))
	}

	// Whatever happened, take down what this trace created, on a fresh
	// bounded context so that Ctrl-C still cleans up.
	out.Kept, err = r.cleanup(ctx, st)
	runErr = errors.Join(runErr, err)

	r.phase("report", "rules and report")
	status, msg := traceStatus(ctx, runErr, st)
	meta := reports.Meta{
		TraceID:   p.TraceID,
		Version:   r.Version,
		Skill:     st.skill,
		Driver:    reports.Driver{Kind: p.Driver.Kind, Provider: p.Driver.Provider, Model: p.Driver.Model},
		Prompt:    p.Prompt,
		StartedAt: st.started,
		Duration:  r.now().Sub(st.started),
		Status:    status,
		Error:     msg,
		Sandbox: reports.Sandbox{
			Image: st.image, User: st.home.User, Hostname: st.home.Hostname, Home: st.home.HomeDir, Persona: p.Persona,
			Limits: reports.Limits{
				TimeoutMS: p.Limits.Timeout.Milliseconds(), MemoryBytes: p.Limits.Memory, PIDs: p.Limits.PIDs,
				CPUs: float64(p.Limits.NanoCPUs) / 1e9, OutputBytes: p.Limits.OutputBytes,
				Turns: p.Limits.Turns, Tokens: p.Limits.Tokens,
			},
		},
		Canaries:    st.home.Set,
		SkillDir:    st.skillDir,
		Home:        st.home.HomeDir,
		MarkerPath:  st.home.HomeDir + "/" + st.jailCfg.Marker.Path,
		MarkerToken: st.jailCfg.Marker.Token,
	}
	timeline := trace.Merge(st.events)
	timeline = append(timeline, spoolHitEvents(st.home.Set, timeline, st.spoolHits)...)
	out.Report = reports.Analyze(meta, timeline, reports.Options{IncludeCanaryValues: r.IncludeSecrets, Extra: r.Extra})
	out.Transcript = st.transcr.Bytes()
	if dir != "" {
		if werr := reports.WriteRunDir(dir, out.Report, out.Transcript); werr != nil {
			runErr = errors.Join(runErr, fmt.Errorf("write run folder %s: %w", dir, werr))
		}
	}
	return out, runErr
}

// ErrInternal marks a panic inside sandboxctl during a trace.
var ErrInternal = errors.New("internal error")

// safeExecute runs execute and turns a panic into an error, so that the
// containers are still removed and a report is still written.
func (r *Runner) safeExecute(ctx context.Context, st *run) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrInternal, v, debug.Stack())
		}
	}()
	return r.execute(ctx, st)
}

// traceStatus maps how the trace ended to the report's status.
func traceStatus(ctx context.Context, err error, st *run) (reports.Status, string) {
	switch {
	case ctx.Err() != nil:
		return reports.StatusCancelled, "interrupted"
	case st.deadline || errors.Is(err, ErrTimeout) || errors.Is(st.loopErr, ErrTimeout) || st.loop.Stop == agent.StopWall:
		return reports.StatusTimeout, "trace deadline reached"
	case err != nil:
		return reports.StatusError, err.Error()
	case st.loopErr != nil:
		return reports.StatusError, st.loopErr.Error()
	}
	return reports.StatusCompleted, ""
}

// execute creates the containers, runs the agent loop and collects the
// events into st. Containers it created are in st for cleanup.
func (r *Runner) execute(ctx context.Context, st *run) error {
	p := st.plan
	st.image = p.Image
	if st.image == "" {
		r.phase("image", "checking the sandbox image")
		img, err := r.Runtime.EnsureImage(ctx, r.ImageProgress)
		if err != nil {
			return fmt.Errorf("sandbox image: %w", err)
		}
		st.image = img
	}

	// The trace's deadline starts once the image is there.
	tctx, cancel := context.WithTimeoutCause(ctx, p.Limits.Timeout, ErrTimeout)
	defer cancel()

	if err := r.startJail(tctx, st); err != nil {
		return fmt.Errorf("start jail: %w", causeOf(tctx, err))
	}
	if err := r.startSandbox(tctx, st); err != nil {
		return fmt.Errorf("start sandbox: %w", causeOf(tctx, err))
	}
	st.resources = startSampler(tctx, st.sandbox, time.Second)
	if p.Unwatched {
		st.procs = startProcSampler(tctx, st.sandbox, r.now)
	}

	r.phase("agent", "%s driver", p.Driver.Kind)
	loopErr := r.drive(tctx, st)
	st.loopErr = causeOf(tctx, loopErr)
	st.deadline = errors.Is(context.Cause(tctx), ErrTimeout)

	// Collect on a fresh context: the trace's may have ended.
	r.phase("collect", "syscall logs, file diff, resources")
	budget := 60 * time.Second
	if ctx.Err() != nil {
		budget = 15 * time.Second
	}
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), budget+p.Limits.Grace)
	defer ccancel()
	st.grace = graceLeft(tctx, p.Limits.Grace, ctx.Err() != nil)
	err := r.collect(cctx, st)
	if st.loopErr != nil && st.exhausted && !errors.Is(st.loopErr, ErrTimeout) {
		// The skill used up the sandbox's pids or memory, which the tool
		// server shares: losing it is the skill's doing and the trace's
		// result (the resource event says which limit), not a failure to
		// observe what came before.
		st.events = append(st.events, trace.Event{Time: r.now(), Source: trace.SourceResource, Type: trace.TypeJailNotice,
			Data: &trace.Notice{Message: "agent loop ended: the sandbox's resources were exhausted by the skill: " + st.loopErr.Error()}})
		st.loopErr = nil
	}
	// A trace that ran into its deadline is a result (status timeout), not
	// a failure to observe; a driver or tool server that failed is.
	if st.loopErr != nil && !errors.Is(st.loopErr, ErrTimeout) {
		err = errors.Join(st.loopErr, err)
	}
	return err
}

// causeOf returns the trace's deadline cause instead of a bare
// context.DeadlineExceeded.
func causeOf(ctx context.Context, err error) error {
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		if c := context.Cause(ctx); c != nil && c != err {
			return fmt.Errorf("%w (%v)", c, err)
		}
	}
	return err
}

func (r *Runner) jailConfig(p Plan) (netcapture.Config, error) {
	cfg := netcapture.DefaultConfig()
	if p.NetworkConfig != "" {
		b, err := os.ReadFile(p.NetworkConfig)
		if err != nil {
			return cfg, fmt.Errorf("network config: %w", err)
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return cfg, fmt.Errorf("network config %s: %w", p.NetworkConfig, err)
		}
	}
	cert, key, err := netcapture.NewCA(caNames[randInt(len(caNames))])
	if err != nil {
		return cfg, fmt.Errorf("trace CA: %w", err)
	}
	cfg.CACert, cfg.CAKey = cert, key
	cfg.Marker = netcapture.Marker{Path: ".cache/." + randHex(4), Token: randHex(16)}
	cfg.SkipNetworkSetup = false
	// Evidence goes to the jail's own log, within the trace's budgets.
	cfg.EventLog, cfg.SpoolDir = jailLog, jailSpool
	cfg.LogBudget = cmp.Or(p.Limits.EventBytes, DefaultEventBytes)
	cfg.SpoolBudget = cmp.Or(p.Limits.SpoolBytes, DefaultSpoolBytes)
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("network config: %w", err)
	}
	return cfg, nil
}

// caNames are subjects a corporate TLS-inspection CA plausibly has.
var caNames = []string{"Corp Root CA G2", "Internal Issuing CA 01", "Enterprise Root Certification Authority", "Zscaler Intermediate Root CA"}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func randInt(n int) int {
	var b [1]byte
	rand.Read(b[:])
	return int(b[0]) % n
}

// startJail creates and starts the jail, and waits for its sinks to be up.
func (r *Runner) startJail(ctx context.Context, st *run) error {
	r.phase("jail", "network jail")
	cfg, err := json.Marshal(st.jailCfg)
	if err != nil {
		return fmt.Errorf("encode jail config: %w", err)
	}
	files := []File{
		{Path: AgentBin, Mode: 0o700, HostPath: r.Binary},
		{Path: JailConfig, Mode: 0o600, Content: cfg},
	}
	jail, err := r.Runtime.Create(ctx, jailSpec(st.plan, st.image, st.home.Hostname, files))
	if err != nil {
		return err
	}
	st.jail = jail
	if err := jail.Start(ctx); err != nil {
		return err
	}
	st.jailEv = followJail(ctx, jail)
	select {
	case <-st.jailEv.ready:
		return nil
	case <-st.jailEv.done:
		return fmt.Errorf("%w: it exited: %s", ErrJailNotReady, st.jailEv.stderrTail())
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%w after 30s: %s", ErrJailNotReady, st.jailEv.stderrTail())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startSandbox creates the sandbox in the jail's namespace, then, as root
// inside it: removes /.dockerenv, unpacks the seeded home and the skill, and
// installs the trace CA in every trust store.
func (r *Runner) startSandbox(ctx context.Context, st *run) error {
	r.phase("sandbox", "sandbox for %s@%s", st.home.User, st.home.Hostname)
	files := append([]File{
		{Path: AgentBin, Mode: 0o700, HostPath: r.Binary},
		{Path: CAPath, Mode: 0o644, Content: st.jailCfg.CACert},
	}, passwdFiles(st.home.User, st.home.HomeDir, loginShell(st.home.Env), st.home.Since)...)
	prof, err := sandboxSeccomp()
	if err != nil {
		return err
	}
	sb, err := r.Runtime.Create(ctx, sandboxSpec(st.plan, st.image, st.jail.ID(), st.home.HomeDir, files, prof))
	if err != nil {
		return err
	}
	st.sandbox = sb
	if err := sb.Start(ctx); err != nil {
		return err
	}
	var payload bytes.Buffer
	if err := writeSetupTar(&payload, st.home, st.skill, st.skillDir); err != nil {
		return fmt.Errorf("pack home and skill: %w", err)
	}
	if err := writeSystemTar(&payload, st.system); err != nil {
		return err
	}
	var stdout, stderr bytes.Buffer
	t0 := time.Now()
	defer func() { r.log().Debug("sandbox: setup exec", "took", time.Since(t0)) }()
	code, err := sb.Exec(ctx, ExecSpec{
		Argv: []string{"/bin/sh", "-c", setupScript},
		User: "0:0",
		Env: []string{"CA=" + CAPath, "INSTALL_CA=" + InstallCA, "HOME_DIR=" + st.home.HomeDir,
			"SINCE=" + strconv.FormatInt(st.home.Since.Unix(), 10), "LIVED_IN=" + livedIn},
		Stdin:  &payload,
		Stdout: &limitedBuffer{max: 8 << 20, buf: &stdout},
		Stderr: &stderr,
	})
	if err != nil {
		return fmt.Errorf("set up sandbox: %w", err)
	}
	if code != 0 {
		return fmt.Errorf("set up sandbox: exit %d: %s", code, tail(stderr.String(), 400))
	}
	st.planted = plantedEvents(st.home, parseIdentities(stdout.String()), r.now())
	return nil
}

// setupScript runs as root in the sandbox before the skill: hide the
// engine's marker file and the tool server's folder (agentd and strace are
// root's alone), unpack the home, the skill and the system files (tar keeps
// owners and modes), put the hosts file in place (in place: the engine
// bind-mounts it), install the trace CA, give the home lived-in access
// times and the engine's files plausible dates, print the identity of every
// file of the home (identityScript), and stamp the moment the skill gets
// control.
const setupScript = `set -e
rm -f /.dockerenv
chmod 0700 /usr/local/lib/agent
tar -x -i -p -f - -C /
if [ -f ` + hostsStage + ` ]; then cat ` + hostsStage + ` >/etc/hosts; rm -f ` + hostsStage + `; fi
"$INSTALL_CA" "$CA" >/dev/null
python3 -c "$LIVED_IN" "$HOME_DIR" 2>/dev/null || true
touch -d "@$SINCE" /etc/hostname /etc/hosts 2>/dev/null || true
up=$(cut -d. -f1 /proc/uptime)
touch -d "@$(( $(date +%s) - up ))" /etc/resolv.conf 2>/dev/null || true
` + identityScript + `
mkdir -p -m 0700 /run/agentd && touch /run/agentd/stamp
`

// livedIn sets each file's and folder's access time somewhere between its
// modification time and now (tar leaves them all at the moment of
// unpacking). Changing them changes the status time too; the stamp comes
// after, so this is not the trace's doing.
const livedIn = `import os, random, sys, time
now = time.time()
for d, dirs, files in os.walk(sys.argv[1]):
    for n in files + dirs:
        p = os.path.join(d, n)
        try:
            st = os.lstat(p)
            if os.path.islink(p):
                continue
            m = st.st_mtime
            os.utime(p, (m + (now - m) * random.random() * 0.9, m), follow_symlinks=False)
        except OSError:
            pass
`

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// drive runs the driver loop against the MCP tool server in the sandbox.
func (r *Runner) drive(ctx context.Context, st *run) error {
	p := st.plan
	drv, err := r.driver(st)
	if err != nil {
		return err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var srvErr bytes.Buffer
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
			Stderr: &limitedBuffer{max: 64 << 10, buf: &srvErr},
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

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	max int
	buf *bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}
