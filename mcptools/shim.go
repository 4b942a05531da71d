package mcptools

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// The shim's descriptors to the tool server, inherited through strace.
const (
	statusFD  = 3 // the shim writes: "pid N", then "exit N" or "signal N"
	controlFD = 4 // the server writes: "kill"
)

// Shim is `agentd __shim [--uid N --gid N --user NAME] -- ARGV...`. It runs
// as root, under strace, and is the one trusted part of a call between the
// root tool server and the user's command:
//
//   - it makes itself not dumpable, so that no process of the user can
//     trace it, read its memory or take its descriptors (pidfd_getfd);
//   - it starts ARGV in a process group of its own as the user (a file tool,
//     ARGV being agentd itself, starts as root and becomes the user on its
//     own), with the shim's stdin, stdout and stderr;
//   - it reports on fd 3 "pid N" once ARGV started, then "exit N" or
//     "signal N" from its own wait: the exit status is what the kernel told
//     the command's parent, never what the command said;
//   - it kills ARGV's process group, which it made, when the server writes
//     "kill" on fd 4: the server never signals a pid it was told.
//
// Fds 3 and 4 are not passed on; ARGV gets env less the tracer's clock
// setting (commandEnv). It returns the exit code to exit with.
// cmd/sandboxctl calls it with the process's own environment and files.
func Shim(args, env []string, stdin, stdout, stderr *os.File) int {
	// Before anything else: once not dumpable, /proc/PID of the shim is
	// root's and ptrace access needs CAP_SYS_PTRACE over it.
	notDumpable()
	syscall.CloseOnExec(statusFD)
	syscall.CloseOnExec(controlFD)
	st := os.NewFile(statusFD, "status")
	ctl := os.NewFile(controlFD, "control")
	report := func(format string, a ...any) {
		if st != nil {
			fmt.Fprintf(st, format+"\n", a...)
		}
	}
	id, args, err := parseIdentity(args)
	if err != nil {
		fmt.Fprintf(stderr, "agentd __shim: %v\n", err)
		report("exit 2")
		return 2
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, "agentd __shim: no command")
		report("exit 2")
		return 2
	}
	if id.drops() {
		if err := id.check(); err != nil {
			fmt.Fprintf(stderr, "agentd __shim: %v\n", err)
			report("exit 127")
			return 127
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = commandEnv(env)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if id.drops() && !isSelf(args[0]) {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(id.uid), Gid: uint32(id.gid), Groups: id.groups()}
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "agentd __shim: %v\n", err)
		report("exit 127")
		return 127
	}
	pid := cmd.Process.Pid
	report("pid %d", pid)
	if ctl != nil {
		go func() {
			// Ends at the server's "kill" or when it closes its end.
			sc := bufio.NewScanner(io.LimitReader(ctl, 1<<10))
			for sc.Scan() {
				if strings.TrimSpace(sc.Text()) == "kill" {
					_ = syscall.Kill(-pid, syscall.SIGKILL)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}()
	}
	_ = cmd.Wait()
	code, msg := 0, "exit 0"
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Signaled():
			code = 128 + int(ws.Signal())
			msg = fmt.Sprintf("signal %d", int(ws.Signal()))
		default:
			code = ws.ExitStatus()
			msg = fmt.Sprintf("exit %d", code)
		}
	}
	report("%s", msg)
	if st != nil {
		st.Close()
	}
	return code
}

// isSelf reports whether path is this very binary (agentd running a file
// tool), which starts as root and becomes the user by itself.
func isSelf(path string) bool {
	self, err := os.Executable()
	if err != nil {
		return false
	}
	a, err1 := filepath.EvalSymlinks(self)
	b, err2 := filepath.EvalSymlinks(path)
	return err1 == nil && err2 == nil && a == b
}

// tracerClock is the tracer's own clock setting: under a fake clock
// (libfaketime preloaded system-wide, its offset in /etc/faketimerc) the
// tracer's timestamps stay real, since FAKETIME comes before the file.
const tracerClock = "FAKETIME=+0"

// commandEnv is the environment the shim gives the command: its own,
// without the tracer's clock setting, so the command runs on the
// sandbox's clock and sees nothing of the tracer's. FAKETIME_SHARED goes
// too: libfaketime in the root tracer names its own semaphore there
// (root's, 0600), and a user's program that inherits it fails sem_open
// with EACCES and, when it cannot make one of its own either, exits 1
// before its main: a time bomb under --clock stayed hidden that way. Each
// of the user's programs then makes its own, which its children can open.
func commandEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "FAKETIME=") && !strings.HasPrefix(kv, "FAKETIME_SHARED=") {
			out = append(out, kv)
		}
	}
	return out
}
