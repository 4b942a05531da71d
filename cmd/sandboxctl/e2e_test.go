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

	"github.com/chromedp/chromedp"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
)

// expectation is examples/skills/<name>/expect.json: the verdict a skill must
// get and the rule ids that must fire (others may fire too).
type expectation struct {
	Verdict string   `json:"verdict"`
	Rules   []string `json:"rules"`
	// Exit is the CLI's exit code with the default --fail-on high.
	Exit int `json:"exit"`
	// Incidents, when set, are the report's incidents, worst first (kind,
	// destination and token count each checked when given); the SARIF
	// log then has one result per incident.
	Incidents []struct {
		Kind        string `json:"kind"`
		Destination string `json:"destination"`
		Tokens      int    `json:"tokens"`
	} `json:"incidents"`
	// SummaryLines, when set, caps the lines of the text report before its
	// detail sections (Findings onwards): the summary fits on one screen.
	SummaryLines int `json:"summary_lines"`
}

type e2eReport struct {
	TraceID  string `json:"trace_id"`
	Verdict  string `json:"verdict"`
	Status   string `json:"status"`
	Error    string `json:"error"`
	Findings []struct {
		RuleID string `json:"rule_id"`
	} `json:"findings"`
	Incidents []struct {
		Kind        string `json:"kind"`
		Destination string `json:"destination"`
		Tokens      []struct {
			TokenID string `json:"token_id"`
		} `json:"tokens"`
	} `json:"incidents"`
}

// TestExamples traces every bundled example skill through the real CLI, the
// real engine, the real jail and the literal driver, with the example user
// rules of examples/rules, and checks its verdict, its rules (built-in and
// user) and its exit code, and that nothing is left behind.
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
			// the user rules of examples/rules run too: expect.json names
			// those that fire, and the clean examples must stay clean
			cmd := exec.CommandContext(ctx, bin, "trace", "--out", out, "--format", "json", "--timeout", "4m", "--rules", "../../examples/rules", dir)
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
			checkIncidents(t, want, rep, out)
			if want.SummaryLines > 0 {
				txt, err := exec.Command(bin, "report", "--fail-on", "never", out).Output()
				if err != nil {
					t.Fatalf("report: %v", err)
				}
				head, _, ok := strings.Cut(string(txt), "\nFindings\n")
				if n := strings.Count(head, "\n") + 1; !ok || n > want.SummaryLines {
					t.Errorf("text summary is %d lines before its Findings section (found: %t), want at most %d:\n%s", n, ok, want.SummaryLines, txt)
				}
			}
			checkPageInBrowser(t, filepath.Join(out, "report.html"), len(rep.Incidents))
		})
	}
}

// checkIncidents compares the report's incidents with the expected ones and
// checks the SARIF log has one result per incident.
func checkIncidents(t *testing.T, want expectation, rep e2eReport, out string) {
	t.Helper()
	if want.Incidents == nil {
		return
	}
	if len(rep.Incidents) != len(want.Incidents) {
		t.Errorf("%d incidents %+v, want %d", len(rep.Incidents), rep.Incidents, len(want.Incidents))
	}
	for i, w := range want.Incidents {
		if i >= len(rep.Incidents) {
			break
		}
		g := rep.Incidents[i]
		if g.Kind != w.Kind || w.Destination != "" && g.Destination != w.Destination || w.Tokens != 0 && len(g.Tokens) != w.Tokens {
			t.Errorf("incident %d: %s to %s with %d tokens, want %s to %s with %d", i+1, g.Kind, g.Destination, len(g.Tokens), w.Kind, w.Destination, w.Tokens)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "report.sarif"))
	if err != nil {
		t.Fatal(err)
	}
	var sarif struct {
		Runs []struct {
			Results []json.RawMessage `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &sarif); err != nil || len(sarif.Runs) != 1 {
		t.Fatalf("report.sarif: %v (%d runs)", err, len(sarif.Runs))
	}
	if n := len(sarif.Runs[0].Results); n != len(rep.Incidents) {
		t.Errorf("SARIF has %d results, want one per incident (%d)", n, len(rep.Incidents))
	}
}

// checkPageInBrowser loads a run's report.html in headless Chromium: no
// request may leave it, no script error may occur, its script runs and it
// shows one card per incident. Without Chromium it is skipped, unless
// required (SANDBOXCTL_REQUIRE_DOCKER or SANDBOXCTL_REQUIRE_BROWSER).
func checkPageInBrowser(t *testing.T, page string, incidents int) {
	t.Helper()
	exe, ok := testenv.LookChromium(t)
	if !ok {
		return
	}
	var cards int
	var script string
	v := testenv.VisitPage(t, exe, page, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		var err error
		cards, err = chromedp.Evaluate[int](`document.querySelectorAll(".incident").length`)(ctx, tg)
		if err != nil {
			return err
		}
		script, err = chromedp.Evaluate[string](`document.documentElement.getAttribute("data-script") || ""`)(ctx, tg)
		return err
	}))
	for _, p := range v.Problems() {
		t.Errorf("report.html in the browser: %s", p)
	}
	if cards != incidents || script != "ran" {
		t.Errorf("report.html shows %d incident cards (want %d), script %q (want ran)", cards, incidents, script)
	}
}
