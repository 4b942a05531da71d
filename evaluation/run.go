package evaluation

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
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
	"github.com/sandboxctl/sandboxctl/sweep"
	"github.com/sandboxctl/sandboxctl/traceplan"
	"github.com/sandboxctl/sandboxctl/tracing"
)

var unsafeIDRe = regexp.MustCompile(`[^a-z0-9]+`)

// traceID is <prefix>-<slug cut short>-<random>, a valid trace id.
func traceID(prefix, slug string) string {
	var b [4]byte
	rand.Read(b[:])
	s := strings.Trim(unsafeIDRe.ReplaceAllLiteralString(strings.ToLower(slug), "-"), "-")
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-")
	}
	return strings.ToLower(prefix) + "-" + s + "-" + hex.EncodeToString(b[:])
}

// DefaultParallel is how many traces run at once when Options.Parallel is
// 0: two, which keeps a 2-core machine busy (a trace mostly waits on the
// engine and its tool calls) without starving the traces of CPU, which
// would turn time budgets into verdicts.
const DefaultParallel = 2

// Options are the settings of Run.
type Options struct {
	// Tracer runs each case's trace: a plan made from Plan, with the
	// case's folder as SkillPath and a trace id of its own. Not used when
	// Rescore is set.
	Tracer tracing.Tracer
	// Plan is the template of every trace (driver, limits, image, ...):
	// SkillPath and TraceID are set per case.
	Plan traceplan.Plan
	// TraceIDPrefix starts every trace id ("" for "eval"), so that the
	// containers of an evaluation can be told apart and collected.
	TraceIDPrefix string
	// TraceID, when set, chooses each trace's id instead (tests use it to
	// clean up by label before and after).
	TraceID func(Case) string
	// Rescore, when set, scores the run folders an earlier evaluation
	// kept instead of tracing (Rescorer).
	Rescore *Rescorer
	// Parallel bounds the traces run at once (0: DefaultParallel).
	Parallel int
	// KeepRuns, when set, is a folder that receives each trace's run folder
	// as <corpus>/<slug>; otherwise no run folder is written.
	KeepRuns string
	// Progress is called after each trace, one call at a time (nil: none).
	Progress func(done, total int, r Result)
	Now      func() time.Time // nil: time.Now
}

// Result is one skill's outcome.
type Result struct {
	Corpus   string          `json:"corpus"`
	Slug     string          `json:"slug"`
	Label    string          `json:"label"`
	Group    string          `json:"group"`
	Category string          `json:"category,omitempty"`
	Family   string          `json:"family,omitempty"`
	Expect   []rules.Verdict `json:"expect,omitempty"`
	// Verdict is the report's verdict, or "error" when the trace produced
	// no report.
	Verdict string `json:"verdict"`
	// Status is the report's status (completed, timeout, error, cancelled).
	Status string `json:"status,omitempty"`
	// Error is why the trace could not observe all it meant to.
	Error string `json:"error,omitempty"`
	// Rules are the ids of every rule that fired, sorted.
	Rules []string `json:"rules"`
	// Deciding are the ids of the rules that decided a malicious or
	// suspicious verdict: the findings of the worst severity present.
	Deciding []string `json:"deciding"`
	// Cause says why an inconclusive verdict is so (rules.Causes).
	Cause      string `json:"cause,omitempty"`
	ToolCalls  int    `json:"tool_calls"`
	DurationMS int64  `json:"duration_ms"`
	// RunDir is the kept run folder, when Options.KeepRuns is set (or the
	// sweep folder of RunSweep is kept).
	RunDir string `json:"run_dir,omitempty"`
	// Attempts is how many traces the sweep ran to judge the skill (traces
	// that could not observe are tried again); 0 when not run by a sweep.
	Attempts int `json:"attempts,omitempty"`
	// Cached is set when an earlier evaluation in the same sweep folder
	// judged the skill under the same key: its result was reused.
	Cached bool `json:"cached,omitempty"`
}

// VerdictError is Result.Verdict for a trace that produced no report.
const VerdictError = "error"

// Run traces every case through Options.Tracer (or rescores its kept run,
// with Options.Rescore), at most Options.Parallel at once, and returns one
// Result per case in the order of cases. A trace that fails is a Result
// (verdict error, or its partial report's verdict), not an error: Run
// returns an error only when ctx ends first (with the results so far,
// untraced cases left out) or a run folder cannot be made.
func Run(ctx context.Context, cases []Case, opt Options) ([]Result, error) {
	judge := opt.trace
	switch {
	case opt.Rescore != nil:
		judge = opt.Rescore.rescore
	case opt.Tracer == nil:
		return nil, errors.New("evaluation: no tracer")
	}
	par := opt.Parallel
	if par <= 0 {
		par = DefaultParallel
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	results := make([]*Result, len(cases))
	var (
		mu   sync.Mutex
		done int
		errs []error
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, par)
	for i, c := range cases {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			dir := ""
			if opt.KeepRuns != "" {
				dir = filepath.Join(opt.KeepRuns, c.Corpus, c.Slug)
				if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("run folder for %s: %w", c.ID(), err))
					mu.Unlock()
					return
				}
				// A run folder left by an earlier evaluation would mix
				// two traces' files.
				if err := os.RemoveAll(dir); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("run folder for %s: %w", c.ID(), err))
					mu.Unlock()
					return
				}
			}
			start := now()
			rep, err := judge(ctx, c, dir)
			if ctx.Err() != nil {
				// Cancelled: the verdict of a cut trace would skew the
				// figures, so the case counts as not traced.
				return
			}
			r := resultOf(c, rep, err)
			if r.DurationMS == 0 {
				r.DurationMS = now().Sub(start).Milliseconds()
			}
			if dir != "" {
				r.RunDir = dir
			}
			mu.Lock()
			results[i] = &r
			done++
			if opt.Progress != nil {
				opt.Progress(done, len(cases), r)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	out := make([]Result, 0, len(cases))
	for _, r := range results {
		if r != nil {
			out = append(out, *r)
		}
	}
	if ctx.Err() != nil {
		errs = append(errs, fmt.Errorf("evaluation stopped after %d of %d skills: %w", len(out), len(cases), context.Cause(ctx)))
	}
	return out, errors.Join(errs...)
}

// trace runs the trace of c through opt.Tracer, writing its run folder to
// dir ("" for none).
func (opt Options) trace(ctx context.Context, c Case, dir string) (*reports.Report, error) {
	id := traceID(cmp.Or(opt.TraceIDPrefix, "eval"), c.Slug)
	if opt.TraceID != nil {
		id = opt.TraceID(c)
	}
	p := opt.Plan
	p.SkillPath, p.TraceID = c.Dir, id
	return opt.Tracer.Trace(ctx, p, dir)
}

// resultOf turns a trace's report (nil when it failed before one existed)
// and error into a Result.
func resultOf(c Case, rep *reports.Report, err error) Result {
	r := Result{
		Corpus: c.Corpus, Slug: c.Slug, Label: c.Label, Group: c.Group(),
		Category: c.Category, Family: c.Family, Expect: c.Expect,
		Verdict: VerdictError, Rules: []string{}, Deciding: []string{},
	}
	if err != nil {
		r.Error = err.Error()
	}
	if rep == nil {
		return r
	}
	r.Verdict = string(rep.Verdict)
	r.Cause = rep.Cause
	r.Status = string(rep.Status)
	if r.Error == "" {
		r.Error = rep.Error
	}
	r.ToolCalls = len(rep.ToolCalls)
	r.DurationMS = rep.DurationMS
	for _, f := range rep.Findings {
		if !slices.Contains(r.Rules, f.RuleID) {
			r.Rules = append(r.Rules, f.RuleID)
		}
	}
	slices.Sort(r.Rules)
	if rep.Verdict == rules.Malicious || rep.Verdict == rules.Suspicious {
		r.Deciding = sweep.Deciding(rep.Findings)
	}
	return r
}

// Rescorer scores the run folders an earlier evaluation kept
// (--keep-runs) instead of tracing: the rules run again on each stored
// timeline (reports.Reprocess), nothing is executed. It measures a change
// to the rules on the very same traces, in seconds; a change to the
// sandbox, the jail or the drivers needs new traces.
//
// From is either the sweep folder an evaluation kept (--keep-runs: its
// sweep.db says which run folder, runs/<skill>-<key>, holds each case,
// the latest run that judged it winning) or a folder of the older layout,
// <From>/<corpus>/<slug>, which earlier evaluations and rescores with
// KeepRuns wrote.
type Rescorer struct {
	From  string      // the earlier evaluation's KeepRuns folder
	Extra rules.Extra // the user's rules, besides the built-in ones (nil: none)

	once  sync.Once
	runs  map[string]string // case ID -> run folder, from the sweep's state
	index error
}

// runDir is the kept run folder of c.
func (t *Rescorer) runDir(ctx context.Context, c Case) (string, error) {
	t.once.Do(func() { t.runs, t.index = KeptRuns(ctx, t.From) })
	if t.index != nil {
		return "", t.index
	}
	if d, ok := t.runs[c.ID()]; ok {
		return d, nil
	}
	return filepath.Join(t.From, c.Corpus, c.Slug), nil
}

// KeptRuns maps each case ID (<corpus>/<slug>) to its run folder in the
// sweep folder dir, from the runs recorded in its state database, the
// latest run to judge a case winning. A folder without a state database
// (the older <corpus>/<slug> layout) maps nothing.
func KeptRuns(ctx context.Context, dir string) (map[string]string, error) {
	db := filepath.Join(dir, sweep.DBFile)
	if _, err := os.Stat(db); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("kept runs in %s: %w", dir, err)
	}
	st, err := sweep.OpenStore(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("kept runs in %s: %w", dir, err)
	}
	defer st.Close()
	runs, err := st.Runs(ctx)
	if err != nil {
		return nil, fmt.Errorf("kept runs in %s: %w", dir, err)
	}
	out := map[string]string{}
	for _, run := range runs {
		res, err := st.Results(ctx, run.ID)
		if err != nil {
			return nil, fmt.Errorf("kept runs in %s: %w", dir, err)
		}
		for _, r := range res {
			if r.RunDir != "" && (r.Status == sweep.StatusDone || r.Status == sweep.StatusFailed) {
				out[r.Skill.ID] = filepath.Join(dir, filepath.FromSlash(r.RunDir))
			}
		}
	}
	return out, nil
}

// rescore scores the kept run of c. The earlier run folder is never
// changed: it is copied to dir (or to a temporary folder when dir is "")
// and rescored there.
func (t *Rescorer) rescore(ctx context.Context, c Case, dir string) (*reports.Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	src, err := t.runDir(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("rescore %s: %w", c.ID(), err)
	}
	if _, err := os.Stat(filepath.Join(src, reports.FileEvents)); err != nil {
		return nil, fmt.Errorf("rescore %s: no kept run: %w", c.ID(), err)
	}
	if dir == "" {
		tmp, err := os.MkdirTemp("", "sandboxctl-rescore-")
		if err != nil {
			return nil, fmt.Errorf("rescore %s: %w", c.ID(), err)
		}
		defer os.RemoveAll(tmp)
		dir = filepath.Join(tmp, "run")
	}
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		return nil, fmt.Errorf("rescore %s: copy the kept run: %w", c.ID(), err)
	}
	rep, err := reports.Reprocess(dir, reports.ReprocessOptions{Options: reports.Options{Extra: t.Extra}})
	if err != nil {
		return nil, fmt.Errorf("rescore %s: %w", c.ID(), err)
	}
	if err := reports.WriteRunDir(dir, rep, nil); err != nil {
		return nil, fmt.Errorf("rescore %s: %w", c.ID(), err)
	}
	return rep, nil
}
