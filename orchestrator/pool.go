package orchestrator

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/capbuf"
	"github.com/sandboxctl/sandboxctl/netcapture"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// Pool policy: a Pool keeps Size jail + sandbox pairs ready for the plans
// made like its template (same user, host, persona, limits, network
// configuration and image), each with a freshly seeded home (its own
// canaries), its own trace CA trusted and its own jail sinks up: what a
// cold trace spends most of its time on. A pair is handed out exactly once
// (Runner.Run claims it), the trace that claims it removes it like its own,
// and the pool starts another in the background. Close stops the refills
// and removes every pair not handed out; a process killed outright leaves
// pairs that `sandboxctl gc` removes by their trace label. Nothing of one
// trace is shared with another: a pair is never reused.
//
// A skill whose text pins package versions (netcapture.AddPackageHints)
// or runs a tool it installs under another name (AddPackageBins) never
// takes a warm pair: the jail must serve those versions and executables,
// and a pair's jail started before the skill was known. It traces cold, so a
// dropper installed from a pinned package still runs its install step.

// Pool keeps warm pairs for one Runner. Its methods are safe for
// concurrent use.
type Pool struct {
	r    Runner // the Runner's copy that makes the pairs (no progress)
	tmpl traceplan.Plan
	size int
	id   string

	ready  chan *run // unbuffered: each filler holds one pair it offers
	done   chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
	n      int
	errs   []error
}

// NewPool returns a pool of size warm pairs for r, made for plans like
// tmpl (its TraceID is the prefix of the pairs' trace ids). It starts
// filling at once, until Close; ctx bounds the filling.
func NewPool(ctx context.Context, r *Runner, tmpl traceplan.Plan, size int) (*Pool, error) {
	if size < 1 {
		return nil, fmt.Errorf("pool size must be positive, got %d", size)
	}
	if err := tmpl.Validate(); err != nil {
		return nil, fmt.Errorf("pool template: %w", err)
	}
	p := &Pool{r: *r, tmpl: tmpl, size: size, id: tmpl.TraceID, ready: make(chan *run), done: make(chan struct{})}
	p.r.Progress, p.r.ImageProgress, p.r.Pool = nil, nil, nil
	fctx, cancel := context.WithCancel(ctx)
	p.cancel = cancel
	for range size {
		p.wg.Go(func() { p.fill(fctx) })
	}
	return p, nil
}

// fill makes pairs and offers them, one at a time, until ctx ends; a pair
// not handed out is removed.
func (p *Pool) fill(ctx context.Context) {
	for ctx.Err() == nil {
		st, err := p.make(ctx)
		if err != nil {
			p.fail(err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		select {
		case p.ready <- st:
		case <-ctx.Done():
			if err := p.r.remove(ctx, st); err != nil {
				p.fail(err)
			}
		}
	}
}

func (p *Pool) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.r.log().Warn("pool: warm pair", "err", err)
	if len(p.errs) < 16 {
		p.errs = append(p.errs, err)
	}
}

// make makes one pair: home seeded, containers started, CA trusted, sinks
// up, tool server connected. What it created is removed when a step
// fails.
func (p *Pool) make(ctx context.Context) (*run, error) {
	p.mu.Lock()
	p.n++
	id := p.id + "-" + strconv.Itoa(p.n)
	p.mu.Unlock()
	plan := p.tmpl
	plan.TraceID = id
	st := &run{plan: plan, started: p.r.now(), calls: newCallLog(), clock: newPhaseClock(), warm: true}
	if err := p.r.seed(st); err != nil {
		return nil, err
	}
	img, err := p.r.Runtime.AgentImage(ctx, p.r.agentImageSpec(plan.Image), nil)
	if err != nil {
		return nil, fmt.Errorf("sandbox image: %w", err)
	}
	st.image = img
	if err := p.r.startContainers(ctx, st); err != nil {
		return nil, errors.Join(err, p.r.remove(ctx, st))
	}
	// The tool server starts with the pair: a claim then waits only for
	// the skill to be unpacked. It runs tools for nobody until then. A
	// server that cannot be reached leaves the pair without one: the trace
	// that claims it starts its own, and fails as a cold trace would.
	if st.tools, err = connectTools(ctx, st); err != nil {
		p.r.log().Warn("pool: warm pair without a tool server", "trace", id, "err", err)
	}
	// So is the exec that unpacks the skill: a claim then pays no engine
	// round trip before the first call, only the unpacking.
	st.installer = startInstaller(ctx, st)
	return st, nil
}

// warmKey is what of a plan shapes its pair.
func warmKey(p traceplan.Plan) traceplan.Plan {
	return traceplan.Plan{Limits: p.Limits, Image: p.Image, User: p.User, Hostname: p.Hostname, TimeZone: p.TimeZone, Clock: p.Clock, Monitoring: strings.TrimPrefix(p.Monitoring, traceplan.MonitoringHidden), DNS: p.DNS, Seed: p.Seed,
		NetworkConfig: p.NetworkConfig, Persona: p.Persona, Keep: p.Keep, Unwatched: p.Unwatched}
}

// claim hands out a warm pair for plan, waiting for one while the pool
// fills, or returns nil when plan is not made like the pool's template, p
// is nil or closed. The pair is then the caller's to remove.
func (p *Pool) claim(ctx context.Context, plan traceplan.Plan) (*run, error) {
	if p == nil || len(plan.Restore) > 0 || !reflect.DeepEqual(warmKey(plan), warmKey(p.tmpl)) || pinsPackages(plan.SkillPath) {
		return nil, nil
	}
	select {
	case <-p.done:
		return nil, nil
	default:
	}
	select {
	case st := <-p.ready:
		st.clock = newPhaseClock() // claim to first call is what a warm trace waits
		st.started = p.r.now()
		return st, nil
	case <-p.done:
		return nil, nil // closed meanwhile: a cold trace instead
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TraceIDs are the trace ids of every pair the pool made so far (their
// containers carry them as LabelTrace): what `sandboxctl gc --trace`
// removes after a crash.
func (p *Pool) TraceIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]string, p.n)
	for i := range ids {
		ids[i] = p.id + "-" + strconv.Itoa(i+1)
	}
	return ids
}

// Close stops the refills, removes every pair not handed out and waits for
// the fillers; it returns what the filling could not do or remove. Close
// is idempotent.
func (p *Pool) Close() error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.done)
	}
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, err := range p.errs {
		if !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// observeWarm is observe for a warm pair: the skill is unpacked into the
// ready home and the stamp written while the tool server starts, then the
// drive and collect stages run as in a cold trace.
func (r *Runner) observeWarm(ctx context.Context, st *run) error {
	tctx, cancel := context.WithTimeoutCause(ctx, st.plan.Limits.Timeout, ErrTimeout)
	defer cancel()
	// The skill is unpacked while the tool server starts (drive waits for
	// it before the first call).
	var ierr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		t0 := time.Now()
		ierr = r.installSkill(tctx, st)
		r.log().Debug("warm: skill installed", "took", time.Since(t0))
	}()
	st.skillReady = func() error {
		<-done
		if ierr != nil {
			return fmt.Errorf("start sandbox: %w", causeOf(tctx, ierr))
		}
		return nil
	}
	r.runAgent(tctx, st)
	<-done // also when the driver failed before it waited
	if ierr != nil && st.loopErr == nil {
		return fmt.Errorf("start sandbox: %w", causeOf(tctx, ierr))
	}
	r.lap(st, "drive")
	defer r.lap(st, "collect")
	return r.collectAll(ctx, tctx, st)
}

// installSkillScript unpacks the skill as root, stamps the moment the
// skill gets control (changes are those after it) and says so.
const installSkillScript = `set -e
tar -x -p -f - -C /
touch ` + stampPath + `
echo ` + installedLine

// installedLine is what installSkillScript prints when the skill is in
// place: a waiting installer's claim goes on when it comes, without
// waiting for the engine to report the exec's end.
const installedLine = "installed"

// installSkill unpacks st's skill into the warm sandbox, through the pair's
// waiting installer when it has one.
func (r *Runner) installSkill(ctx context.Context, st *run) error {
	var tarball bytes.Buffer
	if err := writeSkillTar(&tarball, st.home, st.skill, st.skillDir); err != nil {
		if st.installer != nil {
			st.installer.abort()
		}
		return fmt.Errorf("pack skill: %w", err)
	}
	if in := st.installer; in != nil {
		st.installer = nil
		return in.install(ctx, &tarball)
	}
	stderr := capbuf.New(16 << 10)
	code, err := st.sandbox.Exec(ctx, ExecSpec{Argv: []string{"/bin/sh", "-c", installSkillScript}, User: "0:0",
		Stdin: &tarball, Stdout: io.Discard, Stderr: stderr})
	return installResult(code, err, stderr)
}

func installResult(code int, err error, stderr *capbuf.Buffer) error {
	if err != nil {
		return fmt.Errorf("install skill: %w", err)
	}
	if code != 0 {
		return fmt.Errorf("install skill: exit %d: %s", code, tail(stderr.String(), 400))
	}
	return nil
}

// installer is the exec of installSkillScript, started with a warm pair
// and blocked on its stdin until the pair is claimed.
type installer struct {
	stdin  *io.PipeWriter
	stderr *capbuf.Buffer
	said   chan struct{} // closed when installedLine came
	done   chan execResult
	cancel context.CancelFunc
}

type execResult struct {
	code int
	err  error
}

// startInstaller starts the installer exec in st's sandbox. It lives as
// long as the pair (not ctx: a claim may come after the filler's context
// ends); the pair's removal ends it too.
func startInstaller(ctx context.Context, st *run) *installer {
	pr, pw := io.Pipe()
	outR, outW := io.Pipe()
	ictx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	in := &installer{stdin: pw, stderr: capbuf.New(16 << 10), said: make(chan struct{}), done: make(chan execResult, 1), cancel: cancel}
	go func() {
		code, err := st.sandbox.Exec(ictx, ExecSpec{Argv: []string{"/bin/sh", "-c", installSkillScript}, User: "0:0",
			Stdin: pr, Stdout: outW, Stderr: in.stderr})
		pr.Close()
		outW.Close()
		in.done <- execResult{code, err}
	}()
	go func() {
		sc := bufio.NewScanner(io.LimitReader(outR, 4<<10))
		for sc.Scan() {
			if sc.Text() == installedLine {
				close(in.said)
				break
			}
		}
		io.Copy(io.Discard, outR)
	}()
	return in
}

// install sends the skill's archive and waits for the unpacking and the
// stamp.
func (in *installer) install(ctx context.Context, tarball io.Reader) error {
	_, werr := io.Copy(in.stdin, tarball)
	in.stdin.Close()
	select {
	case <-in.said:
		// The exec ends meanwhile (cancel only once it has: the pair's
		// removal waits for nothing of it).
		go func() { <-in.done; in.cancel() }()
		return werr
	case res := <-in.done:
		in.cancel()
		if werr != nil && res.err == nil && res.code == 0 {
			res.err = werr
		}
		return installResult(res.code, res.err, in.stderr)
	case <-ctx.Done():
		in.abort()
		return fmt.Errorf("install skill: %w", ctx.Err())
	}
}

// abort ends an installer that will not be used: its archive is cut short,
// so it unpacks nothing and writes no stamp.
func (in *installer) abort() {
	in.stdin.CloseWithError(errors.New("pair not claimed"))
	in.cancel()
}

// pinsPackages reports whether the skill at dir names package versions or
// executables the jail would serve: such a skill needs a jail configured
// for it. A skill
// that does not load is the pass's to report.
func pinsPackages(dir string) bool {
	sk, err := skill.Load(dir, skill.Options{})
	if err != nil {
		return false
	}
	var cfg netcapture.Config
	contents := make([][]byte, 0, len(sk.Files))
	for _, f := range sk.Files {
		netcapture.AddPackageHints(&cfg, f.Content)
		contents = append(contents, f.Content)
	}
	netcapture.AddPackageBins(&cfg, contents...)
	return len(cfg.PackageVersions) > 0 || len(cfg.PackageBins) > 0
}
