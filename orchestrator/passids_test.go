package orchestrator

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/traceplan"
)

// TestPassTraceIDs: cleanup after a killed trace finds every pass's
// objects: the ids listed are those the passes take, short or long.
func TestPassTraceIDs(t *testing.T) {
	for _, id := range []string{"20261129-050143-722e0b", "eval-" + strings.Repeat("a-long-skill-name-", 2) + "0123456789ab-1"} {
		p := traceplan.Plan{TraceID: id}
		ids := PassTraceIDs(id)
		up, _ := unwatchedPlan(p, nil)
		want := []string{id, up.TraceID}
		for _, role := range []string{TwinSame, TwinOther, TwinControl, TwinConfirm} {
			want = append(want, twinPlan(p, &run{}, traceplan.TwinSpec{Role: role}).TraceID)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("PassTraceIDs(%q) = %q, the passes take %q", id, ids, want)
		}
		for _, x := range ids {
			if len(x) > 63 {
				t.Errorf("%q: longer than a label value may be", x)
			}
		}
	}
}

// TestAttemptBudget: a sweep's budget covers every pass that may run one
// after the other.
func TestAttemptBudget(t *testing.T) {
	p := traceplan.Plan{Limits: traceplan.Limits{Timeout: 3 * time.Minute}}
	for _, tc := range []struct {
		name           string
		stealth, twins string
		want           time.Duration
	}{
		{"every pass", traceplan.StealthAuto, traceplan.TwinsAuto, 4*3*time.Minute + 2*time.Minute},
		{"no unwatched pass", traceplan.StealthOff, traceplan.TwinsAuto, 3*3*time.Minute + 2*time.Minute},
		{"no twins", traceplan.StealthAuto, traceplan.TwinsOff, 2*3*time.Minute + 2*time.Minute},
		{"one pass", traceplan.StealthOff, traceplan.TwinsOff, 3*time.Minute + 2*time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.Stealth, p.Twins = tc.stealth, tc.twins
			if got := AttemptBudget(p); got != tc.want {
				t.Errorf("AttemptBudget = %v, want %v", got, tc.want)
			}
		})
	}
}
