// Package traceplan is the plan of one trace as plain data: the skill, the
// driver, the limits, the identity of the seeded home, the clock, DNS and
// monitoring modes, the stealth and twins modes and the files to restore
// (Plan), with its validation (Plan.Validate) and its defaults
// (DefaultLimits). It imports no engine: the packages that run traces
// without one of their own share it, and orchestrator.Runner runs it.
//
// A plan's JSON is printed by --dry-run and what of it decides a verdict is
// hashed into sweep databases (sweep.PlanHash): field names and tags do
// not change.
package traceplan
