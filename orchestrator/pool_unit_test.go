package orchestrator_test

import (
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/orchestrator/runtimetest"
)

// TestPoolOnFake checks the pool's bookkeeping at the Runtime boundary:
// every trace made like the template takes a pair no other trace took
// (each pair's containers are created once and removed once), a trace
// made otherwise starts cold, and Close removes every pair not handed
// out, so that nothing is left.
func TestPoolOnFake(t *testing.T) {
	rt := &runtimetest.Fake{Logs: readyLogs, Exec: deadToolServer}
	r := &orchestrator.Runner{Runtime: rt, Binary: binary(t), Teardown: 5 * time.Second}
	tmpl := testPlan(t)
	pool, err := orchestrator.NewPool(t.Context(), r, tmpl, 2)
	if err != nil {
		t.Fatal(err)
	}
	r.Pool = pool
	jails := map[string]bool{}
	for i := range 3 {
		p := tmpl
		p.TraceID = tmpl.TraceID + "-t" + string(rune('a'+i))
		out, _ := r.Run(t.Context(), p, "") // the fake's tool server never answers: an error, still a report
		if out.Report == nil || len(out.Phases) == 0 || out.Phases[0].Phase != "claim" {
			t.Fatalf("trace %d did not take a warm pair: %+v", i, out.Phases)
		}
	}
	cold := tmpl
	cold.TraceID, cold.User = tmpl.TraceID+"-cold", "someone-else"
	if out, _ := r.Run(t.Context(), cold, ""); out.Report == nil || out.Phases[0].Phase == "claim" {
		t.Errorf("a plan unlike the template took a warm pair")
	}
	// A skill that pins a package version needs its own jail.
	pinned := tmpl
	pinned.TraceID, pinned.SkillPath = tmpl.TraceID+"-pinned", writeSkill(t, "pinned", "pip install requests==2.31.0")
	if out, _ := r.Run(t.Context(), pinned, ""); out.Report == nil || out.Phases[0].Phase == "claim" {
		t.Errorf("a skill pinning a package version took a warm pair")
	}
	if err := pool.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := pool.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	calls, live := rt.Snapshot()
	if live != 0 {
		t.Errorf("%d containers left after Close; calls: %q", live, calls)
	}
	creates := map[string]int{}
	for _, sb := range rt.Sandboxes {
		creates[sb.Spec.Name]++
		if sb.Spec.Role == orchestrator.RoleJail {
			jails[sb.Spec.Name] = true
		}
	}
	for name, n := range creates {
		if n != 1 {
			t.Errorf("%s created %d times", name, n)
		}
	}
	// Three warm traces, one cold, and at least the refills the pool made.
	if len(jails) < 4 {
		t.Errorf("%d jails made, want at least 4", len(jails))
	}
}
