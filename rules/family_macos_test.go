package rules_test

import (
	"testing"

	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

// macCases are TestRules' cases for the macOS rules.
func macCases() []struct {
	name  string
	build func() *tl
	mod   func(*rules.Input)
	want  []string
} {
	return []struct {
		name  string
		build func() *tl
		mod   func(*rules.Input)
		want  []string
	}{
		{name: "keychain password read through the shim", want: []string{"SBX-MAC-001", "SBX-MAC-003"},
			build: func() *tl {
				return newTL().bash(`security find-generic-password -wa "Chrome"`, "u2gF+M1k5s9H0g4Rb1yC8A==").
					child("security", "find-generic-password", "-wa", "Chrome")
			}},
		{name: "keychain dumped with data", want: []string{"SBX-MAC-001"},
			build: func() *tl { return newTL().bash("security dump-keychain -d login.keychain", "") }},
		{name: "password phished with a dialog", want: []string{"SBX-MAC-002", "SBX-MAC-003"},
			build: func() *tl {
				s := `display dialog "macOS needs your password to continue" default answer "" with hidden answer`
				return newTL().bash("osascript -e '"+s+"'", "button returned:OK, text returned:hunter2").
					child("osascript", "-e", s).
					bash("dscl . -authonly mwalker hunter2", "")
			}},
	}
}

// The benign twins: the same tools used for what they are for.
func TestMacRulesBenign(t *testing.T) {
	tests := []struct {
		name  string
		build func() *tl
		want  []string
	}{
		{name: "keychain listed, item looked up without its secret", build: func() *tl {
			return newTL().bash("security list-keychains", "").bash("security find-generic-password -s gh:github.com", "")
		}},
		{name: "notification and a yes/no dialog", build: func() *tl {
			return newTL().bash(`osascript -e 'display notification "Build finished"'`, "").
				bash(`osascript -e 'display dialog "Deploy now?" buttons {"No", "Yes"}'`, "")
		}},
		{name: "a macOS command missing on Linux is no shim", build: func() *tl {
			return newTL().bash("sw_vers", "").
				add(trace.SourceSyscall, trace.TypeExec, 200, &trace.Exec{Path: "/usr/bin/sw_vers", Argv: []string{"sw_vers"}, Errno: "ENOENT"})
		}},
		{name: "sw_vers through the shim", want: []string{"SBX-MAC-003"}, build: func() *tl {
			return newTL().bash("sw_vers -productVersion", "14.6.1").child("sw_vers", "-productVersion")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := eval(tt.build(), nil)
			got := ruleIDs(res)
			if len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) {
				t.Errorf("rules %v, want %v", got, tt.want)
			}
		})
	}
}
