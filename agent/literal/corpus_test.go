package literal

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/skill"
)

// The corpus measurement: go test ./agent/literal -run TestCorpusPlan
// -corpus ../shared/corpus/skills [-before plans.json] -v. It plans every
// skill (nothing runs) and reports planned calls, their reasons, rejected
// calls and calls still holding a placeholder. -before reads plans saved
// from another version ({"slug": {"calls": [...]}}) and counts the same.
var (
	corpusDir  = flag.String("corpus", "", "a folder of skills to plan (TestCorpusPlan)")
	beforeFile = flag.String("before", "", "plans of an earlier version to compare with (TestCorpusPlan)")
	dumpFile   = flag.String("dump", "", "write the plans to this JSON file (TestCorpusPlan)")
	corpusShow = flag.Int("show", 0, "print up to N calls that still hold a placeholder (TestCorpusPlan)")
)

// corpusConfig is a home like the orchestrator's.
var corpusConfig = Config{
	Home: "/home/mwalker", User: "mwalker", FullName: "Megan Walker", Email: "megan.walker@corvexa.com", Domain: "corvexa.com", Date: "2026-01-15",
	Env: []string{"HOME", "USER", "PATH", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
		"GITHUB_TOKEN", "GH_TOKEN", "NPM_TOKEN", "SLACK_BOT_TOKEN", "STRIPE_SECRET_KEY", "DATABASE_URL", "HF_TOKEN", "OPENROUTER_API_KEY"},
	Fixtures: map[string]string{
		"pptx": "/home/mwalker/Documents/Q3-roadmap.pptx", "docx": "/home/mwalker/Documents/vendor-agreement-draft.docx",
		"xlsx": "/home/mwalker/Documents/sales-forecast.xlsx", "pdf": "/home/mwalker/Documents/architecture-overview.pdf",
		"csv": "/home/mwalker/Documents/customers.csv", "json": "/home/mwalker/Documents/inventory.json",
		"yaml": "/home/mwalker/Documents/deployment.yaml", "xml": "/home/mwalker/Documents/feed.xml",
		"txt": "/home/mwalker/Documents/meeting-notes.txt", "md": "/home/mwalker/Documents/project-brief.md",
		"html": "/home/mwalker/Documents/landing-page.html", "png": "/home/mwalker/Pictures/team-offsite.png",
		"jpg": "/home/mwalker/Pictures/whiteboard.jpg", "svg": "/home/mwalker/Pictures/logo.svg",
		"zip": "/home/mwalker/Downloads/brand-assets.zip", "ipynb": "/home/mwalker/Documents/churn-analysis.ipynb",
		"git": "/home/mwalker/projects/weather-cli", "node": "/home/mwalker/projects/weather-cli",
		"js": "/home/mwalker/projects/weather-cli/index.js", "python": "/home/mwalker/projects/invoice-tools",
		"py": "/home/mwalker/projects/invoice-tools/invoice_tools/cli.py", "dir": "/home/mwalker/Documents",
	},
}

// residual counts the placeholders left in a planned call's arguments.
func residual(args json.RawMessage) []string {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	var out []string
	for _, k := range []string{"command", "url", "path"} {
		s, _ := m[k].(string)
		for _, ph := range findPlaceholders(s) {
			if ph.style != styleOptional && !(k == "command" && skipped(s, ph)) {
				out = append(out, ph.raw)
			}
		}
	}
	return out
}

type corpusStats struct {
	skills, empty, calls, rejected, withPlaceholder int
	reasons                                         map[string]int
}

func (s corpusStats) String() string {
	var rs []string
	for r, n := range s.reasons {
		rs = append(rs, fmt.Sprintf("%s=%d", r, n))
	}
	sort.Strings(rs)
	return fmt.Sprintf("skills %d, with no call %d, calls %d, rejected %d, run with a placeholder left %d; reasons: %s",
		s.skills, s.empty, s.calls, s.rejected, s.withPlaceholder, strings.Join(rs, ", "))
}

func count(plans map[string][]agent.Proposal, show int, t *testing.T) corpusStats {
	st := corpusStats{reasons: map[string]int{}}
	slugs := make([]string, 0, len(plans))
	for k := range plans {
		slugs = append(slugs, k)
	}
	sort.Strings(slugs)
	for _, slug := range slugs {
		calls := plans[slug]
		st.skills++
		if len(calls) == 0 {
			st.empty++
		}
		for _, c := range calls {
			st.calls++
			st.reasons[cmpOr(c.PlanReason, "(none)")]++
			if c.Reject != "" {
				st.rejected++
				continue
			}
			if r := residual(c.Arguments); len(r) > 0 {
				st.withPlaceholder++
				if show > 0 {
					show--
					t.Logf("%s: %v in %s", slug, r, c.Arguments)
				}
			}
		}
	}
	return st
}

func TestCorpusPlan(t *testing.T) {
	if *corpusDir == "" {
		t.Skip("no -corpus folder given")
	}
	dirs, err := filepath.Glob(filepath.Join(*corpusDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	plans := map[string][]agent.Proposal{}
	for _, d := range dirs {
		s, err := skill.Load(d, skill.Options{})
		if err != nil {
			continue
		}
		cfg := corpusConfig
		cfg.SkillDir = "/home/mwalker/.claude/skills/" + filepath.Base(d)
		calls, _ := Plan(s, cfg)
		plans[filepath.Base(d)] = calls
	}
	t.Logf("after:  %s", count(plans, *corpusShow, t))
	if *dumpFile != "" {
		out := map[string]any{}
		for k, v := range plans {
			out[k] = map[string]any{"calls": v}
		}
		b, _ := json.MarshalIndent(out, "", " ")
		if err := os.WriteFile(*dumpFile, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if *beforeFile != "" {
		b, err := os.ReadFile(*beforeFile)
		if err != nil {
			t.Fatal(err)
		}
		var old map[string]struct {
			Calls []agent.Proposal `json:"calls"`
		}
		if err := json.Unmarshal(b, &old); err != nil {
			t.Fatal(err)
		}
		before := map[string][]agent.Proposal{}
		for k, v := range old {
			before[k] = v.Calls
		}
		t.Logf("before: %s", count(before, 0, t))
	}
}
