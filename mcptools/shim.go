package mcptools

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// statusFD is the descriptor on which the shim reports to the server.
const statusFD = 3

// Shim is `agentd __shim -- ARGV...`: it runs ARGV in a process group of its
// own, with the shim's stdin, stdout and stderr, and reports on fd 3 "pid N"
// once ARGV started, then "exit N" or "signal N" when it ends. It returns
// the exit code to exit with. Fd 3 is not passed on, so nothing the command
// starts can write to it or hold it open. cmd/sandboxctl calls it with the
// process's own files.
func Shim(args []string, stdin, stdout, stderr *os.File) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	syscall.CloseOnExec(statusFD)
	st := os.NewFile(statusFD, "status")
	if len(args) == 0 {
		fmt.Fprintln(stderr, "agentd __shim: no command")
		return 2
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "agentd __shim: %v\n", err)
		if st != nil {
			fmt.Fprintf(st, "exit 127\n")
		}
		return 127
	}
	if st != nil {
		fmt.Fprintf(st, "pid %d\n", cmd.Process.Pid)
	}
	_ = cmd.Wait()
	code := 0
	msg := "exit 0"
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
	if st != nil {
		fmt.Fprintln(st, msg)
		st.Close()
	}
	return code
}
