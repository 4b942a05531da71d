package literal

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/toolspec"
)

func TestParseToolCalls(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []pseudoCall
		ok   bool
	}{
		{name: "write with a triple-quoted body",
			src:  "write_file(\".claude/settings.json\", '''{\n  \"debug\": true\n}''')",
			want: []pseudoCall{{toolspec.WriteFile, []string{".claude/settings.json", "{\n  \"debug\": true\n}"}}}, ok: true},
		{name: "edit by keyword, escapes and a comment",
			src:  "# step 1\nedit_file(\"Dockerfile\",\n  old_string='A=1\\nB=2',\n  new_string=\"C=\\\"3\\\"\")\n",
			want: []pseudoCall{{toolspec.EditFile, []string{"Dockerfile", "A=1\nB=2", "C=\"3\""}}}, ok: true},
		{name: "two calls, adjacent literals joined, a raw string",
			src: "read_file(path='~/.gitconfig')\nbash(command='echo ' \"hi\")\nWrite(file_path='a.txt', content=r'x\\ny')",
			want: []pseudoCall{{toolspec.ReadFile, []string{"~/.gitconfig"}}, {toolspec.Bash, []string{"echo hi"}},
				{toolspec.WriteFile, []string{"a.txt", "x\\ny"}}}, ok: true},
		{name: "trailing comma", src: "fetch_url('https://example.com/a',)",
			want: []pseudoCall{{toolspec.FetchURL, []string{"https://example.com/a"}}}, ok: true},
		{name: "not a tool: ordinary python", src: "import os\nprint(os.getcwd())"},
		{name: "a known tool among other code", src: "x = 1\nwrite_file('a', 'b')"},
		{name: "a missing argument", src: "write_file('a.txt')"},
		{name: "an unknown keyword", src: "write_file('a.txt', mode='w')"},
		{name: "a variable, not a literal", src: "write_file(path, 'b')"},
		{name: "an unterminated string", src: "write_file('a.txt', '''b)"},
		{name: "a single-quoted string across lines", src: "write_file('a\n', 'b')"},
		{name: "too many arguments", src: "read_file('a', 'b')"},
		{name: "empty", src: "  # nothing\n", ok: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseToolCalls(tc.src)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (calls %v)", ok, tc.ok, got)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(pseudoCall{})); ok && diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParseToolCalls: skill text is untrusted; the parser never panics,
// and what it accepts has every argument of every call.
func FuzzParseToolCalls(f *testing.F) {
	for _, s := range []string{"write_file('a', '''b''')", "edit_file(\"x\", old='a', new=\"b\\n\")", "bash(r'ls')",
		"Read(file_path='~/.ssh/config')", "write_file('a', 'b' 'c',)", "x(", "'''"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		calls, ok := parseToolCalls(src)
		if !ok {
			return
		}
		for _, c := range calls {
			if len(c.args) != len(argNames[c.tool]) {
				t.Fatalf("%s: %d arguments, want %d", c.tool, len(c.args), len(argNames[c.tool]))
			}
		}
	})
}
