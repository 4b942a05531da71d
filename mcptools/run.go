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

	statusR, statusW, err := os.Pipe()
	if err != nil {
		return out, fmt.Errorf("status pipe: %w", err)
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		closeAll(statusR, statusW)
		return out, fmt.Errorf("control pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(statusR, statusW, ctlR, ctlW)
		return out, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(statusR, statusW, ctlR, ctlW, outR, outW)
		return out, fmt.Errorf("stderr pipe: %w", err)
	}
	var inR, inW *os.File
	if j.stdin != nil {
		if inR, inW, err = os.Pipe(); err != nil {
			closeAll(statusR, statusW, ctlR, ctlW, outR, outW, errR, errW)
			return out, fmt.Errorf("stdin pipe: %w", err)
		}
	}
	defer ctlW.Close()
	// With Entropy, a socket on which the shim sends its getrandom filter's
	// listener (fd 5 in strace and the shim, named by getrandomFDVar).
	var grShim, grSrv *os.File
	if s.rand != nil {
		if grShim, grSrv, err = s.rand.pair(); err != nil {
			closeAll(statusR, statusW, ctlR, outR, outW, errR, errW, inR, inW)
			return out, err
		}
		defer grSrv.Close()
	}

	// The shim runs as root (under strace, which runs as root too) and
	// starts the command as the user; see Shim.
	argv := append(append([]string{cfg.Self, "__shim"}, cfg.identity().args()...), "--")
	argv = append(argv, j.argv...)
	var cmd *exec.Cmd
	if cfg.NoStrace {
		cmd = exec.Command(argv[0], argv[1:]...)
	} else {
		full := append(cfg.StraceArgs(out.logPath), "--")
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
	cmd.Stdout, cmd.Stderr = outW, errW
	if inR != nil {
		cmd.Stdin = inR
	}
	cmd.ExtraFiles = []*os.File{statusW, ctlR} // fds 3 and 4 in strace, inherited by the shim
	if grShim != nil {
		cmd.ExtraFiles = append(cmd.ExtraFiles, grShim) // fd 5
	}
	if err := cmd.Start(); err != nil {
		closeAll(statusR, statusW, ctlR, outR, outW, errR, errW, inR, inW, grShim)
		return out, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	closeAll(statusW, ctlR, outW, errW, inR, grShim)
	// The shim sends its listener before it reports the pid: take it then,
	// or, if the shim never got that far, when its status ends.
	tookListener := grSrv == nil
	takeListener := func() {
		if !tookListener {
			tookListener = true
			s.rand.take(grSrv)
		}
	}
	if inW != nil {
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
	go drain(outR, stdout, outDone)
	go drain(errR, stderr, errDone)

	statusCh := make(chan status, 4)
	go readStatus(statusR, statusCh)

	timer := time.NewTimer(j.timeout)
	defer timer.Stop()
	pid := 0
	killed := false
	var grace <-chan time.Time
	kill := func() {
		// The shim kills the process group it made; the server signals
		// nothing whose number it was told.
		killed = true
		_, _ = io.WriteString(ctlW, "kill\n")
		grace = time.After(3 * time.Second)
	}
	done := false
	for !done {
		select {
		case st, ok := <-statusCh:
			switch {
			case !ok:
				// The shim is gone without a word: strace could not start
				// it, or something killed it. Take strace's status if it
				// comes quickly.
				select {
				case <-waited:
					out.exitCode = exitCode(waitErr)
				case <-time.After(cfg.Drain):
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
				takeListener()
				if killed {
					kill()
				}
			}
		case <-timer.C:
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
	takeListener()
	if killed && (pid == 0 || out.exitCode == -1) {
		// The shim never started the command, or did not see it end in
		// time: stop the tracer, the server's own child.
		_ = cmd.Process.Kill()
	}
	drainWait := time.NewTimer(cfg.Drain)
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
	out.stdout, out.stdoutBytes = stdout.Snapshot()
	out.stderr, out.stderrBytes = stderr.Snapshot()
	out.duration = time.Since(start)
	return out, nil
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
