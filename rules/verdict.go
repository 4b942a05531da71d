package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

// The verdict policy (docs/verdicts.md): malicious needs a finding that
// proves harm; everything else is at most suspicious; a trace that failed,
// ran out of resources, lost evidence or did not run its decisive steps is
// never clean.

// ProvesHarm reports whether a finding alone makes a trace malicious: it
// has a harm class and is critical, or high with high confidence.
func ProvesHarm(f Finding) bool {
	return f.Harm != HarmNone && (f.Severity == Critical || f.Severity == High && f.Confidence == ConfHigh)
}

// Suspect reports whether a finding makes a trace at least suspicious:
// critical or high, or medium with medium or high confidence.
func Suspect(f Finding) bool {
	switch f.Severity {
	case Critical, High:
		return true
	case Medium:
		return f.Confidence != ConfLow
	}
	return false
}

// VerdictFor applies the findings part of the verdict table:
//   - malicious: a finding proves harm (ProvesHarm);
//   - suspicious: otherwise a finding is suspect (Suspect);
//   - inconclusive: otherwise, when the skill was not exercised;
//   - clean: otherwise.
//
// Evaluate also weighs the trace's status, resources, lost evidence and
// coverage (Decide).
func VerdictFor(fs []Finding, exercised bool) Verdict {
	v := Clean
	for _, f := range fs {
		if ProvesHarm(f) {
			return Malicious
		}
		if Suspect(f) {
			v = Suspicious
		}
	}
	if v == Clean && !exercised {
		return Inconclusive
	}
	return v
}

// Facts are what the verdict weighs besides the findings.
type Facts struct {
	Exercised bool
	// Status is the trace's status: "completed", "timeout", "error",
	// "cancelled" ("" is completed).
	Status string
	// Exhausted lists the sandbox limits the skill ran into ("pids",
	// "memory", "output", "disk", "oom").
	Exhausted []string
	// Missing describes evidence known to be lost (notices).
	Missing  []string
	Coverage Coverage
}

// Decide returns the verdict and the reasons for it, most decisive first.
func Decide(fs []Finding, f Facts) (Verdict, []string) {
	var harm, suspect []string
	for _, x := range fs {
		switch {
		case ProvesHarm(x):
			harm = append(harm, fmt.Sprintf("%s (%s): %s", x.RuleID, x.Harm, x.Title))
		case Suspect(x):
			suspect = append(suspect, fmt.Sprintf("%s (%s): %s", x.RuleID, x.Severity, x.Title))
		}
	}
	harm, suspect = uniq(harm), uniq(suspect)
	if len(harm) > 0 {
		return Malicious, prefix("harm: ", harm)
	}
	var failed []string
	switch f.Status {
	case "", "completed":
	case "timeout":
		failed = append(failed, "the trace reached its deadline before the skill finished")
	default:
		failed = append(failed, "the trace ended with status "+f.Status+" before the skill finished")
	}
	if len(f.Exhausted) > 0 {
		failed = append(failed, "the skill exhausted the sandbox ("+strings.Join(f.Exhausted, ", ")+")")
	}
	if len(failed) > 0 {
		return Inconclusive, append(failed, prefix("finding: ", suspect)...)
	}
	if len(suspect) > 0 {
		return Suspicious, append(prefix("finding: ", suspect), f.gaps()...)
	}
	if !f.Exercised {
		return Inconclusive, []string{"no tool call ran (needs a model driver: the skill gave the driver nothing it could run): a clean verdict needs evidence that the skill was exercised"}
	}
	if g := f.gaps(); len(g) > 0 {
		return Inconclusive, g
	}
	return Clean, []string{fmt.Sprintf("%d step(s) ran and nothing suspect was found", f.Coverage.Run)}
}

// gaps lists what the trace did not see.
func (f Facts) gaps() []string {
	var out []string
	for _, m := range f.Missing {
		out = append(out, "evidence missing: "+m)
	}
	if n := f.Coverage.DecisiveNotRun; n > 0 {
		var why []string
		for _, s := range f.Coverage.Steps {
			if s.Decisive && s.Outcome == OutcomeNotRun {
				why = append(why, s.ToolCallID+" "+s.Reason)
			}
		}
		out = append(out, fmt.Sprintf("%d decisive step(s) did not run: %s", n, strings.Join(firstN(why, 3), "; ")))
	}
	return out
}

func firstN(xs []string, n int) []string {
	if len(xs) > n {
		return append(slices.Clip(xs[:n]), fmt.Sprintf("… %d more", len(xs)-n))
	}
	return xs
}

func prefix(p string, xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = p + x
	}
	return out
}

func uniq(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// traceFacts reads the verdict's facts from the timeline.
func (c *ctx) traceFacts(cov Coverage) Facts {
	f := Facts{Exercised: c.exercised, Status: c.in.Status, Coverage: cov}
	for i := range c.events {
		e := &c.events[i]
		switch d := e.Data.(type) {
		case *trace.Resource:
			for _, x := range d.Exceeded {
				if !slices.Contains(f.Exhausted, x) {
					f.Exhausted = append(f.Exhausted, x)
				}
			}
			if d.OOMKilled && !slices.Contains(f.Exhausted, "memory") {
				f.Exhausted = append(f.Exhausted, "memory")
			}
			if d.OutputDropped > 0 {
				f.Missing = append(f.Missing, fmt.Sprintf("%d bytes of tool output were not kept", d.OutputDropped))
			}
		case *trace.Notice:
			if d.Incomplete || d.Lost > 0 {
				f.Missing = append(f.Missing, capString(oneLine(d.Message), 160))
			}
		}
	}
	return f
}
