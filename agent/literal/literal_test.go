package literal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/agent/agenttest"
	"github.com/sandboxctl/sandboxctl/agent/literal"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/toolspec"
)

var update = flag.Bool("update", false, "rewrite testdata/skills/*.golden.json")

type planned struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	File      string          `json:"skill_file"`
	Line      int             `json:"skill_line"`
	Reason    string          `json:"plan_reason"`
	Reject    string          `json:"reject,omitempty"`
}

// goldenConfig is a home like the orchestrator's, with fixtures.
func goldenConfig(name string) literal.Config {
	h := "/home/u"
	return literal.Config{SkillDir: h + "/.agents/skills/" + name, Home: h, User: "u", FullName: "Uma Ulrich", Email: "uma.ulrich@corvexa.com",
		Domain: "corvexa.com", Date: "2026-01-15", Env: []string{"HOME", "PATH", "OPENAI_API_KEY", "GITHUB_TOKEN", "SLACK_BOT_TOKEN", "DATABASE_URL"},
		Fixtures: map[string]string{"pptx": h + "/Documents/Q3-roadmap.pptx", "pdf": h + "/Documents/architecture-overview.pdf",
			"csv": h + "/Documents/customers.csv", "json": h + "/Documents/inventory.json", "txt": h + "/Documents/meeting-notes.txt",
			"png": h + "/Pictures/team-offsite.png", "jpg": h + "/Pictures/whiteboard.jpg", "git": h + "/projects/weather-cli",
			"dir": h + "/Documents", "docx": h + "/Documents/vendor-agreement-draft.docx", "xlsx": h + "/Documents/sales-forecast.xlsx"}}
}

type golden struct {
	Calls []planned `json:"calls"`
	Notes []string  `json:"notes,omitempty"`
}

func TestPlanGolden(t *testing.T) {
	entries, err := os.ReadDir("testdata/skills")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".golden.json") {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ".md")
		t.Run(name, func(t *testing.T) {
			s, err := skill.Load(filepath.Join("testdata/skills", e.Name()), skill.Options{})
			if err != nil {
				t.Fatal(err)
			}
			calls, notes := literal.Plan(s, goldenConfig(s.Name))
			g := golden{Notes: notes, Calls: []planned{}}
			for _, c := range calls {
				g.Calls = append(g.Calls, planned{Name: c.Name, Arguments: c.Arguments, File: c.SkillFile, Line: c.SkillLine, Reason: c.PlanReason, Reject: c.Reject})
				if c.PlanReason == "" {
					t.Errorf("call %s %s has no PlanReason", c.Name, c.Arguments)
				}
				if c.SkillFile == "" || c.SkillLine < 1 || s.Lines(c.SkillFile) == nil || c.SkillLine > len(s.Lines(c.SkillFile)) {
					t.Errorf("call %s %s points at %s:%d", c.Name, c.Arguments, c.SkillFile, c.SkillLine)
				}
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(g); err != nil {
				t.Fatal(err)
			}
			got := buf.Bytes()
			path := filepath.Join("testdata/skills", name+".golden.json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("Plan(%s) mismatch (-want +got):\n%s", name, diff)
			}
		})
	}
}

func TestDriverRunsPlanInOrder(t *testing.T) {
	s, err := skill.Load("testdata/skills/multi", skill.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sess := &agenttest.Session{}
	res, err := (&agent.Loop{Session: sess}).Run(t.Context(), literal.New(s, literal.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range sess.Calls() {
		got = append(got, c.ID+" "+c.SkillFile+" "+string(c.Arguments))
	}
	want := []string{
		`t001 01-one.md {"command":"echo one"}`,
		`t002 02-two.md {"url":"https://two.example.com"}`,
		`t003 02-two.md {"command":"echo two"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if res.Stop != agent.StopDone || res.Turns != 3 {
		t.Errorf("stop %q turns %d", res.Stop, res.Turns)
	}
}

func TestNoRunnableContent(t *testing.T) {
	s, err := skill.Load("testdata/skills/nothing.md", skill.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sess := &agenttest.Session{}
	res, err := (&agent.Loop{Session: sess}).Run(t.Context(), literal.New(s, literal.Config{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(sess.Calls()) != 0 || res.Stop != agent.StopDone || len(res.Notes) != 1 || res.Notes[0] != literal.NoRunnableContent {
		t.Errorf("result = %+v", res)
	}
}

func FuzzPlan(f *testing.F) {
	for _, p := range []string{"testdata/skills/basic/SKILL.md", "testdata/skills/scripts/SKILL.md"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "SKILL.md"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := skill.Load(d, skill.Options{})
		if err != nil {
			return
		}
		calls, _ := literal.Plan(s, literal.Config{})
		for _, c := range calls {
			if !json.Valid(c.Arguments) || c.SkillLine < 1 {
				t.Fatalf("bad call %+v", c)
			}
		}
	})
}

// TestDriverUsageProbe: the call after a usage probe is built from what the
// script's --help printed, not from the planner's guess.
func TestDriverUsageProbe(t *testing.T) {
	s, err := skill.Load("testdata/skills/entrypoints", skill.Options{})
	if err != nil {
		t.Fatal(err)
	}
	help := "usage: analyze.py [-h] [--verbose] --format {md,html} slides\n\npositional arguments:\n  slides   the deck, as .pptx\n"
	sess := &agenttest.Session{Handle: func(ctx context.Context, c agent.ToolCall) (agent.ToolResult, error) {
		if strings.Contains(string(c.Arguments), "analyze.py --help") {
			return agent.ToolResult{Stdout: help, Text: help}, nil
		}
		return agent.ToolResult{Text: "ok"}, nil
	}}
	res, err := (&agent.Loop{Session: sess}).Run(t.Context(), literal.New(s, goldenConfig(s.Name)))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Calls) < 2 || res.Calls[0].Call.PlanReason != agent.ReasonUsageProbe {
		t.Fatalf("calls %+v", res.Calls)
	}
	got := res.Calls[1].Call
	want := `{"command":"python3 /home/u/.agents/skills/entrypoints/scripts/analyze.py --format md /home/u/Documents/Q3-roadmap.pptx"}`
	if string(got.Arguments) != want || got.PlanReason != agent.ReasonPlaceholder {
		t.Errorf("call after the probe = %s (%s), want %s", got.Arguments, got.PlanReason, want)
	}
	// Without a usage line in the output the planned call stands.
	planned, _ := literal.Plan(s, goldenConfig(s.Name))
	sess = &agenttest.Session{}
	res, err = (&agent.Loop{Session: sess}).Run(t.Context(), literal.New(s, goldenConfig(s.Name)))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Calls[1].Call.Arguments) != string(planned[1].Arguments) {
		t.Errorf("call after a useless probe = %s, want the planned %s", res.Calls[1].Call.Arguments, planned[1].Arguments)
	}
}

// TestWorkdir: shell commands run in the configured project until the skill
// changes directory; bundled scripts run from the skill's folder.
func TestWorkdir(t *testing.T) {
	const proj = "/home/u/projects/weather-cli"
	tests := []struct {
		name    string
		workdir string
		body    string
		files   map[string]string
		want    []string // the bash commands planned, in order
	}{
		{name: "runs in the project", workdir: proj, body: "```bash\ngit status\ngit log --oneline -5\n```\n",
			want: []string{"cd " + proj + " && git status\ngit log --oneline -5"}},
		{name: "no workdir: the tool's default", body: "```bash\ngit status\n```\n",
			want: []string{"git status"}},
		{name: "a relative cd moves from the project", workdir: proj, body: "```bash\ncd docs\n```\n\n```bash\nmake html\n```\n",
			want: []string{"cd " + proj + " && cd docs", "cd " + proj + "/docs && make html"}},
		{name: "cd home leaves the project", workdir: proj, body: "```bash\ncd ~\n```\n\n```bash\ngit log\n```\n",
			want: []string{"cd " + proj + " && cd ~", "cd ~ && git log"}},
		{name: "a bundled script runs in the project, by its path in the skill", workdir: proj, body: "```bash\npython3 scripts/report.py\n```\n",
			files: map[string]string{"scripts/report.py": "print('ok')\n"},
			want:  []string{"cd " + proj + " && python3 /home/u/.agents/skills/wd/scripts/report.py"}},
		{name: "a command naming other bundled files runs in the skill", workdir: proj, body: "```bash\n./scripts/report.py --config config.yaml\n```\n",
			files: map[string]string{"scripts/report.py": "print('ok')\n", "config.yaml": "a: 1\n"},
			want:  []string{"cd /home/u/.agents/skills/wd && /home/u/.agents/skills/wd/scripts/report.py --config config.yaml"}},
		{name: "a bundled script named by its path in the source repository", workdir: proj,
			body:  "```bash\npython skills/wd/scripts/report.py --list\npython ./plugins/x/skills/wd/scripts/report.py\n```\n",
			files: map[string]string{"scripts/report.py": "print('ok')\n"},
			want:  []string{"cd " + proj + " && python /home/u/.agents/skills/wd/scripts/report.py --list\npython /home/u/.agents/skills/wd/scripts/report.py"}},
		{name: "the installed path and another skill's script are left alone", workdir: proj,
			body:  "```bash\npython ~/.agents/skills/wd/scripts/report.py\npython skills/other/scripts/report2.py\n```\n",
			files: map[string]string{"scripts/report.py": "print('ok')\n"},
			want:  []string{"cd " + proj + " && python /home/u/.agents/skills/wd/scripts/report.py\npython skills/other/scripts/report2.py"}},
		{name: "an option's alternatives: the first", workdir: proj,
			body: "```bash\ndeployctl plan --env=staging|production --region=eu-west-1 | tee plan.txt\n```\n",
			want: []string{"cd " + proj + " && deployctl plan --env=staging --region=eu-west-1 | tee plan.txt"}},
		{name: "the home folder the steps work in is made", workdir: proj,
			body: "```bash\ncd ~/Desktop/receipts-to-sort && find . -name '*.pdf'\n```\n\n```bash\ncd ~/.ssh && ls\n```\n",
			want: []string{"cd " + proj + " && mkdir -p ~/Desktop/receipts-to-sort && cd ~/Desktop/receipts-to-sort && find . -name '*.pdf'",
				"cd ~/Desktop/receipts-to-sort && cd ~/.ssh && ls"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			files := map[string]string{"SKILL.md": "---\nname: wd\ndescription: Work in the project.\n---\n\n" + tc.body}
			for p, c := range tc.files {
				files[p] = c
			}
			for p, c := range files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(d, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, p), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s, err := skill.Load(d, skill.Options{})
			if err != nil {
				t.Fatal(err)
			}
			calls, _ := literal.Plan(s, literal.Config{SkillDir: "/home/u/.agents/skills/wd", Home: "/home/u", Workdir: tc.workdir})
			var got []string
			for _, c := range calls {
				if c.Name != toolspec.Bash {
					continue
				}
				var a struct{ Command string }
				if err := json.Unmarshal(c.Arguments, &a); err != nil {
					t.Fatal(err)
				}
				got = append(got, a.Command)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
		})
	}
}
