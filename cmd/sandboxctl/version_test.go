package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestJudgeVersion: a development build's result keys carry its binary's
// digest (a test binary is one: its version is "devel" or dirty).
func TestJudgeVersion(t *testing.T) {
	v, jv := version(), judgeVersion()
	dev := v == "devel" || strings.Contains(v, "dirty")
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
