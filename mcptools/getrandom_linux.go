package mcptools

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompNotifSizes is struct seccomp_notif_sizes (SECCOMP_GET_NOTIF_SIZES):
// the sizes of the structs as the running kernel knows them, which may be
// larger than ours on a newer kernel.
type seccompNotifSizes struct {
	notif, resp, data uint16
}

// notifSizes asks the kernel for its sizes, never less than ours.
func notifSizes() (seccompNotifSizes, error) {
	var s seccompNotifSizes
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&s))); e != 0 {
		return s, fmt.Errorf("seccomp notification sizes: %w", e)
	}
	s.notif = max(s.notif, seccompNotifSize)
	s.resp = max(s.resp, seccompNotifRespSize)
	return s, nil
}

// installGetrandomFilter installs getrandomFilter on the calling thread,
// with a listener, and returns the listener (close-on-exec, as the kernel
// makes it). The caller must stay on the thread (runtime.LockOSThread) up
// to the fork of the command, which inherits the thread's filters. With
// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19) a caller whose call
// the server has taken up waits for the answer through signals other than
// SIGKILL: a Go program's preemption signals, among others, would otherwise
// restart its getrandom after the server wrote the bytes and lose them.
func installGetrandomFilter() (int, error) {
	abis, ok := getrandomABIs[runtime.GOARCH]
	if !ok {
		return -1, fmt.Errorf("getrandom filter: not supported on %s", runtime.GOARCH)
	}
	raw, err := getrandomFilter(abis)
	if err != nil {
		return -1, err
	}
	insns := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		insns[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(insns)), Filter: &insns[0]}
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	for {
		fd, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&prog)))
		runtime.KeepAlive(insns)
		if e == unix.EINVAL && flags&unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV != 0 {
			flags &^= unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV // before Linux 5.19
			continue
		}
		if e != 0 {
			return -1, fmt.Errorf("install getrandom filter: %w", e)
		}
		return int(fd), nil
	}
}

// passGetrandom is the shim's part: it installs the getrandom filter on the
// calling thread and sends its listener to the server over sock (one
// message, "listener", with the descriptor), then closes both. The
// command, forked from this thread, and everything it starts are under the
// filter.
func passGetrandom(sock int) error {
	defer unix.Close(sock)
	fd, err := installGetrandomFilter()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Sendmsg(sock, []byte("listener"), unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("send getrandom listener: %w", err)
	}
	return nil
}

// entropyDevices are the device nodes Entropy replaces. tmpfsOnly keeps
// the replacement to a /dev of the container's own (a tmpfs), never a
// host's devtmpfs; tests point the paths into a folder of their own.
var entropyDevices = struct {
	paths     []string
	tmpfsOnly bool
}{[]string{"/dev/urandom", "/dev/random"}, true}

// randomness is the tool server's side of Config.Entropy: the streams,
// and one goroutine per listener a shim sent.
type randomness struct {
	streams *streams
	sizes   seccompNotifSizes

	stopR, stopW *os.File // stopW is closed at close: every listener's goroutine wakes
	stopFD       int      // stopR's
	mu           sync.Mutex
	stopping     atomic.Bool // set under mu: serve adds to wg under it too
	wg           sync.WaitGroup
}

// activeListeners counts the listeners served now, by every server of the
// process (tests read it).
var activeListeners atomic.Int32

// newRandomness prepares reproducible randomness from seed: it replaces
// the random devices and checks that the kernel has user notifications.
func newRandomness(seed []byte) (*randomness, error) {
	sizes, err := notifSizes()
	if err != nil {
		return nil, err
	}
	if err := plantDevices(seed, entropyDevices.paths, deviceSize, entropyDevices.tmpfsOnly); err != nil {
		return nil, err
	}
	r := &randomness{streams: newStreams(seed), sizes: sizes}
	if r.stopR, r.stopW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("stop pipe: %w", err)
	}
	r.stopFD = int(r.stopR.Fd())
	return r, nil
}

// pair returns a socket pair for one call: the shim's end (for
// `__shim --getrandom-fd`) and the server's, both close-on-exec.
func (r *randomness) pair() (shimEnd, srvEnd *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("getrandom socket pair: %w", err)
	}
	return os.NewFile(uintptr(fds[1]), "getrandom-shim"), os.NewFile(uintptr(fds[0]), "getrandom-server"), nil
}

// take receives, without waiting, the listener the shim sent on srvEnd, if
// it is there, and serves it. It reports whether it got one. The shim
// sends it before it starts the command and reports the command's pid, so
// it is there once the pid is.
func (r *randomness) take(srvEnd *os.File) bool {
	rc, err := srvEnd.SyscallConn()
	if err != nil {
		return false
	}
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4*4))
	var n, oobn int
	var rerr error
	if err := rc.Control(func(fd uintptr) {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	}); err != nil || rerr != nil {
		return false
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return false
	}
	var fds []int
	for _, m := range msgs {
		if got, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	served := false
	for _, fd := range fds {
		if !served && string(buf[:n]) == "listener" && isSeccompListener(fd) {
			served = r.serve(fd)
			continue
		}
		unix.Close(fd)
	}
	return served
}

// isSeccompListener reports whether fd is a seccomp listener.
func isSeccompListener(fd int) bool {
	l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	return err == nil && l == "anon_inode:seccomp notify"
}

// serve answers the notifications of listener fd in a goroutine of its
// own, which ends when no process uses the filter any more (the listener
// polls as hung up) or at close. It takes fd over.
func (r *randomness) serve(fd int) bool {
	// A call may still be running when the server stops.
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping.Load() {
		unix.Close(fd)
		return false
	}
	r.wg.Add(1)
	activeListeners.Add(1)
	go func() {
		defer r.wg.Done()
		defer activeListeners.Add(-1)
		defer unix.Close(fd)
		l := &listener{r: r, fd: fd, procs: map[procKey]*procStream{}, threads: map[int]thread{}}
		l.run()
	}()
	return true
}

// close stops every listener's goroutine and waits for them. The listeners
// are closed with them: a process still under the filter then gets ENOSYS
// from getrandom (the kernel's answer without a listener), at once, as
// does one waiting for an answer.
func (r *randomness) close() {
	r.mu.Lock()
	was := r.stopping.Swap(true)
	r.mu.Unlock()
	if was {
		return
	}
	r.stopW.Close()
	r.wg.Wait()
	r.stopR.Close()
}

// A listener serves one shim's filter: the processes of one call.
type listener struct {
	r       *randomness
	fd      int
	procs   map[procKey]*procStream
	threads map[int]thread // by tid: the fast way to a caller's stream
}

// A thread is a caller seen before: while its /proc/TID/stat shows the
// same start time and name, it is the same thread running the same
// program, and its process's stream is p. (A program that executes another
// of the same name keeps its stream: twins that do the same still get the
// same bytes.)
type thread struct {
	start time.Duration
	comm  string
	p     *procStream
}

// A procKey is one process: its pid and start time (a pid can be reused).
type procKey struct {
	pid   int
	start time.Duration
}

// A procStream is a process's stream for its current command line.
type procStream struct {
	cmdline [32]byte // sha256
	s       *stream
	off     uint64
}

// run polls the listener and the stop pipe, and answers each notification.
func (l *listener) run() {
	buf := make([]byte, l.r.sizes.notif)
	for {
		fds := []unix.PollFd{
			{Fd: int32(l.fd), Events: unix.POLLIN},
			{Fd: int32(l.r.stopFD), Events: unix.POLLIN},
		}
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return // the server stops
		}
		re := fds[0].Revents
		switch {
		case re&unix.POLLIN != 0:
			clear(buf)
			// RECV after POLLIN does not wait: if the caller went away in
			// between, the kernel answers ENOENT.
			if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(l.fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&buf[0]))); e != 0 {
				if e == unix.ENOENT || e == unix.EINTR {
					continue
				}
				return
			}
			if n, err := decodeNotif(buf); err == nil {
				l.answer(n)
			}
		case re&(unix.POLLHUP|unix.POLLNVAL) != 0:
			return // no process uses the filter any more
		}
		// POLLERR alone: the kernel could not take its lock (a signal);
		// poll again.
	}
}

// valid reports whether notification id still waits (its caller has not
// gone away): what was read of /proc/PID before is then the caller's.
func (l *listener) valid(id uint64) bool {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(l.fd), unix.SECCOMP_IOCTL_NOTIF_ID_VALID, uintptr(unsafe.Pointer(&id)))
	return e == 0
}

// send answers; an error means the caller went away (killed) meanwhile.
func (l *listener) send(r seccompResp) error {
	b := r.encode(int(l.r.sizes.resp))
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(l.fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&b[0]))); e != 0 {
		return e
	}
	return nil
}

// answer serves one getrandom(buf, count, flags).
func (l *listener) answer(n seccompNotif) {
	buf, count, flags := n.args[0], n.args[1], n.args[2]
	count, errno := getrandomReply(count, flags)
	if errno != 0 || count == 0 {
		_ = l.send(respond(n.id, 0, errno))
		return
	}
	if n.pid == 0 {
		// Not in our pid namespace: no way to find it. ENOSYS, as without
		// a listener: callers fall back to /dev/urandom.
		_ = l.send(respond(n.id, 0, unix.ENOSYS))
		return
	}
	tid := int(n.pid)
	// One read of /proc for a thread seen before, three for a new one.
	comm, tinfo, ok := readStat(tid)
	th, seen := l.threads[tid]
	var key procKey
	var cmdline []byte
	var err error
	if !ok {
		err = fmt.Errorf("/proc/%d/stat: unreadable", tid)
	} else if !seen || th.start != tinfo.start || th.comm != comm {
		seen = false
		key, cmdline, err = identify(tid)
	}
	if !l.valid(n.id) {
		return // the caller is gone: what was read may be another's
	}
	if err != nil {
		_ = l.send(respond(n.id, 0, unix.ENOSYS))
		return
	}
	p := th.p
	if !seen {
		p = l.process(key, cmdline)
		if len(l.threads) >= maxProcs {
			clear(l.threads) // they come back by the slow way
		}
		l.threads[tid] = thread{start: tinfo.start, comm: comm, p: p}
	}
	written := l.write(int(n.pid), buf, count, p)
	if written == 0 && l.r.stopping.Load() {
		_ = l.send(respond(n.id, 0, unix.ENOSYS))
		return
	}
	if written == 0 {
		_ = l.send(respond(n.id, 0, unix.EFAULT))
		return
	}
	if l.send(respond(n.id, written, 0)) == nil {
		p.off += written // only bytes that reached the caller are used up
	}
}

// maxProcs bounds the processes a listener remembers; past it, those that
// ended are forgotten.
const maxProcs = 4096

// process returns the stream of process key running cmdline: its own
// while its command line stays the same, a new one (the next for that
// command line) the first time, or after it executed another program.
func (l *listener) process(key procKey, cmdline []byte) *procStream {
	h := sha256.Sum256(cmdline)
	if p := l.procs[key]; p != nil && p.cmdline == h {
		return p
	}
	if len(l.procs) >= maxProcs {
		for k := range l.procs {
			if info, ok := readProc(k.pid); !ok || info.start != k.start {
				delete(l.procs, k)
			}
		}
	}
	p := &procStream{cmdline: h, s: l.r.streams.next(cmdline)}
	l.procs[key] = p
	return p
}

// chunk is how much of the stream is made and written at a time.
const chunk = 64 << 10

// write copies count bytes of p's stream, from its offset, to addr in
// thread tid, as getrandom would: it returns how many reached it (fewer at
// the first page the caller cannot write, as the kernel). process_vm_writev
// honours the pages' protections as the kernel's copy to the caller does
// (/proc/PID/mem would write through a read-only mapping). The pid cannot
// have been reused since valid: the caller waits in getrandom and only
// SIGKILL ends it, and reuse would take every other pid in between.
func (l *listener) write(tid int, addr, count uint64, p *procStream) uint64 {
	b := make([]byte, min(count, chunk))
	var done uint64
	for done < count && !l.r.stopping.Load() {
		k := min(count-done, uint64(len(b)))
		p.s.at(p.off+done, b[:k])
		local := []unix.Iovec{{Base: &b[0]}}
		local[0].SetLen(int(k))
		remote := []unix.RemoteIovec{{Base: uintptr(addr + done), Len: int(k)}}
		m, err := unix.ProcessVMWritev(tid, local, remote, 0)
		if m > 0 {
			done += uint64(m)
		}
		if err != nil || uint64(m) < k {
			break
		}
	}
	return done
}

// readStat reads /proc/TID/stat: the thread's name and what parseStat
// reads (its start time).
func readStat(tid int) (string, procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		return "", procInfo{}, false
	}
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return "", procInfo{}, false
	}
	info, ok := parseStat(b)
	return string(b[i+1 : j]), info, ok
}

// identify reads which process thread tid belongs to (its thread group's
// leader and start time) and that process's command line.
func identify(tid int) (procKey, []byte, error) {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return procKey{}, nil, err
	}
	tgid := statusField(st, "Tgid:")
	if tgid <= 0 {
		return procKey{}, nil, fmt.Errorf("/proc/%d/status: no Tgid", tid)
	}
	info, ok := readProc(tgid)
	if !ok {
		return procKey{}, nil, fmt.Errorf("/proc/%d/stat: unreadable", tgid)
	}
	f, err := os.Open("/proc/" + strconv.Itoa(tgid) + "/cmdline")
	if err != nil {
		return procKey{}, nil, err
	}
	defer f.Close()
	// The command line is the caller's to choose: a megabyte of it is
	// enough to tell commands apart.
	cmd, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return procKey{}, nil, err
	}
	return procKey{pid: tgid, start: info.start}, cmd, nil
}

// plantDevices replaces each of paths by a read-only (0444) regular file
// of size bytes from seed; they are hard links of one file, so the bytes
// are in memory once. Every open reads from the start: each process gets
// the same bytes whatever the order. The file keeps the device's times.
// With tmpfsOnly, a path whose folder is not on a tmpfs is refused: a
// container's /dev is its own tmpfs, a host's is devtmpfs.
func plantDevices(seed []byte, paths []string, size int, tmpfsOnly bool) error {
	if len(paths) == 0 {
		return nil
	}
	for _, p := range paths {
		if !tmpfsOnly {
			break
		}
		fs, err := mountType(filepath.Dir(p))
		if err != nil {
			return fmt.Errorf("replace %s: %w", p, err)
		}
		if fs != "tmpfs" {
			return fmt.Errorf("replace %s: its folder is on %s, not a container's tmpfs", p, fs)
		}
	}
	first := paths[0]
	tmp := filepath.Join(filepath.Dir(first), ".entropy-"+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(tmp, deviceBytes(seed, size), 0o444); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replace %s: %w", first, err)
	}
	if err := os.Chmod(tmp, 0o444); err != nil { // whatever the umask
		os.Remove(tmp)
		return fmt.Errorf("replace %s: %w", first, err)
	}
	var errs []error
	for i, p := range paths {
		src := tmp
		if i < len(paths)-1 {
			// Each rename takes a name away from the file: link a fresh one.
			src = tmp + "." + strconv.Itoa(i)
			if err := os.Link(tmp, src); err != nil {
				errs = append(errs, fmt.Errorf("replace %s: %w", p, err))
				continue
			}
		}
		if fi, err := os.Stat(p); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				_ = os.Chtimes(src, time.Unix(st.Atim.Unix()), fi.ModTime())
			}
		}
		if err := os.Rename(src, p); err != nil {
			os.Remove(src)
			errs = append(errs, fmt.Errorf("replace %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// mountType is the file system type of the mount dir is on, from
// /proc/self/mountinfo (the last mount at the longest matching mount point).
func mountType(dir string) (string, error) {
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	best, fstype := -1, ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		f1, f2 := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f1) < 5 || len(f2) < 1 {
			continue
		}
		mp := unescapeMount(f1[4])
		if dir == mp || mp == "/" || strings.HasPrefix(dir, mp+"/") {
			if len(mp) >= best {
				best, fstype = len(mp), f2[0]
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if best < 0 {
		return "", fmt.Errorf("%s: no mount", dir)
	}
	return fstype, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
