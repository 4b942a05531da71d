package fingerprint

import (
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Findings turns anomalies into findings of their rules (RuleIDs), with
// the events of the timeline they name as evidence.
func Findings(as []Anomaly, events []trace.Event) []rules.Finding {
	bySeq := map[int64]trace.Event{}
	for _, e := range events {
		bySeq[e.Seq] = e
	}
	var out []rules.Finding
	for _, a := range as {
		r, ok := rules.Lookup(RuleIDs[a.Type])
		if !ok {
			continue
		}
		f := rules.Finding{RuleID: r.ID, Title: r.Title, Severity: a.Severity, Confidence: r.Confidence,
			Technique: r.Technique, Message: a.Message, Evidence: []rules.Evidence{}}
		for _, s := range a.Evidence {
			e, ok := bySeq[s]
			if !ok {
				continue
			}
			if f.ToolCallID == "" {
				f.ToolCallID = e.ToolCallID
			}
			f.Evidence = append(f.Evidence, rules.Evidence{Seq: s, Source: e.Source, Type: e.Type,
				ToolCallID: e.ToolCallID, Summary: a.Capability})
		}
		out = append(out, f)
	}
	return out
}

// A Check compares a trace with the baseline of its skill as the store
// held it when the trace started: Current is this version's fingerprint,
// Previous the last stable one of an earlier version (either may be nil).
type Check struct {
	Current, Previous *Fingerprint
}

// Extra returns the rules.Extra that adds the trace's anomalies as
// findings before the verdict. It computes the profile from the timeline
// exactly as reports do, and finds nothing while there is no baseline.
func (c Check) Extra() rules.Extra {
	return func(in rules.Input, events []trace.Event, _ []rules.Finding) []rules.Finding {
		base, name, versions, ok := Baseline(c.Current, c.Previous)
		if !ok {
			return nil
		}
		as := Compare(base, Build(in, events), name, versions)
		// The live timeline is not redacted: a planted value in a name or
		// an argument must not reach a finding.
		for i := range as {
			as[i].Capability = rules.Redact(in.Canaries, as[i].Capability)
			as[i].Message = rules.Redact(in.Canaries, as[i].Message)
		}
		return Findings(as, events)
	}
}

// Recorded returns the rules.Extra that gives the anomalies a run
// recorded (its report's fingerprint section) as findings again: `report
// --reprocess` keeps them without a store.
func Recorded(as []Anomaly) rules.Extra {
	return func(_ rules.Input, events []trace.Event, _ []rules.Finding) []rules.Finding {
		return Findings(as, events)
	}
}

// Chain runs every non-nil extra in order (nil when there is none).
func Chain(xs ...rules.Extra) rules.Extra {
	var live []rules.Extra
	for _, x := range xs {
		if x != nil {
			live = append(live, x)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return func(in rules.Input, events []trace.Event, fs []rules.Finding) []rules.Finding {
		var out []rules.Finding
		for _, x := range live {
			out = append(out, x(in, events, fs)...)
		}
		return out
	}
}
