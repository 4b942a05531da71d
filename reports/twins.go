package reports

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/trace"

	"github.com/sandboxctl/sandboxctl/rules"
)

// Twins is what twin traces found (docs/sandbox.md, "Twin traces"): the
// runs, and the egress that moved with the planted secrets.
type Twins struct {
	// Reason says why the twins ran: "--twins", or what the trace saw.
	Reason string    `json:"reason"`
	Runs   []TwinRun `json:"runs"`
	// Units is how many egress units the reference twin sent; Dependent
	// those that moved with the secrets; Noisy how many differed between
	// runs with the same secrets (not proof of anything).
	Units     int                `json:"units"`
	Dependent []rules.Dependency `json:"dependent,omitempty"`
	Noisy     int                `json:"noisy"`
	// Grew is how many characters longer the other twin's secrets were,
	// over those the trace read.
	Grew int `json:"grew,omitempty"`
}

// TwinRun is one twin trace.
type TwinRun struct {
	// Role: "same" (the original's secrets), "other" (other secrets,
	// longer), "control" (the original's secrets again), "confirm"
	// (secrets of a third value, longer still: the second round).
	Role    string `json:"role"`
	TraceID string `json:"trace_id"`
	// Dir is the twin's run folder, relative to this one.
	Dir     string        `json:"dir,omitempty"`
	Status  Status        `json:"status,omitempty"`
	Verdict rules.Verdict `json:"verdict,omitempty"`
	Error   string        `json:"error,omitempty"`
}

// AddTwins returns r with the twin traces' comparison: t recorded, fs
// (rules.TwinFindings) added to the findings, and the verdict made
// malicious, with its reason first, when one of them proves harm.
func AddTwins(r *Report, t Twins, fs []rules.Finding) *Report {
	if r == nil {
		return nil
	}
	out := *r
	out.Twins = &t
	out.Findings = slices.Concat(slices.Clone(r.Findings), fs)
	rules.SortFindings(out.Findings)
	var harm []string
	for _, f := range fs {
		if rules.ProvesHarm(f) {
			harm = append(harm, "harm: "+f.RuleID+" ("+string(f.Harm)+"): "+f.Title)
		}
	}
	if len(harm) > 0 {
		harm = slices.Compact(harm)
		if out.Verdict != rules.Malicious {
			out.Verdict, out.Reasons = rules.Malicious, harm
		} else {
			out.Reasons = slices.Concat(slices.Clone(r.Reasons), harm)
		}
	}
	out.summarize()
	return &out
}

// writeFlowsText writes the flows of secrets to senders, when there are
// any.
func writeFlowsText(t *textWriter, r *Report) {
	if len(r.Flows) == 0 {
		return
	}
	t.line("")
	t.painted(ansiBold, "Flows (reads of planted secrets to what was sent)")
	for i, f := range r.Flows {
		if i == 8 {
			t.para("  ", "  ", fmt.Sprintf("… %d more", len(r.Flows)-8))
			break
		}
		t.para("  ", "    ", fmt.Sprintf("%s read by %s, %s, sent by %s to %s (events %s)",
			strings.Join(f.Sources, ", "), procText(f.Reader), f.Via, procText(f.Sender), f.Dest, seqList(f.Seqs)))
	}
}

// writeTwinsText writes what the twin traces compared, when they ran.
func writeTwinsText(t *textWriter, r *Report) {
	tw := r.Twins
	if tw == nil {
		return
	}
	t.line("")
	t.painted(ansiBold, "Twin traces")
	t.para("  Why     ", "          ", tw.Reason)
	var runs []string
	for _, x := range tw.Runs {
		s := fmt.Sprintf("%s (%s, %s)", x.Role, x.Status, x.Verdict)
		if x.Error != "" {
			s = fmt.Sprintf("%s (error: %s)", x.Role, x.Error)
		}
		runs = append(runs, s)
	}
	t.para("  Runs    ", "          ", strings.Join(runs, ", "))
	t.para("  Egress  ", "          ", fmt.Sprintf("%d unit%s compared, %d moved with the secrets, %d noisy (differ between runs with the same secrets)",
		tw.Units, plural(tw.Units), len(tw.Dependent), tw.Noisy))
	for i, d := range tw.Dependent {
		if i == 6 {
			t.para("          ", "          ", fmt.Sprintf("… %d more", len(tw.Dependent)-6))
			break
		}
		s := fmt.Sprintf("%s %s %s to %s: %s", d.Unit.Channel, d.Unit.Part, d.Unit.Where, d.Unit.Dest, d.How)
		if d.How == "length" || d.How == "count" {
			s += fmt.Sprintf(" %d → %d", d.Size, d.OtherSize)
		}
		if d.Issuer != "" {
			s += " (its issuer: " + d.Issuer + ")"
		}
		t.para("          ", "            ", s)
	}
}

func procText(p rules.FlowProc) string {
	if len(p.Argv) == 0 {
		return fmt.Sprintf("pid %d", p.PID)
	}
	return fmt.Sprintf("%s (pid %d)", strings.Join(p.Argv, " "), p.PID)
}

func seqList(s []int64) string {
	var out []string
	for i, n := range s {
		if i == 6 {
			out = append(out, "…")
			break
		}
		out = append(out, fmt.Sprintf("#%d", n))
	}
	return strings.Join(out, " ")
}

// Timeline is the report's unredacted timeline (what events.jsonl holds)
// when the report was built or reprocessed here, else its events.
func (r *Report) Timeline() []trace.Event {
	if r.raw != nil {
		return r.raw
	}
	return r.Events
}

// CanarySet is the planted secrets, with their values, when the report was
// built here or loaded with its rules-input.json; nil otherwise.
func (r *Report) CanarySet() *canary.Set {
	if r.secrets == nil {
		return nil
	}
	return r.secrets.Canaries
}

// TwinSet is what rules.CompareTwins compares for the report r of a trace
// and its twins' reports, by role ("same" and "control" are runs with r's
// secrets, "other" and "confirm" with others); twins that did not complete
// are left out.
func TwinSet(r *Report, twins []*Report, roles []string) rules.TwinSet {
	set := rules.TwinSet{Original: rules.TwinRun{Name: "original", Events: r.Timeline(), Canaries: r.CanarySet()}}
	for i, t := range twins {
		if t == nil || t.Status != StatusCompleted && t.Status != StatusTimeout {
			continue
		}
		run := rules.TwinRun{Name: roles[i], Events: t.Timeline(), Canaries: t.CanarySet()}
		if roles[i] == "other" || roles[i] == "confirm" {
			set.Other = append(set.Other, run)
		} else {
			set.Same = append(set.Same, run)
		}
	}
	return set
}

// reprocessTwins redoes the comparison of a report's twin traces from their
// run folders (Twins.Runs[].Dir), when it has any.
func reprocessTwins(dir string, out, stored *Report, opt ReprocessOptions) (*Report, error) {
	if out == nil || stored.Twins == nil {
		return out, nil
	}
	var reps []*Report
	var roles []string
	for _, tr := range stored.Twins.Runs {
		if tr.Dir == "" {
			continue // the twin wrote no folder
		}
		if !filepath.IsLocal(tr.Dir) {
			return nil, fmt.Errorf("reprocess %s: twin folder %q", dir, tr.Dir)
		}
		uo := opt
		uo.Canaries = nil // each twin planted its own
		t, err := Reprocess(filepath.Join(dir, filepath.FromSlash(tr.Dir)), uo)
		if err != nil {
			return nil, fmt.Errorf("reprocess %s: %s twin: %w", dir, tr.Role, err)
		}
		reps, roles = append(reps, t), append(roles, tr.Role)
	}
	set := TwinSet(out, reps, roles)
	res := rules.CompareTwins(set)
	t := *stored.Twins
	t.Units, t.Dependent, t.Noisy, t.Grew = res.Units, res.Dependent, len(res.Noisy), rules.SecretGrowth(set)
	return AddTwins(out, t, rules.TwinFindings(set, res)), nil
}
