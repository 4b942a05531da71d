package mcptools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrTracersKilled reports that some tracers ignored SIGTERM and were
// killed: their logs are complete up to their last line (strace writes
// line by line), but they may lack a final line.
var ErrTracersKilled = errors.New("tracers killed")

// flushGrace is how long Flush waits after SIGTERM before SIGKILL.
const flushGrace = 5 * time.Second

// Flush ends the tracers whose logs go to logDir (the strace processes the
// tool server started, found through /proc by their "-o logDir/..."
// argument and root owner): SIGTERM makes strace detach from its tracees
// and flush its log. It waits for them to exit; those still there after a
// grace period (5 s, or when ctx ends) are killed, and the error wraps
// ErrTracersKilled. It runs in its own `docker exec` at the end of a trace
// (as root), so that the logs are complete when they are copied out.
// Processes left running are not killed here; the container's removal ends
// them.
func Flush(ctx context.Context, logDir string) error {
	logDir = filepath.Clean(logDir)
	pids, err := tracersOf(logDir)
	if err != nil {
		return fmt.Errorf("flush tracers: %w", err)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	grace := time.NewTimer(flushGrace)
	defer grace.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var killed string
	for {
		alive := pids[:0]
		for _, pid := range pids {
			if running(pid) {
				alive = append(alive, pid)
			}
		}
		pids = alive
		if len(pids) == 0 {
			if killed != "" {
				return fmt.Errorf("flush tracers: %s: %w", killed, ErrTracersKilled)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return fmt.Errorf("flush tracers: %d still running (%s): %w", len(pids), describe(pids), ctx.Err())
		case <-grace.C:
			killed = describe(pids)
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		case <-tick.C:
		}
	}
}

// tracersOf lists the processes whose argv holds "-o" followed by a file in
// logDir.
func tracersOf(logDir string) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		// Tracers run as root; a user's process with a look-alike argv is
		// left alone.
		if fi, err := os.Stat(filepath.Join("/proc", e.Name())); err != nil {
			continue
		} else if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != 0 {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-o" && filepath.Dir(filepath.Clean(args[i+1])) == logDir {
				pids = append(pids, pid)
				break
			}
			if args[i] == "--" {
				break
			}
		}
	}
	return pids, nil
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) S ...: the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] != 'Z' && b[i+2] != 'X'
}

var errNoResult = errors.New("no structured content")

// describe names processes for an error message: pid, state and the log
// they write.
func describe(pids []int) string {
	var parts []string
	for _, pid := range pids {
		st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		state := "?"
		if i := bytes.LastIndexByte(st, ')'); i >= 0 && i+2 < len(st) {
			state = string(st[i+2])
		}
		log := ""
		cl, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		args := strings.Split(string(cl), "\x00")
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-o" {
				log = filepath.Base(args[i+1])
				break
			}
		}
		parts = append(parts, fmt.Sprintf("pid %d state %s log %s", pid, state, log))
	}
	return strings.Join(parts, ", ")
}
