package strace

import (
	"strings"
	"testing"
)

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{in: ``, want: nil},
		{in: `3</etc/hosts>, "a,b", [1, 2], {x=1, y={2, 3}}`, want: []string{`3</etc/hosts>`, `"a,b"`, `[1, 2]`, `{x=1, y={2, 3}}`}},
		{in: `4<TCP:[1.2.3.4:5->6.7.8.9:10]>, 0`, want: []string{`4<TCP:[1.2.3.4:5->6.7.8.9:10]>`, `0`}},
		{in: `{flags=CLONE_VM, child_tid=0x1} => {parent_tid=[42]}, 88`, want: []string{`{flags=CLONE_VM, child_tid=0x1} => {parent_tid=[42]}`, `88`}},
		{in: `"a\"b", c`, want: []string{`"a\"b"`, `c`}},
		{in: `a,`, want: []string{`a`, ``}},
	}
	for _, tc := range tests {
		if got := splitArgs(tc.in); strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("splitArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCloseParen(t *testing.T) {
	for in, want := range map[string]int{
		`AT_FDCWD, "/tmp", O_RDONLY) = 3`:        26,
		`"x)", f(y), [z)]) = 0`:                  16,
		`4<TCP:[1:2->3:4]>, {sa_family=AF_INET}`: -1,
	} {
		if got := closeParen(in); got != want {
			t.Errorf("closeParen(%q) = %d, want %d", in, got, want)
		}
	}
}

func FuzzSplitArgs(f *testing.F) {
	for _, s := range []string{`3</etc/hosts>, "a,b\"", [1, 2], {x=1}) = 0`, `a, b`, `{sa_family=AF_UNIX, sun_path=@"x"}`, `[[[<`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if i := closeParen(s); i != -1 && s[i] != ')' {
			t.Errorf("closeParen(%q) = %d, not a ')'", s, i)
		}
		parts := splitArgs(s)
		for _, p := range parts {
			if p != strings.TrimSpace(p) || !strings.Contains(s, p) {
				t.Errorf("splitArgs(%q) gave %q", s, p)
			}
		}
		if strings.ContainsAny(s, `"([{<`) {
			return
		}
		// With nothing quoted or bracketed, every comma splits.
		var want []string
		if strings.TrimSpace(s) != "" || strings.Contains(s, ",") {
			for _, p := range strings.Split(s, ",") {
				want = append(want, strings.TrimSpace(p))
			}
		}
		if strings.Join(parts, "\x00") != strings.Join(want, "\x00") || len(parts) != len(want) {
			t.Errorf("splitArgs(%q) = %q, want %q", s, parts, want)
		}
	})
}
