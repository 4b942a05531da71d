package rules

import "strings"

// Causes of an inconclusive verdict (Result.Cause, report.json's
// verdict_cause), so that a sweep or an evaluation can count why its
// skills could not be judged and the next work goes where the count is
// (docs/verdicts.md, "Why inconclusive").
const (
	// CauseNeedsModel: no tool call ran. With the model-free driver the
	// skill gave it nothing to run (prose instructions for a model): it
	// needs a model driver, which is not a failure of the sandbox.
	CauseNeedsModel = "needs-model"
	// CauseDeadline and CauseTraceError: the trace ended before the skill
	// did (its deadline, an error or a cancellation).
	CauseDeadline   = "deadline"
	CauseTraceError = "trace-error"
	// CauseResources: the skill ran into a limit of the sandbox.
	CauseResources = "resources"
	// CauseEvidenceLost: part of the evidence is known to be lost.
	CauseEvidenceLost = "evidence-lost"
	// The first decisive step that did not run, by why it did not.
	CauseToolMissing    = "tool-missing"       // command not found, not executable
	CauseUsageError     = "usage-error"        // a usage message or an option the program does not have
	CauseNotACommand    = "not-a-command"      // shell syntax error: pseudo-code or a fragment
	CauseMissingInput   = "missing-input"      // a file, folder or repository the step expects
	CauseDependency     = "dependency-missing" // a module not installed, an install that failed
	CauseNetworkService = "network-service"    // a service the jail cannot emulate, or that wants a login
	CauseLostState      = "lost-state"         // variables an earlier step set, empty in a fresh shell
	CauseDriverRejected = "driver-rejected"    // the driver refused the step
	CauseStepTimeout    = "step-timeout"       // the step ran out of time
	CauseStepIncomplete = "step-incomplete"    // any other reason
)

// Causes lists every cause, in the order reports and tables show them.
var Causes = []string{CauseNeedsModel, CauseToolMissing, CauseUsageError, CauseNotACommand, CauseMissingInput,
	CauseDependency, CauseNetworkService, CauseLostState, CauseDriverRejected, CauseStepTimeout, CauseStepIncomplete,
	CauseDeadline, CauseTraceError, CauseResources, CauseEvidenceLost}

// Cause says why a trace is inconclusive, in the order Decide weighs it:
// a trace that ended early or ran out of resources, no tool call at all,
// evidence lost, then the first decisive step that did not run. It is ""
// for a verdict other than inconclusive.
func Cause(v Verdict, f Facts) string {
	if v != Inconclusive {
		return ""
	}
	switch f.Status {
	case "", "completed":
	case "timeout":
		return CauseDeadline
	default:
		return CauseTraceError
	}
	if len(f.Exhausted) > 0 {
		return CauseResources
	}
	if !f.Exercised {
		return CauseNeedsModel
	}
	if len(f.Missing) > 0 {
		return CauseEvidenceLost
	}
	for _, s := range f.Coverage.Steps {
		if s.Decisive && s.Outcome == OutcomeNotRun {
			return StepCause(s.Reason)
		}
	}
	return CauseStepIncomplete
}

// StepCause is the cause a step that did not run gives, from its
// coverage reason (coverage.go's outcome).
func StepCause(reason string) string {
	has := func(p ...string) bool {
		for _, x := range p {
			if strings.HasPrefix(reason, x) {
				return true
			}
		}
		return false
	}
	switch {
	case has("command not found", "not executable"):
		return CauseToolMissing
	case has("usage error", "unsupported option"):
		return CauseUsageError
	case has("syntax error"):
		return CauseNotACommand
	case has("missing file", "not in a git repository"):
		return CauseMissingInput
	case has("missing module", "package install failed"):
		return CauseDependency
	case has("network error", "authentication required"):
		return CauseNetworkService
	case has("uses variables only an earlier step set"):
		return CauseLostState
	case has("rejected"):
		return CauseDriverRejected
	case has("timed out"):
		return CauseStepTimeout
	}
	return CauseStepIncomplete
}
