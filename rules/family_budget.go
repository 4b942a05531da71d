package rules

import (
	"fmt"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

// Budget and after-the-last-call rules. A budget of the trace (the jail's
// event log, its spooled payloads, the timeline, the length of a path) is
// what keeps a skill from exhausting the host that watches it; crossing
// one is resource abuse, reported as a finding. It proves no harm, so it
// never makes a trace malicious: a budget that dropped evidence also
// leaves a notice marked Incomplete, which keeps the trace from being
// judged clean. Paths nested past PATH_MAX have no benign use and aim at
// the analysis itself: suspicious (shorter paths over the event's budget are only summarised). A process the skill left running after
// its call, detached from it (a session or process group of its own), is
// how a skill acts after it looks done (a daemon that waits, then posts):
// suspicious; what it did is judged by the other rules, since it was
// traced until it was frozen.

func budgetRules() {
	def(Rule{ID: "SBX-BUDGET-001", Family: "resource-abuse", Title: "A budget of the trace was crossed",
		Severity: Low, Confidence: ConfHigh, Technique: "T1499",
		Help: "The skill produced more than the trace keeps (network events, spooled payloads, syscall events, request heads over the per-event caps). What went past the budget is summarised or counted; when evidence was dropped a notice marks the trace incomplete."},
		func(c *ctx, r *Rule) {
			for i := range c.events {
				e := &c.events[i]
				b, ok := e.Data.(*trace.Budget)
				if !ok || b.Name == "path" && b.Used > trace.PathMax {
					continue
				}
				what := "summarised"
				if b.Dropped > 0 {
					what = fmt.Sprintf("%d %s not kept", b.Dropped, b.Unit)
				}
				c.hit(r, b.Name, fmt.Sprintf("%s budget crossed (%s): %s", b.Name, what, b.Message), e)
			}
		})
	def(Rule{ID: "SBX-BUDGET-002", Family: "resource-abuse", Title: "Directories nested past PATH_MAX",
		Severity: Medium, Confidence: ConfMedium, Technique: "T1499",
		Help: "Paths longer than the kernel's PATH_MAX only come from nesting directories thousands deep and working relative to them; every event then carries a longer path, so the cost of watching grows with the square of the depth. The paths were cut in the middle."},
		func(c *ctx, r *Rule) {
			for i := range c.events {
				e := &c.events[i]
				if b, ok := e.Data.(*trace.Budget); ok && b.Name == "path" && b.Used > trace.PathMax {
					c.hit(r, "", b.Message, e)
				}
			}
		})
	def(Rule{ID: "SBX-BUDGET-003", Family: "defense-evasion", Title: "Process detached from its tool call and outlived it",
		Severity: Medium, Confidence: ConfHigh, Technique: "T1497.003",
		Help: "A process the skill started was still running after the agent's last call, in a session or process group of its own (setsid, a daemon): the way to act after a skill looks finished. It was traced during the grace period until it ended or was frozen; what it did is in the timeline."},
		func(c *ctx, r *Rule) {
			for i := range c.events {
				e := &c.events[i]
				l, ok := e.Data.(*trace.Leftover)
				if !ok || !l.Detached {
					continue
				}
				c.hit(r, e.ToolCallID, "outlived its call, detached: pid "+fmt.Sprint(l.PID)+" "+short(strings.Join(l.Argv, " "))+leftHow(l), e)
			}
		})
	def(Rule{ID: "SBX-BUDGET-004", Family: "execution", Title: "Background process still running after the last call",
		Severity: Low, Confidence: ConfHigh, Technique: "T1059",
		Help: "A process the skill started in the background was still running after the agent's last call (a server or watcher, often benign). It was traced during the grace period until it ended or was frozen. When it (or a process it started) connected, sent, ran a program or wrote a file after its call returned, it is medium: a daemon acting late whether or not it detached."},
		func(c *ctx, r *Rule) {
			for i := range c.events {
				e := &c.events[i]
				if l, ok := e.Data.(*trace.Leftover); ok && !l.Detached {
					msg := "outlived its call: pid " + fmt.Sprint(l.PID) + " " + short(strings.Join(l.Argv, " ")) + leftHow(l)
					if late := c.actedLate(l.PID, e.ToolCallID); late != nil {
						// in its call's process group, but acting after the
						// call returned: a daemon that did not bother to detach
						c.hitAs(r, e.ToolCallID, Medium, ConfHigh, r.Harm, msg+"; it acted after its call returned: "+Summarize(*late), e, late)
						continue
					}
					c.hit(r, e.ToolCallID, msg, e)
				}
			}
		})
}

func leftHow(l *trace.Leftover) string {
	if l.Ended {
		return " (ended by itself during the grace period)"
	}
	return " (frozen and ended after the grace period)"
}

// actedLate returns the first event after call's end by pid or a process
// it started that did something (a connection or a jail event attributed
// to it, an exec, a write), or nil.
func (c *ctx) actedLate(pid int, call string) *trace.Event {
	tc := c.calls[call]
	if tc == nil || tc.Started.IsZero() {
		return nil
	}
	end := tc.Started.Add(tc.Duration)
	sub := map[int]bool{pid: true}
	for changed := true; changed; {
		changed = false
		for p, pr := range c.tree.Procs {
			if !sub[p] && sub[pr.PPID] {
				sub[p], changed = true, true
			}
		}
	}
	for i := range c.events {
		e := &c.events[i]
		if !e.Time.After(end) || !sub[e.PID] {
			continue
		}
		switch e.Type {
		case trace.TypeConnect, trace.TypeSendto, trace.TypeExec, trace.TypeHTTP, trace.TypeConnection, trace.TypeDNSQuery, trace.TypeTLSHello, trace.TypeMail:
			return e
		case trace.TypeOpen:
			if f, ok := e.Data.(*trace.File); ok && f.Write && f.Errno == "" {
				return e
			}
		}
	}
	return nil
}
