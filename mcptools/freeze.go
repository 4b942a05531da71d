package mcptools

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// After-the-last-call policy: when the driver is done, what the skill left
// running (a daemon that waits before it acts) is still the skill. Freeze
// first waits up to a grace period while any such process lives, under
// observation (the tracers keep following it). Then it stops every one of
// them with SIGSTOP, repeating until a pass finds none still running, so a
// process that forks while being stopped is caught on the next pass; it
// records them; and it kills them, so that nothing of the skill runs
// unobserved once the tracers are flushed. The cgroup freezer (`docker
// pause`) would stop the root tracers and tool server too, and a paused
// container accepts no exec to flush them: SIGSTOP from root, which no
// process can catch or ignore, has the same effect on the skill's
// processes alone.

// FreezeConfig says whose processes Freeze ends.
type FreezeConfig struct {
	// UID is the skill user's uid: every process with that real uid is the
	// skill's.
	UID int
	// LogDir is where the tracers write (a process's tracer names its call).
	LogDir string
	// Grace is the longest Freeze waits for the skill's processes to end
	// by themselves before it stops them.
	Grace time.Duration
	// Poll is how often it looks during the grace period (0: 200ms).
	Poll time.Duration
}

// Freeze waits up to cfg.Grace while processes of cfg.UID still run, then
// stops, records and kills them (see the policy above), and returns the
// records in pid order. It must run as root, in the sandbox's pid
// namespace. It returns ctx's error when ctx ends during the grace period
// (having frozen and killed what was left anyway).
func Freeze(ctx context.Context, cfg FreezeConfig) ([]trace.Leftover, error) {
	if cfg.Poll <= 0 {
		cfg.Poll = 200 * time.Millisecond
	}
	self := os.Getpid()
	o := &observer{cfg: cfg, boot: bootTime(), seen: map[int]*trace.Leftover{}, tracerSID: map[int]int{}}
	deadline := time.Now().Add(cfg.Grace)
	var waitErr error
	// Watch: every process seen during the grace period is recorded, also
	// one that ends before it is over (it outlived its call all the same).
	for {
		pids := userPIDs(cfg.UID, self)
		for _, pid := range pids {
			o.observe(pid)
		}
		if len(pids) == 0 || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			waitErr = ctx.Err()
		case <-time.After(min(cfg.Poll, time.Until(deadline))):
		}
		if waitErr != nil {
			break
		}
	}
	// Stop: a pass signals every process not signalled yet; children
	// forked meanwhile are found on the next pass. (A tracee's state says
	// little: it is "t" at every traced syscall.)
	stopped := map[int]bool{}
	for pass := 0; pass < 200; pass++ {
		signalled := 0
		for _, pid := range userPIDs(cfg.UID, self) {
			if stopped[pid] {
				continue
			}
			o.observe(pid)
			_ = syscall.Kill(pid, syscall.SIGSTOP)
			stopped[pid] = true
			signalled++
		}
		if signalled == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var out []trace.Leftover
	for _, pid := range slices.Sorted(maps.Keys(o.seen)) {
		l := *o.seen[pid]
		l.Ended = !stopped[pid]
		out = append(out, l)
	}
	// End them: nothing of the skill may run once the tracers detach.
	for pass := 0; pass < 50; pass++ {
		pids := userPIDs(cfg.UID, self)
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return out, waitErr
}

// observer records processes the first time it sees them.
type observer struct {
	cfg       FreezeConfig
	boot      time.Time
	seen      map[int]*trace.Leftover
	tracerSID map[int]int
}

func (o *observer) observe(pid int) {
	if _, ok := o.seen[pid]; ok || len(o.seen) >= maxObserved {
		return
	}
	info, ok := readProc(pid)
	if !ok || info.state == "Z" {
		return
	}
	l := &trace.Leftover{PID: pid, PPID: info.ppid, PGID: info.pgid, SID: info.sid, UID: o.cfg.UID, State: info.state}
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil {
		l.Exe = capString(exe, 4096)
	}
	l.Argv = cmdline(pid)
	if !o.boot.IsZero() && info.start > 0 {
		l.AgeMS = time.Since(o.boot.Add(info.start)).Milliseconds()
	}
	tp := tracerPID(pid)
	if tp > 0 {
		l.CallID = callOfTracer(tp, o.cfg.LogDir)
		if _, ok := o.tracerSID[tp]; !ok {
			if ti, ok := readProc(tp); ok {
				o.tracerSID[tp] = ti.sid
			}
		}
	}
	// Its call's command was a process group leader in the tool server's
	// session (the tracer's): a process that started a session or a group
	// of its own detached from the call.
	ts, ok := o.tracerSID[tp]
	l.Detached = ok && info.sid != ts || info.pgid == pid
	o.seen[pid] = l
}

// maxObserved caps the processes recorded (a fork bomb at the pids limit).
const maxObserved = 1024

// procInfo is what /proc/PID/stat says about a process.
type procInfo struct {
	state           string
	ppid, pgid, sid int
	start           time.Duration // since boot
}

// readProc parses /proc/PID/stat: "pid (comm) S ppid pgrp session ...",
// with the start time (in clock ticks) as field 22. comm may hold spaces
// and parentheses: the fields follow the last ')'.
func readProc(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	return parseStat(b)
}

func parseStat(b []byte) (procInfo, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procInfo{}, false
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 20 {
		return procInfo{}, false
	}
	var p procInfo
	p.state = f[0]
	p.ppid, _ = strconv.Atoi(f[1])
	p.pgid, _ = strconv.Atoi(f[2])
	p.sid, _ = strconv.Atoi(f[3])
	if ticks, err := strconv.ParseInt(f[19], 10, 64); err == nil {
		p.start = time.Duration(ticks) * time.Second / 100 // USER_HZ is 100 on Linux
	}
	return p, true
}

// userPIDs lists the processes whose real uid is uid, but skip.
func userPIDs(uid, skip int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == skip {
			continue
		}
		if realUID(pid) == uid {
			if info, ok := readProc(pid); ok && info.state != "Z" && info.state != "X" {
				out = append(out, pid)
			}
		}
	}
	return out
}

// realUID reads the real uid from /proc/PID/status (-1 when unknown).
func realUID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	return statusField(b, "Uid:")
}

// tracerPID reads TracerPid from /proc/PID/status (0 when none).
func tracerPID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	return max(statusField(b, "TracerPid:"), 0)
}

// statusField returns the first number after key in a status file.
func statusField(b []byte, key string) int {
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, err := strconv.Atoi(f[0])
				if err == nil {
					return n
				}
			}
			return -1
		}
	}
	return -1
}

// callOfTracer names the call whose log the tracer pid writes (its
// "-o LOGDIR/<call>.log" argument), or "".
func callOfTracer(pid int, logDir string) string {
	for i, a := range cmdline(pid) {
		if a == "-o" {
			args := cmdline(pid)
			if i+1 < len(args) && filepath.Dir(filepath.Clean(args[i+1])) == filepath.Clean(logDir) {
				return strings.TrimSuffix(filepath.Base(args[i+1]), ".log")
			}
		}
		if a == "--" {
			break
		}
	}
	return ""
}

// cmdline reads a process's argv, capped (it is the skill's to choose).
func cmdline(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil
	}
	args := strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
	if len(args) > 64 {
		args = append(args[:64], fmt.Sprintf("…[%d more]", len(args)-64))
	}
	for i := range args {
		args[i] = capString(args[i], 1024)
	}
	return args
}

func capString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("…[%d bytes]", len(s))
}

// bootTime is when the kernel booted, from /proc/uptime.
func bootTime() time.Time {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return time.Time{}
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return time.Time{}
	}
	up, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return time.Time{}
	}
	return time.Now().Add(-time.Duration(up * float64(time.Second)))
}
