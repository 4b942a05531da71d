package skill_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxctl/sandboxctl/skill"
)

func TestIndentedCodeBlocks(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []skill.Block
	}{
		{"after a paragraph and a blank line",
			"Run:\n\n    export DIR=/tmp/x\n    ls $DIR\n\nDone.\n",
			[]skill.Block{{Line: 3, Lines: []string{"export DIR=/tmp/x", "ls $DIR"}, Indented: true}}},
		{"blank lines inside, trailing ones not",
			"# Setup\n    a\n\n    b\n\n\ntext\n",
			[]skill.Block{{Line: 2, Lines: []string{"a", "", "b"}, Indented: true}}},
		{"a tab is four columns, more indentation kept",
			"x\n\n\tcurl -s https://example.test \\\n\t    -o out\n",
			[]skill.Block{{Line: 3, Lines: []string{"curl -s https://example.test \\", "    -o out"}, Indented: true}}},
		{"a paragraph's continuation is not code",
			"Some text\n    that wraps with indentation\n", nil},
		{"list item content is not code",
			"1. First step:\n\n   run the tool\n\n    still the item\n- other\n\n  more\n", nil},
		{"code inside a list item: four more than its content",
			"1. Install:\n\n       npm install -g tool\n\n2. Next\n",
			[]skill.Block{{Line: 3, Lines: []string{"npm install -g tool"}, Indented: true}}},
		{"a list left after a blank line",
			"- item\n\ntext\n\n    ls -la\n",
			[]skill.Block{{Line: 5, Lines: []string{"ls -la"}, Indented: true}}},
		{"an indented fence is a fence",
			"Steps\n\n    ```bash\n    echo hi\n    ```\n",
			[]skill.Block{{Lang: "bash", Info: "bash", Line: 4, Lines: []string{"echo hi"}}}},
		{"inside a fence, indentation is content",
			"```\n\n    x\n```\n",
			[]skill.Block{{Line: 2, Lines: []string{"", "    x"}}}},
		{"right after a fence",
			"```sh\nls\n```\n    pwd\n",
			[]skill.Block{{Lang: "sh", Info: "sh", Line: 2, Lines: []string{"ls"}}, {Line: 4, Lines: []string{"pwd"}, Indented: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := skill.CodeBlocks(tt.text, 1)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CodeBlocks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBlockBounds(t *testing.T) {
	text := "a\n```sh\nls\n```\n\n    pwd\n    id\n"
	bs := skill.CodeBlocks(text, 10)
	if len(bs) != 2 {
		t.Fatalf("%d blocks", len(bs))
	}
	if bs[0].Start() != 11 || bs[0].End() != 13 || bs[1].Start() != 15 || bs[1].End() != 16 {
		t.Errorf("bounds %d-%d, %d-%d; want 11-13, 15-16", bs[0].Start(), bs[0].End(), bs[1].Start(), bs[1].End())
	}
}

// FuzzCodeBlocks: blocks come in order and do not overlap, and every line
// of a block is the end of the text's line it names.
func FuzzCodeBlocks(f *testing.F) {
	for _, s := range []string{"x\n\n    ls\n", "1. a\n\n       b\n", "```\n\tq\n```\n    r", "- \n\n\t\t x\n  ~~~\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		lines := strings.Split(text, "\n")
		prev := 0
		for _, b := range skill.CodeBlocks(text, 1) {
			if b.Start() <= prev || b.End() < b.Start() {
				t.Fatalf("block %+v overlaps or ends before it starts (previous ended at %d)", b, prev)
			}
			prev = b.End()
			for i, l := range b.Lines {
				n := b.Line + i
				if n-1 >= len(lines) {
					t.Fatalf("block %+v: line %d past the text's end", b, n)
				}
				if !strings.HasSuffix(strings.TrimSuffix(lines[n-1], "\r"), l) {
					t.Fatalf("block line %q is not the end of text line %d %q", l, n, lines[n-1])
				}
			}
		}
	})
}
