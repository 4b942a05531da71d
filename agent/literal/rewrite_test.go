package literal

import (
	"strings"
	"testing"
)

// FuzzRewriteEach: on any skill text, rewriting occurrences never panics,
// keeps the text when nothing is replaced, and replaces every occurrence
// when each is.
func FuzzRewriteEach(f *testing.F) {
	f.Add("python skills/wd/scripts/x.py && ./scripts/x.py", "scripts/x.py")
	f.Add("aaaa", "aa")
	f.Add("", "x")
	f.Fuzz(func(t *testing.T, text, needle string) {
		if needle == "" {
			return
		}
		if got := rewriteEach(text, needle, func(string, int, int) (int, string, bool) { return 0, "", false }); got != text {
			t.Fatalf("nothing replaced, text changed: %q -> %q", text, got)
		}
		got := rewriteEach(text, needle, func(_ string, start, _ int) (int, string, bool) { return start, "<R>", true })
		if want := strings.ReplaceAll(text, needle, "<R>"); got != want {
			t.Fatalf("%q in %q: %q, want %q", needle, text, got, want)
		}
		// Reaching back before an earlier replacement is refused, not
		// a panic or an overlap.
		rewriteEach(text, needle, func(string, int, int) (int, string, bool) { return 0, "y", true })
	})
}
