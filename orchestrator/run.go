package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/netcapture"
	"github.com/sandboxctl/sandboxctl/reports"
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

// Run runs a trace: the watched pass and, when the plan's stealth mode asks
// for it, the unwatched pass, combined into one report (reports.Combine). It
// writes the run folder to dir (unless dir is ""), with the unwatched
// pass's own report in its reports.UnwatchedDir. The error is non-nil when
// sandboxctl could not observe (the skill could not be loaded, the engine
// failed, ...): the report is then partial, with status error or cancelled,
// and is still returned when the skill was loaded. Findings are never
// errors.
func (r *Runner) Run(ctx context.Context, p Plan, dir string) (Outcome, error) {
	if err := p.Validate(); err != nil {
		return Outcome{}, fmt.Errorf("plan: %w", err)
	}
	out, first, err := r.runPass(ctx, p, dir)
	why := stealthReason(p, out.Report)
	if why == "" || err != nil || ctx.Err() != nil {
		return out, err
	}

	r.phase("stealth", "unwatched pass (%s)", why)
	up := unwatchedPlan(p, first)
	udir := ""
	if dir != "" {
		udir = filepath.Join(dir, reports.UnwatchedDir)
	}
	uout, second, uerr := r.runPass(ctx, up, udir)
	out.Kept = append(out.Kept, uout.Kept...)
	if uerr != nil {
		uerr = fmt.Errorf("unwatched pass: %w", uerr)
	}
	if uout.Report == nil {
		return out, uerr
	}
	wp := reports.Pass{Tracer: reports.TracerStrace, TraceID: p.TraceID}
	upass := reports.Pass{Tracer: reports.TracerNone, TraceID: up.TraceID, Reason: why, Dir: reports.UnwatchedDir}
	if second.procs != nil {
		upass.SampledProcs, upass.TracedProcesses = second.procs.counts()
	}
	out.Report = reports.Combine(out.Report, uout.Report, wp, upass)
	if dir != "" {
		if werr := reports.WriteRunDir(dir, out.Report, out.Transcript); werr != nil {
			uerr = errors.Join(uerr, fmt.Errorf("write run folder %s: %w", dir, werr))
		}
	}
	return out, uerr
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
	out.Report = reports.Analyze(meta, timeline, reports.Options{IncludeCanaryValues: r.IncludeSecrets})
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

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
