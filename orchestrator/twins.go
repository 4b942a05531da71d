package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/mcptools"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// Twin traces (docs/sandbox.md, "Twin traces"): a skill that encrypts,
// compresses or splits the secrets it sends leaves nothing for token
// matching. When the trace read credentials and then sent data the detector
// could not read, or a sink saw high-entropy payloads, or with Plan.Twins
// TwinsAlways, the same plan runs again as twins: fresh sandboxes whose
// homes the original's seed makes again (the same user, files and times),
// whose clocks start where the original's did, and whose randomness is one
// the twins share. One twin holds the original's secrets, the other secrets
// of other values and greater lengths; when what differs between them could
// be noise, a control twin with the original's secrets runs too, and when
// a dependency would decide the verdict, a control twin and a confirming
// twin with secrets of a third value (rules.TwinResult.NeedConfirm).
// rules.CompareTwins compares what left them, and what moved with the
// secrets is SBX-EXFIL-010.

// Twin roles.
const (
	TwinSame    = "same"    // the original's secrets
	TwinOther   = "other"   // other secrets, longer
	TwinControl = "control" // the original's secrets again: noise control
	TwinConfirm = "confirm" // secrets of a third value, longer still: confirmation
	// TwinUnwatched is the unwatched pass (stealth.go): the watched pass's
	// home with other secrets of the same lengths, its own clock.
	TwinUnwatched = "unwatched"
)

const twinSuffix = "-twin-"

// TwinGrow is how many characters a twin with other secrets adds to every
// run of characters its secrets are made of: enough that a secret's length
// shows through block ciphers (16 bytes) and compression.
const TwinGrow = 16

// canaryTwin is the canary.Twin of t's secrets: nil for the original's.
func canaryTwin(t *traceplan.TwinSpec) *canary.Twin {
	if t == nil || t.Role != TwinOther && t.Role != TwinConfirm && t.Role != TwinUnwatched {
		return nil
	}
	return &canary.Twin{Key: t.Key, Grow: t.Grow}
}

// entropyEnv is what the tool server is told of the randomness twins share
// (mcptools.EntropyEnv, in its exec's environment: the user's processes can
// read its command line, not its environment); nil but for a twin.
func entropyEnv(p traceplan.Plan) []string {
	if p.Twin == nil || len(p.Twin.Entropy) == 0 {
		return nil
	}
	return []string{mcptools.EntropyEnv + "=" + hex.EncodeToString(p.Twin.Entropy)}
}

// twinReason says why twin traces run after the trace p whose report is
// rep, or "" when none do: a trace that failed, a twin, an unwatched pass
// or a trace proven malicious already runs none.
func twinReason(p traceplan.Plan, rep *reports.Report) string {
	if rep == nil || p.Twin != nil || p.Unwatched || p.Twins == traceplan.TwinsOff {
		return ""
	}
	if rep.Status != reports.StatusCompleted && rep.Status != reports.StatusTimeout {
		return ""
	}
	if p.Twins == traceplan.TwinsAlways {
		return "--twins"
	}
	if rep.Verdict == rules.Malicious {
		return ""
	}
	return rules.TwinTrigger(rep.Findings, rep.Events)
}

// twinPlan is p for a twin of the given role, after the original pass st.
func twinPlan(p traceplan.Plan, st *run, spec traceplan.TwinSpec) traceplan.Plan {
	tp := p
	tp.Twin = &spec
	tp.Twins = traceplan.TwinsOff
	tp.Stealth = traceplan.StealthOff
	tp.Keep = false
	tp.Seed = st.seed
	if st.home != nil {
		tp.User, tp.Hostname = st.home.User, st.home.Hostname
	}
	tp.TimeZone = st.system.TimeZone
	tp.TraceID = derivedID(p.TraceID, twinSuffix+spec.Role)
	return tp
}

// TwinsDir is the folder of a run folder that holds the twins' run folders.
const TwinsDir = "twins"

// twinPasses runs the twins of the trace whose original pass is st and
// whose report is out's, and adds the comparison to out's report.
func (r *Runner) twinPasses(ctx context.Context, p traceplan.Plan, dir string, out Outcome, st *run, why string) (Outcome, error) {
	r.phase("twins", "twin traces (%s)", why)
	spec := traceplan.TwinSpec{Start: st.started, Grow: TwinGrow, Entropy: make([]byte, 32), Key: make([]byte, 32)}
	if _, err := rand.Read(spec.Entropy); err != nil {
		return out, fmt.Errorf("twin traces: %w", err)
	}
	if _, err := rand.Read(spec.Key); err != nil {
		return out, fmt.Errorf("twin traces: %w", err)
	}
	sub := func(role string) string {
		if dir == "" {
			return ""
		}
		return filepath.Join(dir, TwinsDir, role)
	}
	specs := []traceplan.TwinSpec{withRole(spec, TwinSame), withRole(spec, TwinOther)}
	runs, err := r.runTwins(ctx, p, st, specs, sub)
	roles := []string{TwinSame, TwinOther}
	set := reports.TwinSet(out.Report, twinReports(runs), roles)
	res := rules.CompareTwins(set)
	// A second round, only when the first asks for it: a control twin
	// when a difference could be noise, and a confirmation (a control
	// twin and a third set of secrets) when a dependency would decide the
	// verdict on the strength of one run.
	var more []traceplan.TwinSpec
	if res.NeedControl || res.NeedConfirm {
		more = append(more, withRole(spec, TwinControl))
	}
	if res.NeedConfirm {
		c := withRole(spec, TwinConfirm)
		c.Key, c.Grow = make([]byte, 32), 2*spec.Grow
		if _, rerr := rand.Read(c.Key); rerr != nil {
			return out, fmt.Errorf("twin traces: %w", rerr)
		}
		more = append(more, c)
	}
	if len(more) > 0 && err == nil && ctx.Err() == nil {
		r.phase("twins", "twin traces: a second round (%s)", secondRoundWhy(res))
		extra, cerr := r.runTwins(ctx, p, st, more, sub)
		err = cerr
		runs = append(runs, extra...)
		for _, m := range more {
			roles = append(roles, m.Role)
		}
		set = reports.TwinSet(out.Report, twinReports(runs), roles)
		res = rules.CompareTwins(set)
	}
	tw := reports.Twins{Reason: why, Units: res.Units, Dependent: res.Dependent, Noisy: len(res.Noisy),
		Grew: rules.SecretGrowth(set)}
	for i, t := range runs {
		tr := reports.TwinRun{Role: roles[i], TraceID: twinPlan(p, st, traceplan.TwinSpec{Role: roles[i]}).TraceID}
		if dir != "" {
			tr.Dir = filepath.ToSlash(filepath.Join(TwinsDir, roles[i]))
		}
		if t.out.Report != nil {
			tr.Status, tr.Verdict = t.out.Report.Status, t.out.Report.Verdict
		}
		if t.err != nil {
			tr.Error = t.err.Error()
		}
		tw.Runs = append(tw.Runs, tr)
	}
	out.Report = reports.AddTwins(out.Report, tw, rules.TwinFindings(set, res))
	if err != nil {
		err = fmt.Errorf("twin traces: %w", err)
	}
	return out, errors.Join(err, writeRunDir(dir, out))
}

func withRole(s traceplan.TwinSpec, role string) traceplan.TwinSpec {
	s.Role = role
	return s
}

func secondRoundWhy(res rules.TwinResult) string {
	if res.NeedConfirm {
		return "confirming what moved with the secrets"
	}
	return "a control for what differed"
}

// twinResult is one twin's pass.
type twinResult struct {
	out Outcome
	err error
}

// runTwins runs the twins of specs at once, each a pass of its own into
// sub(role). Progress is serialised: passes report from their own
// goroutines.
func (r *Runner) runTwins(ctx context.Context, p traceplan.Plan, st *run, specs []traceplan.TwinSpec, sub func(string) string) ([]twinResult, error) {
	rr := *r
	if r.Progress != nil {
		var mu sync.Mutex
		rr.Progress = func(pr Progress) {
			mu.Lock()
			defer mu.Unlock()
			r.Progress(pr)
		}
	}
	res := make([]twinResult, len(specs))
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, _, err := rr.pass(ctx, twinPlan(p, st, s), sub(s.Role))
			res[i] = twinResult{out: out, err: err}
		}()
	}
	wg.Wait()
	var errs []error
	for i, t := range res {
		if t.err != nil {
			errs = append(errs, fmt.Errorf("%s twin: %w", specs[i].Role, t.err))
		}
	}
	return res, errors.Join(errs...)
}

func twinReports(runs []twinResult) []*reports.Report {
	out := make([]*reports.Report, len(runs))
	for i, t := range runs {
		out[i] = t.out.Report
	}
	return out
}
