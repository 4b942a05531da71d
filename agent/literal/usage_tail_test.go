package literal

import "testing"

func TestTextUsage(t *testing.T) {
	tests := []struct {
		name string
		code []string
		base string
		want string
		ok   bool
	}{
		{"plain arguments", []string{"node index.js README.md --depth 2"}, "index.js", "README.md --depth 2", true},
		{"stops at a pipe", []string{"python3 toc.py doc.md | less"}, "toc.py", "doc.md", true},
		{"stops at a comment", []string{"python3 toc.py doc.md # then review"}, "toc.py", "doc.md", true},
		{"keeps a command substitution with a pipe", []string{"node index.js ~/projects/$(ls ~/projects | head -1)/README.md"},
			"index.js", "~/projects/$(ls ~/projects | head -1)/README.md", true},
		{"keeps a quoted pipe", []string{`node index.js "a|b" x`}, "index.js", `"a|b" x`, true},
		{"unbalanced group is no usage", []string{"node index.js $(ls"}, "index.js", "", false},
		{"the fullest example wins", []string{"node index.js a", "node index.js a b c"}, "index.js", "a b c", true},
		{"help is not a usage", []string{"node index.js --help"}, "index.js", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := textUsage(tc.code, tc.base)
			if got != tc.want || ok != tc.ok {
				t.Errorf("textUsage(%q, %q) = %q, %v; want %q, %v", tc.code, tc.base, got, ok, tc.want, tc.ok)
			}
		})
	}
}
