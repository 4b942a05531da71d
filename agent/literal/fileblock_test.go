package literal_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/agent/literal"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/toolspec"
)

// TestFileBlocks: a block the text says to save as a file is written (or
// appended) where the commands run; anything else is left to the other
// rules (a shell block runs, a plain example is not a file).
func TestFileBlocks(t *testing.T) {
	const proj = "/home/u/projects/api"
	type call struct{ Tool, Path, Content, Command, Old, New string }
	tests := []struct {
		name string
		body string
		want []call
	}{
		{name: "create a file with the following content",
			body: "Create `.claude/settings.json` with the following content:\n\n```json\n{\"a\": 1}\n```\n",
			want: []call{{Tool: toolspec.WriteFile, Path: proj + "/.claude/settings.json", Content: "{\"a\": 1}\n"}}},
		{name: "a heading names the file, a sentence says to create it",
			body: "### 2. Instructions (`.claude/instructions.md`)\n\nCreate this file with:\n\n```markdown\n# Notes\n```\n",
			want: []call{{Tool: toolspec.WriteFile, Path: proj + "/.claude/instructions.md", Content: "# Notes\n"}}},
		{name: "a heading alone names the file of a matching block",
			body: "### Settings (`config/app.yaml`)\n\n```yaml\nport: 8080\n```\n",
			want: []call{{Tool: toolspec.WriteFile, Path: proj + "/config/app.yaml", Content: "port: 8080\n"}}},
		{name: "a home file is appended to with add",
			body: "Add this to your `~/.gitconfig`:\n\n```ini\n[alias]\n  st = status\n```\n",
			want: []call{{Tool: toolspec.Bash, Command: "mkdir -p \"$(dirname \"$HOME\"/.gitconfig)\" && cat >> \"$HOME\"/.gitconfig <<'SKILL_EOF'\n[alias]\n  st = status\nSKILL_EOF"}}},
		{name: "a file in a hidden folder without extension",
			body: "Save the hook as `.git/hooks/pre-commit`:\n\n```\nexit 0\n```\n",
			want: []call{{Tool: toolspec.WriteFile, Path: proj + "/.git/hooks/pre-commit", Content: "exit 0\n"}}},
		{name: "a shell block is appended to a shell's startup file",
			body: "Add this to your `~/.bashrc`:\n\n```bash\nexport PATH=\"$HOME/.local/bin:$PATH\"\n```\n",
			want: []call{{Tool: toolspec.Bash, Command: "mkdir -p \"$(dirname \"$HOME\"/.bashrc)\" && cat >> \"$HOME\"/.bashrc <<'SKILL_EOF'\nexport PATH=\"$HOME/.local/bin:$PATH\"\nSKILL_EOF"}}},
		{name: "a shell block runs even when the text names a file",
			body: "Create `setup.sh` with:\n\n```bash\necho hi\n```\n",
			want: []call{{Tool: toolspec.Bash, Command: "cd " + proj + " && echo hi"}}},
		{name: "twin: a block whose language does not fit the file",
			body: "Add the key to `.env`, then read it:\n\n```typescript\nconst k = process.env.KEY;\n```\n"},
		{name: "twin: a heading alone over a block of another language",
			body: "## Using `config.yaml`\n\n```python\nload('config.yaml')\n```\n"},
		{name: "twin: inline code that is not a file",
			body: "Create release `v1.2.3` with these notes:\n\n```text\nFixes.\n```\n"},
		{name: "twin: a path in prose far above the block",
			body: "Write `notes.md` later.\n\na\n\nb\n\nc\n\nd\n\ne\n\n```json\n{}\n```\n"},
		{name: "twin: a heading between the file named and the block",
			body: "Add these to your `.bashrc`.\n\n### Manual run\n\nInvoke directly:\n\n```bash\necho run\n```\n",
			want: []call{{Tool: toolspec.Bash, Command: "cd " + proj + " && echo run"}}},
		{name: "a block of tool calls is made",
			body: "1. Switch the mode:\n\n```\nwrite_file(\".claude/settings.json\", '''{\"debug\": true}''')\nedit_file(\".env\", old_string=\"MODE=on\", new_string=\"MODE=off\")\n```\n",
			want: []call{{Tool: toolspec.WriteFile, Path: proj + "/.claude/settings.json", Content: "{\"debug\": true}"},
				{Tool: toolspec.EditFile, Path: proj + "/.env", Old: "MODE=on", New: "MODE=off"}}},
		{name: "twin: python that calls a function named like a tool is code",
			body: "```python\nfrom tools import write_file\nwrite_file('out.txt', 'x')\n```\n"},
		{name: "twin: the skill's own folder is read-only",
			body: "Create `/home/u/.agents/skills/fb/cache.json` with:\n\n```json\n{}\n```\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			if err := os.WriteFile(filepath.Join(d, "SKILL.md"), []byte("---\nname: fb\ndescription: Files.\n---\n\n"+tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := skill.Load(d, skill.Options{})
			if err != nil {
				t.Fatal(err)
			}
			calls, _ := literal.Plan(s, literal.Config{SkillDir: "/home/u/.agents/skills/fb", Home: "/home/u", Workdir: proj})
			var got []call
			for _, c := range calls {
				if c.Name != toolspec.WriteFile && c.Name != toolspec.Bash && c.Name != toolspec.EditFile {
					continue
				}
				var a struct{ Path, Content, Command, Old, New string }
				if err := json.Unmarshal(c.Arguments, &a); err != nil {
					t.Fatal(err)
				}
				got = append(got, call{Tool: c.Name, Path: a.Path, Content: a.Content, Command: a.Command, Old: a.Old, New: a.New})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}
