package mcptools

// The in-sandbox side of a trace's setup and collection, each one process
// started by one `docker exec` as root (every exec costs the engine a
// round trip and the container a process start, 0.1-0.3 s on a busy
// fuse-overlayfs host; a trace made about ten).
//
// Settle runs at the end of setup: it gives the home lived-in access times
// and lists the identity of every file of the home.
//
// Evidence runs once at collection, after the skill's processes are frozen
// and ended: it ends the tracers (Flush) and writes everything the host
// reads back as one tar stream, in this order (the home's identities are
// listed before any of its files is read as root):
//
//	EvidenceLeftovers the skill's processes that outlived the last call,
//	                  one JSON line each (trace.Leftover), when Freeze is
//	                  set: they are waited for, stopped, recorded and
//	                  ended before anything else is read, and this entry
//	                  is flushed at once (the host reads the jail's
//	                  evidence from then on); EvidenceFreezeError says
//	                  why they could not all be, when so
//	EvidenceCgroup    the container's cgroup counters, "FILE FIELDS..." a
//	                  line (CgroupFiles), read first: nothing of the
//	                  collection's own work is in them
//	EvidenceDisk      the use of each of the places (Places), one line
//	                  "tmpfs SIZE USED AVAIL - PLACE" in bytes, as
//	                  `df -P -B1` prints them
//	EvidenceIdentity  the home's file identities (Settle's format)
//	EvidenceRootfs    what changed on the root file system after the stamp
//	calls/NAME        the per-call syscall logs (when a log folder is given)
//	files/PATH        the files under the changed-file roots whose status
//	                  changed after the stamp, PATH relative to "/"
const (
	EvidenceLeftovers   = "leftovers"
	EvidenceFreezeError = "freeze-error"
	EvidenceCgroup      = "cgroup"
	EvidenceDisk        = "disk"
	EvidenceIdentity    = "identity"
	EvidenceRootfs      = "rootfs"
	EvidenceCalls       = "calls/"
	EvidenceFiles       = "files/"
)

// Caps of what Settle and Evidence list (what the shell scripts they
// replace cut with `head -n`).
const (
	MaxIdentities = 50000
	MaxRootfs     = 2000
)

// EvidenceConfig says what Evidence collects.
type EvidenceConfig struct {
	// LogDir holds the per-call syscall logs: the tracers writing there
	// are ended and the logs archived. "": no syscall logs (an unwatched
	// pass).
	LogDir string
	// Home is the home folder whose file identities are listed; "": none.
	Home string
	// Stamp is the file written when the skill got control: a change is
	// a status change (ctime, which a user cannot set back) after its
	// modification time.
	Stamp string
	// Writable lists, one a line, the places of the root file system the
	// skill's user can change (written at image build); the root scan
	// walks them. "" or unreadable: the whole root file system.
	Writable string
	// Changed are the roots (tmpfs places) whose changed regular files are
	// copied out, at most MaxFiles of them.
	Changed  []string
	MaxFiles int
	// Cgroup is the folder of the container's cgroup file system, whose
	// counters (CgroupFiles) are archived first; "": none.
	Cgroup string
	// Places are the mount points whose use is archived (the skill's
	// writable places: a full one is where a disk flood stopped).
	Places []string
	// Freeze, when set, ends the skill's processes first (Freeze).
	Freeze *FreezeConfig
}

// CgroupFiles are the cgroup counters archived, relative to the cgroup
// folder, for cgroup v1 and v2 (whichever exist): forks refused at the
// pids limit, peak memory, allocations that hit the memory limit, OOM
// kills and CPU time.
var CgroupFiles = []string{"pids/pids.events", "pids.events", "memory/memory.max_usage_in_bytes", "memory.peak",
	"memory/memory.failcnt", "memory/memory.oom_control", "memory.events", "cpuacct/cpuacct.usage", "cpu.stat"}
