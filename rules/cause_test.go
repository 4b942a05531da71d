package rules

import "testing"

func TestCause(t *testing.T) {
	step := func(reason string, decisive bool) StepCoverage {
		return StepCoverage{Outcome: OutcomeNotRun, Reason: reason, Decisive: decisive}
	}
	ran := func(steps ...StepCoverage) Facts {
		return Facts{Exercised: true, Status: "completed", Coverage: Coverage{Steps: steps}}
	}
	tests := []struct {
		name    string
		verdict Verdict
		facts   Facts
		want    string
	}{
		{"not inconclusive", Clean, ran(), ""},
		{"suspicious with gaps", Suspicious, ran(step("command not found: clawhub", true)), ""},
		{"nothing ran", Inconclusive, Facts{}, CauseNeedsModel},
		{"deadline first", Inconclusive, Facts{Status: "timeout"}, CauseDeadline},
		{"error", Inconclusive, Facts{Exercised: true, Status: "error"}, CauseTraceError},
		{"resources before steps", Inconclusive, Facts{Exercised: true, Exhausted: []string{"pids"},
			Coverage: Coverage{Steps: []StepCoverage{step("usage error", true)}}}, CauseResources},
		{"evidence lost", Inconclusive, Facts{Exercised: true, Missing: []string{"12 events lost"}}, CauseEvidenceLost},
		{"first decisive step decides", Inconclusive, ran(step("missing file: data.csv", false),
			step("command not found: ruby", true), step("usage error", true)), CauseToolMissing},
		{"usage", Inconclusive, ran(step("usage error", true)), CauseUsageError},
		{"unsupported option", Inconclusive, ran(step("unsupported option", true)), CauseUsageError},
		{"pseudo-code", Inconclusive, ran(step("syntax error", true)), CauseNotACommand},
		{"input", Inconclusive, ran(step("missing file: ./report.pdf: No such file", true)), CauseMissingInput},
		{"repository", Inconclusive, ran(step("not in a git repository", true)), CauseMissingInput},
		{"module", Inconclusive, ran(step("missing module: No module named 'pandas'", true)), CauseDependency},
		{"install", Inconclusive, ran(step("package install failed", true)), CauseDependency},
		{"login", Inconclusive, ran(step("authentication required", true)), CauseNetworkService},
		{"lost state", Inconclusive, ran(step("uses variables only an earlier step set (TOKEN): they were empty here", true)), CauseLostState},
		{"rejected", Inconclusive, ran(step("rejected by the driver: outside the project", true)), CauseDriverRejected},
		{"not executable", Inconclusive, ran(step("not executable (exit 126)", true)), CauseToolMissing},
		{"step timeout", Inconclusive, ran(step("timed out", true)), CauseStepTimeout},
		{"other", Inconclusive, ran(step("exit 3", true)), CauseStepIncomplete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Cause(tt.verdict, tt.facts); got != tt.want {
				t.Errorf("Cause = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStepCauseKnowsEveryReason keeps StepCause in step with coverage.go:
// every reason a step that did not run can be given has a cause of its
// own, so no class of failure hides in step-incomplete.
func TestStepCauseKnowsEveryReason(t *testing.T) {
	for _, p := range failurePatterns {
		if !p.notRun {
			continue
		}
		if c := StepCause(p.reason); c == CauseStepIncomplete {
			t.Errorf("reason %q has no cause", p.reason)
		}
	}
	seen := map[string]bool{}
	for _, c := range Causes {
		if seen[c] {
			t.Errorf("cause %q listed twice", c)
		}
		seen[c] = true
	}
}
