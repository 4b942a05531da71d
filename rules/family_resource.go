package rules

import (
	"fmt"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

func resourceRules() {
	def(Rule{ID: "SBX-RES-001", Family: "impact", Title: "Sandbox resources exhausted",
		Severity: Medium, Confidence: ConfHigh, Technique: "T1499",
		Help: "The skill ran the sandbox out of a resource: processes (a fork bomb at the pids " +
			"limit), memory (the OOM killer), tool output or disk (every place the skill can write is a " +
			"tmpfs with a size: a skill that writes until it is full stops there, and the report names the place). It is resource abuse, and the trace " +
			"did not see what the skill would have done next: such a trace is inconclusive unless " +
			"harm was already proven (docs/verdicts.md)."},
		func(c *ctx, r *Rule) {
			for i := range c.events {
				e := &c.events[i]
				d, ok := e.Data.(*trace.Resource)
				if !ok {
					continue
				}
				what := append([]string(nil), d.Exceeded...)
				if d.OOMKilled && !strings.Contains(strings.Join(what, " "), "memory") {
					what = append(what, "memory")
				}
				if len(what) == 0 {
					continue
				}
				msg := fmt.Sprintf("limits reached: %s (peak %d processes of %d, peak memory %d of %d bytes)",
					strings.Join(what, ", "), d.PeakPIDs, d.PIDsLimit, d.PeakMemory, d.MemoryLimit)
				if d.OOMKilled {
					msg += "; the OOM killer ran"
				}
				if len(d.DiskFull) > 0 {
					msg += "; writes stopped at the size of " + strings.Join(d.DiskFull, ", ")
				}
				c.hit(r, "resources", msg, e)
			}
		})
}
