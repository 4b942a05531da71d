package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/sweep"
	"github.com/sandboxctl/sandboxctl/traceplan"
	"github.com/sandboxctl/sandboxctl/tracing"
)

func init() {
	register(command{name: "sweep", short: "trace whole corpora of skills, resumably; export and merge sweeps", run: runSweep})
}

const sweepSynopsis = `[flags] --out DIR SRC...
       sandboxctl sweep --resume --out DIR
       sandboxctl sweep export [flags] SWEEP_DIR --to DIR
       sandboxctl sweep merge --out DIR SHARD_DIR...

Traces every skill of the sources, a few at a time, and keeps the state in
DIR/sweep.db so that an interrupted sweep (Ctrl-C, kill -9, a reboot) is
finished by --resume with nothing lost and nothing recorded twice. A source is
a skill, a folder of skills at any depth (a registry mirror's publisher/skill
layout included), a list file (one path a line, # comments) or a .zip, .tar,
.tar.gz, .tgz, .tar.xz or .tar.zst archive.

A skill already judged under the same key (its content, the plan's settings
and this sandboxctl's version, the image) is not traced again; --force traces
every skill. A trace that fails to observe is retried with backoff; a skill
that fails every attempt is marked failed and skipped. Verdicts are never
retried.

DIR receives runs/ (one run folder per skill), results.jsonl, summary.json,
diff.json (against the previous sweep of the same sources) and index.html.
Progress goes to stderr: one line rewritten in place on a terminal, plain
lines otherwise.

Exit codes: 0 every skill judged, none malicious; 1 at least one skill judged
malicious; 2 usage; 3 the sweep did not finish (resume it); 4 finished, but
some skills failed every attempt (and none was malicious).

Examples:
  sandboxctl sweep --out /srv/sweeps/nightly /srv/mirror
  sandboxctl sweep --parallel 3 --out sw skills.zip more-skills/ list.txt
  sandboxctl sweep --resume --out sw
  sandboxctl sweep --shard 1/4 --out sw-1 /srv/mirror
  sandboxctl sweep export sw --to corpus --osv
  sandboxctl sweep merge --out sw sw-0 sw-1 sw-2 sw-3`

// exitSkillsFailed is sweep's exit code when it finished but skills
// failed every attempt.
const exitSkillsFailed = 4

type sweepFlags struct {
	trace              traceFlags
	out, shard, prefix string
	parallel, attempts int
	warm               int
	budget, backoff    time.Duration
	lease              time.Duration
	resume, force      bool
	maxEntries         int

	srcs    []string // the sources, absolute
	shardOf sweep.Shard
}

// register adds sweep's flags to fs.
func (f *sweepFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.out, "out", "", "the sweep folder: state, run folders and outputs (required)")
	fs.IntVar(&f.parallel, "parallel", sweep.DefaultParallel, "traces run at once")
	fs.IntVar(&f.warm, "warm", 0, "keep this many container pairs ready (home seeded, jail up, tool server started) for the next skills; after kill -9, sandboxctl gc removes them")
	fs.BoolVar(&f.resume, "resume", false, "finish the unfinished sweep in --out (after Ctrl-C, kill -9 or a reboot); with SRC, start one when none is unfinished")
	fs.BoolVar(&f.force, "force", false, "trace every skill, even those judged before under the same key")
	fs.StringVar(&f.shard, "shard", "", "trace only shard i of N (i/N, by skill hash); merge the shards with sweep merge")
	fs.DurationVar(&f.budget, "budget", 0, "wall-clock budget of one attempt at a skill, setup included (default: --timeout for each pass that may run, watched, unwatched and two rounds of twins, plus 2m)")
	fs.IntVar(&f.attempts, "attempts", sweep.DefaultMaxAttempts, "attempts at a skill whose trace fails to observe before it is marked failed")
	fs.DurationVar(&f.backoff, "backoff", sweep.DefaultBackoff, "wait after a failed attempt, doubled after each")
	fs.StringVar(&f.prefix, "trace-prefix", "sweep", "start of every trace id (on the containers' sandboxctl.trace label)")
	fs.IntVar(&f.maxEntries, "max-entries", sweep.DefaultMaxEntries, "entries (files and folders) one archive source may unpack to; an archive over it is refused")
	fs.DurationVar(&f.lease, "lease", sweep.DefaultLeaseTTL, "how long a skill stays claimed by a worker that stopped renewing it")
	f.trace.register(fs, corpusFlags()...)
}

func runSweep(ctx context.Context, e env, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "export":
			return runSweepExport(ctx, e, args[1:])
		case "merge":
			return runSweepMerge(ctx, e, args[1:])
		}
	}
	f, code, ok := parseSweep(e, args)
	if !ok {
		return code
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		e.errorf("sweep folder: %v", err)
		return exitFailed
	}
	st, err := sweep.OpenStore(ctx, filepath.Join(f.out, sweep.DBFile))
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	defer st.Close()
	latest, err := st.LatestRun(ctx)
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	if !f.resumeOrStart(e, latest) {
		return exitUsage
	}
	plan, err := f.trace.plan(e, f.srcs[0], time.Now())
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	// Sources first: a bad one is a usage error, before any engine.
	var skills []sweep.Skill
	if !f.resume {
		if skills, ok = f.discover(ctx, e); !ok {
			return exitUsage
		}
	}
	eng, ok := openEngine(ctx, e, plan.Image)
	if !ok {
		return exitFailed
	}
	defer eng.rt.Close()
	plan.Image = eng.image
	if f.budget == 0 {
		f.budget = orchestrator.AttemptBudget(plan)
	}
	planHash, err := sweep.PlanHash(plan, judgeVersion())
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	runID, code, ok := f.begin(ctx, e, st, latest, skills, plan, planHash, eng.imageID)
	if !ok {
		return code
	}
	return f.run(ctx, e, st, eng, plan, runID)
}

// parseSweep reads sweep's command line; ok is false when the caller
// should return code.
func parseSweep(e env, args []string) (f sweepFlags, code int, ok bool) {
	fs := newFlags(e, "sweep", sweepSynopsis)
	f.register(fs)
	if code, ok := parseFlags(fs, interspersed(fs, args)); !ok {
		return f, code, false
	}
	f.srcs = fs.Args()
	switch {
	case f.out == "":
		e.errorf("sweep needs --out DIR")
		e.hintf("usage: sandboxctl sweep --out DIR SRC...")
		return f, exitUsage, false
	case len(f.srcs) == 0 && !f.resume:
		e.errorf("sweep needs at least one SRC (or --resume)")
	case f.parallel < 1:
		e.errorf("--parallel must be at least 1, got %d", f.parallel)
	case f.maxEntries < 1:
		e.errorf("--max-entries must be at least 1, got %d", f.maxEntries)
	case f.attempts < 1:
		e.errorf("--attempts must be at least 1, got %d", f.attempts)
	case f.warm < 0:
		e.errorf("--warm cannot be negative, got %d", f.warm)
	case f.budget < 0 || f.backoff < 0 || f.lease < 3*time.Second:
		e.errorf("--budget and --backoff cannot be negative, and --lease must be at least 3s")
	case f.resume && f.force:
		e.errorf("--resume finishes a sweep; --force starts one over: choose one")
	case f.trace.driver == traceplan.DriverReplay:
		e.errorf("sweep cannot replay: a transcript belongs to one skill")
	default:
		if f.parseSources(e) {
			return f, exitClean, true
		}
	}
	return f, exitUsage, false
}

// parseSources reads --shard and makes the sources absolute; on a problem
// it has said what and returns false.
func (f *sweepFlags) parseSources(e env) bool {
	if f.shard != "" {
		var err error
		if f.shardOf, err = sweep.ParseShard(f.shard); err != nil {
			e.errorf("--shard: %v", err)
			return false
		}
	}
	for i, s := range f.srcs {
		abs, err := filepath.Abs(s)
		if err != nil {
			e.errorf("%v", err)
			return false
		}
		f.srcs[i] = abs
	}
	return true
}

// resumeOrStart settles whether the sweep resumes the unfinished one in
// --out (latest, when it is unfinished) or starts one, and with which
// sources. On a usage problem it has said what and returns false.
func (f *sweepFlags) resumeOrStart(e env, latest *sweep.RunInfo) bool {
	unfinished := latest != nil && latest.Finished.IsZero()
	switch {
	case f.resume && !unfinished && len(f.srcs) == 0:
		e.errorf("nothing to resume in %s: no unfinished sweep", f.out)
		e.hintf("give the sources to start a sweep: with --resume, a sweep starts when none is unfinished")
		return false
	case f.resume && !unfinished:
		f.resume = false // nothing to finish: start (a retried pod or job passes --resume always)
	case f.resume:
		if len(f.srcs) > 0 && !slices.Equal(f.srcs, latest.Sources) {
			e.errorf("the sources differ from the sweep being resumed (%s)", strings.Join(latest.Sources, ", "))
			e.hintf("resume with no SRC: the sweep's own sources are used")
			return false
		}
		if latest.Shard != f.shardOf.String() && f.shard != "" {
			e.errorf("the sweep being resumed is shard %q, not %q", latest.Shard, f.shardOf.String())
			return false
		}
		f.srcs = latest.Sources
	case unfinished && !f.force:
		e.errorf("%s holds an unfinished sweep (%s)", f.out, latest.ID)
		e.hintf("finish it with: sandboxctl sweep --resume --out %s (or start over with --force)", f.out)
		return false
	}
	return true
}

// discover finds the skills of the sources; on a problem it has said what
// and returns false.
func (f *sweepFlags) discover(ctx context.Context, e env) ([]sweep.Skill, bool) {
	skills, err := sweep.Discover(ctx, f.srcs, sweep.DiscoverOptions{ExtractDir: filepath.Join(f.out, sweep.SourcesDir),
		Limits: sweep.ArchiveLimits{MaxEntries: f.maxEntries}})
	if err != nil {
		e.errorf("%v", err)
		if errors.Is(err, os.ErrNotExist) {
			e.hintf("a source is a skill, a folder of skills, a list file or an archive")
		}
		return nil, false
	}
	if len(skills) == 0 {
		e.errorf("the sources hold no skill (a folder with SKILL.md, or .md files)")
		return nil, false
	}
	return skills, true
}

// begin resumes the sweep latest, or begins one with the skills of the
// shard, and returns its id; ok is false when the caller should return
// code.
func (f *sweepFlags) begin(ctx context.Context, e env, st *sweep.Store, latest *sweep.RunInfo, skills []sweep.Skill,
	plan traceplan.Plan, planHash, imageID string) (runID string, code int, ok bool) {
	if f.resume {
		if latest.PlanHash != planHash || latest.Image != imageID {
			e.errorf("the trace settings, the sandboxctl version or the image differ from the sweep being resumed")
			e.hintf("resume with the flags and the binary the sweep started with, or start a new sweep")
			return "", exitUsage, false
		}
		fmt.Fprintf(e.stderr, "sandboxctl: resuming sweep %s\n", latest.ID)
		return latest.ID, exitClean, true
	}
	var items []sweep.Item
	for _, s := range skills {
		if !f.shardOf.Holds(s) {
			continue
		}
		items = append(items, sweep.NewItem(s, planHash, imageID))
	}
	now := time.Now()
	runID = newTraceID(now)
	queued, err := st.Begin(ctx, sweep.RunInfo{ID: runID, Started: now, Sources: f.srcs, PlanHash: planHash, Image: imageID,
		Shard: f.shardOf.String(), Version: version(), Driver: plan.Driver.Kind, Model: plan.Driver.Model}, items, sweep.BeginOptions{Force: f.force})
	if err != nil {
		e.errorf("%v", err)
		return "", exitFailed, false
	}
	what := fmt.Sprintf("%d skill(s)", len(items))
	if f.shardOf.Count > 1 {
		what += fmt.Sprintf(" in shard %s of %d", f.shardOf, len(skills))
	}
	fmt.Fprintf(e.stderr, "sandboxctl: sweep %s: %s, %d to trace, %d at a time\n", runID, what, queued, f.parallel)
	return runID, exitClean, true
}

// run traces the sweep runID's skills, writes its outputs whatever
// happened, prints its summary and returns sweep's exit code.
func (f *sweepFlags) run(ctx context.Context, e env, st *sweep.Store, eng engine, plan traceplan.Plan, runID string) int {
	host, _ := os.Hostname()
	tty := e.isTerminal != nil && e.isTerminal()
	ui := newSweepUI(e.stderr, tty)
	runner := &orchestrator.Runner{Runtime: eng.rt, Binary: eng.bin, Version: version(), Log: debugLog(e), EngineDiff: f.trace.engineDiff}
	if f.warm > 0 {
		tmpl := plan
		tmpl.TraceID = f.prefix + "-" + runID + "-warm"
		pool, err := orchestrator.NewPool(ctx, runner, tmpl, f.warm)
		if err != nil {
			e.errorf("%v", err)
			return exitUsage
		}
		defer func() {
			if err := pool.Close(); err != nil {
				e.warnf("warm pairs: %v", err)
			}
		}()
		runner.Pool = pool
	}
	var tracer tracing.Tracer = runner
	if f.trace.store != "" {
		fp, err := openFingerprinted(ctx, e, f.trace.store, f.trace.stableAfter)
		if err != nil {
			e.errorf("%v", err)
			return exitFailed
		}
		defer fp.st.Close()
		tracer = fp.tracer(runner)
	}
	runErr := sweep.Run(ctx, sweep.Options{
		Dir: f.out, Store: st, RunID: runID,
		Tracer: tracer, Plan: plan,
		Parallel: f.parallel, Budget: f.budget, MaxAttempts: f.attempts, Backoff: f.backoff, LeaseTTL: f.lease,
		Owner: sweep.NewOwner(host, os.Getpid()), Dead: sweep.DeadOnHost(host), TraceIDPrefix: f.prefix,
		Cleanup: func(ctx context.Context, traceID string) error {
			return gcPasses(ctx, eng.rt, traceID)
		},
		Progress: ui.event,
	})
	ui.close()
	// Outputs are written whatever happened: they say what is done.
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	sum, res, err := sweep.Outputs(octx, st, runID, f.out, time.Now())
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	writeSweepSummary(e.stdout, sum, res, f.out)
	if runErr != nil {
		e.errorf("%v", runErr)
		e.hintf("finish it with: sandboxctl sweep --resume --out %s", f.out)
		return exitFailed
	}
	return sweepExit(sum)
}

// sweepExit is the exit code of a sweep from its summary.
func sweepExit(sum sweep.Summary) int {
	switch {
	case !sum.Complete:
		return exitFailed
	case sum.ByVerdict["malicious"] > 0:
		return exitFindings
	case sum.Failed > 0:
		return exitSkillsFailed
	}
	return exitClean
}

// writeSweepSummary prints a sweep's counts, its diff and where its
// outputs are.
func writeSweepSummary(w io.Writer, sum sweep.Summary, res []sweep.Result, dir string) {
	var vs []string
	for v, n := range sum.ByVerdict {
		vs = append(vs, fmt.Sprintf("%s %d", v, n))
	}
	sort.Strings(vs)
	fmt.Fprintf(w, "sweep %s: %d skills", sum.Run.ID, sum.Total)
	if len(vs) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(vs, ", "))
	}
	fmt.Fprintf(w, "\n  traced %d, reused %d, failed %d, refused %d, left %d, in %.0fs\n",
		sum.Traced, sum.Cached, sum.Failed, sum.Refused, sum.Pending, float64(sum.DurationMS)/1000)
	for _, r := range res {
		if r.Status == sweep.StatusDone && r.Verdict == "malicious" {
			fmt.Fprintf(w, "  malicious  %s  %s\n", oneLine(r.Skill.ID), strings.Join(r.Deciding, ", "))
		}
	}
	for _, r := range res {
		if r.Status == sweep.StatusFailed {
			fmt.Fprintf(w, "  failed     %s  %s\n", oneLine(r.Skill.ID), oneLine(r.Error))
		}
	}
	if d := sum.Diff; d != nil {
		fmt.Fprintf(w, "  since %s: %d new malicious, %d changed verdicts, %d changed skills, %d added, %d removed\n",
			d.Previous, len(d.NewMalicious), len(d.ChangedVerdicts), len(d.ContentChanged), len(d.Added), len(d.Removed))
	}
	fmt.Fprintf(w, "  %s\n", filepath.Join(dir, sweep.FileIndex))
}

// sweepUI shows a sweep's progress on stderr: on a terminal, one line
// rewritten in place (counts by verdict, rate, ETA); otherwise a plain line
// per finished, retried or failed skill.
type sweepUI struct {
	w   io.Writer
	tty bool
	mu  sync.Mutex
	n   int
}

func newSweepUI(w io.Writer, tty bool) *sweepUI { return &sweepUI{w: w, tty: tty} }

func (u *sweepUI) event(ev sweep.Event) {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := ev.Stats
	done := s.Total - s.Left
	if u.tty {
		if ev.Kind == sweep.EventFailed || ev.Kind == sweep.EventRetry {
			fmt.Fprintf(u.w, "\r\x1b[K  %s %s: %s\n", ev.Kind, oneLine(ev.Item.ID), oneLine(ev.Err))
		}
		line := fmt.Sprintf("[%d/%d] %s · running %d · %s", done, s.Total, verdictCounts(s), s.Running, rateETA(s))
		fmt.Fprintf(u.w, "\r\x1b[K%s", safeCut(line, 150))
		u.n++
		return
	}
	switch ev.Kind {
	case sweep.EventDone:
		fmt.Fprintf(u.w, "sandboxctl: [%d/%d] %s: %s (%s)\n", done, s.Total, oneLine(ev.Item.ID), ev.Verdict, rateETA(s))
	case sweep.EventRetry:
		fmt.Fprintf(u.w, "sandboxctl: [%d/%d] %s: attempt %d failed, will retry: %s\n", done, s.Total, oneLine(ev.Item.ID), ev.Attempt, oneLine(ev.Err))
	case sweep.EventFailed:
		fmt.Fprintf(u.w, "sandboxctl: [%d/%d] %s: failed: %s\n", done, s.Total, oneLine(ev.Item.ID), oneLine(ev.Err))
	}
}

func (u *sweepUI) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.tty && u.n > 0 {
		fmt.Fprint(u.w, "\r\x1b[K")
	}
}

func verdictCounts(s sweep.Stats) string {
	var parts []string
	for _, v := range []string{"malicious", "suspicious", "clean", "inconclusive"} {
		parts = append(parts, fmt.Sprintf("%s %d", v, s.ByVerdict[v]))
	}
	parts = append(parts, fmt.Sprintf("failed %d", s.Failed))
	return strings.Join(parts, " · ")
}

func rateETA(s sweep.Stats) string {
	r := s.Rate()
	if r == 0 {
		return "rate -"
	}
	return fmt.Sprintf("%.0f/h · ETA %s", r, s.ETA().Round(time.Second))
}

func safeCut(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

const sweepExportSynopsis = `[flags] SWEEP_DIR --to DIR

Writes the sweep's confirmed examples in a corpus layout:
DIR/sandbox_verified/<trace_id>/ with the skill's files (skill/), report.json,
manifest.json (skill sha256, source, verdict, rule ids, incidents, evidence
summary, sandboxctl version, image digest; schema sweep/schema/manifest.schema.json)
and, with --osv, an OSV-style record (osv.json) per malicious skill. Only
malicious skills by default. Planted secret values are never exported unless
--include-secrets.

Examples:
  sandboxctl sweep export sw --to corpus
  sandboxctl sweep export sw --to corpus --osv --rule SBX-EXFIL-001 --min-confidence high
  sandboxctl sweep export sw --to corpus --verdict malicious,suspicious`

func runSweepExport(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "sweep export", sweepExportSynopsis)
	to := fs.String("to", "", "the corpus folder to write sandbox_verified/ into (required)")
	var verdicts, ruleIDs stringList
	fs.Var(&verdicts, "verdict", "export skills of these verdicts (default malicious); repeat or separate with commas")
	fs.Var(&ruleIDs, "rule", "export only skills where one of these rules fired; repeat or separate with commas")
	minConf := fs.String("min-confidence", "", "export only skills with an incident (of --rule, when given) of at least this confidence: low, medium, high")
	osv := fs.Bool("osv", false, "also write an OSV-style record (osv.json) per malicious skill")
	secrets := fs.Bool("include-secrets", false, "put the planted (fake) secret values in the exported report.json")
	if code, ok := parseFlags(fs, interspersed(fs, args)); !ok {
		return code
	}
	if fs.NArg() != 1 || *to == "" {
		e.errorf("sweep export needs one SWEEP_DIR and --to DIR")
		e.hintf("usage: sandboxctl sweep export [flags] SWEEP_DIR --to DIR")
		return exitUsage
	}
	for _, v := range verdicts {
		if !slices.Contains([]string{"malicious", "suspicious", "clean", "inconclusive"}, v) {
			e.errorf("--verdict %q: want malicious, suspicious, clean or inconclusive", v)
			return exitUsage
		}
	}
	var conf rules.Confidence
	if *minConf != "" {
		conf = rules.Confidence(*minConf)
		if conf.Rank() == 0 {
			e.errorf("--min-confidence %q: want low, medium or high", *minConf)
			return exitUsage
		}
	}
	got, err := sweep.Export(ctx, fs.Arg(0), *to, sweep.ExportOptions{
		Verdicts: verdicts, Rules: ruleIDs, MinConfidence: conf, OSV: *osv, IncludeSecrets: *secrets,
	})
	for _, x := range got {
		fmt.Fprintf(e.stdout, "%s\t%s\n", x.Dir, oneLine(x.SkillID))
	}
	fmt.Fprintf(e.stderr, "sandboxctl: exported %d example(s) to %s\n", len(got), filepath.Join(*to, sweep.ExportRoot))
	if err != nil {
		e.errorf("%v", err)
		if errors.Is(err, os.ErrNotExist) {
			e.hintf("SWEEP_DIR is a sweep's --out folder, with results.jsonl")
		}
		return exitFailed
	}
	return exitClean
}

const sweepMergeSynopsis = `--out DIR SHARD_DIR...

Merges the finished sweeps of shards (sandboxctl sweep --shard i/N, one
folder each) into one sweep folder: one summary, results.jsonl and index.html
over every shard, with the run folders copied. The shards must cover every
index of N once (--partial merges fewer).`

func runSweepMerge(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "sweep merge", sweepMergeSynopsis)
	out := fs.String("out", "", "the merged sweep folder (required)")
	partial := fs.Bool("partial", false, "merge even when some shards are missing")
	if code, ok := parseFlags(fs, interspersed(fs, args)); !ok {
		return code
	}
	if fs.NArg() == 0 || *out == "" {
		e.errorf("sweep merge needs --out DIR and at least one SHARD_DIR")
		return exitUsage
	}
	for _, d := range fs.Args() {
		if filepath.Clean(d) == filepath.Clean(*out) {
			e.errorf("--out %s is also a shard: merge into a new folder", d)
			return exitUsage
		}
	}
	sum, err := sweep.Merge(ctx, *out, fs.Args(), sweep.MergeOptions{RunID: newTraceID(time.Now()), Partial: *partial})
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	f, err := os.Open(filepath.Join(*out, sweep.FileResults))
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	res, err := sweep.ReadResults(f)
	f.Close()
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	writeSweepSummary(e.stdout, sum, res, *out)
	return sweepExit(sum)
}
