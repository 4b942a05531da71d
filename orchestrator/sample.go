package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/mcptools"
	"github.com/sandboxctl/sandboxctl/trace"
)

// resourceSampler samples a container's resource use until stopped.
//
// The engine answers a one-shot stats request at its collector's next
// round (once a second), so a sample costs up to a second of waiting: stop
// never takes one of its own. The figures a short trace would miss come
// from the cgroup's counters, read after the freeze (cgroupFigures).
type resourceSampler struct {
	mu       sync.Mutex
	res      trace.Resource
	n        int // samples taken
	stopping chan struct{}
	cancel   context.CancelFunc
	done     chan struct{}
}

func startSampler(ctx context.Context, sb Sandbox, every time.Duration) *resourceSampler {
	s := &resourceSampler{stopping: make(chan struct{}), done: make(chan struct{})}
	sctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.sample(sctx, sb)
			select {
			case <-s.stopping:
				return
			case <-sctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *resourceSampler) sample(ctx context.Context, sb Sandbox) {
	st, err := sb.Stats(ctx)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	s.res.PeakMemory = max(s.res.PeakMemory, st.Memory, st.MaxMemory)
	s.res.PeakPIDs = max(s.res.PeakPIDs, st.PIDs)
	s.res.CPUSeconds = max(s.res.CPUSeconds, st.CPUSeconds)
}

// firstSampleWait bounds how long stop waits for a trace's first sample.
const firstSampleWait = 2 * time.Second

// stop ends the sampling. A sample in flight is abandoned, unless none was
// taken yet: a trace shorter than a sampling round waits for its first one
// (the engine answers the first request of a container at once), up to
// firstSampleWait.
func (s *resourceSampler) stop() trace.Resource {
	close(s.stopping)
	s.mu.Lock()
	taken := s.n > 0
	s.mu.Unlock()
	if taken {
		s.cancel()
	}
	select {
	case <-s.done:
	case <-time.After(firstSampleWait):
	}
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.res
}

// procSampler lists the skill's processes through one long-running exec of
// agentd __ps, which ends when its stdin is closed.
type procSampler struct {
	mu      sync.Mutex
	events  []trace.Event
	sampled int
	traced  int
	stdin   *io.PipeWriter
	cancel  context.CancelFunc
	done    chan struct{}
}

// maxSampledEvents caps the events sampling adds to the timeline.
const maxSampledEvents = 4096

func startProcSampler(ctx context.Context, sb Sandbox, now func() time.Time) *procSampler {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	// The exec outlives the trace's deadline by a little, so that stop
	// can end it cleanly; stop's cancel bounds it.
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &procSampler{stdin: inW, cancel: cancel, done: make(chan struct{})}
	go func() {
		_, err := sb.Exec(ectx, ExecSpec{
			Argv:   []string{AgentBin, "__ps", "--uid", strconv.Itoa(UserUID), "--every", "100ms"},
			User:   "0:0",
			Stdin:  inR,
			Stdout: outW,
			Stderr: io.Discard,
		})
		outW.CloseWithError(cmpErr(err, io.EOF))
		inR.Close()
	}()
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var p mcptools.Sampled
			if json.Unmarshal(sc.Bytes(), &p) != nil || p.PID <= 0 {
				continue // untrusted: only well-formed lines count
			}
			s.add(p, now())
		}
		outR.Close()
	}()
	return s
}

func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

func (s *procSampler) add(p mcptools.Sampled, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sampled++
	if p.TracerPID != 0 {
		s.traced++
	}
	if len(s.events) >= maxSampledEvents {
		return
	}
	path := p.Exe
	if path == "" && len(p.Argv) > 0 {
		path = p.Argv[0]
	}
	s.events = append(s.events, trace.Event{Time: at, Source: trace.SourceSample, Type: trace.TypeExec,
		PID: p.PID, PPID: p.PPID, Data: &trace.Exec{Path: capPath(path), Argv: p.Argv}})
}

func capPath(p string) string {
	if len(p) > trace.MaxPath {
		return p[:trace.MaxPath]
	}
	return p
}

// stop ends the sampling and returns the sampled processes as exec events.
func (s *procSampler) stop() []trace.Event {
	endExec(s.stdin, s.done, s.cancel)
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]trace.Event(nil), s.events...)
}

// counts returns how many processes were sampled and how many of them had
// a tracer attached.
func (s *procSampler) counts() (sampled, traced int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sampled, s.traced
}

// endExec ends an exec that reads its stdin until it closes (the tool
// server, the process sampler): it closes stdin and waits for done; after
// 5 seconds it cancels the exec and waits again.
func endExec[T any](stdin io.Closer, done <-chan T, cancel context.CancelFunc) {
	stdin.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cancel()
		<-done
	}
	cancel()
}
