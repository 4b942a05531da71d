package strace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// Default caps for untrusted logs.
const (
	DefaultMaxLineBytes = 1 << 20
	DefaultMaxLines     = 4 << 20
	DefaultMaxEvents    = 200_000
	maxProcs            = 1 << 16
)

// Options tunes Parse. The zero value is ready to use.
type Options struct {
	// Cwd is the working directory of the first traced process, used to
	// resolve relative paths when strace did not annotate them (-y).
	Cwd string
	// MaxLineBytes caps one line (0: DefaultMaxLineBytes); longer lines are
	// skipped and counted in Stats.LongLines.
	MaxLineBytes int
	// MaxLines caps the lines read (0: DefaultMaxLines); the rest of the log
	// is not read and Stats.LinesCapped is set.
	MaxLines int
	// MaxEvents caps the events returned (0: DefaultMaxEvents); the rest are
	// counted in Stats.DroppedEvents.
	MaxEvents int
	// MaxPath cuts longer paths in events with trace.CutPath (0: no cut),
	// counted in Stats.PathsCut; MaxBytes caps the events' estimated size
	// (trace.Size; 0: no cap), past which they are counted in
	// Stats.DroppedEvents and Stats.BytesCapped is set. A skill nesting
	// directories makes every event carry a longer path: without these the
	// cost of a log grows with the square of the depth.
	MaxPath  int
	MaxBytes int64
	// MaxFailedBytes caps, within MaxBytes, the events of calls that
	// failed (opens of files that are not there, refused writes): past it
	// they are counted in Stats.FailedDropped, summarised rather than
	// lost, so that a flood of failing opens cannot spend the budget the
	// later, decisive events need. 0: no cap of their own.
	MaxFailedBytes int64
	// Keep reports the paths whose every open is kept whatever MaxBytes,
	// MaxFailedBytes and MaxEvents say (the planted files); execs, network
	// syscalls (connect, bind, sendto), process starts and ends and denied
	// syscalls are kept the same way. Such kept events have a budget of
	// their own, KeepBytes (0: they count against MaxBytes like the rest),
	// and at most MaxEvents of them.
	Keep      func(path string) bool
	KeepBytes int64
	// KeepNoise keeps the opens every program makes at start-up (the
	// dynamic loader's libraries, locale files, Python's stdlib), which are
	// dropped by default and counted in Stats.Noise.
	KeepNoise bool
	// Agentd is the path of the tool server's own binary in the sandbox
	// (mcptools.DefaultSelf). Unless KeepNoise is set, its execs (the shim,
	// the file tools) and the files the Go runtime opens at its start-up
	// (/proc/self/cgroup, ...: a skill doing that would be probing the
	// sandbox) are dropped as noise; what a file tool does is kept.
	Agentd string
	// FakeClock says the sandbox ran under a fake clock (libfaketime
	// preloaded through /etc/ld.so.preload): unless KeepNoise is set, what
	// the loader and libfaketime do in every process is dropped as noise
	// (read-only opens of /etc/ld.so.preload, /etc/faketimerc and
	// ~/.faketimerc, and the
	// shared memory and semaphores of /dev/shm/faketime_shm_* and
	// /dev/shm/sem.*).
	FakeClock bool
}

// Stats describes what Parse saw besides the events.
type Stats struct {
	Lines         int64 `json:"lines"`
	Events        int64 `json:"events"`
	Skipped       int64 `json:"skipped"`    // lines not understood
	LongLines     int64 `json:"long_lines"` // lines over MaxLineBytes
	LinesCapped   bool  `json:"lines_capped,omitempty"`
	DroppedEvents int64 `json:"dropped_events,omitempty"` // over MaxEvents or MaxBytes
	BytesCapped   bool  `json:"bytes_capped,omitempty"`   // MaxBytes was reached
	PathsCut      int64 `json:"paths_cut,omitempty"`      // paths cut to MaxPath
	LongestPath   int64 `json:"longest_path,omitempty"`   // bytes of the longest path cut
	Bytes         int64 `json:"bytes,omitempty"`          // estimated size of the events returned
	// FailedBytes is the part of Bytes spent on failed calls;
	// FailedDropped counts the failed calls past MaxFailedBytes.
	FailedBytes   int64 `json:"failed_bytes,omitempty"`
	FailedDropped int64 `json:"failed_dropped,omitempty"`
	// KeptBytes and KeptEvents are the events kept whatever the budget
	// (Options.Keep): they are not in Bytes. KeptDropped counts those past
	// KeepBytes or MaxEvents.
	KeptBytes   int64 `json:"kept_bytes,omitempty"`
	KeptEvents  int64 `json:"kept_events,omitempty"`
	KeptDropped int64 `json:"kept_dropped,omitempty"`
	Noise       int64 `json:"noise"`      // start-up opens dropped
	Unfinished  int64 `json:"unfinished"` // calls never resumed
	Signals     int64 `json:"signals"`
	Threads     int64 `json:"threads"`
	Processes   int64 `json:"processes"`
}

type pending struct {
	name string
	args string
	time time.Time
}

type proc struct {
	tgid    int
	ppid    int
	cwd     string
	pending *pending
	agentd  bool // its image is Options.Agentd
	// fds maps descriptors opened by the process to the path the kernel
	// gave them, so that /proc/self/fd/N and /dev/fd/N name a file.
	fds map[string]string
}

// maxFDs caps the descriptors remembered per process.
const maxFDs = 64

type parser struct {
	callID  string
	opts    Options
	procs   map[int]*proc
	events  []trace.Event
	stats   Stats
	first   bool
	lastPID int       // pid of the last call left unfinished
	lastW   int       // index of the last write event, for coalescing
	lastAt  time.Time // time of the last line, for lines without one
}

// Parse reads an strace log (strace -f -ttt, as mcptools writes it) and
// returns its events, tagged with callID and in log order. The error is
// non-nil only when r fails; malformed lines are skipped and counted.
func Parse(r io.Reader, callID string, opts Options) ([]trace.Event, Stats, error) {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.MaxLines <= 0 {
		opts.MaxLines = DefaultMaxLines
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = DefaultMaxEvents
	}
	p := &parser{callID: callID, opts: opts, procs: map[int]*proc{}, first: true, lastW: -1}
	br := bufio.NewReaderSize(r, min(opts.MaxLineBytes, 64<<10))
	var (
		line []byte
		long bool
	)
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > opts.MaxLineBytes {
			long = true
			line = line[:0]
		} else if !long {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(chunk) > 0 || len(line) > 0 || long {
			if p.stats.Lines >= int64(opts.MaxLines) {
				p.stats.LinesCapped = true
				break
			}
			p.stats.Lines++
			if long {
				p.stats.LongLines++
			} else {
				p.line(strings.TrimRight(string(line), "\r\n"))
			}
			line, long = line[:0], false
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return p.finish(), p.stats, fmt.Errorf("read strace log: %w", err)
		}
	}
	return p.finish(), p.stats, nil
}

func (p *parser) finish() []trace.Event {
	for _, pr := range p.procs {
		if pr.pending != nil {
			p.stats.Unfinished++
		}
	}
	// A child's first lines can come before its parent's clone returns:
	// fill in parents learnt later.
	for i := range p.events {
		e := &p.events[i]
		if e.PPID == 0 {
			if pr := p.procs[e.PID]; pr != nil {
				e.PPID = pr.ppid
			}
		}
	}
	p.stats.Events = int64(len(p.events))
	return p.events
}

// getProc returns the state of pid, creating it on first sight.
func (p *parser) getProc(pid int) *proc {
	if pr := p.procs[pid]; pr != nil {
		return pr
	}
	pr := &proc{tgid: pid}
	switch {
	case p.first:
		pr.cwd = p.opts.Cwd
		p.first = false
	default:
		// Most likely the child of the last clone still unfinished.
		if par := p.procs[p.lastPID]; par != nil && par.pending != nil && isClone(par.pending.name) {
			pr.cwd = par.cwd
			if strings.Contains(par.pending.args, "CLONE_THREAD") {
				pr.tgid = par.tgid
			}
		} else {
			pr.cwd = p.opts.Cwd
		}
	}
	if len(p.procs) < maxProcs {
		p.procs[pid] = pr
	}
	return pr
}

func isClone(name string) bool {
	switch name {
	case "clone", "clone3", "fork", "vfork":
		return true
	}
	return false
}

func (p *parser) line(s string) {
	// "PID TIME rest" (strace -f), or "TIME rest" with a single process.
	pid := 0
	f1, rest, ok := strings.Cut(s, " ")
	if !ok {
		p.stats.Skipped++
		return
	}
	if !strings.Contains(f1, ".") {
		n, err := strconv.Atoi(f1)
		if err != nil || n <= 0 {
			p.stats.Skipped++
			return
		}
		pid = n
		f1, rest, ok = strings.Cut(strings.TrimLeft(rest, " "), " ")
		if !ok {
			p.stats.Skipped++
			return
		}
	}
	at, ok := parseTime(f1)
	if !ok {
		p.stats.Skipped++
		return
	}
	p.lastAt = at
	rest = strings.TrimLeft(rest, " ")
	switch {
	case strings.HasPrefix(rest, "--- "):
		p.stats.Signals++
	case strings.HasPrefix(rest, "+++ "):
		p.exit(pid, at, rest)
	case strings.HasPrefix(rest, "<... "):
		p.resumed(pid, at, rest)
	default:
		if call, ok := strings.CutSuffix(rest, " <unfinished ...>"); ok {
			name, args, ok := strings.Cut(call, "(")
			if !ok || !validName(name) {
				p.stats.Skipped++
				return
			}
			pr := p.getProc(pid)
			if pr.pending != nil {
				p.stats.Unfinished++
			}
			pr.pending = &pending{name: name, args: args, time: at}
			p.lastPID = pid
			return
		}
		p.call(pid, at, rest)
	}
}

func validName(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// parseTime reads -ttt's "seconds.microseconds".
func parseTime(s string) (time.Time, bool) {
	sec, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) == 0 || len(frac) > 9 {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || n < 0 || n > 1<<40 {
		return time.Time{}, false
	}
	f, err := strconv.ParseInt(frac, 10, 64)
	if err != nil || f < 0 {
		return time.Time{}, false
	}
	for i := len(frac); i < 9; i++ {
		f *= 10
	}
	return time.Unix(n, f).UTC(), true
}

// resumed joins "<... name resumed>rest" with its unfinished start.
func (p *parser) resumed(pid int, at time.Time, s string) {
	head, tail, ok := strings.Cut(s[len("<... "):], " resumed>")
	pr := p.getProc(pid)
	if !ok || pr.pending == nil || pr.pending.name != head {
		p.stats.Skipped++
		return
	}
	pend := pr.pending
	pr.pending = nil
	// The event happened when the call was made.
	p.call(pid, pend.time, pend.name+"("+pend.args+strings.TrimLeft(tail, " "))
}

func (p *parser) exit(pid int, at time.Time, s string) {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "+++ "), " +++")
	pr := p.getProc(pid)
	if pr.tgid != pid {
		return // a thread ended; its process goes on
	}
	var d trace.Process
	if v, ok := strings.CutPrefix(s, "exited with "); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			p.stats.Skipped++
			return
		}
		d.ExitCode = n
	} else if v, ok := strings.CutPrefix(s, "killed by "); ok {
		d.Signal, _, _ = strings.Cut(v, " ")
	} else {
		// e.g. "superseded by execve in pid N"
		p.stats.Skipped++
		return
	}
	p.emit(pid, at, trace.TypeExit, &d)
}

// result is a decoded return value.
type result struct {
	known    bool   // false for "?"
	val      int64  // the number returned
	ann      string // the -y annotation of a returned fd
	errno    string // "ENOENT" when the call failed
	injected bool   // strace made the call fail (-e inject): a denied syscall
}

func parseResult(s string) result {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "?") {
		return result{}
	}
	num, tail, _ := strings.Cut(s, " ")
	var r result
	if i := strings.IndexByte(num, '<'); i > 0 && strings.HasSuffix(num, ">") {
		// an fd with its annotation; the annotation may hold spaces
		_, r.ann = fdArg(s[:strings.LastIndexByte(s, '>')+1])
		num = num[:i]
		tail = ""
	}
	v, err := strconv.ParseInt(num, 0, 64)
	if err != nil {
		u, err := strconv.ParseUint(num, 0, 64)
		if err != nil {
			return result{}
		}
		v = int64(u)
	}
	r.known, r.val = true, v
	if v < 0 {
		e, _, _ := strings.Cut(tail, " ")
		if strings.HasPrefix(e, "E") {
			r.errno = e
		}
		r.injected = strings.HasSuffix(tail, "(INJECTED)")
	}
	return r
}

// call decodes one complete "name(args) = result" line and hands it to
// the handler its syscall has in syscalls; a call strace refused by
// injection is a denied event whatever the syscall.
func (p *parser) call(pid int, at time.Time, s string) {
	name, rest, ok := strings.Cut(s, "(")
	if !ok || !validName(name) {
		p.stats.Skipped++
		return
	}
	end := closeParen(rest)
	if end < 0 {
		p.stats.Skipped++
		return
	}
	after := strings.TrimSpace(rest[end+1:])
	resText, ok := strings.CutPrefix(after, "=")
	if !ok {
		p.stats.Skipped++
		return
	}
	c := sysCall{
		pid:  pid,
		at:   at,
		name: name,
		raw:  rest[:end],
		args: splitArgs(rest[:end]),
		res:  parseResult(resText),
		pr:   p.getProc(pid),
	}
	if c.res.injected && c.res.errno != "" {
		p.denied(c)
		return
	}
	if handle := syscalls[name]; handle != nil {
		handle(p, c)
	}
}

// lead returns the state of pr's thread-group leader (pr itself when it is
// the leader or unknown).
func (p *parser) lead(pr *proc) *proc {
	if l := p.procs[pr.tgid]; l != nil {
		return l
	}
	return pr
}

// goRuntimeOpen reports whether p is a file the Go runtime reads at
// start-up.
func goRuntimeOpen(p string) bool {
	switch p {
	case "/proc/self/maps", "/proc/self/cgroup", "/proc/self/mountinfo", "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size":
		return true
	}
	return strings.HasPrefix(p, "/sys/fs/cgroup/")
}

// rememberFD notes the path of fd n, opened by pr.
func (p *parser) rememberFD(pr *proc, n int64, path string) {
	l := p.lead(pr)
	if l.fds == nil {
		l.fds = map[string]string{}
	}
	if len(l.fds) >= maxFDs {
		clear(l.fds)
	}
	l.fds[strconv.FormatInt(n, 10)] = path
}

// fdPath returns what a path naming a descriptor (/dev/fd/N,
// /proc/self/fd/N, /proc/thread-self/fd/N, /proc/PID/fd/N for the process
// itself) stands for, when the process opened it under trace; other paths
// are returned as they are.
func (p *parser) fdPath(pr *proc, s string) string {
	var n string
	switch {
	case strings.HasPrefix(s, "/dev/fd/"):
		n = s[len("/dev/fd/"):]
	case strings.HasPrefix(s, "/proc/"):
		who, rest, ok := strings.Cut(s[len("/proc/"):], "/fd/")
		if !ok || (who != "self" && who != "thread-self" && who != strconv.Itoa(pr.tgid) && who != strconv.Itoa(p.lead(pr).tgid)) {
			return s
		}
		n = rest
	default:
		return s
	}
	if f := p.lead(pr).fds[n]; f != "" {
		return f
	}
	return s
}

func (p *parser) setCwd(pr *proc, dir string) {
	pr.cwd = dir
	if lead := p.procs[pr.tgid]; lead != nil {
		lead.cwd = dir
	}
}

// write records a write to a file, folding a run of writes by one process
// to one path into one event.
func (p *parser) write(pid int, at time.Time, path string, n int64) {
	tg := p.getProc(pid).tgid
	if p.lastW >= 0 && p.lastW == len(p.events)-1 {
		e := &p.events[p.lastW]
		if f, ok := e.Data.(*trace.File); ok && e.PID == tg && f.Path == path {
			f.Bytes += n
			e.Count = max(e.Count, 1) + 1
			return
		}
	}
	if p.emit(pid, at, trace.TypeWrite, &trace.File{Path: path, Bytes: n, Write: true}) {
		p.lastW = len(p.events) - 1
	}
}

func (p *parser) emit(pid int, at time.Time, typ trace.Type, data any) bool {
	if p.opts.FakeClock && !p.opts.KeepNoise {
		if f, ok := data.(*trace.File); ok && fakeClockNoise(typ, f) {
			p.stats.Noise++
			return false
		}
	}
	keep := p.opts.KeepBytes > 0 && p.kept(typ, data)
	if keep && p.stats.KeptEvents >= int64(p.opts.MaxEvents) || !keep && int64(len(p.events))-p.stats.KeptEvents >= int64(p.opts.MaxEvents) {
		p.stats.DroppedEvents++
		if keep {
			p.stats.KeptDropped++
		}
		return false
	}
	pr := p.getProc(pid)
	e := trace.Event{
		Time:       at,
		Source:     trace.SourceSyscall,
		Type:       typ,
		ToolCallID: p.callID,
		PID:        pr.tgid,
		Data:       data,
	}
	if lead := p.procs[pr.tgid]; lead != nil {
		e.PPID = lead.ppid
	}
	if p.opts.MaxPath > 0 {
		if n := trace.CapPaths(&e, p.opts.MaxPath); n > 0 {
			p.stats.PathsCut++
			p.stats.LongestPath = max(p.stats.LongestPath, int64(n))
		}
	}
	switch sz := trace.Size(e); {
	case keep:
		if p.stats.KeptBytes+sz > p.opts.KeepBytes {
			p.stats.DroppedEvents++
			p.stats.KeptDropped++
			p.stats.BytesCapped = true
			return false
		}
		p.stats.KeptBytes += sz
		p.stats.KeptEvents++
	case failedCall(data) && p.opts.MaxFailedBytes > 0 && p.stats.FailedBytes+sz > p.opts.MaxFailedBytes:
		p.stats.FailedDropped++
		return false
	case p.opts.MaxBytes > 0:
		if p.stats.Bytes+sz > p.opts.MaxBytes {
			p.stats.DroppedEvents++
			p.stats.BytesCapped = true
			return false
		}
		p.stats.Bytes += sz
		if failedCall(data) {
			p.stats.FailedBytes += sz
		}
	}
	p.events = append(p.events, e)
	return true
}

// kept reports an event Options.Keep keeps whatever the budget: an exec,
// a network syscall, a process start or end, a denied syscall, or a file
// event on a path Keep names.
func (p *parser) kept(typ trace.Type, data any) bool {
	switch typ {
	case trace.TypeExec, trace.TypeConnect, trace.TypeBind, trace.TypeSendto, trace.TypeClone, trace.TypeExit, trace.TypeDenied:
		return true
	}
	f, ok := data.(*trace.File)
	if !ok || p.opts.Keep == nil {
		return false
	}
	return p.opts.Keep(f.Path) || f.Resolved != "" && p.opts.Keep(f.Resolved) || f.NewPath != "" && p.opts.Keep(f.NewPath)
}

// failedCall reports a file-system call that failed.
func failedCall(data any) bool {
	f, ok := data.(*trace.File)
	return ok && f.Errno != ""
}

func writeFlags(f string) bool {
	for _, fl := range strings.Split(f, "|") {
		switch fl {
		case "O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND":
			return true
		}
	}
	return false
}

// fakeClockNoise reports whether f is what the loader or libfaketime did
// in a process under the fake clock (Options.FakeClock).
func fakeClockNoise(typ trace.Type, f *trace.File) bool {
	shm := func(p string) bool {
		return strings.HasPrefix(p, "/dev/shm/faketime_shm_") || strings.HasPrefix(p, "/dev/shm/sem.")
	}
	switch typ {
	case trace.TypeOpen:
		// libfaketime looks for ~/.faketimerc, and for "(null)" and
		// "(null)/.faketimerc" in the working folder when a variable it
		// formats into the path is unset.
		base := path.Base(f.Path)
		if !f.Write && (f.Path == "/etc/ld.so.preload" || f.Path == "/etc/faketimerc" || base == ".faketimerc" ||
			base == "(null)" || strings.HasSuffix(f.Path, "/(null)/.faketimerc")) {
			return true
		}
		return shm(f.Path)
	case trace.TypeLink, trace.TypeUnlink, trace.TypeRename, trace.TypeChmod:
		return shm(f.Path) && (f.NewPath == "" || shm(f.NewPath))
	}
	return false
}

// noise reports whether a read-only open of p is start-up noise: shared
// libraries, locale data, interpreter standard libraries. (Opens of
// /dev/null, for any access, are noise too.)
func noise(p string) bool {
	if p == "/etc/ld.so.cache" {
		return true
	}
	for _, pre := range []string{"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/share/locale/", "/usr/share/zoneinfo/"} {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return false
}
