package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/rules"
)

// Tracers a pass ran under.
const (
	TracerStrace = "strace"
	TracerNone   = "none"
)

// Pass describes one pass of a two-pass trace (docs/sandbox.md, "Stealth
// pass").
type Pass struct {
	Name   string `json:"name"`   // rules.PassWatched, rules.PassUnwatched
	Tracer string `json:"tracer"` // TracerStrace, TracerNone
	// Reason says why the pass ran: "--stealth", or the tells the watched
	// pass saw.
	Reason  string `json:"reason,omitempty"`
	TraceID string `json:"trace_id"`
	// Dir is the folder of the pass's own report, relative to the run
	// folder ("" for the run folder itself).
	Dir             string        `json:"dir,omitempty"`
	Status          Status        `json:"status"`
	Error           string        `json:"error,omitempty"`
	Verdict         rules.Verdict `json:"verdict"`
	Reasons         []string      `json:"verdict_reasons,omitempty"`
	FindingCount    int           `json:"finding_count"`
	SampledProcs    int           `json:"sampled_processes,omitempty"`
	TracedProcesses int           `json:"traced_processes,omitempty"`
}

// UnwatchedDir is the folder, inside a run folder, of the unwatched pass's
// own report.
const UnwatchedDir = "unwatched"

// Combine returns the report of a two-pass trace: the watched pass's report
// with the findings of both passes, each marked with its pass, the findings
// of their comparison (rules.ComparePasses), the verdict both passes decide
// (rules.CombineVerdict) and the two passes described in Passes (their
// verdicts and finding counts are filled in here). Neither input is
// changed.
func Combine(watched, unwatched *Report, wp, up Pass) *Report {
	out := *watched
	wp.Name, up.Name = rules.PassWatched, rules.PassUnwatched
	wp.Status, wp.Error, wp.Verdict, wp.Reasons, wp.FindingCount = watched.Status, watched.Error, watched.Verdict, slices.Clone(watched.Reasons), len(watched.Findings)
	up.Status, up.Error, up.Verdict, up.Reasons, up.FindingCount = unwatched.Status, unwatched.Error, unwatched.Verdict, slices.Clone(unwatched.Reasons), len(unwatched.Findings)
	if up.Dir == "" {
		up.Dir = UnwatchedDir
	}
	out.Passes = []Pass{wp, up}

	mark := func(fs []rules.Finding, pass string) []rules.Finding {
		out := slices.Clone(fs)
		for i := range out {
			out[i].Pass = pass
		}
		return out
	}
	wf, uf := mark(watched.Findings, rules.PassWatched), mark(unwatched.Findings, rules.PassUnwatched)
	cmp := rules.ComparePasses(rules.PassResult{Findings: watched.Findings, Events: watched.Events},
		rules.PassResult{Findings: unwatched.Findings, Events: unwatched.Events})
	out.Findings = slices.Concat(cmp, wf, uf)
	rules.SortFindings(out.Findings)
	out.Verdict, out.Reasons = rules.CombineVerdict(watched.Verdict, unwatched.Verdict, watched.Reasons, unwatched.Reasons, out.Findings)
	// the cause of the pass whose verdict holds (CombineVerdict prefers the
	// watched pass's at equal rank)
	out.Cause = watched.Cause
	if watched.Verdict != rules.Inconclusive {
		out.Cause = unwatched.Cause
	}
	if out.Status == StatusCompleted && unwatched.Status != StatusCompleted {
		out.Reasons = append(out.Reasons, fmt.Sprintf("unwatched pass ended with status %s", unwatched.Status))
	}
	// The canaries both passes saw, each with its pass: a token that left
	// only when unwatched is a hit like any other.
	hits := make([]Hit, 0, len(watched.Canaries.Hits)+len(unwatched.Canaries.Hits))
	for _, h := range watched.Canaries.Hits {
		h.Pass = rules.PassWatched
		hits = append(hits, h)
	}
	for _, h := range unwatched.Canaries.Hits {
		h.Pass = rules.PassUnwatched
		hits = append(hits, h)
	}
	out.Canaries.Hits = hits
	out.Summary.LeakedTokens = leakedTokens(hits)
	out.summarize()
	return &out
}

// reprocessPasses rebuilds a two-pass report from its rebuilt watched pass
// and the unwatched pass's folder, when r has passes.
func reprocessPasses(dir string, watched, stored *Report, opt ReprocessOptions) (*Report, error) {
	if len(stored.Passes) != 2 {
		return watched, nil
	}
	wp, up := stored.Passes[0], stored.Passes[1]
	sub := filepath.Join(dir, filepath.FromSlash(up.Dir))
	if up.Dir == "" || !filepath.IsLocal(up.Dir) {
		return nil, fmt.Errorf("reprocess %s: unwatched pass folder %q", dir, up.Dir)
	}
	// The folder is untrusted: a link would read another run's events
	// as this one's.
	p := dir
	for _, el := range strings.Split(filepath.ToSlash(filepath.Clean(up.Dir)), "/") {
		p = filepath.Join(p, el)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, fmt.Errorf("reprocess %s: unwatched pass: %w", dir, err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return nil, fmt.Errorf("reprocess %s: unwatched pass folder %q is a link: a run folder's passes are folders inside it", dir, up.Dir)
		}
	}
	uo := opt
	uo.Canaries = nil // each pass planted its own
	u, err := Reprocess(sub, uo)
	if err != nil {
		return nil, err
	}
	return Combine(watched, u, wp, up), nil
}
