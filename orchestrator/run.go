package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/netcapture"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/trace"
	"github.com/sandboxctl/sandboxctl/traceplan"
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
	// Pool, when set, gives the traces whose plan it was made for a warm
	// jail and sandbox (nil: every trace starts its own).
	Pool *Pool
}

// Outcome is what Run produced besides the report.
type Outcome struct {
	Report     *reports.Report
	Transcript []byte
	// Kept lists the containers left running by Plan.Keep.
	Kept []string
	// Phases is how long each stage of the (watched) pass took, in order.
	Phases []PhaseTime
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
	plan      traceplan.Plan
	dir       string // the run folder, "" for none
	skill     *skill.Skill
	home      *canaryfs.Home    // set once homeWait returned nil
	ident     canaryfs.Identity // the home's owner and host, known before its files
	homeWait  func() error      // waits for the home, made beside the containers' start
	fixtures  canaryfs.Fixtures
	system    system
	clockOff  time.Duration // Plan.Clock's offset from the real time, fixed at seeding
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
	clock     *phaseClock
	seed      []byte                 // the home's seed (Plan.Seed, or a random one)
	imageWait func() (string, error) // the image stage, started beside the plan stage
	firstCall sync.Once              // the lap to the driver's first tool call
	warm      bool                   // the containers came from a Pool, home and CA ready
	// skillReady waits for a warm pair's skill to be unpacked (drive
	// calls it before the first tool call).
	skillReady func() error
	// tools is a warm pair's tool server, started and connected with the
	// pair; a cold pass starts its own in drive.
	tools *toolConn
	// installer is a warm pair's skill installer, started with the pair
	// and waiting for the skill on its stdin (installSkill).
	installer *installer
}

// Run runs a trace: the watched pass and, when the plan's stealth mode asks
// for it, the unwatched pass, combined into one report (reports.Combine),
// then, when the plan's twins mode asks for them, the twin traces
// (twins.go, reports.AddTwins). It writes the run folder to dir (unless dir
// is ""), with the unwatched pass's own report in its reports.UnwatchedDir
// and the twins' in TwinsDir. The error is non-nil when
// sandboxctl could not observe (the skill could not be loaded, the engine
// failed, ...): the report is then partial, with status error or cancelled,
// and is still returned when the skill was loaded. Findings are never
// errors.
//
// A pass is the pipeline, one stage per file of this package:
//
//	plan      plan.go      load the skill, seed the home, the jail's config
//	image     image.go     the sandbox image, built when its inputs changed
//	jail      jail.go      the network jail and its sinks
//	sandbox   sandbox.go   the sandbox in the jail's namespace, home unpacked
//	                       (both started at once: startContainers)
//	drive     drive.go     the driver's tool calls through the MCP server
//	collect   collect.go   syscall logs, file changes, resources, jail events
//	teardown  teardown.go  remove the containers, on every path
//	analyse   analyse.go   one timeline, then the rules (rules.Evaluate)
//	report    report.go    the report (reports.Build) and the run folder
func (r *Runner) Run(ctx context.Context, p traceplan.Plan, dir string) (Outcome, error) {
	if err := p.Validate(); err != nil {
		return Outcome{}, fmt.Errorf("plan: %w", err)
	}
	out, watched, err := r.pass(ctx, p, dir)
	if why := stealthReason(p, out.Report); why != "" && err == nil && ctx.Err() == nil {
		out, err = r.unwatchedPass(ctx, p, dir, out, watched, why) // stealth.go
	}
	if why := twinReason(p, out.Report); why != "" && err == nil && ctx.Err() == nil && watched != nil {
		out, err = r.twinPasses(ctx, p, dir, out, watched, why) // twins.go
	}
	return out, err
}

// Trace runs p as Run does and returns its report alone: a Runner is the
// tracing.Tracer that cmd/sandboxctl gives server, sweep, evaluation and
// monitor, which run traces without naming the engine.
func (r *Runner) Trace(ctx context.Context, p traceplan.Plan, dir string) (*reports.Report, error) {
	out, err := r.Run(ctx, p, dir)
	return out.Report, err
}

// pass runs one pass of a trace through the stages Run lists and returns
// its state for Run. When a stage fails, the stages after it that can
// still run do: the containers are removed and a report is built from
// what was observed.
func (r *Runner) pass(ctx context.Context, p traceplan.Plan, dir string) (out Outcome, st *run, err error) {
	if w, err := r.Pool.claim(ctx, p); err != nil {
		return out, nil, err
	} else if w != nil {
		st = w // a warm pair: its home, jail and sandbox are ready
		st.plan, st.dir = p, dir
		r.lap(st, "claim")
	} else {
		st = &run{plan: p, dir: dir, started: r.now(), calls: newCallLog(), clock: newPhaseClock()}
	}
	ictx, icancel := context.WithCancel(ctx)
	defer icancel()
	if !st.warm {
		st.imageWait = r.startImage(ictx, p.Image)
	}
	if err := r.prepare(st); err != nil {
		icancel()
		if st.imageWait != nil {
			st.imageWait() // no goroutine outlives the pass
		}
		if st.homeWait != nil {
			st.homeWait()
		}
		if st.warm {
			err = errors.Join(err, r.remove(ctx, st)) // the pair was claimed: it is this pass's
		}
		return out, st, err
	}
	r.lap(st, "plan")
	runErr := r.observe(ctx, st)
	if err := st.homeWait(); err != nil {
		// The home was made while the containers started, and could not
		// be: nothing ran in it, and there is nothing to report.
		removed := r.cleanup(ctx, st)
		_, rerr := removed()
		return out, st, errors.Join(err, runErr, rerr)
	}
	if ctx.Err() != nil && !errors.Is(runErr, context.Canceled) {
		// Interrupted: the trace did not finish what it meant to observe.
		runErr = errors.Join(runErr, context.Cause(ctx))
	}
	// The containers are removed while the report is made: what they
	// held is read already.
	removed := r.cleanup(ctx, st)

	r.phase("report", "rules and report")
	meta := r.meta(ctx, st, runErr)
	res := analyse(st, meta, r.Extra)
	out.Report = reports.Build(meta, res, reports.Options{IncludeCanaryValues: r.IncludeSecrets})
	out.Transcript = st.transcr.Bytes()
	runErr = errors.Join(runErr, writeRunDir(dir, out))
	r.lap(st, "report")
	out.Kept, err = removed()
	runErr = errors.Join(runErr, err)
	r.lap(st, "cleanup")
	out.Phases = st.clock.all()
	return out, st, runErr
}

// ErrInternal marks a panic inside sandboxctl during a trace.
var ErrInternal = errors.New("internal error")

// observe runs the stages that need containers: image, jail, sandbox,
// drive, collect. The trace's deadline starts once the image is there. A
// panic in them becomes an ErrInternal error, so that the containers are
// still removed and a report is still written. Containers it created are
// in st for cleanup.
func (r *Runner) observe(ctx context.Context, st *run) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrInternal, v, debug.Stack())
		}
	}()
	if st.warm {
		return r.observeWarm(ctx, st) // pool.go
	}
	if err := r.ensureImage(st); err != nil {
		return err
	}
	r.lap(st, "image")
	tctx, cancel := context.WithTimeoutCause(ctx, st.plan.Limits.Timeout, ErrTimeout)
	defer cancel()
	if err := r.startContainers(tctx, st); err != nil {
		return err
	}
	r.runAgent(tctx, st)
	r.lap(st, "drive")
	defer r.lap(st, "collect")
	return r.collectAll(ctx, tctx, st)
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
