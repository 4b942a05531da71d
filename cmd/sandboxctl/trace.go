package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/fingerprint"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/orchestrator/docker"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

func init() {
	register(command{name: "trace", short: "run a skill in a sandbox and report what it did", run: runTrace})
}

const traceSynopsis = `[flags] PATH

Runs the skill at PATH (a SKILL.md, any .md file, or a skill folder) under an
agent in a throwaway sandbox and writes a report.

Examples:
  sandboxctl trace examples/skills/hello-world
  sandboxctl trace --format json --out /tmp/run1 ./my-skill/
  sandboxctl trace --stealth ./my-skill/     # also run it unwatched, and compare
  sandboxctl trace --clock +1y --monitoring visible ./my-skill/
  OPENAI_API_KEY=... sandboxctl trace --driver llm --model gpt-4o-mini ./SKILL.md`

var skillNameRe = regexp.MustCompile(`[^a-z0-9]+`)

// defaultOut is ./runs/<trace id>-<skill name>.
func defaultOut(traceID, skillPath string) string {
	name := strings.TrimSuffix(filepath.Base(filepath.Clean(skillPath)), ".md")
	if strings.EqualFold(name, "skill") {
		name = filepath.Base(filepath.Dir(filepath.Clean(skillPath)))
	}
	name = strings.Trim(skillNameRe.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	return filepath.Join("runs", traceID+"-"+name)
}

var errNoSkillArg = errors.New("trace needs exactly one skill PATH")

// traceCmd is trace's command line: the trace flags, what goes where, and
// the skill's path.
type traceCmd struct {
	trace           traceFlags
	out, format     string
	failOnFlag      string
	verbose, dryRun bool

	path   string
	failOn *rules.Severity // nil: never
}

// register adds trace's flags to fs: every trace flag, and what goes
// where.
func (c *traceCmd) register(fs *flag.FlagSet) {
	c.trace.register(fs)
	fs.StringVar(&c.out, "out", "", "run folder (default: a new folder under ./runs/)")
	fs.StringVar(&c.format, "format", "text", "what goes to stdout: text, json, sarif or html")
	fs.BoolVar(&c.verbose, "verbose", false, "text format: every finding with its evidence and every token, not only the incidents")
	fs.StringVar(&c.failOnFlag, "fail-on", "high", "exit 1 on findings at or above: critical, high, medium, low, info, or never")
	fs.BoolVar(&c.dryRun, "dry-run", false, "validate the skill, the plan and the provider settings, run nothing")
}

// parseTrace reads trace's command line; ok is false when the caller
// should return code.
func parseTrace(e env, args []string) (c traceCmd, code int, ok bool) {
	fs := newFlags(e, "trace", traceSynopsis)
	c.register(fs)
	if code, ok := parseFlags(fs, interspersed(fs, args)); !ok {
		return c, code, false
	}
	if fs.NArg() != 1 {
		e.errorf("%v", errNoSkillArg)
		e.hintf("usage: sandboxctl trace [flags] PATH")
		return c, exitUsage, false
	}
	c.path = fs.Arg(0)
	var err error
	if c.failOn, err = parseFailOn(c.failOnFlag); err != nil {
		e.errorf("%v", err)
		return c, exitUsage, false
	}
	if !validFormat(c.format) {
		e.errorf("unknown format %q (want text, json, sarif or html)", c.format)
		return c, exitUsage, false
	}
	return c, exitClean, true
}

func runTrace(ctx context.Context, e env, args []string) int {
	c, code, ok := parseTrace(e, args)
	if !ok {
		return code
	}
	p, err := c.trace.plan(e, c.path, time.Now())
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	sk, err := skill.Load(c.path, skill.Options{})
	if err != nil {
		e.errorf("%v", err)
		skillHint(e, err)
		return exitUsage
	}
	urules, ok := loadUserRules(e, c.trace.rules)
	if !ok {
		return exitUsage
	}
	if c.dryRun {
		return dryRun(ctx, e, p, sk)
	}
	if c.trace.stableAfter < 1 {
		e.errorf("--stable-after must be at least 1")
		return exitUsage
	}
	var fpr *fingerprintRun
	extra := urules.Extra()
	if c.trace.store != "" {
		if fpr, err = openFingerprintRun(ctx, e, &c.trace, p, sk); err != nil {
			e.errorf("%v", err)
			return exitFailed
		}
		defer fpr.st.Close()
		extra = fingerprint.Chain(extra, fpr.check.Extra())
	}
	return c.run(ctx, e, p, extra, fpr)
}

// run traces p with the engine, and writes and prints its report.
func (c *traceCmd) run(ctx context.Context, e env, p traceplan.Plan, extra rules.Extra, fpr *fingerprintRun) int {
	rt, ok := openDocker(ctx, e)
	if !ok {
		return exitFailed
	}
	defer rt.Close()
	tty := e.isTerminal != nil && e.isTerminal()
	ui := newProgressUI(e.stderr, tty)
	imgLog := newImageLog(ui, imageLogPath(e))
	defer imgLog.Close()
	bin, ok := traceSandbox(ctx, e, rt, p, ui, imgLog)
	if !ok {
		return exitFailed
	}
	dir := c.out
	if dir == "" {
		dir = defaultOut(p.TraceID, c.path)
	}
	runner := &orchestrator.Runner{
		Runtime:        rt,
		Binary:         bin,
		Version:        version(),
		IncludeSecrets: c.trace.includeSecrets,
		Log:            debugLog(e),
		EngineDiff:     c.trace.engineDiff,
		ImageProgress:  imgLog,
		Extra:          extra,
		Progress:       traceProgress(ui),
	}
	out, runErr := runner.Run(ctx, p, dir)
	ui.Close()
	if out.Report == nil {
		e.errorf("%v", runErr)
		imageHints(e, runErr, imgLog)
		return exitFailed
	}
	if fpr != nil && runErr == nil {
		// The run folder is written again with the fingerprint section.
		if err := fpr.record(ctx, out.Report); err != nil {
			e.errorf("%v", err)
			return exitFailed
		}
		if err := reports.WriteRunDir(dir, out.Report, out.Transcript); err != nil {
			e.errorf("write run folder %s: %v", dir, err)
			return exitFailed
		}
	}
	return c.report(ctx, e, p, dir, out, runErr, imgLog, tty)
}

// traceSandbox readies what the sandbox needs, the static binary for it
// and the sandbox image, and returns the binary. On a first run (a go
// run's binary is dynamic) both take minutes, and neither needs the other:
// the binary is built while the image is found or built. On failure it has
// said why and closed ui.
func traceSandbox(ctx context.Context, e env, rt *docker.Runtime, p traceplan.Plan, ui *progressUI, imgLog *imageLog) (string, bool) {
	type sandboxBin struct {
		path string
		err  error
	}
	binc := make(chan sandboxBin, 1)
	go func() {
		b, err := sandboxBinary(ctx, e, ui)
		binc <- sandboxBin{b, err}
	}()
	if p.Image == "" {
		if _, err := rt.EnsureImage(ctx, imgLog); err != nil {
			<-binc
			ui.Close()
			e.errorf("sandbox image: %v", err)
			imageHints(e, err, imgLog)
			return "", false
		}
	}
	sb := <-binc
	bin, err := sb.path, sb.err
	if err != nil {
		if bin == "" {
			ui.Close()
			e.errorf("%v", err)
			return "", false
		}
		// It runs inside the Debian bookworm sandbox too: fine when the
		// host's libc is not newer than the image's.
		e.warnf("this sandboxctl is dynamically linked (built with cgo) and no static copy could be built (%v); the sandbox runs this same binary", err)
		e.hintf("if the sandbox's tools fail to start, build a static binary: make (CGO_ENABLED=0)")
	}
	return bin, true
}

// traceProgress shows a trace's phases and tool calls in ui.
func traceProgress(ui *progressUI) func(orchestrator.Progress) {
	return func(pr orchestrator.Progress) {
		switch {
		case pr.Call != nil && pr.Result == nil:
			ui.Phase("agent", pr.Call.ID+" "+pr.Call.Name+" "+callSummary(pr.Call.Arguments))
		case pr.Call != nil:
			ui.Event(fmt.Sprintf("%s %s exit %d %s", pr.Call.ID, pr.Call.Name, pr.Result.ExitCode, callSummary(pr.Call.Arguments)))
		default:
			ui.Phase(pr.Phase, pr.Message)
		}
	}
}

// report prints the report of a trace that wrote one, says where its run
// folder and kept containers are, and returns trace's exit code.
func (c *traceCmd) report(ctx context.Context, e env, p traceplan.Plan, dir string, out orchestrator.Outcome, runErr error, imgLog *imageLog, tty bool) int {
	if err := writeFormat(e.stdout, out.Report, c.format, textStyle{color: tty, verbose: c.verbose}); err != nil {
		e.errorf("write report: %v", err)
		return exitFailed
	}
	fmt.Fprintf(e.stderr, "sandboxctl: run folder %s\n", dir)
	if fp := out.Report.Fingerprint; fp != nil {
		fmt.Fprintf(e.stderr, "sandboxctl: fingerprint %s after %d invocation(s), %d anomalie(s), run absorbed: %v\n",
			fp.State, fp.Invocations, len(fp.Anomalies), fp.Absorbed)
	}
	for _, id := range out.Kept {
		fmt.Fprintf(e.stderr, "sandboxctl: kept container %.12s: docker exec -it %.12s bash\n", id, id)
	}
	if len(out.Kept) > 0 {
		e.hintf("remove them with: sandboxctl gc --trace %s", p.TraceID)
	}
	if runErr != nil {
		e.errorf("%v", runErr)
		imageHints(e, runErr, imgLog)
		if errors.Is(runErr, context.Canceled) || ctx.Err() != nil {
			e.hintf("interrupted: the containers were removed; the partial report is in %s", dir)
		}
		return exitFailed
	}
	if reportFails(out.Report, c.failOn) {
		return exitFindings
	}
	return exitClean
}
