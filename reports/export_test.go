package reports

import (
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Helpers only the tests use.

// Analyze evaluates the rules on a numbered timeline (trace.Merge's output)
// and builds the report.
func Analyze(m Meta, events []trace.Event, opt Options) *Report {
	in := m.Input(events)
	in.Extra = opt.Extra
	return Build(m, rules.Evaluate(in), opt)
}
