package orchestrator

import (
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

// analyse is the rules stage of a pass: it merges the events collected
// into one numbered timeline, adds the planted tokens found in the jail's
// spooled payloads as hits of the events that name them, and runs the rules
// over it. The rules are pure (rules.Evaluate), so `sandboxctl report
// --reprocess` reruns this stage on the stored events alone.
func analyse(st *run, meta reports.Meta, extra rules.Extra) rules.Result {
	timeline := trace.Merge(st.events)
	timeline = append(timeline, spoolHitEvents(st.home.Set, timeline, st.spoolHits)...)
	in := meta.Input(timeline)
	in.Extra = extra // the user's rules, if any
	return rules.Evaluate(in)
}
