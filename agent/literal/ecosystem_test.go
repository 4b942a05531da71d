package literal

import (
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/skill"
)

func TestEcosystem(t *testing.T) {
	tests := []struct {
		name, text string
		want       string
	}{
		{name: "node", text: "Run `npm test` before you commit.\n```bash\nnpm run build\nnpx eslint .\n```", want: "node"},
		{name: "python", text: "```bash\npip install -r requirements.txt\npytest -q\n```", want: "python"},
		{name: "go", text: "```\ngo test ./...\ngo vet ./...\n```", want: "go"},
		{name: "terraform", text: "```\nterraform init\nterraform plan -out plan.tfplan\n```", want: "terraform"},
		{name: "one mention is not enough", text: "Then run `pytest`.", want: ""},
		{name: "a tie picks none", text: "npm test\nnpm run lint\npytest\npoetry install", want: ""},
		{name: "prose about none", text: "Summarise the document for the user.", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &skill.Skill{Name: "s", Files: []skill.File{{Path: "SKILL.md", Doc: true, Content: []byte(tt.text)}}}
			if got := ecosystem(s); got != tt.want {
				t.Errorf("ecosystem = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPlanStartsInTheSkillsKindOfProject: a Node skill's commands run in
// the home's Node project, not in the main project of another kind.
func TestPlanStartsInTheSkillsKindOfProject(t *testing.T) {
	s := &skill.Skill{Name: "s", Files: []skill.File{{Path: "SKILL.md", Doc: true,
		Content: []byte("# Tests\n\n```bash\nnpm install\nnpm test\n```\n")}}}
	cfg := Config{SkillDir: "/home/u/.claude/skills/s", Home: "/home/u", Workdir: "/home/u/projects/infra",
		Projects: map[string]string{"terraform": "/home/u/projects/infra", "node": "/home/u/projects/billing-api"}}
	calls, _ := Plan(s, cfg)
	if len(calls) == 0 {
		t.Fatal("no call planned")
	}
	if cmd := string(calls[0].Arguments); !strings.Contains(cmd, "cd /home/u/projects/billing-api && ") {
		t.Errorf("first call %s: want it in the Node project", cmd)
	}
	cfg.Projects = nil
	calls, _ = Plan(s, cfg)
	if cmd := string(calls[0].Arguments); !strings.Contains(cmd, "cd /home/u/projects/infra && ") {
		t.Errorf("without projects, first call %s: want it in Workdir", cmd)
	}
}
