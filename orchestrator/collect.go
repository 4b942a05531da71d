package orchestrator

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/internal/capbuf"
	"github.com/sandboxctl/sandboxctl/mcptools"
	"github.com/sandboxctl/sandboxctl/persona"
	"github.com/sandboxctl/sandboxctl/strace"
	"github.com/sandboxctl/sandboxctl/trace"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// Caps on what is read back from the sandbox: its contents are untrusted.
const (
	maxLogBytes   = 512 << 20 // one strace log: the size of the tracer's tmpfs (sandboxSpec)
	maxLogsBytes  = 1 << 30   // all of them
	maxStraceLine = 64 << 10
)

// collectAll is the collect stage of a pass. It runs on a fresh context
// (the trace's, tctx, may have ended) bounded by a budget plus the grace
// period, shorter when ctx was cancelled. A loop that ended because the
// skill exhausted the sandbox is a result, not a failure; a loop that
// failed otherwise is the stage's error too.
func (r *Runner) collectAll(ctx, tctx context.Context, st *run) error {
	r.phase("collect", "syscall logs, file diff, resources")
	budget := 60 * time.Second
	if ctx.Err() != nil {
		budget = 15 * time.Second
	}
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), budget+st.plan.Limits.Grace)
	defer ccancel()
	st.grace = graceLeft(tctx, st.plan.Limits.Grace, ctx.Err() != nil)
	err := r.collect(cctx, st)
	if st.loopErr != nil && st.exhausted && !errors.Is(st.loopErr, ErrTimeout) {
		// The skill used up the sandbox's pids or memory, which the tool
		// server shares: losing it is the skill's doing and the trace's
		// result (the resource event says which limit), not a failure to
		// observe what came before.
		st.events = append(st.events, trace.Event{Time: r.now(), Source: trace.SourceResource, Type: trace.TypeJailNotice,
			Data: &trace.Notice{Message: "agent loop ended: the sandbox's resources were exhausted by the skill: " + st.loopErr.Error()}})
		st.loopErr = nil
	}
	// A trace that ran into its deadline is a result (status timeout), not
	// a failure to observe; a driver or tool server that failed is.
	if st.loopErr != nil && !errors.Is(st.loopErr, ErrTimeout) {
		err = errors.Join(st.loopErr, err)
	}
	return err
}

// collect gathers the events of a trace that ran: the tool calls, the
// syscall logs (after ending the tracers so they are complete), the file
// diff, resource use and the jail's stream.
func (r *Runner) collect(ctx context.Context, st *run) error {
	st.events = append(st.events, st.calls.all()...)

	// Sampling ends before the grace period: the freeze runs as an exec,
	// and the engine moves an exec's processes into the sandbox's cgroup
	// past its pids limit, so samples taken meanwhile would count ours.
	// The cgroup's own counters, read after it, cover the grace period.
	var res trace.Resource
	t0 := time.Now()
	if st.resources != nil {
		res = st.resources.stop()
	}
	r.log().Debug("collect: resource sampler", "took", time.Since(t0))
	if st.procs != nil {
		st.events = append(st.events, st.procs.stop()...)
	}
	r.log().Debug("collect: process sampler", "took", time.Since(t0))
	// The jail's evidence and the engine's state of the sandbox are read
	// once the skill's processes are ended: when the evidence exec's first
	// entry says so, or when it ended without saying.
	var jail jailEvidence
	var wg sync.WaitGroup
	var jailPanic, statePanic error
	var oomKilled bool
	frozen := sync.OnceFunc(func() {
		if st.jailEv != nil {
			goSafe(&wg, &jailPanic, func() { jail = r.jailEvents(ctx, st) })
		}
		if st.resources != nil && st.sandbox != nil {
			goSafe(&wg, &statePanic, func() {
				if s, err := st.sandbox.State(ctx); err == nil {
					oomKilled = s.OOMKilled
				}
			})
		}
	})
	// The sandbox's evidence holds the cgroup's counters and the places'
	// use too (read first, in the same exec): the resource event follows.
	var err error
	var ev evidence
	if st.sandbox != nil {
		ev, err = r.sandboxEvidence(ctx, st, frozen)
		if !ev.frozen && err != nil {
			st.events = append(st.events, notFrozen(err.Error(), r.now()))
		}
	}
	frozen()
	wg.Wait()
	if st.resources != nil {
		st.events = append(st.events, r.resourceEvent(st, res, parseCgroup(ev.cgroup), parseFull(ev.disk), oomKilled))
	}
	st.events = append(st.events, jail.events...)
	st.spoolHits = jail.hits
	return errors.Join(err, jailPanic, statePanic)
}

// goSafe runs f on wg; a panic in f becomes an ErrInternal error in *perr
// (the pass's recover does not see another goroutine's panic), read after
// wg.Wait.
func goSafe(wg *sync.WaitGroup, perr *error, f func()) {
	wg.Go(func() {
		defer func() {
			if v := recover(); v != nil {
				*perr = fmt.Errorf("%w: %v\n%s", ErrInternal, v, debug.Stack())
			}
		}()
		f()
	})
}

// resourceEvent completes the sampled figures res with the cgroup's own
// counters cg (read after the freeze), the places that were full and
// whether the engine saw an OOM kill, says which limits the skill reached
// (setting st.exhausted), and returns the resource event.
func (r *Runner) resourceEvent(st *run, res trace.Resource, cg cgroupCounts, full []string, oomKilled bool) trace.Event {
	res.MemoryLimit, res.PIDsLimit = st.plan.Limits.Memory, st.plan.Limits.PIDs
	res.PeakMemory = max(res.PeakMemory, cg.memPeak)
	res.CPUSeconds = max(res.CPUSeconds, cg.cpuSeconds)
	if cg.pidsMaxHits > 0 {
		res.Exceeded = append(res.Exceeded, "pids")
	}
	if cg.oomKills > 0 || oomKilled {
		res.OOMKilled = true
	}
	// A process killed by the cgroup's OOM killer does not mark the
	// container; usage at the limit does.
	if res.OOMKilled || cg.memFailures > 0 || res.MemoryLimit > 0 && res.PeakMemory >= res.MemoryLimit*95/100 {
		res.Exceeded = append(res.Exceeded, "memory")
	}
	if cg.pidsMaxHits == 0 && res.PIDsLimit > 0 && res.PeakPIDs >= res.PIDsLimit*9/10 {
		res.Exceeded = append(res.Exceeded, "pids") // sampled: the counters were not readable
	}
	for _, c := range st.loop.Calls {
		if c.Result.Truncated {
			res.Exceeded = append(res.Exceeded, "output")
			break
		}
	}
	if len(full) > 0 {
		res.DiskFull = full
		res.Exceeded = append(res.Exceeded, "disk")
	}
	res.OutputBytes = st.loop.OutputBytes
	st.exhausted = slices.Contains(res.Exceeded, "pids") || slices.Contains(res.Exceeded, "memory")
	return trace.Event{Time: r.now(), Source: trace.SourceResource, Type: trace.TypeResource, Data: &res}
}

// sandboxEvidence reads what the sandbox holds: the syscall logs (watched
// pass), the planted files' end state, the changed files, and the changes
// to the root file system (with the engine's diff when asked for). One exec
// (agentd __evidence, as root: the skill's processes are ended) ends the
// tracers and sends all of it as one archive (mcptools.Evidence): every
// exec costs a round trip through the engine and a process start in the
// container, and the collection used to make six in a row.
func (r *Runner) sandboxEvidence(ctx context.Context, st *run, frozen func()) (evidence, error) {
	t0 := time.Now()
	argv := []string{AgentBin, "__evidence", "--freeze-uid", strconv.Itoa(UserUID), "--grace", st.grace.String(),
		"--stamp", stampPath, "--writable", writableList,
		"--changed", strings.Join(changedRoots, ","), "--max-files", strconv.Itoa(maxChangedFiles),
		"--cgroup", cgroupDir}
	if st.home != nil {
		argv = append(argv, "--places", strings.Join(userPlaces(st.home.HomeDir), ","))
	}
	if !st.plan.Unwatched {
		argv = append(argv, "--log-dir", CallLogDir)
	}
	if len(st.planted) > 0 {
		argv = append(argv, "--home", st.home.HomeDir)
	}
	pr, pw := io.Pipe()
	stderr := capbuf.New(4 << 10)
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var res result
		defer func() {
			if v := recover(); v != nil {
				res = result{-1, fmt.Errorf("%w: %v\n%s", ErrInternal, v, debug.Stack())}
			}
			pw.CloseWithError(res.err)
			done <- res
		}()
		res.code, res.err = st.sandbox.Exec(ctx, ExecSpec{Argv: argv, User: "0:0", Stdout: pw, Stderr: stderr})
	}()
	ev, rerr := r.readEvidence(pr, st, func() {
		r.log().Debug("collect: grace period and freeze", "took", time.Since(t0), "grace", st.grace)
		frozen()
	})
	io.Copy(io.Discard, pr) // the archive's padding, or what is past an error
	res := <-done
	r.log().Debug("collect: sandbox evidence", "took", time.Since(t0))

	var errs []error
	switch {
	case res.err != nil:
		errs = append(errs, fmt.Errorf("sandbox evidence: %w", res.err))
	case res.code != 0:
		errs = append(errs, fmt.Errorf("sandbox evidence: exit %d: %s", res.code, tail(stderr.String(), 400)))
	case stderr.String() != "":
		r.log().Warn("sandbox evidence", "stderr", stderr.String())
	}
	if rerr != nil && res.err == nil {
		errs = append(errs, fmt.Errorf("sandbox evidence: %w", rerr))
	}
	st.events = append(st.events, ev.syscalls...)
	if len(st.planted) > 0 {
		st.events = append(st.events, st.planted...)
		st.events = append(st.events, endEvents(st.planted, parseIdentities(ev.identity), r.now())...)
	}
	if st.system.Clock != "" {
		ev.changed = slices.DeleteFunc(ev.changed, func(e trace.Event) bool {
			ch, ok := e.Data.(*trace.FSChange)
			return ok && fakeClockFile(ch.Path)
		})
	}
	st.events = append(st.events, ev.changed...)
	rootfs := parseRootfs(ev.rootfs, r.now())
	if r.EngineDiff {
		var err error
		rootfs, err = r.engineDiff(ctx, st, rootfs)
		r.log().Debug("collect: engine diff", "took", time.Since(t0))
		if err != nil {
			errs = append(errs, fmt.Errorf("file diff: %w", err))
		}
	}
	st.events = append(st.events, rootfs...)
	return ev, errors.Join(errs...)
}

// evidence is what readEvidence read of the sandbox's archive.
type evidence struct {
	identity, rootfs string        // the listings, as the sandbox wrote them
	cgroup, disk     string        // the counters and the places' use (parseCgroup, parseFull)
	frozen           bool          // the skill's processes were ended (EvidenceLeftovers came)
	syscalls         []trace.Event // from the per-call logs
	changed          []trace.Event // the changed files
}

// readEvidence reads the archive of agentd __evidence (untrusted: every
// part within its cap, unknown entries skipped); frozen is called when its
// record of the skill's ended processes has come.
func (r *Runner) readEvidence(rd io.Reader, st *run, frozen func()) (ev evidence, err error) {
	logs := newCallLogs(logParams{Cwd: st.home.HomeDir, Budget: st.plan.Limits.TimelineBytes,
		FakeClock: st.system.Clock != "", Keep: keepSet(st.home)}, r.log())
	changed := changedReader{dir: st.dir, home: st.home, now: r.now}
	defer func() {
		ev.syscalls = logs.finish()
		ev.changed = changed.events
	}()
	tr := tar.NewReader(rd)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return ev, nil
		}
		if err != nil {
			return ev, fmt.Errorf("read evidence archive: %w", err)
		}
		switch name := hdr.Name; {
		case name == mcptools.EvidenceIdentity:
			ev.identity, err = readCapped(tr, 8<<20)
		case name == mcptools.EvidenceRootfs:
			ev.rootfs, err = readCapped(tr, 1<<20)
		case name == mcptools.EvidenceLeftovers && !ev.frozen:
			var out string
			out, err = readCapped(tr, 1<<20)
			st.events = append(st.events, leftoverEvents(out, st.grace, r.now())...)
			ev.frozen = true
			frozen()
		case name == mcptools.EvidenceFreezeError:
			var msg string
			msg, err = readCapped(tr, 4<<10)
			st.events = append(st.events, notFrozen(msg, r.now()))
		case name == mcptools.EvidenceCgroup:
			ev.cgroup, err = readCapped(tr, 64<<10)
		case name == mcptools.EvidenceDisk:
			ev.disk, err = readCapped(tr, 64<<10)
		case strings.HasPrefix(name, mcptools.EvidenceCalls):
			if !st.plan.Unwatched {
				logs.add(hdr, tr)
			}
		case strings.HasPrefix(name, mcptools.EvidenceFiles):
			h := *hdr
			h.Name = strings.TrimPrefix(name, mcptools.EvidenceFiles)
			err = changed.add(&h, tr)
		}
		if err != nil {
			return ev, err
		}
	}
}

// readCapped reads r whole, keeping at most n bytes.
func readCapped(r io.Reader, n int) (string, error) {
	b := capbuf.New(n)
	if _, err := io.Copy(b, r); err != nil {
		return b.String(), fmt.Errorf("read evidence archive: %w", err)
	}
	return b.String(), nil
}

// engineDiff adds the engine's diff of the sandbox to st's events and
// returns the rootfs changes it does not already name. The engine's diff
// is read host-side, out of the sandbox's reach. On storage drivers
// without a native diff (fuse-overlayfs) it walks the whole image and
// holds up the engine's other work on the container, so it is opt-in.
func (r *Runner) engineDiff(ctx context.Context, st *run, rootfs []trace.Event) ([]trace.Event, error) {
	d, err := st.sandbox.Diff(ctx)
	seen := map[string]bool{}
	now := r.now()
	for _, c := range filterDiff(d) {
		if st.system.Clock != "" && (c.Path == faketimeRC || c.Path == preloadPath) {
			// The fake clock's, written at setup: a change the skill
			// makes to them after that shows in the rootfs scan.
			continue
		}
		seen[c.Path] = true
		st.events = append(st.events, trace.Event{Time: now, Source: trace.SourceFSDiff, Type: trace.TypeFSChange,
			Data: &trace.FSChange{Path: c.Path, Kind: c.Kind}})
	}
	return slices.DeleteFunc(rootfs, func(e trace.Event) bool { return seen[e.Data.(*trace.FSChange).Path] }), err
}

// writableList is the agent image's list of the places the skill's user
// can write outside the tmpfs places (sandbox-image/agent/prepare.sh).
const writableList = "/usr/local/lib/agent/writable"

// parseRootfs parses "TYPE SIZE PATH" lines.
func parseRootfs(out string, now time.Time) []trace.Event {
	var events []trace.Event
	for _, line := range strings.Split(out, "\n") {
		typ, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		size, p, ok := strings.Cut(rest, " ")
		if !ok || !strings.HasPrefix(p, "/") || setupPath(p) || p == stampPath || p == "/run/agentd" {
			continue
		}
		ch := &trace.FSChange{Path: path.Clean(p), Kind: "modified"}
		switch typ {
		case "d":
			ch.Kind = "dir-changed"
		case "l":
			ch.Kind = "symlink"
		default:
			ch.Size, _ = strconv.ParseInt(size, 10, 64)
		}
		events = append(events, trace.Event{Time: now, Source: trace.SourceFSDiff, Type: trace.TypeFSChange, Data: ch})
	}
	return events
}

var callLogName = regexp.MustCompile(`^([A-Za-z0-9_.-]{1,64})\.log$`)

// callLogs parses the per-call strace logs of one trace (untrusted), one
// archive entry at a time, within caps: paths in events are cut to
// trace.MaxPath, and the events of all logs together to budget bytes
// (trace.Size; 0: DefaultTimelineBytes). What a cap leaves out is a notice
// marked Incomplete; a budget crossed is also a budget event.
type callLogs struct {
	lp     logParams
	budget int64
	log    interface{ Warn(string, ...any) }

	events                                           []trace.Event
	total, used, pathsCut, longest, dropped          int64
	failedUsed, failedDropped, keptUsed, keptDropped int64
	lastAt                                           time.Time
}

// keepSet is the set of the planted files' paths, nil without a home.
func keepSet(h *canaryfs.Home) map[string]bool {
	if h == nil {
		return nil
	}
	m := map[string]bool{}
	for _, p := range plantedPaths(h) {
		m[p] = true
	}
	return m
}

// logParams say how callLogs reads the syscall logs.
type logParams struct {
	// Cwd is the first process's working directory; Budget the bytes of
	// ordinary events of all logs together (0: DefaultTimelineBytes), of
	// which failed calls may take an eighth; FakeClock drops the fake
	// clock's start-up noise.
	Cwd       string
	Budget    int64
	FakeClock bool
	// Keep are the paths whose every event is kept whatever the budget
	// (the planted files), with execs, network syscalls and process starts
	// and ends: they have a budget of their own, as large as Budget.
	Keep map[string]bool
}

func newCallLogs(lp logParams, log interface{ Warn(string, ...any) }) *callLogs {
	budget := lp.Budget
	if budget <= 0 {
		budget = traceplan.DefaultTimelineBytes
	}
	return &callLogs{lp: lp, budget: budget, log: log}
}

// add parses one entry of the archive: a log named CALLID.log.
func (c *callLogs) add(hdr *tar.Header, r io.Reader) {
	if hdr.Typeflag != tar.TypeReg {
		return
	}
	m := callLogName.FindStringSubmatch(path.Base(hdr.Name))
	if m == nil {
		return
	}
	if c.total >= maxLogsBytes {
		c.log.Warn("syscall logs over cap; rest skipped", "cap", maxLogsBytes)
		c.events = append(c.events, trace.Event{Time: c.lastAt, Source: trace.SourceSyscall, Type: trace.TypeJailNotice, ToolCallID: m[1],
			Data: &trace.Notice{Message: "syscall log of " + m[1] + " not read: the logs together are over the " +
				strconv.Itoa(maxLogsBytes>>20) + " MiB cap", Incomplete: true}})
		return
	}
	limit := min(maxLogBytes, maxLogsBytes-c.total)
	lr := io.LimitReader(r, limit)
	room := max(c.budget-c.used, 1) // 1: the budget is spent, every event is dropped and counted
	ev, stats, err := strace.Parse(lr, m[1], strace.Options{Cwd: c.lp.Cwd, MaxLineBytes: maxStraceLine, Agentd: AgentBin,
		MaxPath: trace.MaxPath, MaxBytes: room, FakeClock: c.lp.FakeClock,
		MaxFailedBytes: max(c.budget/8-c.failedUsed, 1), KeepBytes: max(c.budget-c.keptUsed, 1),
		Keep: func(p string) bool { return c.lp.Keep[p] }})
	c.total += hdr.Size
	c.failedUsed += stats.FailedBytes
	c.failedDropped += stats.FailedDropped
	c.keptUsed += stats.KeptBytes
	c.keptDropped += stats.KeptDropped
	c.used += stats.Bytes
	c.pathsCut += stats.PathsCut
	c.longest = max(c.longest, stats.LongestPath)
	if stats.BytesCapped {
		c.dropped += stats.DroppedEvents
	}
	if err != nil {
		c.log.Warn("parse syscall log", "call", m[1], "err", err)
	}
	c.events = append(c.events, ev...)
	if len(ev) > 0 {
		c.lastAt = ev[len(ev)-1].Time
	}
	// A log cut by a cap is a gap in the evidence: say so in the report.
	if gap := logGap(stats, hdr.Size > limit); gap != "" {
		c.events = append(c.events, trace.Event{Time: c.lastAt, Source: trace.SourceSyscall, Type: trace.TypeJailNotice, ToolCallID: m[1],
			Data: &trace.Notice{Message: "syscall log of " + m[1] + " incomplete: " + gap, Lost: stats.DroppedEvents, Incomplete: true}})
	}
}

// finish returns the events with the budget events of the caps crossed.
func (c *callLogs) finish() []trace.Event {
	events := c.events
	if c.pathsCut > 0 {
		events = append(events, trace.Event{Time: c.lastAt, Source: trace.SourceSyscall, Type: trace.TypeBudget, Data: &trace.Budget{
			Name: "path", Limit: trace.MaxPath, Used: c.longest, Summarised: c.pathsCut, Unit: "bytes",
			Message: fmt.Sprintf("%d paths in syscall events were longer than %d bytes (the longest %d bytes) and were cut in the middle",
				c.pathsCut, trace.MaxPath, c.longest)}})
	}
	if c.dropped > 0 {
		events = append(events, trace.Event{Time: c.lastAt, Source: trace.SourceSyscall, Type: trace.TypeBudget, Data: &trace.Budget{
			Name: "timeline", Limit: c.budget, Used: c.used, Dropped: c.dropped, Unit: "events",
			Message: fmt.Sprintf("the syscall events reached the trace's %d-byte budget: %d events not kept", c.budget, c.dropped)}})
	}
	if c.failedDropped > 0 {
		events = append(events, trace.Event{Time: c.lastAt, Source: trace.SourceSyscall, Type: trace.TypeBudget, Data: &trace.Budget{
			Name: "failed-calls", Limit: c.budget / 8, Used: c.failedUsed, Summarised: c.failedDropped, Unit: "events",
			Message: fmt.Sprintf("failed file-system calls (opens of files that are not there, refused writes) reached their share of the syscall budget (%d bytes): %d more were counted, not kept; reads of planted files, execs and network syscalls were all kept",
				c.budget/8, c.failedDropped)}})
	}
	if c.keptDropped > 0 {
		events = append(events, trace.Event{Time: c.lastAt, Source: trace.SourceSyscall, Type: trace.TypeBudget, Data: &trace.Budget{
			Name: "kept-events", Limit: c.budget, Used: c.keptUsed, Dropped: c.keptDropped, Unit: "events",
			Message: fmt.Sprintf("execs, network syscalls, process starts and ends and reads of planted files reached their own %d-byte budget: %d not kept", c.budget, c.keptDropped)}})
	}
	return events
}

// logGap describes what of a syscall log was not turned into events, or "".
func logGap(st strace.Stats, cut bool) string {
	var parts []string
	if cut {
		parts = append(parts, fmt.Sprintf("over the %d MiB cap", maxLogBytes>>20))
	}
	if st.LinesCapped {
		parts = append(parts, "line count capped")
	}
	if st.LongLines > 0 {
		parts = append(parts, fmt.Sprintf("%d over-long lines skipped", st.LongLines))
	}
	if st.BytesCapped {
		parts = append(parts, fmt.Sprintf("%d events over the trace's byte budget dropped", st.DroppedEvents))
	} else if st.DroppedEvents > 0 {
		parts = append(parts, fmt.Sprintf("%d events over the cap dropped", st.DroppedEvents))
	}
	return strings.Join(parts, ", ")
}

// filterDiff drops the changes the trace itself makes before the skill runs
// (trust stores, the binary, the user database) and the engine's own files.
func filterDiff(changes []Change) []Change {
	var out []Change
	for _, c := range changes {
		if setupPath(c.Path) {
			continue
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

var setupPrefixes = []string{
	"/etc/ssl/certs", "/usr/local/share/ca-certificates", "/usr/local/lib/agent", "/usr/lib/python3/dist-packages/certifi",
	"/usr/share/ca-certificates", "/etc/ca-certificates", "/var/lib/agentd", "/run/agentd",
}

var setupFiles = map[string]bool{
	"/etc/passwd": true, "/etc/group": true, "/etc/shadow": true, "/.dockerenv": true,
	"/etc/pip.conf": true, "/usr/lib": true, "/usr/lib/python3": true, "/usr/lib/python3/dist-packages": true,
	"/usr/lib/python3/dist-packages/pip": true, "/usr/lib/python3/dist-packages/pip/_vendor": true,
	"/etc/hostname": true, "/etc/hosts": true, "/etc/resolv.conf": true, "/etc/mtab": true,
	"/usr": true, "/usr/local": true, "/usr/local/share": true, "/usr/local/lib": true, "/var": true,
	"/var/lib": true, "/run": true, "/etc": true, "/etc/ssl": true, "/home": true, "/tmp": true, "/var/tmp": true,
}

func setupPath(p string) bool {
	if setupFiles[p] || slices.Contains(systemPaths, p) || p == "/Users" {
		return true
	}
	if _, shim := persona.IsShim(p); shim {
		return true
	}
	for _, pre := range setupPrefixes {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	// pip's vendored certifi bundle, wherever it is.
	return strings.Contains(p, "/certifi/") || strings.HasSuffix(p, "/certifi")
}

// cgroupDir is where the sandbox sees its cgroup's counters
// (mcptools.CgroupFiles), which are exact where sampling from outside is not.
const cgroupDir = "/sys/fs/cgroup"

// cgroupCounts are the figures of the cgroup's counters.
type cgroupCounts struct {
	pidsMaxHits int64 // forks refused at the pids limit
	memPeak     int64
	memFailures int64 // allocations that hit the memory limit
	oomKills    int64
	cpuSeconds  float64 // CPU time of the whole container, up to now
}

// parseCgroup parses "FILE FIELDS..." lines (untrusted, from the sandbox).
func parseCgroup(out string) cgroupCounts {
	var c cgroupCounts
	num := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return max(n, 0) }
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kv := map[string]int64{}
		for i := 1; i+1 < len(f); i += 2 {
			kv[f[i]] = num(f[i+1])
		}
		switch f[0] {
		case "pids/pids.events", "pids.events":
			c.pidsMaxHits = max(c.pidsMaxHits, kv["max"])
		case "memory/memory.max_usage_in_bytes", "memory.peak":
			c.memPeak = max(c.memPeak, num(f[1]))
		case "memory/memory.failcnt":
			c.memFailures = max(c.memFailures, num(f[1]))
		case "memory/memory.oom_control":
			c.oomKills = max(c.oomKills, kv["oom_kill"])
		case "memory.events":
			c.memFailures = max(c.memFailures, kv["max"])
			c.oomKills = max(c.oomKills, kv["oom_kill"])
		case "cpuacct/cpuacct.usage": // nanoseconds
			c.cpuSeconds = max(c.cpuSeconds, float64(num(f[1]))/1e9)
		case "cpu.stat": // microseconds
			c.cpuSeconds = max(c.cpuSeconds, float64(kv["usage_usec"])/1e6)
		}
	}
	return c
}

// The user's writable places (userPlaces) are each a tmpfs with a size, so
// a skill that writes until the disk is full stops there with ENOSPC: the
// evidence's use of each (mcptools.EvidenceDisk) says where.

// parseFull reads df -P -B1 output (untrusted: from the sandbox) and
// returns "MOUNT: USED of SIZE bytes" for each file system whose free
// space is under 1% of its size or 256 KiB, whichever is larger (tmpfs
// keeps a few pages back from a writer that hit ENOSPC).
func parseFull(out string) []string {
	var full []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") {
			continue
		}
		size, err1 := strconv.ParseInt(f[1], 10, 64)
		used, err2 := strconv.ParseInt(f[2], 10, 64)
		avail, err3 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || size <= 0 {
			continue
		}
		if avail < max(size/100, 256<<10) {
			s := fmt.Sprintf("%s: %d of %d bytes", f[5], used, size)
			if !slices.Contains(full, s) {
				full = append(full, s)
			}
		}
	}
	return full
}
