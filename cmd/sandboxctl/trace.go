package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/fingerprint"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/persona"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/skill"
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

// traceFlags are the trace command's flags, turned into a Plan by plan().
type traceFlags struct {
	driver, provider, model, baseURL, apiKeyEnv, prompt, transcript         string
	timeout, toolTimeout, grace                                             time.Duration
	turns, tokens                                                           int
	out, format, failOn                                                     string
	keep, dryRun, includeSecrets, engineDiff, stealth, stealthAuto, verbose bool
	user, hostname, seed, image, networkConfig, traceID, persona            string
	rules, store, skillID                                                   string
	timeZone, clock, monitoring, dns, twins                                 string
	stableAfter                                                             int
	memory                                                                  int64
	pids                                                                    int64
	cpus                                                                    float64
}

func (f *traceFlags) register(fs interface {
	StringVar(*string, string, string, string)
	DurationVar(*time.Duration, string, time.Duration, string)
	IntVar(*int, string, int, string)
	Int64Var(*int64, string, int64, string)
	Float64Var(*float64, string, float64, string)
	BoolVar(*bool, string, bool, string)
}) {
	d := orchestrator.DefaultLimits()
	fs.StringVar(&f.driver, "driver", "", "who decides the tool calls: literal, llm or replay (default: llm when --model or --provider is set, else literal)")
	fs.StringVar(&f.provider, "provider", "", "llm provider: openai, openrouter, ollama (or use --base-url)")
	fs.StringVar(&f.model, "model", "", "model name for the llm driver")
	fs.StringVar(&f.baseURL, "base-url", "", "any OpenAI-compatible endpoint (vLLM, llama.cpp, LM Studio, Azure-style)")
	fs.StringVar(&f.apiKeyEnv, "api-key-env", "", "name of the environment variable holding the API key (default: OPENAI_API_KEY or OPENROUTER_API_KEY by provider)")
	fs.StringVar(&f.prompt, "prompt", "", "the user's request to the agent (default: derived from the skill's description)")
	fs.StringVar(&f.transcript, "transcript", "", "transcript.jsonl to replay with --driver replay")
	fs.DurationVar(&f.timeout, "timeout", d.Timeout, "deadline of the whole trace")
	fs.DurationVar(&f.toolTimeout, "tool-timeout", d.ToolTimeout, "longest a single tool call may run")
	fs.DurationVar(&f.grace, "grace", d.Grace, "how long processes the skill left running are watched after the last call, before they are frozen and recorded")
	fs.IntVar(&f.turns, "turns", d.Turns, "most agent turns")
	fs.IntVar(&f.tokens, "tokens", d.Tokens, "most model tokens (llm driver)")
	fs.StringVar(&f.out, "out", "", "run folder (default: a new folder under ./runs/)")
	fs.StringVar(&f.format, "format", "text", "what goes to stdout: text, json, sarif or html")
	fs.BoolVar(&f.verbose, "verbose", false, "text format: every finding with its evidence and every token, not only the incidents")
	fs.StringVar(&f.failOn, "fail-on", "high", "exit 1 on findings at or above: critical, high, medium, low, info, or never")
	fs.BoolVar(&f.keep, "keep", false, "leave the containers for debugging and print how to enter them")
	fs.BoolVar(&f.dryRun, "dry-run", false, "validate the skill, the plan and the provider settings, run nothing")
	fs.BoolVar(&f.engineDiff, "engine-diff", false, "also read the engine's host-side file diff of the container (slow on fuse-overlayfs)")
	f.registerStealth(fs)
	fs.BoolVar(&f.includeSecrets, "include-secrets", false, "put the planted token values in report.json (for corpus use)")
	fs.StringVar(&f.user, "user", "", "user name of the seeded home (default: a plausible random one)")
	fs.StringVar(&f.hostname, "hostname", "", "hostname of the sandbox (default: a plausible random one)")
	fs.StringVar(&f.timeZone, "time-zone", "", "time zone of the sandbox, an IANA name (default: a plausible random one)")
	fs.StringVar(&f.clock, "clock", "", "fake clock for the sandbox's programs and the jail's sinks: +3d, -2h, +1y, 03:00, sat, 2027-01-01 or 2027-01-01T03:00 (docs/sandbox.md)")
	fs.StringVar(&f.monitoring, "monitoring", "", "what the sandbox shows of being watched: hidden (the default), or visible (/.dockerenv kept, security agents in ps)")
	fs.StringVar(&f.dns, "dns", "", "how the jail resolves names: empty (as the internet would), all (every name resolves) or none (no name does)")
	fs.StringVar(&f.persona, "persona", persona.Linux, "the system the sandbox passes for: linux, or macos (a Mac's home layout and recording shims of security, osascript, sw_vers, ...)")
	fs.StringVar(&f.seed, "seed", "", "make the seeded home deterministic from this seed")
	fs.StringVar(&f.image, "image", "", "sandbox image (default: built from the embedded Dockerfile.sandbox)")
	fs.StringVar(&f.traceID, "trace-id", "", "id of the trace, on its containers' sandboxctl.trace label (default: a new unique id)")
	fs.StringVar(&f.networkConfig, "network-config", "", "JSON file of DNS answers, NXDOMAIN names and HTTP responses for the jail")
	fs.StringVar(&f.rules, "rules", "", "also run the rule files (*.yaml) of DIR, besides the built-in rules and those of ~/.config/sandboxctl/rules (docs/rules.md)")
	fs.StringVar(&f.store, "store", "", "record the run in the fingerprint store at PATH (\"default\": ~/.local/share/sandboxctl/fingerprints.db) and compare it with the skill's fingerprint (docs/fingerprints.md)")
	fs.StringVar(&f.skillID, "skill-id", "", "with --store: the skill's registry identity (publisher/name): its fingerprint history is kept under its name and this, wherever it is traced from (default: its name alone; docs/fingerprints.md)")
	fs.IntVar(&f.stableAfter, "stable-after", fingerprint.DefaultRule.Threshold, "with --store: invocations before a fingerprint may become stable (the last min(5, N) of them clean)")
	fs.Int64Var(&f.memory, "memory", d.Memory, "memory limit of the sandbox, bytes")
	fs.Int64Var(&f.pids, "pids", d.PIDs, "process limit of the sandbox")
	fs.Float64Var(&f.cpus, "cpus", float64(d.NanoCPUs)/1e9, "CPU limit of the sandbox")
}

// registerStealth adds the flags of the unwatched pass and of the twin
// traces (trace and eval).
func (f *traceFlags) registerStealth(fs interface {
	BoolVar(*bool, string, bool, string)
	StringVar(*string, string, string, string)
}) {
	fs.BoolVar(&f.stealth, "stealth", false, "always run a second, unwatched pass without the syscall tracer, and compare the passes")
	fs.BoolVar(&f.stealthAuto, "stealth-auto", true, "run the unwatched pass when the skill reads sandbox tells (TracerPid, /.dockerenv, cgroups, DMI, uptime, the resolver, proxy variables)")
	fs.StringVar(&f.twins, "twins", "auto", "twin traces, equal but for the planted secrets, whose egress is compared (docs/sandbox.md): auto (when credentials were read and unreadable data left, or a sink saw high-entropy payloads), always, or off")
}

// stealthMode is the plan's stealth mode from the flags.
func (f *traceFlags) stealthMode() string {
	switch {
	case f.stealth:
		return orchestrator.StealthAlways
	case !f.stealthAuto:
		return orchestrator.StealthOff
	}
	return orchestrator.StealthAuto
}

var skillNameRe = regexp.MustCompile(`[^a-z0-9]+`)

// newTraceID returns a sortable, unique trace id.
func newTraceID(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// plan turns flags into a Plan; it reads the API key from the environment.
func (f *traceFlags) plan(e env, path string, now time.Time) (orchestrator.Plan, error) {
	p := orchestrator.Plan{
		TraceID:       newTraceID(now),
		SkillPath:     path,
		Prompt:        f.prompt,
		Image:         f.image,
		User:          f.user,
		Hostname:      f.hostname,
		TimeZone:      f.timeZone,
		Clock:         f.clock,
		Monitoring:    f.monitoring,
		DNS:           f.dns,
		Keep:          f.keep,
		NetworkConfig: f.networkConfig,
		Persona:       f.persona,
		Stealth:       f.stealthMode(),
		Twins:         strings.TrimPrefix(f.twins, "auto"),
	}
	if f.traceID != "" {
		p.TraceID = f.traceID
	}
	if f.seed != "" {
		p.Seed = []byte(f.seed)
	}
	p.Limits = orchestrator.DefaultLimits()
	p.Limits.Timeout = f.timeout
	p.Limits.ToolTimeout = f.toolTimeout
	p.Limits.Grace = f.grace
	p.Limits.Turns = f.turns
	p.Limits.Tokens = f.tokens
	p.Limits.Memory = f.memory
	p.Limits.PIDs = f.pids
	p.Limits.NanoCPUs = int64(f.cpus * 1e9)

	kind := f.driver
	if kind == "" {
		kind = orchestrator.DriverLiteral
		if f.model != "" || f.provider != "" || f.baseURL != "" {
			kind = orchestrator.DriverLLM
		}
	}
	p.Driver = orchestrator.Driver{Kind: kind, Provider: f.provider, Model: f.model, BaseURL: f.baseURL, Transcript: f.transcript}
	if kind == orchestrator.DriverLLM {
		if p.Driver.Provider == "" {
			p.Driver.Provider = "openai"
			if f.baseURL != "" {
				p.Driver.Provider = "custom"
			}
		}
		keyEnv := f.apiKeyEnv
		if keyEnv == "" {
			switch p.Driver.Provider {
			case "openrouter":
				keyEnv = "OPENROUTER_API_KEY"
			case "ollama":
			default:
				keyEnv = "OPENAI_API_KEY"
			}
		}
		if keyEnv != "" {
			p.Driver.APIKey = e.getenv(keyEnv)
			if p.Driver.APIKey == "" && p.Driver.Provider != "ollama" && p.Driver.Provider != "custom" {
				return p, fmt.Errorf("the %s provider needs an API key in $%s", p.Driver.Provider, keyEnv)
			}
		}
	}
	return p, p.Validate()
}

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

func runTrace(ctx context.Context, e env, args []string) int {
	var f traceFlags
	fs := newFlags(e, "trace", traceSynopsis)
	f.register(fs)
	if code, ok := parseFlags(fs, interspersed(fs, args)); !ok {
		return code
	}
	if fs.NArg() != 1 {
		e.errorf("%v", errNoSkillArg)
		e.hintf("usage: sandboxctl trace [flags] PATH")
		return exitUsage
	}
	path := fs.Arg(0)
	failOn, err := parseFailOn(f.failOn)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	if !validFormat(f.format) {
		e.errorf("unknown format %q (want text, json, sarif or html)", f.format)
		return exitUsage
	}
	p, err := f.plan(e, path, time.Now())
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	sk, err := skill.Load(path, skill.Options{})
	if err != nil {
		e.errorf("%v", err)
		skillHint(e, err)
		return exitUsage
	}
	urules, ok := loadUserRules(e, f.rules)
	if !ok {
		return exitUsage
	}
	if f.dryRun {
		return dryRun(ctx, e, p, sk)
	}
	if f.stableAfter < 1 {
		e.errorf("--stable-after must be at least 1")
		return exitUsage
	}
	var fpr *fingerprintRun
	extra := urules.Extra()
	if f.store != "" {
		if fpr, err = openFingerprintRun(ctx, e, &f, p, sk); err != nil {
			e.errorf("%v", err)
			return exitFailed
		}
		defer fpr.st.Close()
		extra = fingerprint.Chain(extra, fpr.check.Extra())
	}

	rt, ok := openDocker(ctx, e)
	if !ok {
		return exitFailed
	}
	defer rt.Close()
	tty := e.isTerminal != nil && e.isTerminal()
	ui := newProgressUI(e.stderr, tty)
	imgLog := newImageLog(ui, imageLogPath(e))
	defer imgLog.Close()
	// On a first run the static binary for the sandbox (a go run's is
	// dynamic) and the sandbox image both take minutes, and neither needs
	// the other: the binary is built while the image is found or built.
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
			return exitFailed
		}
	}
	sb := <-binc
	bin, err := sb.path, sb.err
	if err != nil {
		if bin == "" {
			ui.Close()
			e.errorf("%v", err)
			return exitFailed
		}
		// It runs inside the Debian bookworm sandbox too: fine when the
		// host's libc is not newer than the image's.
		e.warnf("this sandboxctl is dynamically linked (built with cgo) and no static copy could be built (%v); the sandbox runs this same binary", err)
		e.hintf("if the sandbox's tools fail to start, build a static binary: make (CGO_ENABLED=0)")
	}
	dir := f.out
	if dir == "" {
		dir = defaultOut(p.TraceID, path)
	}
	runner := &orchestrator.Runner{
		Runtime:        rt,
		Binary:         bin,
		Version:        version(),
		IncludeSecrets: f.includeSecrets,
		Log:            debugLog(e),
		EngineDiff:     f.engineDiff,
		ImageProgress:  imgLog,
		Extra:          extra,
		Progress: func(pr orchestrator.Progress) {
			switch {
			case pr.Call != nil && pr.Result == nil:
				ui.Phase("agent", pr.Call.ID+" "+pr.Call.Name+" "+callSummary(pr.Call.Arguments))
			case pr.Call != nil:
				ui.Event(fmt.Sprintf("%s %s exit %d %s", pr.Call.ID, pr.Call.Name, pr.Result.ExitCode, callSummary(pr.Call.Arguments)))
			default:
				ui.Phase(pr.Phase, pr.Message)
			}
		},
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
	if err := writeFormat(e.stdout, out.Report, f.format, textStyle{color: tty, verbose: f.verbose}); err != nil {
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
	if reportFails(out.Report, failOn) {
		return exitFindings
	}
	return exitClean
}
