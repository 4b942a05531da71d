package mcptools_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// steal is the attack of issue 13 item 8, played by the test binary as the
// user: walk up the process tree and try to take the shim's status pipe
// (fd 3) with pidfd_getfd or through /proc/PID/fd, then forge "exit 0" and
// a pid for the server to kill. It prints what it managed on stdout.
func steal() int {
	pid := os.Getppid()
	for range 4 {
		if pid <= 1 {
			break
		}
		for _, fd := range []int{3, 4} {
			if pfd, err := unix.PidfdOpen(pid, 0); err == nil {
				if got, err := unix.PidfdGetfd(pfd, fd, 0); err == nil {
					fmt.Fprintf(os.Stdout, "took fd %d of %d by pidfd_getfd\n", fd, pid)
					unix.Write(got, []byte("exit 0\npid 1\nkill\n"))
				}
				unix.Close(pfd)
			}
			if f, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/fd/"+strconv.Itoa(fd), os.O_WRONLY, 0); err == nil {
				fmt.Fprintf(os.Stdout, "opened /proc/%d/fd/%d\n", pid, fd)
				f.WriteString("exit 0\npid 1\nkill\n")
				f.Close()
			}
		}
		if err := syscall.PtraceAttach(pid); err == nil {
			fmt.Fprintf(os.Stdout, "attached to %d\n", pid)
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			break
		}
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			break
		}
		pid, _ = strconv.Atoi(f[1])
	}
	return 0
}

// TestShimStatusCannotBeForged: a command that tries to take the shim's
// pipes (pidfd_getfd, /proc/PID/fd, ptrace) to forge a clean exit and make
// the server kill a pid of its choosing gets nothing: the call reports the
// real exit status, and the server and its next call are unharmed.
func TestShimStatusCannotBeForged(t *testing.T) {
	e := newEnv(t)
	e.requireTraced(t)
	c := e.start(t)
	r := call(t, c, "forge", "bash", map[string]any{"command": e.cfg.Self + ` __steal; exit 5`})
	if strings.Contains(r.Stdout, "took") || strings.Contains(r.Stdout, "opened") || strings.Contains(r.Stdout, "attached") {
		t.Errorf("the command got at the shim: %q", r.Stdout)
	}
	if r.ExitCode != 5 || !r.IsError {
		t.Errorf("exit %d IsError %v, want the real exit 5; stdout %q stderr %q", r.ExitCode, r.IsError, r.Stdout, r.Stderr)
	}
	if r := call(t, c, "after", "bash", map[string]any{"command": "echo alive"}); r.Stdout != "alive\n" || r.ExitCode != 0 {
		t.Errorf("next call: %+v", r)
	}
}

// TestShimIsNotDumpable: the shim runs as root and not dumpable; the
// command runs as the user with the user's groups.
func TestShimIsNotDumpable(t *testing.T) {
	e := newEnv(t)
	e.requireTraced(t)
	c := e.start(t)
	r := call(t, c, "who", "bash", map[string]any{"command": `id -u; p=$PPID; stat -c '%u' /proc/$p; grep -E '^(Uid|CapEff)' /proc/$p/status | tr -s '\t' ' '; cat /proc/$p/environ >/dev/null 2>&1 && echo readable || echo unreadable`})
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) < 5 {
		t.Fatalf("stdout %q stderr %q", r.Stdout, r.Stderr)
	}
	if lines[0] != strconv.Itoa(e.cfg.UID) {
		t.Errorf("command uid %s, want %d", lines[0], e.cfg.UID)
	}
	if lines[1] != "0" {
		t.Errorf("/proc/<shim> owned by uid %s, want 0 (not dumpable)", lines[1])
	}
	if !strings.HasPrefix(lines[2], "Uid: 0 0 0 0") {
		t.Errorf("shim %q, want root", lines[2])
	}
	if lines[4] != "unreadable" {
		t.Errorf("the shim's environ is %s to the user", lines[4])
	}
}
