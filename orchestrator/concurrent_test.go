package orchestrator_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// expected reads an example's expect.json verdict.
func expected(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "expect.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Verdict string `json:"verdict"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e.Verdict
}

// TestConcurrentTracesAreIndependent runs four traces of different
// examples at once through one Runner on the real engine: each gets its
// example's verdict, and no planted token of one trace appears anywhere in
// another's report (names, labels, temp dirs, sinks and canaries are each
// trace's own).
func TestConcurrentTracesAreIndependent(t *testing.T) {
	rt := testenv.RequireDocker(t)
	testenv.Image(t)
	r := &orchestrator.Runner{Runtime: rt, Binary: testenv.SandboxctlBinary(t), IncludeSecrets: true}
	examples := []string{"hello-world", "aws-sync-helper", "dns-telemetry", "wallet-backup"}
	outs := make([]orchestrator.Outcome, len(examples))
	errs := make([]error, len(examples))
	ids := make([]string, len(examples))
	var wg sync.WaitGroup
	for i, ex := range examples {
		p := basePlan(filepath.Join("..", "examples", "skills", ex))
		p.User = "" // each trace its own plausible user
		p.Stealth = traceplan.StealthOff
		p.TraceID = testenv.TraceID(t)
		ids[i] = p.TraceID
		testenv.CleanupLabel(t, p.TraceID)
		wg.Go(func() { outs[i], errs[i] = r.Run(t.Context(), p, t.TempDir()) })
	}
	wg.Wait()
	reportJSON := make([]string, len(examples))
	for i, ex := range examples {
		if errs[i] != nil {
			t.Errorf("%s: Run: %v", ex, errs[i])
		}
		rep := outs[i].Report
		if rep == nil {
			t.Fatalf("%s: no report", ex)
		}
		if rep.Status != reports.StatusCompleted {
			t.Errorf("%s: status %s (%s), want completed", ex, rep.Status, rep.Error)
		}
		if want := expected(t, filepath.Join("..", "examples", "skills", ex)); string(rep.Verdict) != want {
			t.Errorf("%s: verdict %s, want %s", ex, rep.Verdict, want)
		}
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		reportJSON[i] = string(b)
		if left, err := rt.GC(t.Context(), ids[i]); err != nil || len(left) > 0 {
			t.Errorf("%s: left behind: %v (gc err %v)", ex, left, err)
		}
	}
	for i, ex := range examples {
		planted := outs[i].Report.Canaries.Planted
		if len(planted) == 0 {
			t.Errorf("%s: no planted tokens in the report", ex)
		}
		for _, tok := range planted {
			for j, other := range examples {
				if j != i && tok.Value != "" && strings.Contains(reportJSON[j], tok.Value) {
					t.Errorf("token %s of %s's trace appears in %s's report", tok.ID, ex, other)
				}
			}
		}
	}
}
