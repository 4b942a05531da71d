package orchestrator

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// Stealth policy (docs/sandbox.md, "Stealth pass"): a skill can see strace
// (TracerPid in /proc/self/status, the tracer in ps) and stay quiet while
// watched. When the watched pass saw the skill read sandbox tells
// (rules.Tells), or with Plan.Stealth StealthAlways, the same plan runs again
// in a fresh sandbox and jail with the tracer off: the tools run without
// strace, and the evidence is what needs no tracer (the jail's sinks, the
// file diff, canary hits, planted files' access times, and the skill's
// processes listed every 100ms from /proc). Both passes are in the report,
// compared by rules.ComparePasses; the verdict weighs both.

// stealthReason says why an unwatched pass runs after the watched pass's
// report rep, or "" when none does: the watched pass must have completed
// (a trace that failed is not run again), and in StealthAuto the skill read
// sandbox tells and harm was not proven already.
func stealthReason(p traceplan.Plan, rep *reports.Report) string {
	if rep == nil || p.Unwatched || p.Stealth == traceplan.StealthOff {
		return ""
	}
	if rep.Status != reports.StatusCompleted && rep.Status != reports.StatusTimeout {
		return ""
	}
	if p.Stealth == traceplan.StealthAlways {
		return "--stealth"
	}
	tells := rules.Tells(rep.Findings)
	if len(tells) == 0 || rep.Verdict == rules.Malicious {
		return ""
	}
	return "tells read: " + strings.Join(tells, ", ")
}

const unwatchedSuffix = "-unwatched"

// derivedID is the trace id of a pass of the trace id: id with suffix, id
// cut so that the whole fits a label value and a container name (63).
func derivedID(id, suffix string) string {
	if len(id)+len(suffix) > 63 {
		id = strings.TrimRight(id[:63-len(suffix)], "-")
	}
	return id + suffix
}

// PassTraceIDs are the trace ids every pass of the trace id may label its
// Docker objects with: the trace's own, its unwatched pass's and its twins'.
// Cleanup after a trace that was killed (a sweep's budget, a server's
// shutdown) removes them all.
func PassTraceIDs(id string) []string {
	ids := []string{id, derivedID(id, unwatchedSuffix)}
	for _, role := range []string{TwinSame, TwinOther, TwinControl, TwinConfirm} {
		ids = append(ids, derivedID(id, twinSuffix+role))
	}
	return ids
}

// AttemptBudget is the longest a trace of p may take, setup and teardown
// included: each of its passes that run one after the other (the watched
// pass, the unwatched pass, two rounds of twins) may take the plan's
// timeout, and setup and collection two minutes.
func AttemptBudget(p traceplan.Plan) time.Duration {
	passes := 1
	if p.Stealth != traceplan.StealthOff {
		passes++
	}
	if p.Twins != traceplan.TwinsOff {
		passes += 2
	}
	return time.Duration(passes)*p.Limits.Timeout + 2*time.Minute
}

// unwatchedPlan is p for the unwatched pass: the same skill, driver and
// limits, a trace id of its own, and the watched pass's home made again
// with other secrets (a twin home, canary.Twin): the same user and host,
// files, persona, company domain and network addresses, so that the
// passes' paths and destinations compare, and tokens of its own, so that a
// sighting names its pass. Its clock is its own (no fake clock is added).
func unwatchedPlan(p traceplan.Plan, first *run) (traceplan.Plan, error) {
	up := p
	up.Unwatched = true
	up.TraceID = derivedID(p.TraceID, unwatchedSuffix)
	up.Seed = nil
	if first == nil || first.home == nil {
		return up, nil // no home was made: a home of its own
	}
	up.User, up.Hostname = first.home.User, first.home.Hostname
	up.Seed = first.seed
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return up, fmt.Errorf("unwatched pass: %w", err)
	}
	up.Twin = &traceplan.TwinSpec{Role: TwinUnwatched, Key: key}
	return up, nil
}

// unwatchedPass runs the unwatched pass after the watched pass (out, st)
// for the reason why, and combines both reports into out's (rewriting the
// run folder dir). The unwatched pass's own report goes to its
// reports.UnwatchedDir.
func (r *Runner) unwatchedPass(ctx context.Context, p traceplan.Plan, dir string, out Outcome, watched *run, why string) (Outcome, error) {
	r.phase("stealth", "unwatched pass (%s)", why)
	up, err := unwatchedPlan(p, watched)
	if err != nil {
		return out, err
	}
	udir := ""
	if dir != "" {
		udir = filepath.Join(dir, reports.UnwatchedDir)
	}
	uout, second, uerr := r.pass(ctx, up, udir)
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
	return out, errors.Join(uerr, writeRunDir(dir, out))
}
