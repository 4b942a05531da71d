package mcptools

import (
	"slices"
	"testing"
)

// TestUserEnv: the home's variables win over the defaults, and git never
// starts an editor that would wait on a pipe until the call's timeout.
func TestUserEnv(t *testing.T) {
	c := Config{Home: "/home/ann", User: "ann", Env: []string{"PATH=/home/ann/bin:/usr/bin", "EDITOR=vim", "noequals"}}
	env := c.userEnv()
	for _, want := range []string{"HOME=/home/ann", "USER=ann", "PATH=/home/ann/bin:/usr/bin", "EDITOR=vim", "GIT_EDITOR=true"} {
		if !slices.Contains(env, want) {
			t.Errorf("env %q lacks %q", env, want)
		}
	}
	if slices.Contains(env, "PATH=/usr/local/bin:/usr/bin:/bin") || slices.Contains(env, "noequals") {
		t.Errorf("env %q keeps a default the home overrides, or a malformed entry", env)
	}
}
