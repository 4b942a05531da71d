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

// Flush ends the tracers whose logs go to logDir (the strace processes the
// tool server started, found through /proc by their "-o logDir/..."
// argument): SIGTERM makes strace detach from its tracees and flush its log.
// It waits for them to exit, and kills those still there when ctx ends. It
// runs in its own `docker exec` at the end of a trace (as root), so that the
// logs are complete when they are copied out. Processes left running are
// not killed here; the container's removal ends them.
func Flush(ctx context.Context, logDir string) error {
	logDir = filepath.Clean(logDir)
	pids, err := tracersOf(logDir)
	if err != nil {
		return fmt.Errorf("flush tracers: %w", err)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		alive := pids[:0]
		for _, pid := range pids {
			if running(pid) {
				alive = append(alive, pid)
			}
		}
		pids = alive
		if len(pids) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return fmt.Errorf("flush tracers: %d still running: %w", len(pids), ctx.Err())
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
