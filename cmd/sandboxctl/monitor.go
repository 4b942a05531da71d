package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/monitor"
	"github.com/sandboxctl/sandboxctl/monitor/audit"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/traceplan"
	"github.com/sandboxctl/sandboxctl/tracing"
)

func init() {
	register(command{name: "monitor", short: "run a skill many times and catch behaviour that activates at run N", run: runMonitor})
}

const monitorSynopsis = `[flags] PATH

Runs the skill at PATH many times and compares what should stay the same
between the runs: chained runs start from the state the runs before them
left (the home and temp folders), independent runs start fresh. A run that
does something new is re-run from the same state, and without each file it
carried, to confirm and name what triggers it (docs/monitor.md).

Each run's tool outputs are hashed with their volatile parts (times, temp
names, ids) normalised; a run outside the skill's declared envelope
(allowed-tools, network and filesystem scopes in its frontmatter) is
reported, and is a deviation where earlier runs stayed inside it. The
report's risk tier (--tier, default computed from the runs' network,
filesystem and environment access) carries its policy: runs per cell and
how much of the skill's use to trace.

Writes each run's folder under DIR/runs/, the report in DIR/monitor.json,
DIR/monitor.txt and DIR/monitor.html (one self-contained page with charts
per run), and prints the report.

Examples:
  sandboxctl monitor --runs 5 --out /tmp/mon ./my-skill/
  sandboxctl monitor --runs 8 --cells chained --format json --out /tmp/mon ./my-skill/
  sandboxctl monitor --tier high --out /tmp/mon ./my-skill/   # 20 runs per cell
  sandboxctl monitor --runs 3 --vary tz=Asia/Tokyo,tz=Pacific/Kiritimati,user=alice --out /tmp/mon ./my-skill/
  sandboxctl monitor --runs 2 --cells independent --vary clock=00:00,clock=03:00,clock=06:00,clock=+1y --out /tmp/mon ./my-skill/
  sandboxctl monitor --runs 2 --cells independent --vary monitoring=visible,dns=all --out /tmp/mon ./my-skill/`

type monitorFlags struct {
	trace                  traceFlags
	runs, candidates, warm int
	cells, out, format     string
	vary, tier             string
	replay                 bool
}

// register adds monitor's flags to fs.
func (f *monitorFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.runs, "runs", 5, "runs per cell (at least 2)")
	fs.StringVar(&f.cells, "cells", "chained,independent", "the cells to run, in order: chained (state carried from run to run), independent (fresh every run)")
	fs.StringVar(&f.vary, "vary", "", "conditions, each a cell of fresh runs compared with the independent cell: NAME=VALUE,... with NAME tz (an IANA time zone), user, hostname, clock (+3d, -2h, 03:00, sat, 2027-01-01T03:00), monitoring (visible or hidden) or dns (all or none)")
	fs.StringVar(&f.tier, "tier", monitor.TierAuto, "risk tier: auto (computed from what the runs did), high, medium or low; a tier given without --runs sets the runs per cell to its recommended count (high 20, medium 10, low 5)")
	fs.IntVar(&f.warm, "warm", 1, "warm sandbox pairs kept ready for the runs that start fresh (independent cells); 0: none")
	fs.BoolVar(&f.replay, "replay", true, "once a carried file is named as an activation's trigger, run 1..K again from nothing to see it come back at run K")
	fs.IntVar(&f.candidates, "candidates", 3, "carried files tried one at a time, when confirming an activation, to name the one that carries it")
	fs.StringVar(&f.out, "out", "", "the monitor's folder (required): runs/, monitor.json, monitor.txt, monitor.html")
	fs.StringVar(&f.format, "format", "text", "what goes to stdout: text or json")
	// The tool calls are the same in every run: literal or replayed.
	f.trace.register(fs, withScope(scopeMonitor),
		withDrivers(traceplan.DriverLiteral, traceplan.DriverLiteral, traceplan.DriverReplay),
		onlyFlags("driver", "transcript", "prompt", "image", "seed", "time-zone", "timeout"))
}

// monitorCmd is monitor's command line: the flags, the skill's path and
// the monitor's options.
type monitorCmd struct {
	monitorFlags
	path string
	opts monitor.Options
}

func runMonitor(ctx context.Context, e env, args []string) int {
	c, code, ok := parseMonitor(e, args)
	if !ok {
		return code
	}
	sk, err := skill.Load(c.path, skill.Options{})
	if err != nil {
		e.errorf("%v", err)
		skillHint(e, err)
		return exitUsage
	}
	c.opts.Declared = monitor.DeclaredEnvelope(sk.AllowedTools, sk.Frontmatter)
	if c.trace.seed == "" {
		var b [16]byte
		rand.Read(b[:])
		c.trace.seed = hex.EncodeToString(b[:])
	}
	base, err := c.trace.plan(e, c.path, time.Now())
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	// One pass per run: an unwatched second pass, or twin traces, would
	// run the skill again and move its state on.
	base.Stealth, base.Twins = traceplan.StealthOff, traceplan.TwinsOff
	return c.run(ctx, e, base, sk.Name)
}

// parseMonitor reads monitor's command line; ok is false when the caller
// should return code.
func parseMonitor(e env, args []string) (c monitorCmd, code int, ok bool) {
	fs := newFlags(e, "monitor", monitorSynopsis)
	c.register(fs)
	if code, ok := parseFlags(fs, interspersed(fs, args)); !ok {
		return c, code, false
	}
	if fs.NArg() != 1 {
		e.errorf("monitor needs exactly one skill PATH")
		e.hintf("usage: sandboxctl monitor --runs N --out DIR PATH")
		return c, exitUsage, false
	}
	c.path = fs.Arg(0)
	tier, err := monitor.ParseTier(c.tier)
	if err != nil {
		e.errorf("--tier: %v", err)
		return c, exitUsage, false
	}
	runsSet := false
	fs.Visit(func(fl *flag.Flag) { runsSet = runsSet || fl.Name == "runs" })
	c.runs = monitorRuns(tier, c.runs, runsSet)
	c.opts = monitor.Options{Runs: c.runs, Candidates: c.candidates, Tier: tier, Replay: c.replay}
	for s := range strings.SplitSeq(c.cells, ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.opts.Cells = append(c.opts.Cells, s)
		}
	}
	if c.opts.Vary, err = monitorVary(c.vary); err != nil {
		e.errorf("--vary: %v", err)
		return c, exitUsage, false
	}
	switch err := c.opts.Validate(); {
	case err != nil:
		e.errorf("%v", err)
	case c.out == "":
		e.errorf("monitor needs --out DIR")
	case c.format != "text" && c.format != "json":
		e.errorf("unknown format %q (want text or json)", c.format)
	case c.trace.driver != traceplan.DriverLiteral && c.trace.driver != traceplan.DriverReplay:
		e.errorf("monitor holds the tool calls fixed across runs: --driver literal or replay, not %q", c.trace.driver)
	case c.candidates < 1:
		e.errorf("--candidates must be at least 1")
	case c.warm < 0:
		e.errorf("--warm cannot be negative, got %d", c.warm)
	default:
		return c, exitClean, true
	}
	return c, exitUsage, false
}

// monitorVary reads --vary: conditions NAME=VALUE separated by commas.
func monitorVary(vary string) ([]monitor.Condition, error) {
	var out []monitor.Condition
	for v := range strings.SplitSeq(vary, ",") {
		if strings.TrimSpace(v) == "" {
			continue
		}
		c, err := monitor.ParseCondition(v)
		if err == nil && c.Name == monitor.CondClock {
			_, err = traceplan.ClockOffset(c.Value, time.Now(), nil)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// run runs the monitor with the engine from the plan base, writes its
// folder, prints its report and returns monitor's exit code.
func (c *monitorCmd) run(ctx context.Context, e env, base traceplan.Plan, skillName string) int {
	rt, ok := openDocker(ctx, e)
	if !ok {
		return exitFailed
	}
	defer rt.Close()
	tty := e.isTerminal != nil && e.isTerminal()
	ui := newProgressUI(e.stderr, tty)
	bin, err := sandboxBinary(ctx, e, ui)
	if err != nil && bin == "" {
		ui.Close()
		e.errorf("%v", err)
		return exitFailed
	}
	imgLog := newImageLog(ui, imageLogPath(e))
	defer imgLog.Close()
	runner := &orchestrator.Runner{
		Runtime: rt, Binary: bin, Version: version(), Log: debugLog(e), ImageProgress: imgLog,
		Progress: func(pr orchestrator.Progress) {
			if pr.Call == nil {
				ui.Phase(pr.Phase, pr.Message)
			}
		},
	}
	if c.warm > 0 && slices.Contains(c.opts.Cells, monitor.Independent) {
		// Runs with carried state never take a warm pair (their home is
		// made with the files they restore): the pool serves the fresh ones.
		tmpl := base
		tmpl.TraceID = base.TraceID + "-warm"
		pool, err := orchestrator.NewPool(ctx, runner, tmpl, c.warm)
		if err != nil {
			ui.Close()
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
	alog, err := audit.Create(filepath.Join(c.out, "audit"), "sandboxctl.monitor/"+base.TraceID)
	if err != nil {
		ui.Close()
		e.errorf("%v", err)
		e.hintf("--out must be a new folder (or one without an audit log)")
		return exitUsage
	}
	defer alog.Close()
	opts := c.opts
	opts.Plan, opts.Dir = base, c.out
	opts.TraceID = func() string { return newTraceID(time.Now()) }
	opts.Observed = func(o monitor.Observation) error {
		b, err := json.Marshal(o)
		if err != nil {
			return err
		}
		return alog.Append(b)
	}
	// Each run's phase, by its label (its folder's name), before it runs.
	tracer := tracing.Func(func(ctx context.Context, p traceplan.Plan, dir string) (*reports.Report, error) {
		ui.Phase("monitor", filepath.Base(dir))
		return runner.Trace(ctx, p, dir)
	})
	rep, runErr := monitor.Run(ctx, tracer, opts)
	ui.Close()
	rep.Skill = skillName
	return c.report(e, rep, runErr, alog)
}

// report seals the audit log into rep, writes the monitor's folder, prints
// rep and returns monitor's exit code.
func (c *monitorCmd) report(e env, rep monitor.Report, runErr error, alog *audit.Log) int {
	if cp, err := alog.Checkpoint(); err != nil {
		runErr = errors.Join(runErr, err)
	} else {
		rep.Audit = &monitor.Audit{Checkpoint: cp, VerifierKey: alog.VerifierKey(), KeyFingerprint: audit.Fingerprint(alog.VerifierKey())}
	}
	if err := writeMonitorDir(c.out, rep); err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	if c.format == "json" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintf(e.stdout, "%s\n", b)
	} else if err := monitor.WriteText(e.stdout, rep); err != nil {
		e.errorf("write report: %v", err)
		return exitFailed
	}
	fmt.Fprintf(e.stderr, "sandboxctl: monitor folder %s\n", c.out)
	if rep.Audit != nil {
		// Recorded apart from the folder, it is what makes a later
		// audit verify more than a consistency check.
		fmt.Fprintf(e.stderr, "sandboxctl: audit key %s (record it elsewhere, e.g. in %s: audit verify then checks the log against it)\n",
			rep.Audit.KeyFingerprint, auditPinsPath(e))
	}
	if runErr != nil {
		e.errorf("%v", runErr)
		return exitFailed
	}
	if rep.Verdict == monitor.Variant || rep.Verdict == monitor.Activation {
		return exitFindings
	}
	return exitClean
}

// monitorRuns is the runs per cell: --runs when given, else the
// recommended count of a tier given with --tier, else the default (auto:
// the report says when the observed tier recommends more).
func monitorRuns(tier string, runs int, runsSet bool) int {
	if p, ok := monitor.Policy(tier); ok && !runsSet {
		return p.RecommendedRuns
	}
	return runs
}

// writeMonitorDir writes monitor.json, monitor.txt and monitor.html into
// dir.
func writeMonitorDir(dir string, rep monitor.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write monitor folder: %w", err)
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("write monitor.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "monitor.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write monitor.json: %w", err)
	}
	var txt strings.Builder
	if err := monitor.WriteText(&txt, rep); err != nil {
		return fmt.Errorf("write monitor.txt: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "monitor.txt"), []byte(txt.String()), 0o644); err != nil {
		return fmt.Errorf("write monitor.txt: %w", err)
	}
	var page strings.Builder
	if err := monitor.WriteHTML(&page, rep); err != nil {
		return fmt.Errorf("write monitor.html: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "monitor.html"), []byte(page.String()), 0o644); err != nil {
		return fmt.Errorf("write monitor.html: %w", err)
	}
	return nil
}
