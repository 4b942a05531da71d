package literal

import (
	"regexp"

	"github.com/sandboxctl/sandboxctl/skill"
)

// ecosystems are the kinds of project a skill's commands work on, each by
// the commands and files that say so.
var ecosystems = []struct {
	kind string
	re   *regexp.Regexp
}{
	{"node", regexp.MustCompile(`\b(?:npm (?:test|run|install|ci|i|start)|npx|pnpm|yarn|bun (?:run|test|install)|package\.json|node_modules|jest|vitest|eslint)\b`)},
	{"python", regexp.MustCompile(`\b(?:pytest|pip3? install -r|python3? -m (?:pytest|venv)|poetry|uv (?:sync|run|add|venv)|requirements\.txt|pyproject\.toml|tox|ruff|mypy)\b`)},
	{"go", regexp.MustCompile(`\b(?:go (?:test|build|run|mod|vet|get|install|generate)|go\.mod|gofmt|golangci-lint)\b`)},
	{"terraform", regexp.MustCompile(`\b(?:terraform (?:init|plan|apply|validate|fmt|import|state)|tofu|tflint|\w+\.tf)\b`)},
}

// ecosystem is the kind of project the skill's instructions work on: the
// kind whose commands and files they name most, at least twice and more
// than any other; "" when none stands out.
func ecosystem(s *skill.Skill) string {
	best, bestN, second := "", 0, 0
	for _, e := range ecosystems {
		n := 0
		for _, f := range s.Files {
			if f.Doc {
				n += len(e.re.FindAllIndex(f.Content, -1))
			}
		}
		switch {
		case n > bestN:
			best, bestN, second = e.kind, n, bestN
		case n > second:
			second = n
		}
	}
	if bestN < 2 || bestN == second {
		return ""
	}
	return best
}
