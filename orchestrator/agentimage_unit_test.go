package orchestrator_test

import (
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/orchestrator/runtimetest"
)

// TestRunnerAgentImage: the image a long-running caller prepares at start
// is the one the runtime builds on the given base, and a failure names
// the stage.
func TestRunnerAgentImage(t *testing.T) {
	cases := []struct {
		name, binary, from, want, err string
	}{
		{name: "on a base", binary: "/bin/sandboxctl", from: "base:1", want: "base:1-agent"},
		{name: "no binary", binary: "", from: "base:1", err: "agent image: agent image: no binary"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &orchestrator.Runner{Runtime: &runtimetest.Fake{}, Binary: c.binary}
			got, err := r.AgentImage(t.Context(), c.from)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("%q %v, want %q", got, err, c.want)
			}
		})
	}
}
