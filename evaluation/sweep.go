package evaluation

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/sandboxctl/sandboxctl/sweep"
)

// Errors of RunSweep that the caller turns into advice.
var (
	// ErrUnfinished: the sweep folder holds an unfinished evaluation and
	// neither Resume nor Force was asked.
	ErrUnfinished = errors.New("the folder holds an unfinished evaluation")
	// ErrResumeMismatch: the evaluation to resume ran other skills or other
	// settings.
	ErrResumeMismatch = errors.New("the evaluation being resumed differs")
)

// SweepOptions are the settings of RunSweep.
type SweepOptions struct {
	// Engine is the sweep's engine: Dir, Store and Tracer are required,
	// and Plan is the template of every case's trace; RunID and Progress
	// are set by RunSweep.
	Engine sweep.Options
	// PlanHash and Image (the image's content id) make the result keys
	// with each skill's content digest (sweep.ResultKey).
	PlanHash, Image string
	// Run is recorded with a new run: Sources (the manifests), Version,
	// Driver, Model. ID and Started are set by RunSweep when empty.
	Run sweep.RunInfo
	// Resume finishes the latest unfinished run of the folder (a new run
	// starts when there is none); Force traces every case again, even one
	// judged before under the same key.
	Resume, Force bool
	// Begun is called once the run is recorded, before any trace.
	Begun func(SweepBegun)
	// Progress is called for every case with a result, those already
	// judged first, then each as it is judged, one call at a time.
	Progress func(done, total int, r Result)
	// Retry is called when a trace of c could not observe and is queued
	// again.
	Retry func(done, total int, c Case, attempt int, why string)
	Now   func() time.Time // nil: time.Now
}

// SweepBegun says what a run of RunSweep has to do.
type SweepBegun struct {
	RunID   string
	Resumed bool
	Total   int // cases
	Queued  int // distinct skills to trace
	Reused  int // cases judged before, by an earlier run
}

// Items are the sweep items of cases: skill ID <corpus>/<slug>, the case's
// folder, its content digest and result key as a sweep computes them.
func Items(ctx context.Context, cases []Case, planHash, image string) ([]sweep.Item, error) {
	items := make([]sweep.Item, 0, len(cases))
	for _, c := range cases {
		sk, err := sweep.Discover(ctx, []string{c.Dir}, sweep.DiscoverOptions{})
		if err != nil {
			return nil, fmt.Errorf("skill %s: %w", c.ID(), err)
		}
		if len(sk) != 1 {
			return nil, fmt.Errorf("skill %s: %s holds %d skills, want one", c.ID(), c.Dir, len(sk))
		}
		s := sk[0]
		s.ID, s.Source = c.ID(), c.Dir
		items = append(items, sweep.NewItem(s, planHash, image))
	}
	return items, nil
}

// RunSweep runs cases through a sweep (sweep.Run): one run whose items are
// the cases, in the sweep folder of opt.Engine.Dir, so that a trace that
// could not observe is retried, an interrupted evaluation is resumed and a
// case judged before under the same key is reused. It returns one Result
// per judged, failed or refused case in the order of cases (cases left
// untraced when ctx ends are left out, with an error) and the run's id.
func RunSweep(ctx context.Context, cases []Case, opt SweepOptions) ([]Result, string, error) {
	st := opt.Engine.Store
	if st == nil || opt.Engine.Tracer == nil {
		return nil, "", errors.New("evaluation: no sweep store or tracer")
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	items, err := Items(ctx, cases, opt.PlanHash, opt.Image)
	if err != nil {
		return nil, "", err
	}
	latest, err := st.LatestRun(ctx)
	if err != nil {
		return nil, "", err
	}
	unfinished := latest != nil && latest.Finished.IsZero()
	begun := SweepBegun{Total: len(cases)}
	switch {
	case unfinished && opt.Resume:
		if err := sameRun(ctx, st, *latest, items, opt); err != nil {
			return nil, "", err
		}
		begun.RunID, begun.Resumed = latest.ID, true
	case unfinished && !opt.Force:
		return nil, "", fmt.Errorf("%w (%s)", ErrUnfinished, latest.ID)
	default:
		run := opt.Run
		run.PlanHash, run.Image = opt.PlanHash, opt.Image
		if run.Started.IsZero() {
			run.Started = now()
		}
		if run.ID == "" {
			run.ID = "eval-" + run.Started.UTC().Format("20060102-150405.000")
		}
		if _, err := st.Begin(ctx, run, items, sweep.BeginOptions{Force: opt.Force}); err != nil {
			return nil, "", err
		}
		begun.RunID = run.ID
	}

	byID := make(map[string]Case, len(cases))
	for _, c := range cases {
		byID[c.ID()] = c
	}
	res, err := st.Results(ctx, begun.RunID)
	if err != nil {
		return nil, begun.RunID, err
	}
	queued := map[string]bool{}
	done := 0
	var first []Result
	for _, r := range res {
		switch r.Status {
		case sweep.StatusPending, sweep.StatusRunning:
			queued[r.Key] = true
			continue
		}
		if r.Cached {
			begun.Reused++
		}
		first = append(first, resultOfSweep(byID[r.Skill.ID], r, opt.Engine.Dir))
	}
	begun.Queued = len(queued)
	if opt.Begun != nil {
		opt.Begun(begun)
	}
	if opt.Progress != nil {
		for _, r := range first {
			done++
			opt.Progress(done, len(cases), r)
		}
	}

	eng := opt.Engine
	eng.RunID = begun.RunID
	eng.Progress = func(ev sweep.Event) {
		c := byID[ev.Item.ID]
		n := ev.Stats.Total - ev.Stats.Left
		switch ev.Kind {
		case sweep.EventDone, sweep.EventFailed:
			if opt.Progress == nil {
				return
			}
			r := sweep.Result{Skill: sweep.ResultSkill{ID: ev.Item.ID}, Key: ev.Item.Key, Status: sweep.StatusDone, Attempts: ev.Attempt}
			if ev.Kind == sweep.EventFailed {
				r.Status = sweep.StatusFailed
			}
			if ev.Outcome != nil {
				r.Outcome = *ev.Outcome
			}
			r.Error = ev.Err
			if ev.Kind == sweep.EventDone && ev.Outcome != nil {
				r.Error = ev.Outcome.Error
			}
			opt.Progress(n, len(cases), resultOfSweep(c, r, opt.Engine.Dir))
		case sweep.EventRetry:
			if opt.Retry != nil {
				opt.Retry(n, len(cases), c, ev.Attempt, ev.Err)
			}
		}
	}
	runErr := sweep.Run(ctx, eng)

	// The results as stored, on a fresh context: an interrupted
	// evaluation still reports what it finished.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	res, err = st.Results(sctx, begun.RunID)
	if err != nil {
		return nil, begun.RunID, errors.Join(runErr, err)
	}
	out := make([]Result, 0, len(res))
	left := 0
	for _, r := range res {
		c, ok := byID[r.Skill.ID]
		if !ok {
			continue
		}
		if r.Status == sweep.StatusPending || r.Status == sweep.StatusRunning {
			left++
			continue
		}
		out = append(out, resultOfSweep(c, r, opt.Engine.Dir))
	}
	if runErr == nil && left == 0 {
		if err := st.MarkFinished(sctx, begun.RunID, now()); err != nil {
			return out, begun.RunID, err
		}
	}
	if runErr != nil {
		runErr = fmt.Errorf("evaluation stopped after %d of %d skills: %w", len(out), len(cases), runErr)
	}
	return out, begun.RunID, runErr
}

// sameRun checks that run, to be resumed, is the evaluation of the same
// cases under the same settings.
func sameRun(ctx context.Context, st *sweep.Store, run sweep.RunInfo, items []sweep.Item, opt SweepOptions) error {
	if run.PlanHash != opt.PlanHash || run.Image != opt.Image {
		return fmt.Errorf("%w: the trace settings, the sandboxctl version or the image differ from those of %s", ErrResumeMismatch, run.ID)
	}
	res, err := st.Results(ctx, run.ID)
	if err != nil {
		return err
	}
	var had, want []string
	for _, r := range res {
		had = append(had, r.Skill.ID+" "+r.Key)
	}
	for _, it := range items {
		want = append(want, it.ID+" "+it.Key)
	}
	slices.Sort(had)
	slices.Sort(want)
	if !slices.Equal(had, want) {
		return fmt.Errorf("%w: %s evaluated %d other skills or other contents than these %d", ErrResumeMismatch, run.ID, len(had), len(want))
	}
	return nil
}

// resultOfSweep is the Result of case c from its sweep result; dir is the
// sweep folder (RunDir is the run folder in it).
func resultOfSweep(c Case, r sweep.Result, dir string) Result {
	out := Result{
		Corpus: c.Corpus, Slug: c.Slug, Label: c.Label, Group: c.Group(),
		Category: c.Category, Family: c.Family, Expect: c.Expect,
		Verdict: VerdictError, Status: r.TraceStatus, Error: r.Error,
		Rules: nonNil(r.Rules), Deciding: nonNil(r.Deciding), Cause: r.Cause,
		ToolCalls: r.ToolCalls, DurationMS: r.DurationMS,
		Attempts: r.Attempts, Cached: r.Cached,
	}
	switch r.Status {
	case sweep.StatusDone, sweep.StatusFailed:
		// A skill that failed every attempt keeps its last partial
		// report's verdict, as a single failed trace does; none: error.
		if r.Verdict != "" {
			out.Verdict = r.Verdict
		}
	case sweep.StatusRefused:
		out.Error = "refused: " + r.Error
	}
	if r.RunDir != "" && dir != "" {
		out.RunDir = filepath.Join(dir, filepath.FromSlash(r.RunDir))
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}
