package skill_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxctl/sandboxctl/skill"
)

func seedDocs(f *testing.F) {
	for _, p := range []string{"testdata/single/SKILL.md", "testdata/plain.md", "testdata/badyaml/SKILL.md", "testdata/multi/02-usage.md"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("---\na: &a [*a]\n---\nx"))
	f.Add([]byte("<!-- x\n```\n-->\n```"))
}

// FuzzLoad writes arbitrary bytes as SKILL.md and loads it: Load must return
// a skill or an error, never panic, and a loaded skill's lines must match.
func FuzzLoad(f *testing.F) {
	seedDocs(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "SKILL.md"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := skill.Load(d, skill.Options{})
		if err != nil {
			return
		}
		if s.SHA256 == "" || len(s.Files) != 1 {
			t.Fatalf("loaded skill without digest or file: %+v", s)
		}
		for _, h := range s.Hidden {
			if h.Line < 1 || h.Line > len(s.Lines("SKILL.md"))+1 {
				t.Fatalf("hidden line %d out of range", h.Line)
			}
		}
	})
}

// FuzzFrontmatter exercises the frontmatter and markdown parsers directly.
func FuzzFrontmatter(f *testing.F) {
	seedDocs(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		d := t.TempDir()
		p := filepath.Join(d, "x.md")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := skill.Load(p, skill.Options{})
		if err == nil {
			doc := s.Docs()[0]
			skill.CodeBlocks(doc.Body(), doc.BodyLine)
		}
		skill.CodeBlocks(string(data), 1)
		skill.SplitTools(string(data))
	})
}
