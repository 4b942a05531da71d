package main

import (
	"regexp"
	"testing"
)

// TestJudgeVersion: a development build's result keys carry its binary's
// digest (a test binary is one: its version is "devel" or dirty).
func TestJudgeVersion(t *testing.T) {
	v, jv := version(), judgeVersion()
	dev := devVersion(v)
	switch {
	case dev && !regexp.MustCompile(`^`+regexp.QuoteMeta(v)+`\+bin\.[0-9a-f]{16}$`).MatchString(jv):
		t.Errorf("judgeVersion() = %q for development version %q, want the binary's digest appended", jv, v)
	case !dev && jv != v:
		t.Errorf("judgeVersion() = %q for release version %q, want it unchanged", jv, v)
	}
	if again := judgeVersion(); again != jv {
		t.Errorf("judgeVersion() changed between calls: %q then %q", jv, again)
	}
}

func TestDevVersion(t *testing.T) {
	for _, tc := range []struct {
		name, v string
		want    bool
	}{
		{"no build info", "devel", true},
		{"a work tree Go could not stamp", "(devel)", true},
		{"uncommitted changes", "v0.0.0-20261129231707-d208981a6f3c+dirty", true},
		{"a commit", "v0.0.0-20261129231707-d208981a6f3c", false},
		{"a release", "v1.4.0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := devVersion(tc.v); got != tc.want {
				t.Errorf("devVersion(%q) = %v, want %v", tc.v, got, tc.want)
			}
		})
	}
}
