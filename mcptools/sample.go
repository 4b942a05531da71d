package mcptools

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"
)

// Process sampling is the unwatched pass's view of processes: with no
// tracer, the skill's processes are listed from /proc every few
// milliseconds, by root in the sandbox's pid namespace. It sees what runs
// long enough to be listed, never a syscall; it attaches to nothing, so a
// sampled process's TracerPid stays 0.

// SampleConfig says whose processes Sample lists, and how often.
type SampleConfig struct {
	UID   int           // the skill user's uid
	Every time.Duration // 0: 100ms
	// Max caps the processes reported (0: 4096): a fork bomb at the pids
	// limit must not flood the trace.
	Max int
}

// Sampled is one process of the skill as first listed running a program.
type Sampled struct {
	PID  int      `json:"pid"`
	PPID int      `json:"ppid"`
	Exe  string   `json:"exe,omitempty"` // the kernel's /proc/PID/exe
	Argv []string `json:"argv,omitempty"`
	// TracerPID is the process's TracerPid: 0 when nothing traces it.
	TracerPID int `json:"tracer_pid"`
	// AgeMS is how long it had been running when listed.
	AgeMS int64 `json:"age_ms,omitempty"`
}

// Sample lists the processes of cfg.UID until ctx ends, calling emit once
// for each process and program (a process that executes another program is
// reported again). It returns nil when ctx ends, or emit's error.
func Sample(ctx context.Context, cfg SampleConfig, emit func(Sampled) error) error {
	if cfg.Every <= 0 {
		cfg.Every = 100 * time.Millisecond
	}
	if cfg.Max <= 0 {
		cfg.Max = 4096
	}
	self, boot := os.Getpid(), bootTime()
	seen := map[string]bool{}
	t := time.NewTicker(cfg.Every)
	defer t.Stop()
	for {
		for _, pid := range userPIDs(cfg.UID, self) {
			if len(seen) >= cfg.Max {
				break
			}
			info, ok := readProc(pid)
			if !ok {
				continue
			}
			s := Sampled{PID: pid, PPID: info.ppid, Argv: cmdline(pid), TracerPID: tracerPID(pid)}
			if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil {
				s.Exe = capString(exe, 4096)
			}
			key := strconv.Itoa(pid) + "\x00" + strconv.FormatInt(int64(info.start), 10) + "\x00" + s.Exe + "\x00" + strings.Join(s.Argv, "\x00")
			if seen[key] || len(s.Argv) == 0 && s.Exe == "" {
				continue
			}
			seen[key] = true
			if !boot.IsZero() && info.start > 0 {
				s.AgeMS = max(time.Since(boot.Add(info.start)).Milliseconds(), 0)
			}
			if err := emit(s); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
