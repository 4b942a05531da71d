package main

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/fingerprint"
	"github.com/sandboxctl/sandboxctl/persona"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// The trace flags are the settings of a trace: its driver, budgets and
// limits, sandbox, passes and fingerprint store. They are registered here
// once, as the go command registers its build flags once, for every
// command that traces: trace has them all; eval, sweep, monitor, serve and
// check have those that mean something to them, and say which with the
// options of register. A flag's help is the same wherever it appears, but
// for the words of what it applies to (the trace, each trace, each run).

// traceFlags holds the trace flags' values; plan turns them into a Plan.
// A flag the command lacks leaves its value as register set it: the
// default for the budgets and resource limits (no grace with
// withoutGrace), else the zero value.
type traceFlags struct {
	driver, provider, model, baseURL, apiKeyEnv, prompt, transcript string
	timeout, toolTimeout, grace                                     time.Duration
	turns, tokens                                                   int
	memory, pids                                                    int64
	cpus                                                            float64
	image, networkConfig, rules                                     string
	engineDiff, stealth, stealthAuto, keep, includeSecrets          bool
	twins, traceID                                                  string
	user, hostname, timeZone, clock, monitoring, dns, persona, seed string
	store, skillID                                                  string
	stableAfter                                                     int
}

// traceScope words the help of the trace flags for what one setting
// applies to in a command.
type traceScope struct {
	deadline string // --timeout: what it is the deadline of
	per      string // --turns, --tokens: after the budget
	sandbox  string // the sandbox the limits and the time zone are of
	skill    string // --prompt: whose description the default is from
	skills   string // --rules: which skills they run on
	calls    string // --driver: after "who decides the tool calls"
	seed     string // --seed: its default, when the command has one
	run      string // --store: what is recorded
	identity string // --store: what a record is kept under besides the skill's name, when not a flag of its own
}

var (
	// scopeTrace is trace's: one skill, one trace.
	scopeTrace = traceScope{deadline: "the whole trace", sandbox: "the sandbox", skill: "the skill's", run: "the run"}
	// scopeCorpus is eval's and sweep's: every skill of a corpus, traced
	// with the same settings.
	scopeCorpus = traceScope{deadline: "each trace", per: " per trace", sandbox: "each sandbox", skill: "each skill's",
		skills: " on every skill", run: "each skill's run", identity: "its sweep skill ID"}
	// scopeMonitor is monitor's: one skill, run many times.
	scopeMonitor = traceScope{deadline: "each run", sandbox: "every run's sandbox", skill: "the skill's",
		calls: ", the same in every run", seed: " (default: a random one per monitor, which every run shares)"}
	// scopeServe is serve's: the defaults of the traces callers submit.
	scopeServe = traceScope{deadline: "each trace when the submission gives none", sandbox: "each sandbox", skill: "each skill's",
		run: "each trace", identity: "the skill_id its caller gives"}
)

// traceFlagConfig is what the options of register set.
type traceFlagConfig struct {
	scope   traceScope
	drivers []string        // the values --driver accepts
	driver  string          // --driver's default ("": chosen by --model, --provider and --base-url)
	lacks   map[string]bool // flags the command does not have
	only    map[string]bool // when not nil, the only flags it has
	noGrace bool            // see withoutGrace
}

// has reports whether the command has the flag name.
func (c *traceFlagConfig) has(name string) bool {
	switch name {
	case "provider", "model", "base-url", "api-key-env":
		if !c.accepts(traceplan.DriverLLM) {
			return false
		}
	case "transcript":
		if !c.accepts(traceplan.DriverReplay) {
			return false
		}
	case "grace":
		if c.noGrace {
			return false
		}
	}
	return !c.lacks[name] && (c.only == nil || c.only[name])
}

// accepts reports whether --driver takes driver.
func (c *traceFlagConfig) accepts(driver string) bool { return slices.Contains(c.drivers, driver) }

// traceFlagOption is an option of traceFlags.register.
type traceFlagOption func(*traceFlagConfig)

// withScope words the flags' help for the command's scope.
func withScope(s traceScope) traceFlagOption {
	return func(c *traceFlagConfig) { c.scope = s }
}

// withDrivers are the values the command's --driver accepts, and its default
// ("": llm when --model, --provider or --base-url is set, else literal).
// Without the llm driver the command has no --provider, --model,
// --base-url nor --api-key-env; without the replay driver, no --transcript.
func withDrivers(def string, kinds ...string) traceFlagOption {
	return func(c *traceFlagConfig) { c.drivers, c.driver = kinds, def }
}

// withoutFlags names flags the command does not have.
func withoutFlags(names ...string) traceFlagOption {
	return func(c *traceFlagConfig) {
		for _, n := range names {
			c.lacks[n] = true
		}
	}
}

// onlyFlags names the only flags the command has.
func onlyFlags(names ...string) traceFlagOption {
	return func(c *traceFlagConfig) {
		c.only = map[string]bool{}
		for _, n := range names {
			c.only[n] = true
		}
	}
}

// withoutGrace: the command has no --grace, and its traces freeze what the
// skill left running at once, with no grace period, as eval's and sweep's
// always have. The grace is part of a sweep's plan hash: another would
// trace every result kept under the old one again.
func withoutGrace(c *traceFlagConfig) { c.noGrace = true }

// corpusFlags are the options of eval and sweep, with more of their own:
// the settings every skill of a corpus is traced with. A transcript
// belongs to one skill, and so do a trace id, kept containers, the planted
// values and a home's identity.
func corpusFlags(more ...traceFlagOption) []traceFlagOption {
	return append([]traceFlagOption{
		withScope(scopeCorpus),
		withDrivers("", traceplan.DriverLiteral, traceplan.DriverLLM),
		withoutGrace,
		withoutFlags("include-secrets", "keep", "trace-id", "skill-id",
			"user", "hostname", "time-zone", "clock", "monitoring", "dns", "persona", "seed"),
	}, more...)
}

// traceFlagDef is one trace flag: its name and how it is added to a
// FlagSet.
type traceFlagDef struct {
	name string
	add  func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig)
}

// register adds the trace flags the options leave to fs. Without options
// it adds every one, worded for trace.
func (t *traceFlags) register(fs *flag.FlagSet, opts ...traceFlagOption) {
	c := &traceFlagConfig{
		scope:   scopeTrace,
		drivers: []string{traceplan.DriverLiteral, traceplan.DriverLLM, traceplan.DriverReplay},
		lacks:   map[string]bool{},
	}
	for _, o := range opts {
		o(c)
	}
	known := map[string]bool{}
	for _, d := range traceFlagDefs {
		known[d.name] = true
	}
	for n := range c.lacks {
		if !known[n] {
			panic("trace flags: no flag " + n)
		}
	}
	for n := range c.only {
		if !known[n] {
			panic("trace flags: no flag " + n)
		}
	}
	// The budgets and limits a command has no flag for are the defaults.
	d := traceplan.DefaultLimits()
	t.timeout, t.toolTimeout, t.grace, t.turns, t.tokens = d.Timeout, d.ToolTimeout, d.Grace, d.Turns, d.Tokens
	t.memory, t.pids, t.cpus = d.Memory, d.PIDs, float64(d.NanoCPUs)/1e9
	if c.noGrace {
		t.grace = 0
	}
	for _, def := range traceFlagDefs {
		if c.has(def.name) {
			def.add(fs, t, c)
		}
	}
}

// orList is "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// traceFlagDefs are the trace flags, each with its one help text.
var traceFlagDefs = []traceFlagDef{
	{"driver", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		help := "who decides the tool calls" + c.scope.calls + ": " + orList(c.drivers)
		if c.driver == "" {
			help += " (default: llm when --model, --provider or --base-url is set, else literal)"
		}
		fs.StringVar(&t.driver, "driver", c.driver, help)
	}},
	{"provider", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.provider, "provider", "", "llm provider: openai, openrouter, ollama (or use --base-url)")
	}},
	{"model", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.model, "model", "", "model name for the llm driver")
	}},
	{"base-url", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.baseURL, "base-url", "", "any OpenAI-compatible endpoint (vLLM, llama.cpp, LM Studio, Azure-style)")
	}},
	{"api-key-env", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.apiKeyEnv, "api-key-env", "", "name of the environment variable holding the API key (default: OPENAI_API_KEY or OPENROUTER_API_KEY by provider)")
	}},
	{"prompt", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.prompt, "prompt", "", "the user's request to the agent (default: derived from "+c.scope.skill+" description)")
	}},
	{"transcript", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.transcript, "transcript", "", "transcript.jsonl to replay with --driver replay")
	}},
	{"timeout", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.DurationVar(&t.timeout, "timeout", t.timeout, "deadline of "+c.scope.deadline)
	}},
	{"tool-timeout", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.DurationVar(&t.toolTimeout, "tool-timeout", t.toolTimeout, "longest a single tool call may run")
	}},
	{"grace", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.DurationVar(&t.grace, "grace", t.grace, "how long processes the skill left running are watched after the last call, before they are frozen and recorded")
	}},
	{"turns", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.IntVar(&t.turns, "turns", t.turns, "most agent turns"+c.scope.per)
	}},
	{"tokens", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.IntVar(&t.tokens, "tokens", t.tokens, "most model tokens"+c.scope.per+" (llm driver)")
	}},
	{"memory", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.Int64Var(&t.memory, "memory", t.memory, "memory limit of "+c.scope.sandbox+", bytes")
	}},
	{"pids", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.Int64Var(&t.pids, "pids", t.pids, "process limit of "+c.scope.sandbox)
	}},
	{"cpus", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.Float64Var(&t.cpus, "cpus", t.cpus, "CPU limit of "+c.scope.sandbox)
	}},
	{"image", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.image, "image", "", "sandbox image (default: built from the embedded Dockerfile.sandbox)")
	}},
	{"network-config", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.networkConfig, "network-config", "", "JSON file of DNS answers, NXDOMAIN names and HTTP responses for the jail")
	}},
	{"engine-diff", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.BoolVar(&t.engineDiff, "engine-diff", false, "also read the engine's host-side file diff of "+c.scope.sandbox+" (slow on fuse-overlayfs)")
	}},
	{"rules", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.rules, "rules", "", "also run the rule files (*.yaml) of DIR"+c.scope.skills+", besides the built-in rules and those of ~/.config/sandboxctl/rules (docs/rules.md)")
	}},
	{"stealth", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.BoolVar(&t.stealth, "stealth", false, "always run a second, unwatched pass without the syscall tracer, and compare the passes")
	}},
	{"stealth-auto", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.BoolVar(&t.stealthAuto, "stealth-auto", true, "run the unwatched pass when the skill reads sandbox tells (TracerPid, /.dockerenv, cgroups, DMI, uptime, the resolver, proxy variables)")
	}},
	{"twins", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.twins, "twins", "auto", "twin traces, equal but for the planted secrets, whose egress is compared (docs/sandbox.md): auto (when credentials were read and unreadable data left, or a sink saw high-entropy payloads), always, or off")
	}},
	{"include-secrets", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.BoolVar(&t.includeSecrets, "include-secrets", false, "put the planted token values in report.json (for corpus use)")
	}},
	{"keep", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.BoolVar(&t.keep, "keep", false, "leave the containers for debugging and print how to enter them")
	}},
	{"trace-id", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.traceID, "trace-id", "", "id of the trace, on its containers' sandboxctl.trace label (default: a new unique id)")
	}},
	{"user", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.user, "user", "", "user name of the seeded home (default: a plausible random one)")
	}},
	{"hostname", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.hostname, "hostname", "", "hostname of the sandbox (default: a plausible random one)")
	}},
	{"time-zone", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.timeZone, "time-zone", "", "time zone of "+c.scope.sandbox+", an IANA name (default: a plausible one, drawn from the seed when there is one)")
	}},
	{"clock", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.clock, "clock", "", "fake clock for the sandbox's programs and the jail's sinks: +3d, -2h, +1y, 03:00, sat, 2027-01-01 or 2027-01-01T03:00 (docs/sandbox.md)")
	}},
	{"monitoring", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.monitoring, "monitoring", "", "what the sandbox shows of being watched: hidden (the default), or visible (/.dockerenv kept, security agents in ps)")
	}},
	{"dns", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.dns, "dns", "", "how the jail resolves names: empty (as the internet would), all (every name resolves) or none (no name does)")
	}},
	{"persona", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.persona, "persona", persona.Linux, "the system the sandbox passes for: linux, or macos (a Mac's home layout and recording shims of security, osascript, sw_vers, ...)")
	}},
	{"seed", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.seed, "seed", "", "make the seeded home deterministic from this seed"+c.scope.seed)
	}},
	{"store", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		under := ""
		if c.scope.identity != "" {
			under = " under the skill's name and " + c.scope.identity + ","
		}
		fs.StringVar(&t.store, "store", "", "record "+c.scope.run+" in the fingerprint store at PATH (\"default\": ~/.local/share/sandboxctl/fingerprints.db)"+under+" and compare it with the skill's fingerprint (docs/fingerprints.md)")
	}},
	{"skill-id", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.StringVar(&t.skillID, "skill-id", "", "with --store: the skill's registry identity (publisher/name): its fingerprint history is kept under its name and this, wherever it is traced from (default: its name alone; docs/fingerprints.md)")
	}},
	{"stable-after", func(fs *flag.FlagSet, t *traceFlags, c *traceFlagConfig) {
		fs.IntVar(&t.stableAfter, "stable-after", fingerprint.DefaultRule.Threshold, "with --store: invocations before a fingerprint may become stable (the last min(5, N) of them clean)")
	}},
}

// stealthMode is the plan's stealth mode from the flags: off when the
// command has neither --stealth nor --stealth-auto.
func (t *traceFlags) stealthMode() string {
	switch {
	case t.stealth:
		return traceplan.StealthAlways
	case !t.stealthAuto:
		return traceplan.StealthOff
	}
	return traceplan.StealthAuto
}

// newTraceID returns a sortable, unique trace id.
func newTraceID(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// limits are the plan's budgets and limits: the defaults, with those the
// flags set.
func (t *traceFlags) limits() traceplan.Limits {
	l := traceplan.DefaultLimits()
	l.Timeout = t.timeout
	l.ToolTimeout = t.toolTimeout
	l.Grace = t.grace
	l.Turns = t.turns
	l.Tokens = t.tokens
	l.Memory = t.memory
	l.PIDs = t.pids
	l.NanoCPUs = int64(t.cpus * 1e9)
	return l
}

// plan turns the flags into the Plan of a trace of the skill at path, and
// validates it; it reads the API key from the environment.
func (t *traceFlags) plan(e env, path string, now time.Time) (traceplan.Plan, error) {
	p := traceplan.Plan{
		TraceID:       newTraceID(now),
		SkillPath:     path,
		Prompt:        t.prompt,
		Image:         t.image,
		User:          t.user,
		Hostname:      t.hostname,
		TimeZone:      t.timeZone,
		Clock:         t.clock,
		Monitoring:    t.monitoring,
		DNS:           t.dns,
		Keep:          t.keep,
		NetworkConfig: t.networkConfig,
		Persona:       t.persona,
		Stealth:       t.stealthMode(),
		Twins:         strings.TrimPrefix(t.twins, "auto"),
		Limits:        t.limits(),
	}
	if t.traceID != "" {
		p.TraceID = t.traceID
	}
	if t.seed != "" {
		p.Seed = []byte(t.seed)
	}
	d, err := t.driverOf(e)
	p.Driver = d
	if err != nil {
		return p, err
	}
	return p, p.Validate()
}

// driverOf is the plan's driver: --driver, or llm when --model, --provider
// or --base-url is set, else literal; the llm driver's provider defaults
// to openai (custom with --base-url) and its key is read from
// --api-key-env, or the provider's variable.
func (t *traceFlags) driverOf(e env) (traceplan.Driver, error) {
	kind := t.driver
	if kind == "" {
		kind = traceplan.DriverLiteral
		if t.model != "" || t.provider != "" || t.baseURL != "" {
			kind = traceplan.DriverLLM
		}
	}
	d := traceplan.Driver{Kind: kind, Provider: t.provider, Model: t.model, BaseURL: t.baseURL, Transcript: t.transcript}
	if kind != traceplan.DriverLLM {
		return d, nil
	}
	if d.Provider == "" {
		d.Provider = "openai"
		if t.baseURL != "" {
			d.Provider = "custom"
		}
	}
	keyEnv := t.apiKeyEnv
	if keyEnv == "" {
		switch d.Provider {
		case "openrouter":
			keyEnv = "OPENROUTER_API_KEY"
		case "ollama":
		default:
			keyEnv = "OPENAI_API_KEY"
		}
	}
	if keyEnv != "" {
		d.APIKey = e.getenv(keyEnv)
		if d.APIKey == "" && d.Provider != "ollama" && d.Provider != "custom" {
			return d, fmt.Errorf("the %s provider needs an API key in $%s", d.Provider, keyEnv)
		}
	}
	return d, nil
}
