package canary

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestShortRuns(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY"))
	wrap := func(s string, w int, sep string) string {
		var b strings.Builder
		for len(s) > w {
			b.WriteString(s[:w] + sep)
			s = s[w:]
		}
		b.WriteString(s)
		return b.String()
	}
	tests := []struct {
		name  string
		data  string
		parts int // of the one run expected, 0 for none
	}{
		{name: "width 4", data: "x " + wrap(b64, 4, "\n") + "\n", parts: (len(b64) + 3) / 4},
		{name: "width 4 CRLF", data: wrap(b64, 4, "\r\n"), parts: (len(b64) + 3) / 4},
		{name: "width 20 JSON-escaped", data: `{"d":"` + wrap(b64, 20, `\n`) + `"}`, parts: (len(b64) + 19) / 20},
		{name: "width 13", data: "body:\n" + wrap(b64, 13, "\n") + "\n--\n", parts: (len(b64) + 12) / 13},
		{name: "prose", data: "the cat sat on\nthe mat and then it went to sleep in\nthe sun for a while\n"},
		{name: "width 3", data: wrap(b64, 3, "\n")},
		{name: "two short lines", data: "abcd\nefgh\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var probes []int
			for p := range len(tt.data) {
				probes = append(probes, p)
			}
			runs := shortRuns([]byte(tt.data), probes)
			if tt.parts == 0 {
				if len(runs) != 0 {
					t.Errorf("runs %v, want none", runs)
				}
				return
			}
			if len(runs) != 1 || len(runs[0].parts) != tt.parts {
				t.Fatalf("runs %v, want one of %d parts", runs, tt.parts)
			}
			if got := string(runs[0].join([]byte(tt.data))); got != b64 {
				t.Errorf("joined %q, want %q", got, b64)
			}
		})
	}
}

// TestAllRunsOrder checks that allRuns merges long and short-wrapped runs
// in order of offset, without the lines of a short-wrapped run on their
// own.
func TestAllRunsOrder(t *testing.T) {
	long := base64.StdEncoding.EncodeToString([]byte("a line long enough to be decoded on its own"))
	short := "QUJDREVGR0hJSktM\nTU5PUFFSU1RVVldY\nWVo="
	tests := []struct {
		name string
		data string
		want []string // the joined runs, in order
	}{
		{name: "long then short", data: long + "\n\n" + short + "\n", want: []string{long, strings.ReplaceAll(short, "\n", "")}},
		{name: "short then long", data: short + "\n\n" + long + "\n", want: []string{strings.ReplaceAll(short, "\n", ""), long}},
		{name: "long, short, long", data: long + " " + short + "\n\n" + long,
			want: []string{long, strings.ReplaceAll(short, "\n", ""), long}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range allRuns([]byte(tt.data)) {
				got = append(got, strings.TrimRight(string(r.join([]byte(tt.data))), "="))
			}
			for i := range tt.want {
				tt.want[i] = strings.TrimRight(tt.want[i], "=")
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("runs %q, want %q", got, tt.want)
			}
		})
	}
}
