package safetext_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sandboxctl/sandboxctl/safetext"
)

func TestLine(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{name: "plain", in: "cat ~/.aws/credentials", want: "cat ~/.aws/credentials"},
		{name: "unicode kept", in: "café → naïve 日本", want: "café → naïve 日本"},
		{name: "newline", in: "a\nb\r\n", want: `a\nb\r\n`},
		{name: "tab", in: "a\tb", want: `a\tb`},
		{name: "csi", in: "x\x1b[2J\x1b[1;1HVERDICT: CLEAN", want: `x\x1b[2J\x1b[1;1HVERDICT: CLEAN`},
		{name: "backspace and bell", in: "ab\b\a", want: `ab\x08\x07`},
		{name: "del", in: "a\x7f", want: `a\x7f`},
		{name: "c1 csi", in: "a\u009b31m", want: `a\u009b31m`},
		{name: "bidi override", in: "evil\u202egnp.exe", want: `evil\u202egnp.exe`},
		{name: "bidi isolates", in: "\u2066a\u2069\u200f", want: `\u2066a\u2069\u200f`},
		{name: "zero width", in: "a\u200bb\ufeff\u200d", want: `a\u200bb\ufeff\u200d`},
		{name: "tag characters", in: "x\U000E0041\U000E007F", want: `x\U000e0041\U000e007f`},
		{name: "line separator", in: "a\u2028b", want: `a\u2028b`},
		{name: "hangul filler", in: "a\u3164b", want: `a\u3164b`},
		{name: "invalid utf8", in: "a\xff\xc3", want: `a\xff\xc3`},
		{name: "cut", in: "abcdefgh", max: 5, want: "abcd…"},
		{name: "cut counts escapes", in: "ab\x1bcdef", max: 6, want: "ab…"},
		{name: "exact fit", in: "abcde", max: 5, want: "abcde"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := safetext.Line(tt.in, tt.max); got != tt.want {
				t.Errorf("Line(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

func TestBlock(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{name: "keeps newlines and tabs", in: "a\n\tb\n", want: "a\n\tb\n"},
		{name: "escapes the rest", in: "a\r\n\x1b]0;title\x07b", want: "a\\r\n\\x1b]0;title\\x07b"},
		{name: "cuts each line", in: "abcdef\nabc\nabcdefgh", max: 4, want: "abc…\nabc\nabc…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := safetext.Block(tt.in, tt.max); got != tt.want {
				t.Errorf("Block(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

func TestJSON(t *testing.T) {
	v := map[string]string{"name": "a\u202eb\u0085c\x7f\U000E0041 ok é", "ctl": "\x1b[2J"}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	got := safetext.JSON(raw)
	if s := string(got); !safetext.Clean(s) {
		t.Errorf("JSON left raw characters: %q", s)
	}
	if !strings.Contains(string(got), `\u202e`) || !strings.Contains(string(got), `\udb40\udc41`) || !strings.Contains(string(got), "é") {
		t.Errorf("JSON(%s) = %s: want \\u202e, a surrogate pair and é kept", raw, got)
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("rewritten JSON does not decode: %v\n%s", err, got)
	}
	if back["name"] != v["name"] || back["ctl"] != v["ctl"] {
		t.Errorf("value changed: %q, want %q", back, v)
	}
	clean := []byte(`{"a":"b"}`)
	if got := safetext.JSON(clean); &got[0] != &clean[0] {
		t.Errorf("JSON copied clean input")
	}
}

// FuzzLine checks that no escaped character survives, that a cut line fits,
// and that text needing no escape is kept as it is.
func FuzzLine(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[31mred", "a\u202eb", "\xff\xfe", "x\U000E0041", "a\nb\tc", strings.Repeat("é", 50)} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		max %= 200
		for _, multi := range []bool{false, true} {
			var got string
			if multi {
				got = safetext.Block(s, max)
			} else {
				got = safetext.Line(s, max)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("invalid UTF-8 out of %q: %q", s, got)
			}
			for _, r := range got {
				if safetext.Escaped(r) && !(multi && (r == '\n' || r == '\t')) {
					t.Fatalf("raw %U survived in %q (from %q)", r, got, s)
				}
			}
			if max > 0 {
				for _, line := range strings.Split(got, "\n") {
					if n := utf8.RuneCountInString(line); n > max {
						t.Fatalf("line of %d runes over max %d: %q", n, max, line)
					}
				}
			}
			if max <= 0 && safetext.Clean(s) && (multi || !strings.ContainsAny(s, "\n\t")) && got != s {
				t.Fatalf("clean text changed: %q -> %q", s, got)
			}
		}
	})
}

func FuzzJSON(f *testing.F) {
	f.Add("a\u202eb\x7f\u0085\U000E0041")
	f.Fuzz(func(t *testing.T, s string) {
		raw, err := json.Marshal(s)
		if err != nil {
			t.Skip()
		}
		got := safetext.JSON(raw)
		for _, r := range string(got) {
			if safetext.Escaped(r) {
				t.Fatalf("raw %U in %s", r, got)
			}
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("decode %s: %v", got, err)
		}
		var want string
		_ = json.Unmarshal(raw, &want)
		if back != want {
			t.Fatalf("value changed: %q -> %q", want, back)
		}
	})
}

func TestJSONWriterSplitRunes(t *testing.T) {
	raw, _ := json.Marshal([]string{"a\u202eb", "\U000E0041", "é\u0085"})
	var out strings.Builder
	w := safetext.NewJSONWriter(&out)
	for i := range raw { // one byte at a time: every rune is split
		if _, err := w.Write(raw[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), string(safetext.JSON(raw)); got != want {
		t.Errorf("byte-wise write = %s, want %s", got, want)
	}
}
