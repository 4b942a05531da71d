package rules

import (
	"regexp"
	"strings"
)

// Sandbox tells that no rule read before (issue 29, class 5; issue 30,
// item 6): what a skill can look at to tell it is watched and that a
// workstation check has no use for. They are low on their own (a process
// list is ordinary), but they are tells: their findings bring the
// unwatched pass (Tells, orchestrator/stealth.go), so a skill that stays
// quiet when it sees them is run again without the tracer.

// tellProcPaths are the files of PID 1 (whose start time says how old the
// machine is, and whose command line names the tool server) and of other
// processes (a process list: the tracer and the tool server show there).
var tellProcPaths = pathSet{"/proc/1/stat", "/proc/1/cmdline", "/proc/1/comm", "/proc/1/exe",
	"/proc/[0-9]*/cmdline", "/proc/[0-9]*/comm"}

// tellSetupPaths are the sandbox's own places: the tool server's folder,
// the tracer's logs, the trace's TLS-inspection CA.
var tellSetupPaths = pathSet{"/usr/local/lib/agent", "/usr/local/lib/agent/**", "/var/lib/agentd", "/var/lib/agentd/**",
	"/usr/local/share/ca-certificates/**", "/run/agentd/**"}

// reTellCmd finds commands that read the tells: file status-change times
// (the home's ctimes are the moment it was unpacked), process start times
// and the process list's tracer, the certificate chain a TLS client was
// given (the inspection CA), the tool server by name.
var reTellCmd = regexp.MustCompile(`\bstat\b[^|;&\n]*(?:%[zZW]|-c\s*%[zZ])|\bls\s+(?:-\w*c\w*\s|--time=ctime|--time=status)|` +
	`\bfind\b[^|;&\n]*\s-(?:cmin|ctime|cnewer)\b|\bps\b[^|;&\n]*\b(?:etimes?|lstart|stime)\b|` +
	`\bopenssl\s+s_client\b[^|;&\n]*-showcerts|\bopenssl\s+x509\b[^|;&\n]*-(?:issuer|text)\b|` +
	`/usr/local/lib/agent|\bagentd\b|/var/lib/agentd`)

func sandboxTellRules() {
	def(Rule{ID: "SBX-PROBE-004", Family: "discovery", Title: "Sandbox tells looked at",
		Severity: Low, Confidence: ConfMedium, Technique: "T1497.001",
		Help: "The skill looked where a sandbox shows: PID 1's files (its age, its command line), other " +
			"processes' command lines (a process list shows the tracer), the tool server's or the tracer's " +
			"folders, the TLS-inspection CA, files' status-change times or processes' start times. Low on " +
			"its own; a tell: the trace runs again without the tracer (docs/sandbox.md, Stealth pass)."},
		func(c *ctx, r *Rule) {
			for _, f := range c.files {
				if f.op != opRead && f.op != opList {
					continue
				}
				if _, ok := c.matchPath(tellSetupPaths, f.path); ok {
					// the tool server's and tracer's folders are root's
					// (0700): the user's programs are refused there, and
					// what opens them is the tool server itself
					if f.failed || strings.HasPrefix(f.path, "/usr/local/share/ca-certificates/") {
						c.hit(r, "tells", "looked at "+f.path+failedNote(f.failed)+readBy(f.proc), f.ev)
					}
					continue
				}
				if _, ok := c.matchPath(tellProcPaths, f.path); ok && !procTools[f.proc] && !ownProc(f) {
					c.hit(r, "tells", "read of "+f.path+readBy(f.proc), f.ev)
				}
			}
			for _, cm := range c.cmds {
				// (a plain process list, ps aux, is too common to count: the
				// tracer it shows stays a tell no event records)
				if cm.argv != nil && strings.HasPrefix(cm.argv[0], "/usr/local/lib/agent/") {
					continue // the tool server's own shim, as sampled
				}
				if m := reTellCmd.FindString(cm.text); m != "" {
					c.hit(r, "tells", "command reads a tell ("+strings.TrimSpace(m)+"): "+short(cm.text), cm.ev)
				}
			}
		})
}

// ownProc reports a process reading its own files under /proc/PID (a
// runtime finding its own command line).
func ownProc(f fileOp) bool {
	return f.ev.PID != 0 && strings.HasPrefix(f.path, "/proc/"+itoa(f.ev.PID)+"/")
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}
