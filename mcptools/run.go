package mcptools

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/capbuf"
)

// A job is one tool call's child process.
type job struct {
	callID  string
	argv    []string // run by the shim as the user
	stdin   []byte   // nil: /dev/null
	timeout time.Duration
}

// An outcome is how a job ended.
type outcome struct {
	exitCode    int
	signal      string
	timedOut    bool
	cancelled   bool
	stdout      []byte
	stderr      []byte
	stdoutBytes int64
	stderrBytes int64
	duration    time.Duration
	logPath     string
}

func (o outcome) truncated() bool {
	return o.stdoutBytes > int64(len(o.stdout)) || o.stderrBytes > int64(len(o.stderr))
}

// tracers tracks the strace (or shim) processes this server started, so
// that the end of Serve's context can stop them.
type tracers struct {
	mu    sync.Mutex
	procs map[int]*os.Process
	wg    sync.WaitGroup
}

func (t *tracers) add(p *os.Process, done <-chan struct{}) {
	t.mu.Lock()
	if t.procs == nil {
		t.procs = map[int]*os.Process{}
	}
	t.procs[p.Pid] = p
	t.mu.Unlock()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		<-done
		t.mu.Lock()
		delete(t.procs, p.Pid)
		t.mu.Unlock()
	}()
}

// stop sends sig to every tracked process.
func (t *tracers) stop(sig os.Signal) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range t.procs {
		_ = p.Signal(sig)
	}
}

// status is what the shim reported.
type status struct {
	pid    int
	exited bool
	code   int
	signal syscall.Signal
}

// readStatus reads the shim's status lines and sends each on ch; it closes
// ch at EOF. The protocol has one shape and nothing else is taken: "pid N"
// at most once and first, then one "exit N" (0-255) or "signal N" (1-64),
// after which the pipe is done with. The shim is root's and not dumpable,
// so only it can write here; the check keeps a garbled line from becoming
// a result all the same.
func readStatus(r io.ReadCloser, ch chan<- status) {
	defer close(ch)
	defer r.Close()
	sc := bufio.NewScanner(io.LimitReader(r, 4096))
	sawPID := false
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		n, err := strconv.Atoi(v)
		if err != nil {
			continue
		}
		switch {
		case k == "pid" && !sawPID && n > 0:
			sawPID = true
			ch <- status{pid: n}
		case k == "exit" && n >= 0 && n <= 255:
			ch <- status{exited: true, code: n}
			return
		case k == "signal" && n > 0 && n <= 64:
			ch <- status{exited: true, code: 128 + n, signal: syscall.Signal(n)}
			return
		}
	}
}

// run starts j under strace as the user, waits for the command (not for
// what it left in the background), and returns its outcome. It returns an
// error only when the job could not be started.
func (s *toolServer) run(ctx context.Context, j job) (outcome, error) {
	cfg := s.cfg
	start := time.Now()
	out := outcome{logPath: filepath.Join(cfg.LogDir, j.callID+".log")}

	p, err := openPipes(j.stdin != nil)
	if err != nil {
		return out, err
	}
	defer p.ctlW.Close()
	// With Entropy, a socket on which the shim sends its getrandom filter's
	// listener (fd 5 in strace and the shim, named by getrandomFDVar).
	var grShim, grSrv *os.File
	if s.rand != nil {
		if grShim, grSrv, err = s.rand.pair(); err != nil {
			closeAll(p.statusR, p.statusW, p.ctlR, p.outR, p.outW, p.errR, p.errW, p.inR, p.inW)
			return out, err
		}
		defer grSrv.Close()
	}

	cmd := jobCommand(cfg, j, out.logPath, p, grShim)
	if err := cmd.Start(); err != nil {
		closeAll(p.statusR, p.statusW, p.ctlR, p.outR, p.outW, p.errR, p.errW, p.inR, p.inW, grShim)
		return out, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	closeAll(p.statusW, p.ctlR, p.outW, p.errW, p.inR, grShim)
	// The shim sends its listener before it reports the pid: take it then,
	// or, if the shim never got that far, when its status ends.
	tookListener := grSrv == nil
	takeListener := func() {
		if !tookListener {
			tookListener = true
			s.rand.take(grSrv)
		}
	}
	if inW := p.inW; inW != nil {
		go func() {
			// Ends when the child has read it all, or has exited (EPIPE).
			_, _ = inW.Write(j.stdin)
			inW.Close()
		}()
	}

	waited := make(chan struct{})
	var waitErr error
	go func() {
		// Ends when strace ends: when every traced process has exited, or
		// at Flush.
		waitErr = cmd.Wait()
		close(waited)
	}()
	s.tracers.add(cmd.Process, waited)

	stdout := capbuf.New(cfg.MaxOutput)
	stderr := capbuf.New(cfg.MaxOutput)
	outDone, errDone := make(chan struct{}), make(chan struct{})
	// The pipes end when the last process holding them exits: possibly a
	// background process long after this call returned. Until then they are
	// drained (and counted) so that no writer blocks.
	go drain(p.outR, stdout, outDone)
	go drain(p.errR, stderr, errDone)

	statusCh := make(chan status, 4)
	go readStatus(p.statusR, statusCh)

	timer := time.NewTimer(j.timeout)
	defer timer.Stop()
	w := jobWait{status: statusCh, waited: waited, waitErr: &waitErr, ctl: p.ctlW,
		drain: cfg.Drain, takeListener: takeListener}
	pid, killed := w.await(ctx, timer.C, &out)
	takeListener()
	if killed && (pid == 0 || out.exitCode == -1) {
		// The shim never started the command, or did not see it end in
		// time: stop the tracer, the server's own child.
		_ = cmd.Process.Kill()
	}
	awaitDrained(outDone, errDone, cfg.Drain)
	out.stdout, out.stdoutBytes = stdout.Snapshot()
	out.stderr, out.stderrBytes = stderr.Snapshot()
	out.duration = time.Since(start)
	return out, nil
}

// jobPipes are the pipes of a job's process: the shim's status and
// control pipes, and its stdout, stderr and (with input) stdin.
type jobPipes struct {
	statusR, statusW *os.File
	ctlR, ctlW       *os.File
	outR, outW       *os.File
	errR, errW       *os.File
	inR, inW         *os.File // nil without input
}

// openPipes opens a job's pipes, with a stdin pipe when withStdin is set.
// On error it closes those it opened.
func openPipes(withStdin bool) (jobPipes, error) {
	var p jobPipes
	var err error
	p.statusR, p.statusW, err = os.Pipe()
	if err != nil {
		return p, fmt.Errorf("status pipe: %w", err)
	}
	p.ctlR, p.ctlW, err = os.Pipe()
	if err != nil {
		closeAll(p.statusR, p.statusW)
		return p, fmt.Errorf("control pipe: %w", err)
	}
	p.outR, p.outW, err = os.Pipe()
	if err != nil {
		closeAll(p.statusR, p.statusW, p.ctlR, p.ctlW)
		return p, fmt.Errorf("stdout pipe: %w", err)
	}
	p.errR, p.errW, err = os.Pipe()
	if err != nil {
		closeAll(p.statusR, p.statusW, p.ctlR, p.ctlW, p.outR, p.outW)
		return p, fmt.Errorf("stderr pipe: %w", err)
	}
	if withStdin {
		if p.inR, p.inW, err = os.Pipe(); err != nil {
			closeAll(p.statusR, p.statusW, p.ctlR, p.ctlW, p.outR, p.outW, p.errR, p.errW)
			return p, fmt.Errorf("stdin pipe: %w", err)
		}
	}
	return p, nil
}

// jobCommand returns the command that runs j: the shim (under strace
// writing to logPath, unless cfg.NoStrace) starting j's argv as the user,
// with the pipes p and, when not nil, the getrandom socket grShim.
func jobCommand(cfg Config, j job, logPath string, p jobPipes, grShim *os.File) *exec.Cmd {
	// The shim runs as root (under strace, which runs as root too) and
	// starts the command as the user; see Shim.
	argv := append(append([]string{cfg.Self, "__shim"}, cfg.identity().args()...), "--")
	argv = append(argv, j.argv...)
	var cmd *exec.Cmd
	if cfg.NoStrace {
		cmd = exec.Command(argv[0], argv[1:]...)
	} else {
		full := append(cfg.StraceArgs(logPath), "--")
		cmd = exec.Command(cfg.Strace, append(full, argv...)...)
	}
	cmd.Env = cfg.userEnv()
	if !cfg.NoStrace {
		// The tracer keeps the real clock under a fake one (libfaketime
		// reads FAKETIME before /etc/faketimerc); the shim drops it.
		cmd.Env = append(cmd.Env, tracerClock)
	}
	if grShim != nil {
		cmd.Env = append(cmd.Env, getrandomFDVar+"=5") // the shim drops it too
	}
	if fi, err := os.Stat(cfg.Home); err == nil && fi.IsDir() {
		cmd.Dir = cfg.Home
	} else {
		cmd.Dir = "/"
	}
	cmd.Stdout, cmd.Stderr = p.outW, p.errW
	if p.inR != nil {
		cmd.Stdin = p.inR
	}
	cmd.ExtraFiles = []*os.File{p.statusW, p.ctlR} // fds 3 and 4 in strace, inherited by the shim
	if grShim != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, grShim) // fd 5
	}
	return cmd
}

// A jobWait is what run waits on once a job has started: the shim's
// status, the end of strace (waited, then waitErr), and the control pipe
// that tells the shim to kill the command.
type jobWait struct {
	status       <-chan status
	waited       <-chan struct{}
	waitErr      *error
	ctl          *os.File
	drain        time.Duration // how long strace's status is waited for
	takeListener func()
}

// await waits for the job's command to end, killing it when timeout fires
// or ctx ends, and records how it ended in out. It returns the command's
// pid (0 if the shim never reported it) and whether it was killed.
func (w *jobWait) await(ctx context.Context, timeout <-chan time.Time, out *outcome) (pid int, killed bool) {
	var grace <-chan time.Time
	kill := func() {
		// The shim kills the process group it made; the server signals
		// nothing whose number it was told.
		killed = true
		_, _ = io.WriteString(w.ctl, "kill\n")
		grace = time.After(3 * time.Second)
	}
	done := false
	for !done {
		select {
		case st, ok := <-w.status:
			switch {
			case !ok:
				// The shim is gone without a word: strace could not start
				// it, or something killed it. Take strace's status if it
				// comes quickly.
				select {
				case <-w.waited:
					out.exitCode = exitCode(*w.waitErr)
				case <-time.After(w.drain):
					out.exitCode = -1
				}
				done = true
			case st.exited:
				out.exitCode = st.code
				if st.signal != 0 {
					out.signal = signalName(st.signal)
				}
				done = true
			default:
				pid = st.pid
				w.takeListener()
				if killed {
					kill()
				}
			}
		case <-timeout:
			out.timedOut = true
			kill()
		case <-ctx.Done():
			if !killed {
				out.cancelled = true
				kill()
			}
		case <-grace:
			// The command could not be killed in time (its pid never
			// came): give up on it rather than hang the trace.
			out.exitCode = -1
			done = true
		}
	}
	return pid, killed
}

// awaitDrained waits for the stdout and stderr pipes to be drained
// (outDone and errDone closed), for d at most.
func awaitDrained(outDone, errDone chan struct{}, d time.Duration) {
	drainWait := time.NewTimer(d)
	defer drainWait.Stop()
	for outDone != nil || errDone != nil {
		select {
		case <-outDone:
			outDone = nil
		case <-errDone:
			errDone = nil
		case <-drainWait.C:
			outDone, errDone = nil, nil
		}
	}
}

func drain(r *os.File, w io.Writer, done chan<- struct{}) {
	defer close(done)
	defer r.Close()
	buf := make([]byte, 32<<10)
	_, _ = io.CopyBuffer(w, r, buf)
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return "signal " + strconv.Itoa(int(s))
}
