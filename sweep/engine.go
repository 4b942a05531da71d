package sweep

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/traceplan"
	"github.com/sandboxctl/sandboxctl/tracing"
)

// Identity is a skill's registry identity from its sweep skill ID: its path
// inside its source (publisher/skill in a registry mirror), without the
// source's own name, which changes with each nightly archive; "" for a
// source that is the skill itself. A fingerprint store keys the skill's
// history by it (docs/fingerprints.md).
func Identity(skillID string) string {
	_, rel, ok := strings.Cut(skillID, "/")
	if !ok {
		return ""
	}
	return rel
}

// Defaults of Options.
const (
	DefaultParallel    = 2
	DefaultMaxAttempts = 3
	DefaultBackoff     = 10 * time.Second
	DefaultMaxBackoff  = 5 * time.Minute
	DefaultLeaseTTL    = time.Minute
)

// Options are the settings of Run.
type Options struct {
	// Dir is the sweep folder: run folders go to Dir/runs/.
	Dir   string
	Store *Store
	RunID string
	// Tracer runs each skill's trace: a plan made from Plan, with the
	// skill's path, its registry identity (Identity) as SkillID and a
	// trace id of its own.
	Tracer tracing.Tracer
	// Plan is the template of every trace (driver, limits, image, ...);
	// its TraceID, SkillPath and SkillID are set per skill.
	Plan traceplan.Plan
	// Parallel bounds the traces run at once (0: DefaultParallel).
	Parallel int
	// Budget bounds each attempt's wall-clock time, setup and teardown
	// included (0: none beyond the plan's own deadline). An attempt over
	// budget is an infrastructure failure: the sandbox hung.
	Budget time.Duration
	// MaxAttempts bounds the attempts at one skill (0:
	// DefaultMaxAttempts); Backoff is the wait after the first failed
	// attempt, doubled after each (0: DefaultBackoff), up to MaxBackoff.
	MaxAttempts         int
	Backoff, MaxBackoff time.Duration
	// LeaseTTL is how long a lease lasts without renewal (0:
	// DefaultLeaseTTL); workers renew at a third of it.
	LeaseTTL time.Duration
	// Owner identifies this process's leases (NewOwner).
	Owner string
	// Dead reports an owner known to be gone (see ClaimOptions.Dead).
	Dead func(owner string) bool
	// Cleanup removes what the attempt of a dead worker left (its
	// containers, by trace id). nil: nothing is cleaned.
	Cleanup func(ctx context.Context, traceID string) error
	// TraceIDPrefix starts every trace id ("" for "sweep").
	TraceIDPrefix string
	// Progress receives every event, one call at a time (nil: none).
	Progress func(Event)
	Now      func() time.Time // nil: time.Now
}

// Event kinds.
const (
	EventStart  = "start"  // a trace starts (Attempt says which)
	EventDone   = "done"   // judged
	EventRetry  = "retry"  // an infrastructure failure; queued again
	EventFailed = "failed" // gave up: no verdict
)

// An Event is progress of a sweep.
type Event struct {
	Kind    string
	Item    Item
	Attempt int
	Verdict string // EventDone
	Err     string // EventRetry, EventFailed
	// Outcome is what was recorded (EventDone, and EventFailed after an
	// attempt; nil otherwise).
	Outcome *Outcome
	Stats   Stats
}

// Stats are a sweep's counts so far.
type Stats struct {
	Total   int // items of the run
	Left    int // items still to judge
	Cached  int // judged by an earlier run
	Ran     int // traces finished by this process
	Failed  int
	Refused int
	// ByVerdict counts the verdicts of the run's items, cached included.
	ByVerdict map[string]int
	Running   int
	Elapsed   time.Duration
}

// Rate is traces finished per hour by this process.
func (s Stats) Rate() float64 {
	if s.Elapsed <= 0 || s.Ran == 0 {
		return 0
	}
	return float64(s.Ran) / s.Elapsed.Hours()
}

// ETA is the time left at the current rate (0 when unknown).
func (s Stats) ETA() time.Duration {
	r := s.Rate()
	if r == 0 {
		return 0
	}
	return time.Duration(float64(s.Left) / r * float64(time.Hour))
}

// Run traces every item of the run that needs it, at most Parallel at
// once, until none is left, and records each outcome in the store. A
// trace that fails to observe is retried with backoff up to MaxAttempts;
// a verdict is never retried. Run returns an error when ctx ends first
// (leases in hand are released: a resume runs them) or the store fails;
// an item that failed is not an error (its status says so).
func Run(ctx context.Context, opt Options) error {
	if opt.Tracer == nil || opt.Store == nil {
		return errors.New("sweep: no tracer or no store")
	}
	opt.Parallel = cmp.Or(max(opt.Parallel, 0), DefaultParallel)
	opt.MaxAttempts = cmp.Or(max(opt.MaxAttempts, 0), DefaultMaxAttempts)
	opt.Backoff = cmp.Or(max(opt.Backoff, 0), DefaultBackoff)
	opt.MaxBackoff = cmp.Or(max(opt.MaxBackoff, 0), DefaultMaxBackoff)
	opt.LeaseTTL = cmp.Or(max(opt.LeaseTTL, 0), DefaultLeaseTTL)
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Owner == "" {
		opt.Owner = NewOwner("local", os.Getpid())
	}
	e := &engine{opt: opt, start: opt.Now(), wake: make(chan struct{}, opt.Parallel)}
	if err := e.initStats(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, opt.Parallel)
	for w := range opt.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = e.worker(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("sweep stopped: %w", context.Cause(ctx))
	}
	return nil
}

type engine struct {
	opt   Options
	start time.Time
	mu    sync.Mutex
	stats Stats
	// wake tells idle workers that an attempt ended: an item may be
	// ready (a retry, or the last item: time to stop).
	wake chan struct{}
}

func (e *engine) initStats(ctx context.Context) error {
	res, err := e.opt.Store.Results(ctx, e.opt.RunID)
	if err != nil {
		return err
	}
	st := Stats{Total: len(res), ByVerdict: map[string]int{}}
	for _, r := range res {
		switch r.Status {
		case StatusDone:
			st.ByVerdict[r.Verdict]++
			if r.Cached {
				st.Cached++
			}
		case StatusFailed:
			st.Failed++
		case StatusRefused:
			st.Refused++
		default:
			st.Left++
		}
	}
	e.stats = st
	return nil
}

// emit updates the stats and sends an event.
func (e *engine) emit(ev Event, update func(*Stats)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if update != nil {
		update(&e.stats)
	}
	e.stats.Elapsed = e.opt.Now().Sub(e.start)
	if e.opt.Progress != nil {
		ev.Stats = e.stats
		ev.Stats.ByVerdict = make(map[string]int, len(e.stats.ByVerdict))
		for k, v := range e.stats.ByVerdict {
			ev.Stats.ByVerdict[k] = v
		}
		e.opt.Progress(ev)
	}
}

func (e *engine) worker(ctx context.Context) error {
	for ctx.Err() == nil {
		l, wait, err := e.opt.Store.Claim(ctx, e.opt.RunID, ClaimOptions{
			Owner: e.opt.Owner, TTL: e.opt.LeaseTTL, MaxAttempts: e.opt.MaxAttempts, Now: e.opt.Now(),
			Dead: e.opt.Dead, TraceID: e.traceID,
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if l == nil {
			if wait == 0 {
				return nil
			}
			select {
			case <-ctx.Done():
			case <-e.wake:
			case <-time.After(min(wait, 2*time.Second)):
			}
			continue
		}
		if l.Stale != "" {
			e.cleanup(l.Stale)
		}
		if l.Owner == "" {
			// Its attempts were used up by workers that died.
			e.emit(Event{Kind: EventFailed, Item: l.Item, Err: "gave up after repeated attempts"}, func(s *Stats) { s.Left--; s.Failed++ })
			continue
		}
		err = e.attempt(ctx, l)
		for range e.opt.Parallel {
			select {
			case e.wake <- struct{}{}:
			default:
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// cleanup removes what a dead attempt left, on a fresh bounded context.
func (e *engine) cleanup(traceID string) {
	if e.opt.Cleanup == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.opt.Cleanup(ctx, traceID) // best effort: gc by label catches the rest
}

var unsafeIDRe = regexp.MustCompile(`[^a-z0-9]+`)

// slug is s in lower-case letters, digits and dashes, at most n long.
func slug(s string, n int) string {
	out := strings.Trim(unsafeIDRe.ReplaceAllLiteralString(strings.ToLower(s), "-"), "-")
	if len(out) > n {
		out = strings.TrimRight(out[:n], "-")
	}
	if out == "" {
		out = "skill"
	}
	return out
}

// traceID is <prefix>-<slug>-<key>-<attempt>: the same for an attempt
// wherever it runs, so what a dead attempt left is found by its id.
func (e *engine) traceID(it Item, attempt int) string {
	return fmt.Sprintf("%s-%s-%s-%d", slug(cmp.Or(e.opt.TraceIDPrefix, "sweep"), 12), slug(it.Name, 24), it.Key[:10], attempt)
}

// RunDirName is an item's run folder, relative to the sweep folder: by
// key, so that a result reused by a later run keeps its folder.
func RunDirName(it Item) string {
	return filepath.Join("runs", slug(it.Name, 40)+"-"+it.Key[:16])
}

func (e *engine) attempt(ctx context.Context, l *Lease) error {
	rel := RunDirName(l.Item)
	dir := filepath.Join(e.opt.Dir, rel)
	// A folder left by an earlier attempt would mix two traces' files.
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("run folder of %s: %w", l.ID, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("run folder of %s: %w", l.ID, err)
	}
	e.emit(Event{Kind: EventStart, Item: l.Item, Attempt: l.Attempt}, func(s *Stats) { s.Running++ })
	running := true
	defer func() {
		if running {
			e.emit(Event{}, func(s *Stats) { s.Running-- })
		}
	}()

	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if e.opt.Budget > 0 {
		var c2 context.CancelFunc
		actx, c2 = context.WithTimeoutCause(actx, e.opt.Budget, errBudget)
		defer c2()
	}
	// Renew the lease while the trace runs; losing it stops the trace.
	hbDone := make(chan struct{})
	hbStop := make(chan struct{})
	go func() {
		defer close(hbDone)
		t := time.NewTicker(e.opt.LeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-hbStop:
				return
			case <-t.C:
				err := e.opt.Store.Renew(ctx, l.Key, l.Owner, e.opt.LeaseTTL, e.opt.Now())
				if errors.Is(err, ErrLeaseLost) {
					cancel(ErrLeaseLost)
					return
				}
			}
		}
	}()
	start := e.opt.Now()
	p := e.opt.Plan
	p.TraceID, p.SkillPath, p.SkillID = l.TraceID, l.Path, Identity(l.ID)
	rep, terr := e.opt.Tracer.Trace(actx, p, dir)
	close(hbStop)
	<-hbDone

	// Record on a fresh context: an interrupted sweep still gives its
	// leases back.
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	switch {
	case ctx.Err() != nil:
		return e.opt.Store.Release(sctx, l)
	case errors.Is(context.Cause(actx), ErrLeaseLost):
		return nil // another worker owns it now
	}
	o := OutcomeOf(rep, terr)
	o.RunDir, o.TraceID, o.FinishedAt = rel, l.TraceID, e.opt.Now().UTC()
	if o.DurationMS == 0 {
		o.DurationMS = e.opt.Now().Sub(start).Milliseconds()
	}
	if errors.Is(context.Cause(actx), errBudget) {
		o.Error = fmt.Sprintf("over the per-skill budget of %v", e.opt.Budget)
		terr = errBudget
	}
	running = false
	if terr == nil {
		err := e.opt.Store.Finish(sctx, l, e.opt.RunID, StatusDone, o, e.opt.Now())
		if errors.Is(err, ErrLeaseLost) {
			e.emit(Event{}, func(s *Stats) { s.Running-- })
			return nil
		}
		if err != nil {
			return err
		}
		e.emit(Event{Kind: EventDone, Item: l.Item, Attempt: l.Attempt, Verdict: o.Verdict, Outcome: &o}, func(s *Stats) {
			s.Running--
			s.Left--
			s.Ran++
			s.ByVerdict[o.Verdict]++
		})
		return nil
	}
	// An infrastructure failure: retry, or give up.
	if l.Attempt < e.opt.MaxAttempts {
		back := e.opt.Backoff << (l.Attempt - 1)
		if back > e.opt.MaxBackoff || back <= 0 {
			back = e.opt.MaxBackoff
		}
		err := e.opt.Store.Retry(sctx, l, o.Error, e.opt.Now().Add(back))
		if err != nil && !errors.Is(err, ErrLeaseLost) {
			return err
		}
		e.emit(Event{Kind: EventRetry, Item: l.Item, Attempt: l.Attempt, Err: o.Error}, func(s *Stats) { s.Running-- })
		return nil
	}
	o.Error = fmt.Sprintf("gave up after %d attempts: %s", l.Attempt, o.Error)
	err := e.opt.Store.Finish(sctx, l, e.opt.RunID, StatusFailed, o, e.opt.Now())
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		return err
	}
	e.emit(Event{Kind: EventFailed, Item: l.Item, Attempt: l.Attempt, Err: o.Error, Outcome: &o}, func(s *Stats) {
		s.Running--
		s.Left--
		s.Failed++
	})
	return nil
}

var errBudget = errors.New("over the per-skill budget")

// OutcomeOf turns a trace's report (nil when it failed before one existed)
// and error into an Outcome.
func OutcomeOf(rep *reports.Report, err error) Outcome {
	var o Outcome
	if err != nil {
		o.Error = firstLine(err.Error())
	}
	if rep == nil {
		return o
	}
	o.Verdict = string(rep.Verdict)
	o.Cause = rep.Cause
	o.TraceStatus = string(rep.Status)
	if o.Error == "" && rep.Status == reports.StatusError {
		o.Error = firstLine(rep.Error)
	}
	o.ToolCalls = len(rep.ToolCalls)
	o.DurationMS = rep.DurationMS
	o.SeverityMax = rep.Summary.SeverityMax
	o.Version = rep.Generator.Version
	o.Image = rep.Sandbox.Image
	o.Rules = []string{}
	for _, f := range rep.Findings {
		if !slices.Contains(o.Rules, f.RuleID) {
			o.Rules = append(o.Rules, f.RuleID)
		}
	}
	slices.Sort(o.Rules)
	if rep.Verdict == rules.Malicious || rep.Verdict == rules.Suspicious {
		o.Deciding = Deciding(rep.Findings)
	}
	for _, in := range rep.Incidents {
		o.Incidents = append(o.Incidents, IncidentBrief{Kind: string(in.Kind), Title: in.Title,
			Severity: string(in.Severity), Confidence: string(in.Confidence), RuleIDs: in.RuleIDs})
	}
	return o
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// Deciding returns the ids of the findings of the worst severity present,
// and among them of the highest confidence: the ones that set the verdict
// whatever the exact thresholds of the policy are.
func Deciding(fs []rules.Finding) []string {
	top, conf := 0, 0
	for _, f := range fs {
		if s := f.Severity.Rank(); s > top {
			top, conf = s, 0
		}
		if f.Severity.Rank() == top {
			conf = max(conf, f.Confidence.Rank())
		}
	}
	ids := []string{}
	for _, f := range fs {
		if f.Severity.Rank() == top && f.Confidence.Rank() == conf && !slices.Contains(ids, f.RuleID) {
			ids = append(ids, f.RuleID)
		}
	}
	slices.Sort(ids)
	return ids
}

// NewOwner is a lease owner id for a process: host, pid and a nonce.
func NewOwner(host string, pid int) string {
	var b [4]byte
	randRead(b[:])
	return fmt.Sprintf("%s:%d:%x", strings.ReplaceAll(host, ":", "_"), pid, b)
}
