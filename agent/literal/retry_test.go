package literal_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/agent/agenttest"
	"github.com/sandboxctl/sandboxctl/agent/literal"
	"github.com/sandboxctl/sandboxctl/skill"
)

// TestDriverRetriesAfterInstall: a step that stops at a missing module, or
// whose output says to pip install something, runs again after that
// install (once per install in a run); other failures, and a module that
// is still missing after its install, do not.
func TestDriverRetriesAfterInstall(t *testing.T) {
	tests := []struct {
		name    string
		stderr  string // what the planned step prints (exit 1)
		install string // the retry's first line; "" for no retry
	}{
		{name: "python module", stderr: "Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n    import psutil\nModuleNotFoundError: No module named 'psutil'\n",
			install: "python3 -m pip install psutil 2>&1 | tail -n 2"},
		{name: "python module under another name", stderr: "ModuleNotFoundError: No module named 'bs4.element'\n",
			install: "python3 -m pip install beautifulsoup4 2>&1 | tail -n 2"},
		{name: "the script says what to install", stderr: "Error: scholarly library not installed\nInstall with: pip install scholarly\n",
			install: "python3 -m pip install scholarly 2>&1 | tail -n 2"},
		{name: "several packages, a version and a period", stderr: "Missing dependencies. Run: pip install requests-oauthlib python-docx>=1.1.\n",
			install: "python3 -m pip install requests-oauthlib 'python-docx>=1.1' 2>&1 | tail -n 2"},
		{name: "node package", stderr: "Error: Cannot find module 'axios/lib/core'\nRequire stack:\n- /home/u/x.js\n",
			install: "npm install -g axios 2>&1 | tail -n 2"},
		{name: "node scoped package", stderr: "Error: Cannot find module '@slack/web-api'\n", install: "npm install -g @slack/web-api 2>&1 | tail -n 2"},
		{name: "node relative file", stderr: "Error: Cannot find module './lib/util'\n"},
		{name: "node builtin", stderr: "Error: Cannot find module 'fs'\n"},
		{name: "another failure", stderr: "Error: connection refused\n"},
		{name: "requirements file only", stderr: "Run pip install -r requirements.txt first\n"},
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: deps\ndescription: d\n---\n\n```bash\npython3 tool.py --all\n```\n\n```bash\necho next\n```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := skill.Load(dir, skill.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sess := &agenttest.Session{Handle: func(ctx context.Context, c agent.ToolCall) (agent.ToolResult, error) {
				if strings.Contains(commandOf(c), "tool.py") {
					return agent.ToolResult{ExitCode: 1, Stderr: tt.stderr, Text: tt.stderr}, nil // still missing after the install
				}
				return agent.ToolResult{Text: "ok"}, nil
			}}
			res, err := (&agent.Loop{Session: sess}).Run(t.Context(), literal.New(s, literal.Config{}))
			if err != nil {
				t.Fatal(err)
			}
			var cmds []string
			for _, ex := range res.Calls {
				cmds = append(cmds, commandOf(ex.Call))
			}
			if tt.install == "" {
				if len(res.Calls) != 2 {
					t.Errorf("calls %q, want the two planned ones", cmds)
				}
				return
			}
			if len(res.Calls) != 3 {
				t.Fatalf("calls %q, want the step, its retry once, the next step", cmds)
			}
			retry := res.Calls[1].Call
			first, rest, _ := strings.Cut(cmds[1], "\n")
			if tt.name == "node package" || tt.name == "node scoped package" {
				_, rest, _ = strings.Cut(rest, "\n") // the NODE_PATH line
			}
			if first != tt.install || rest != cmds[0] || retry.PlanReason != agent.ReasonRetry ||
				retry.SkillFile != res.Calls[0].Call.SkillFile || retry.SkillLine != res.Calls[0].Call.SkillLine {
				t.Errorf("retry %q (%s, %s:%d), want %q then the step %q", cmds[1], retry.PlanReason, retry.SkillFile, retry.SkillLine, tt.install, cmds[0])
			}
			if cmds[2] != "echo next" && !strings.HasSuffix(cmds[2], "echo next") {
				t.Errorf("after the retry: %q, want the next planned step", cmds[2])
			}
		})
	}
}

// TestDriverRetriesWithoutUnrecognizedArguments: a bundled script whose
// parser refuses options the skill's text documents runs again without
// them, once; a refusal the driver cannot undo (an argument not in the
// command as a word) is left as it is.
func TestDriverRetriesWithoutUnrecognizedArguments(t *testing.T) {
	tests := []struct {
		name, step, stderr string
		want               string // the retried command; "" for no retry
	}{
		{name: "options with = and a bare one",
			step:   "python3 gen.py ./app --platform=github --stages=build,test --dry",
			stderr: "usage: gen.py [-h] [--json] target\ngen.py: error: unrecognized arguments: --platform=github --stages=build,test --dry\n",
			want:   "python3 gen.py ./app"},
		{name: "an option and its quoted value",
			step:   `python3 gen.py ./app --title "v1" --json`,
			stderr: "gen.py: error: unrecognized arguments: --title v1\n",
			want:   "python3 gen.py ./app --json"},
		{name: "a value with a space cannot be found as written",
			step:   `python3 gen.py ./app --title "release one"`,
			stderr: "gen.py: error: unrecognized arguments: --title release one\n"},
		{name: "another error", step: "python3 gen.py", stderr: "gen.py: error: the following arguments are required: target\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: gen\ndescription: d\n---\n\n```bash\n"+tt.step+"\n```\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := skill.Load(dir, skill.Options{})
			if err != nil {
				t.Fatal(err)
			}
			sess := &agenttest.Session{Handle: func(ctx context.Context, c agent.ToolCall) (agent.ToolResult, error) {
				return agent.ToolResult{ExitCode: 2, Stderr: tt.stderr, Text: tt.stderr}, nil
			}}
			res, err := (&agent.Loop{Session: sess}).Run(t.Context(), literal.New(s, literal.Config{}))
			if err != nil {
				t.Fatal(err)
			}
			var cmds []string
			for _, ex := range res.Calls {
				cmds = append(cmds, commandOf(ex.Call))
			}
			if tt.want == "" {
				if len(cmds) != 1 {
					t.Errorf("calls %q, want the one planned", cmds)
				}
				return
			}
			if len(cmds) != 2 || !strings.HasSuffix(cmds[1], tt.want) || strings.Contains(cmds[1], "--platform") ||
				res.Calls[1].Call.PlanReason != agent.ReasonRetryArgs || res.Calls[1].Call.SkillLine != res.Calls[0].Call.SkillLine {
				t.Errorf("calls %q (%s), want the step then %q once", cmds, res.Calls[len(res.Calls)-1].Call.PlanReason, tt.want)
			}
		})
	}
}

// commandOf is a bash call's command.
func commandOf(c agent.ToolCall) string {
	var a struct{ Command string }
	_ = json.Unmarshal(c.Arguments, &a)
	return a.Command
}
