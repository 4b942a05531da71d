package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
)

// expectation is examples/skills/<name>/expect.json: the verdict a skill must
// get and the rule ids that must fire (others may fire too).
type expectation struct {
	Verdict string   `json:"verdict"`
	Rules   []string `json:"rules"`
	// Exit is the CLI's exit code with the default --fail-on high.
	Exit int `json:"exit"`
}

type e2eReport struct {
	TraceID  string `json:"trace_id"`
	Verdict  string `json:"verdict"`
	Status   string `json:"status"`
	Error    string `json:"error"`
	Findings []struct {
		RuleID string `json:"rule_id"`
	} `json:"findings"`
}

// TestExamples traces every bundled example skill through the real CLI, the
// real engine, the real jail and the literal driver, and checks its verdict,
// its rules and its exit code, and that nothing is left behind.
func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end traces skipped in -short mode")
	}
	rt := testenv.RequireDocker(t)
	testenv.Image(t)
	bin := testenv.SandboxctlBinary(t)
	dirs, err := filepath.Glob("../../examples/skills/*/expect.json")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no examples with expect.json: %v", err)
	}
	for _, exp := range dirs {
		dir := filepath.Dir(exp)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(exp)
			if err != nil {
				t.Fatal(err)
			}
			var want expectation
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatalf("%s: %v", exp, err)
			}
			out := t.TempDir()
			ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "trace", "--out", out, "--format", "json", "--timeout", "4m", dir)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdout, _ := cmd.Output()
			code := cmd.ProcessState.ExitCode()
			var rep e2eReport
			if err := json.Unmarshal(stdout, &rep); err != nil {
				t.Fatalf("stdout is not a JSON report (exit %d): %v\nstderr:\n%s", code, err, stderr.String())
			}
			if rep.TraceID != "" {
				if left, _ := rt.GC(context.Background(), rep.TraceID); len(left) > 0 {
					t.Errorf("left behind: %v", left)
				}
			}
			if rep.Status != "completed" {
				t.Errorf("status %s (%s), want completed", rep.Status, rep.Error)
			}
			var got []string
			for _, f := range rep.Findings {
				got = append(got, f.RuleID)
			}
			if rep.Verdict != want.Verdict {
				t.Errorf("verdict %s, want %s; rules %v", rep.Verdict, want.Verdict, got)
			}
			for _, r := range want.Rules {
				if !slices.Contains(got, r) {
					t.Errorf("rule %s did not fire; fired: %v", r, got)
				}
			}
			if code != want.Exit {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, want.Exit, stderr.String())
			}
			for _, f := range []string{"report.json", "report.sarif", "report.txt", "report.html", "events.jsonl", "transcript.jsonl"} {
				if _, err := os.Stat(filepath.Join(out, f)); err != nil {
					t.Errorf("run folder lacks %s", f)
				}
			}
		})
	}
}
