package rules

import (
	"fmt"

	"github.com/sandboxctl/sandboxctl/trace"
)

// Rules about the tracer's view itself: a skill that reaches for what acts
// out of strace's sight (io_uring, another process's memory or descriptors)
// is refused and flagged, and a planted file whose access time moved with no
// traced open of any of its names was read out of sight. Both are evasion,
// not harm: suspicious at most (docs/verdicts.md).

func tracerRules() {
	def(Rule{ID: "SBX-TRACER-001", Family: "defense-evasion", Title: "Syscall out of the tracer's sight refused",
		Severity: High, Confidence: ConfMedium, Technique: "T1562.006",
		Help: "A process called a syscall the sandbox refuses because it acts where the syscall tracer " +
			"cannot see: io_uring (opens, reads and connects strace never shows), process_vm_readv/writev " +
			"and process_madvise (another process's memory), pidfd_getfd (another process's descriptors), " +
			"userfaultfd, open_by_handle_at. The call failed; the attempt is the finding. Ordinary tools " +
			"do not use these."},
		func(c *ctx, r *Rule) {
			for i := range c.events {
				e := &c.events[i]
				if d, ok := e.Data.(*trace.Denied); ok && e.Type == trace.TypeDenied {
					c.hit(r, d.Syscall, fmt.Sprintf("%s refused (%s): it acts out of the tracer's sight", d.Syscall, d.Errno), e)
				}
			}
		})
	def(Rule{ID: "SBX-TRACER-002", Family: "credential-access", Title: "Planted file read out of the tracer's sight",
		Severity: High, Confidence: ConfMedium, Technique: "T1552.001",
		Help: "The access time of a file holding a planted secret moved during the trace (the kernel " +
			"updates it on a read, whatever name or mechanism was used), yet no traced open of the file " +
			"under any of its names, links included, was seen: it was read in a way the syscall tracer " +
			"does not show."},
		func(c *ctx, r *Rule) {
			if !c.syscallsTraced() {
				return // an unwatched pass: no open was traced, none was expected
			}
			planted := map[string]*trace.Inode{}
			for i := range c.events {
				e := &c.events[i]
				d, ok := e.Data.(*trace.Inode)
				if !ok {
					continue
				}
				switch d.Phase {
				case trace.InodePlanted:
					planted[d.Path] = d
				case trace.InodeEnd:
					p := planted[d.Path]
					if p == nil || d.Missing || d.Ino != p.Ino || d.Dev != p.Dev || !d.Atime.After(p.Ctime) {
						continue
					}
					if c.readTraced(d.Path) {
						continue
					}
					c.hit(r, d.Path, "read of planted file "+d.Path+" with no traced open of it", e)
				}
			}
		})
}

// readTraced reports whether a read of p (through any of its names) is in
// the file operations.
func (c *ctx) readTraced(p string) bool {
	for _, f := range c.files {
		if f.path == p && (f.op == opRead || f.op == opWrite) {
			return true
		}
	}
	return false
}

// syscallsTraced reports whether the timeline holds syscall events: an
// unwatched pass (docs/sandbox.md, "Stealth pass") has none.
func (c *ctx) syscallsTraced() bool {
	for i := range c.events {
		if c.events[i].Source == trace.SourceSyscall {
			return true
		}
	}
	return false
}
