package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/evaluation"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/sweep"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// evalSweep traces the cases of an evaluation as one sweep run, in the
// --keep-runs folder or a temporary one removed at the end. It returns the
// results, an exit code other than exitClean when nothing could be
// traced, and the error that stopped the sweep.
func evalSweep(ctx context.Context, e env, f *evalFlags, plan traceplan.Plan, extra rules.Extra, manifests []string,
	cases []evaluation.Case, progress func(done, total int, r evaluation.Result)) ([]evaluation.Result, int, error) {
	dir := f.keepRuns
	if dir == "" {
		tmp, err := os.MkdirTemp("", "sandboxctl-eval-")
		if err != nil {
			e.errorf("evaluation folder: %v", err)
			return nil, exitFailed, nil
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		e.errorf("evaluation folder: %v", err)
		return nil, exitFailed, nil
	}
	st, err := sweep.OpenStore(ctx, filepath.Join(dir, sweep.DBFile))
	if err != nil {
		e.errorf("%v", err)
		return nil, exitFailed, nil
	}
	defer st.Close()

	eng, ok := openEngine(ctx, e, plan.Image)
	if !ok {
		return nil, exitFailed, nil
	}
	defer eng.rt.Close()
	plan.Image = eng.image
	opt, code := evalSweepOptions(e, f, plan, extra, manifests, eng, st, dir)
	if code != exitClean {
		return nil, code, nil
	}
	opt.Progress = progress
	results, runID, runErr := evaluation.RunSweep(ctx, cases, opt)
	switch {
	case errors.Is(runErr, evaluation.ErrUnfinished):
		e.errorf("%v in %s", runErr, dir)
		e.hintf("finish it with the same flags and: sandboxctl eval --resume --keep-runs %s %s (or start over with --force)", dir, strings.Join(manifests, " "))
		return nil, exitUsage, nil
	case errors.Is(runErr, evaluation.ErrResumeMismatch):
		e.errorf("%v", runErr)
		e.hintf("resume with the manifests, --sample, --only, the flags and the binary the evaluation started with, or start over with --force")
		return nil, exitUsage, nil
	}
	if f.keepRuns != "" && runID != "" {
		// The sweep's outputs (results.jsonl, summary, index.html), for
		// sweep export and a reader of the folder.
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if _, _, err := sweep.Outputs(octx, st, runID, dir, time.Now()); err != nil {
			e.warnf("%v", err)
		}
	} else {
		// The temporary folder goes with its run folders.
		for i := range results {
			results[i].RunDir = ""
		}
	}
	return results, exitClean, runErr
}

// evalSweepOptions are the options of an evaluation's sweep in dir, with
// st its state, on the engine eng; code is other than exitClean when they
// cannot be made, said.
func evalSweepOptions(e env, f *evalFlags, plan traceplan.Plan, extra rules.Extra, manifests []string,
	eng engine, st *sweep.Store, dir string) (evaluation.SweepOptions, int) {
	planHash, err := sweep.PlanHash(plan, judgeVersion())
	if err != nil {
		e.errorf("%v", err)
		return evaluation.SweepOptions{}, exitUsage
	}
	srcs := make([]string, len(manifests))
	for i, m := range manifests {
		if srcs[i], err = filepath.Abs(m); err != nil {
			e.errorf("%v", err)
			return evaluation.SweepOptions{}, exitUsage
		}
	}
	host, _ := os.Hostname()
	now := time.Now()
	return evaluation.SweepOptions{
		Engine: sweep.Options{
			Dir: dir, Store: st,
			Tracer:   &orchestrator.Runner{Runtime: eng.rt, Binary: eng.bin, Version: version(), Log: debugLog(e), EngineDiff: f.trace.engineDiff, Extra: extra},
			Plan:     plan,
			Parallel: f.parallel, Budget: orchestrator.AttemptBudget(plan), MaxAttempts: f.attempts, Backoff: f.backoff,
			Owner: sweep.NewOwner(host, os.Getpid()), Dead: sweep.DeadOnHost(host), TraceIDPrefix: "eval",
			Cleanup: func(ctx context.Context, traceID string) error {
				return gcPasses(ctx, eng.rt, traceID)
			},
		},
		PlanHash: planHash, Image: eng.imageID,
		Run: sweep.RunInfo{ID: "eval-" + newTraceID(now), Started: now, Sources: srcs,
			Version: version(), Driver: plan.Driver.Kind, Model: plan.Driver.Model},
		Resume: f.resume, Force: f.force,
		Begun: func(b evaluation.SweepBegun) {
			if b.Resumed {
				fmt.Fprintf(e.stderr, "sandboxctl: resuming evaluation %s in %s\n", b.RunID, dir)
			}
			fmt.Fprintf(e.stderr, "sandboxctl: evaluating %d skill(s), %d to trace, %d at a time\n", b.Total, b.Queued, f.parallel)
			if b.Reused > 0 {
				fmt.Fprintf(e.stderr, "sandboxctl: %d skill(s) reused unchanged from an earlier evaluation in %s (same skill, settings, version and image; --force traces them again)\n",
					b.Reused, dir)
			}
		},
		Retry: func(done, total int, c evaluation.Case, attempt int, why string) {
			fmt.Fprintf(e.stderr, "sandboxctl: [%d/%d] %s: attempt %d could not observe, will retry: %s\n", done, total, c.ID(), attempt, oneLine(why))
		},
	}, exitClean
}
