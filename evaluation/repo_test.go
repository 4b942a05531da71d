package evaluation_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/sandboxctl/sandboxctl/evaluation"
)

// TestRepoManifest checks the project's own corpus: its manifest parses,
// every skill folder exists, and no label leaks into what the agent sees.
func TestRepoManifest(t *testing.T) {
	cases, err := evaluation.ReadManifest("../eval/manifest.tsv")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 40 {
		t.Errorf("eval/ holds %d skills, want at least 40", len(cases))
	}
	// What the agent sees: the skill's folder name, its files' paths and
	// their text. None may say what the skill is labelled.
	tells := regexp.MustCompile(`(?i)malicious|benign|dual-use|\btwin\b|specimen|fixture|do not execute|sandboxctl|\bcanary|\beval/`)
	for _, c := range cases {
		if m := tells.FindString(c.Slug); m != "" {
			t.Errorf("%s: the folder name says %q", c.Slug, m)
		}
		err := filepath.WalkDir(c.Dir, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(c.Dir, path)
			if m := tells.FindString(rel); m != "" {
				t.Errorf("%s: path %s says %q", c.Slug, rel, m)
			}
			if d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if m := tells.FindString(string(b)); m != "" {
				t.Errorf("%s: %s says %q", c.Slug, rel, m)
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v", c.Slug, err)
		}
	}
}

// TestRepoDoc checks that docs/detection.md has the sections eval updates.
func TestRepoDoc(t *testing.T) {
	doc, err := os.ReadFile("../docs/detection.md")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := evaluation.UpdateDoc(doc, fixtureReport()); err != nil {
		t.Errorf("docs/detection.md: %v", err)
	}
}
