// Package monitor runs one skill many times and compares what should stay
// the same between the runs, to catch behaviour that activates at run N:
// a run plan of cells (chained runs, whose state carries over from one run
// into the next, and independent runs, fresh every time), a per-run
// observation taken from each trace's report (the behaviour profile's
// capabilities, the rules that fired, the verdict, resource figures and
// the files written), the comparison of each run with the runs before it,
// the confirmation of a deviation (re-run from the state carried into the
// deviating run; re-run with the carried files deleted, to name the one
// that carries it), and a verdict per cell and for the skill: CONSISTENT,
// MARGINAL, VARIANT or ACTIVATION-PATTERN-DETECTED (docs/monitor.md).
// Beside the verdicts: a hash per tool call of its output with the volatile
// parts normalised (output.go), the skill's declared envelope and what the
// runs did outside it (envelope.go), the risk tier and its policy
// (tier.go), and the report as JSON, text and one HTML page (html.go).
//
// It runs no trace itself: each run is a trace of the plan it is given
// (Options.Plan, under the run's condition and from its carried state),
// which a tracing.Tracer given by cmd/ runs, so the plan, the comparison
// and the confirmation are tested with fakes.
package monitor
