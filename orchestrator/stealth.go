package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/mcptools"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Stealth policy (docs/sandbox.md, "Stealth pass"): a skill can see strace
// (TracerPid in /proc/self/status, the tracer in ps) and stay quiet while
// watched. When the watched pass saw the skill read sandbox tells
// (rules.Tells), or with Plan.Stealth StealthAlways, the same plan runs again
// in a fresh sandbox and jail with the tracer off: the tools run without
// strace, and the evidence is what needs no tracer (the jail's sinks, the
// file diff, canary hits, planted files' access times, and the skill's
// processes listed every 100ms from /proc). Both passes are in the report,
// compared by rules.ComparePasses; the verdict weighs both.

// Run runs a trace: the watched pass and, when the plan's stealth mode asks
// for it, the unwatched pass, combined into one report (reports.Combine). It
// writes the run folder to dir (unless dir is ""), with the unwatched
// pass's own report in its reports.UnwatchedDir. The error is non-nil when
// sandboxctl could not observe (the skill could not be loaded, the engine
// failed, ...): the report is then partial, with status error or cancelled,
// and is still returned when the skill was loaded. Findings are never
// errors.
func (r *Runner) Run(ctx context.Context, p Plan, dir string) (Outcome, error) {
	if err := p.Validate(); err != nil {
		return Outcome{}, fmt.Errorf("plan: %w", err)
	}
	out, first, err := r.runPass(ctx, p, dir)
	why := stealthReason(p, out.Report)
	if why == "" || err != nil || ctx.Err() != nil {
		return out, err
	}

	r.phase("stealth", "unwatched pass (%s)", why)
	up := unwatchedPlan(p, first)
	udir := ""
	if dir != "" {
		udir = filepath.Join(dir, reports.UnwatchedDir)
	}
	uout, second, uerr := r.runPass(ctx, up, udir)
	out.Kept = append(out.Kept, uout.Kept...)
	if uerr != nil {
		uerr = fmt.Errorf("unwatched pass: %w", uerr)
	}
	if uout.Report == nil {
		return out, uerr
	}
	wp := reports.Pass{Tracer: reports.TracerStrace, TraceID: p.TraceID}
	upass := reports.Pass{Tracer: reports.TracerNone, TraceID: up.TraceID, Reason: why, Dir: reports.UnwatchedDir}
	if second.procs != nil {
		upass.SampledProcs, upass.TracedProcesses = second.procs.counts()
	}
	out.Report = reports.Combine(out.Report, uout.Report, wp, upass)
	if dir != "" {
		if werr := reports.WriteRunDir(dir, out.Report, out.Transcript); werr != nil {
			uerr = errors.Join(uerr, fmt.Errorf("write run folder %s: %w", dir, werr))
		}
	}
	return out, uerr
}

// stealthReason says why an unwatched pass runs after the watched pass's
// report rep, or "" when none does: the watched pass must have completed
// (a trace that failed is not run again), and in StealthAuto the skill read
// sandbox tells and harm was not proven already.
func stealthReason(p Plan, rep *reports.Report) string {
	if rep == nil || p.Unwatched || p.Stealth == StealthOff {
		return ""
	}
	if rep.Status != reports.StatusCompleted && rep.Status != reports.StatusTimeout {
		return ""
	}
	if p.Stealth == StealthAlways {
		return "--stealth"
	}
	tells := rules.Tells(rep.Findings)
	if len(tells) == 0 || rep.Verdict == rules.Malicious {
		return ""
	}
	return "tells read: " + strings.Join(tells, ", ")
}

// unwatchedPlan is p for the unwatched pass: the same skill, driver and
// limits, the same user and host names (so that the passes' paths and
// destinations compare), a trace id of its own and a freshly seeded home.
func unwatchedPlan(p Plan, first *run) Plan {
	up := p
	up.Unwatched = true
	const suffix = "-unwatched"
	id := p.TraceID
	if len(id)+len(suffix) > 63 {
		id = strings.TrimRight(id[:63-len(suffix)], "-")
	}
	up.TraceID = id + suffix
	if first != nil && first.home != nil {
		up.User, up.Hostname = first.home.User, first.home.Hostname
	}
	up.Seed = nil // fresh tokens: a sighting names its pass
	return up
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
	s.stdin.Close()
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.cancel()
		<-s.done
	}
	s.cancel()
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
