package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// SharedCorpus returns the manifest of the shared corpus of real skills,
// ../shared/corpus/manifest.tsv beside the module's root, or skips the test
// when it is absent (a user's clone has none). With
// SANDBOXCTL_REQUIRE_CORPUS=1 (CI) its absence is a failure instead.
func SharedCorpus(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("module root: %v", err)
	}
	m := filepath.Join(filepath.Dir(root), "shared", "corpus", "manifest.tsv")
	if _, err := os.Stat(m); err != nil {
		if os.Getenv("SANDBOXCTL_REQUIRE_CORPUS") == "1" {
			t.Fatalf("shared corpus required (SANDBOXCTL_REQUIRE_CORPUS=1): %v", err)
		}
		t.Skipf("no shared corpus beside the repository: %v", err)
	}
	return m
}
