package mcptools

import "golang.org/x/sys/unix"

// notDumpable makes the process not dumpable (PR_SET_DUMPABLE 0): its /proc
// entries become root's, and ptrace, process_vm_* and pidfd_getfd on it
// need CAP_SYS_PTRACE.
func notDumpable() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }

func setresgid(gid int) error { return unix.Setresgid(gid, gid, gid) }
func setresuid(uid int) error { return unix.Setresuid(uid, uid, uid) }
