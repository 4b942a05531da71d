package rules

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/persona"
	"github.com/sandboxctl/sandboxctl/toolspec"
	"github.com/sandboxctl/sandboxctl/trace"
)

// What did not run is evidence: a step whose command was not found, whose
// usage or syntax was wrong, whose input file was missing or that the
// driver rejected shows nothing of what the skill would have done. The
// coverage summary says which steps ran, which failed and why; a trace
// whose decisive steps did not run is not clean (docs/verdicts.md).

// Step outcomes.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"  // it ran and failed; what it did is in the trace
	OutcomeNotRun    = "not run" // it did not get to run what it was for
)

// Coverage summarises how much of the planned work ran. Planned counts the
// tool calls; Run those handed to the sandbox (not rejected by the
// driver), each of which Succeeded, Failed (it ran and failed) or did not
// run (NotRun: it never got to do its work; rejected calls count here too).
type Coverage struct {
	Planned   int `json:"planned"`
	Run       int `json:"run"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	NotRun    int `json:"not_run"`
	// Decisive counts the steps that could carry the skill's behaviour
	// (DecisiveStep); DecisiveNotRun those of them that did not run.
	Decisive       int `json:"decisive"`
	DecisiveNotRun int `json:"decisive_not_run"`
	// Stubbed counts the steps that ran a vendor CLI stub of the image
	// (persona.VendorCLIs): they went on, but the real client's effect
	// (a deploy, an API call) is not in the trace.
	Stubbed int `json:"stubbed"`
	// Steps lists every step that did not succeed or ran against a stub,
	// in order.
	Steps []StepCoverage `json:"steps"`
}

// StepCoverage is one step that did not succeed.
type StepCoverage struct {
	ToolCallID string `json:"tool_call_id"`
	Seq        int64  `json:"seq"`
	Tool       string `json:"tool"`
	// Summary is the command, path or URL of the step, shortened.
	Summary    string `json:"summary"`
	PlanReason string `json:"plan_reason,omitempty"`
	SkillFile  string `json:"skill_file,omitempty"`
	SkillLine  int    `json:"skill_line,omitempty"`
	ExitCode   int    `json:"exit_code"`
	Outcome    string `json:"outcome"`
	// Reason says why, e.g. "command not found: python", "usage error",
	// "rejected by the driver: ...", "exit 1", or for a step that
	// succeeded against a stub "vendor CLI stub: vercel".
	Reason   string `json:"reason"`
	Decisive bool   `json:"decisive"`
	// Stubs lists the vendor CLI stubs the step ran, in order.
	Stubs []string `json:"stubs,omitempty"`
}

// Failure patterns in a step's output, most specific first. notRun marks
// the ones where the step did not get to do its work.
var failurePatterns = []struct {
	re     *regexp.Regexp
	reason string
	notRun bool
}{
	{regexp.MustCompile(`(?m)(?:^|: )([^\s:]+): (?:command )?not found\s*$`), "command not found", true},
	{regexp.MustCompile(`\bsyntax error\b|unexpected EOF while looking for|SyntaxError:|Unterminated quoted string`), "syntax error", true},
	{regexp.MustCompile(`(?i)\b(?:unrecognized|unknown|invalid|illegal|unsupported) (?:option|argument|flag|command-line option)s?\b|unrecognized arguments:|no such option|flag provided but not defined|option requires an argument|requires an argument`), "unsupported option", true},
	{regexp.MustCompile(`(?im)^\s*usage:|\berror: the following arguments are required\b|\bmissing (?:required )?(?:argument|operand)s?\b|\bTry '[^']*--help' for more information`), "usage error", true},
	{regexp.MustCompile(`ModuleNotFoundError|No module named|Cannot find module|ERR_MODULE_NOT_FOUND|cannot load such file|Can't locate \S+ in @INC`), "missing module", true},
	{regexp.MustCompile(`externally-managed-environment|No matching distribution found|Could not find a version that satisfies|npm ERR! code E(?:NOVERSIONS|404|TARGET|NOTFOUND)|ERR_PNPM_|error: could not find .* in registry`), "package install failed", true},
	{regexp.MustCompile(`(?i)not a git repository|does not appear to be a git repository|No such remote`), "not in a git repository", true},
	// a push or clone the server asked to authenticate, with no terminal
	// to ask the user and no credential to give: nothing was sent
	{regexp.MustCompile(`could not read (?:Username|Password) for|terminal prompts disabled|Authentication failed for`), "authentication required", true},
	{regexp.MustCompile(`(?i)No such file or directory|does not exist|not found: '[^']*'|ENOENT`), "missing file", true},
	{regexp.MustCompile(`(?i)Permission denied|Operation not permitted`), "permission denied", false},
	{regexp.MustCompile(`(?i)Could not resolve host|Connection refused|Failed to connect|Name or service not known|Temporary failure in name resolution|Network is unreachable|Connection timed out|SSL certificate problem`), "network error", false},
	{regexp.MustCompile(`(?i)timed out|timeout`), "timed out", true},
	{regexp.MustCompile(`Traceback \(most recent call last\)|Uncaught|panic:|Exception in thread`), "script error", false},
}

// informational are commands that only show or move around: a step made of
// them carries no behaviour of the skill.
var informational = set("echo", "printf", "cd", "pwd", "ls", "cat", "head", "tail", "less", "more", "which", "type",
	"whereis", "whoami", "id", "date", "true", "false", "sleep", "test", "[", "export", "set", "unset", "alias",
	"man", "help", "tree", "wc", "file", "stat", "du", "df", "uname", "hostname", "env", "printenv", "clear",
	"history", "read", "exit", "return", ":", "mkdir", "touch", "sort", "uniq", "column", "basename", "dirname",
	"realpath", "readlink", "seq", "yes", "tput", "locale", "nproc", "free", "uptime")

// decisiveStep reports whether a tool call could carry the skill's
// behaviour: it runs a command that is more than informational (echo, ls,
// cat, which, cd, a bare --version or --help...) or fetches a URL. Reading,
// listing and searching files are not decisive unless they target a
// secret (a credential, wallet, browser store, planted file or system
// secret); writing is.
func (c *ctx) decisiveStep(tc *trace.ToolCall, facts *shellFacts) bool {
	switch tc.Tool {
	case toolspec.ReadFile, toolspec.ListDirectory, toolspec.SearchFiles:
		p := c.resolve(decodeArgs(tc).Path)
		for _, ps := range []pathSet{c.tokenLocations(), credentialPaths, walletPaths, browserPaths, systemSecretPaths} {
			if _, ok := c.matchPath(ps, p); ok {
				return true
			}
		}
		return false
	case toolspec.Bash:
	default:
		return true
	}
	if facts == nil || len(facts.Commands) == 0 || facts.parseErr {
		return strings.TrimSpace(decodeArgs(tc).Command) != ""
	}
	cmd := decodeArgs(tc).Command
	if reVersionOnly.MatchString(strings.TrimSpace(cmd)) {
		return false
	}
	for _, name := range facts.Commands {
		if !informational[name] {
			return true
		}
	}
	return len(facts.Runs) > 0
}

var reVersionOnly = regexp.MustCompile(`^\S+(?:\s+(?:--version|-V|version|--help|-h|help))\s*$`)

// coverage computes the coverage of the trace's tool calls.
func (c *ctx) coverage() Coverage {
	cov := Coverage{Steps: []StepCoverage{}}
	setEarlier := map[string]bool{}
	retried := map[string]string{} // skill file:line of the retries that succeeded: their plan reason
	var otherSteps []int           // steps whose command only another platform has was not found
	decisiveRan := 0
	var ranCmds []string            // the commands of the steps that succeeded
	stepCmds := map[int]string{}    // the command of each step listed, by its index in cov.Steps
	stepScripts := map[int]string{} // the script an interpreter could not find, by step index
	for i := range c.events {
		e := &c.events[i]
		tc, ok := e.Data.(*trace.ToolCall)
		if !ok {
			continue
		}
		cov.Planned++
		var facts *shellFacts
		cmd := toolCommand(tc)
		if cmd != "" {
			facts = c.shell(cmd)
		}
		decisive := c.decisiveStep(tc, facts)
		if decisive {
			cov.Decisive++
		}
		outcome, reason := c.outcome(e, tc, facts)
		if facts != nil {
			// a step using variables only an earlier step set ran with them
			// empty: each tool call is a fresh shell
			var lost []string
			for _, v := range facts.Unset {
				if setEarlier[v] {
					lost = append(lost, v)
				}
			}
			if len(lost) > 0 && outcome != OutcomeNotRun {
				outcome, reason = OutcomeNotRun, "uses variables only an earlier step set ("+strings.Join(firstN(lost, 4), ", ")+"): they were empty here"
			}
			for _, v := range facts.Assigned {
				setEarlier[v] = true
			}
		}
		stubs := c.vendorStubs(tc.ID)
		var missing []string // programs not installed that a stand-in took the place of
		for _, si := range c.standIns(tc.ID) {
			if !slices.Contains(missing, si.argv[0]) {
				missing = append(missing, si.argv[0])
			}
		}
		if len(stubs) > 0 || len(missing) > 0 {
			cov.Stubbed++
		}
		if decisive && outcome == OutcomeSucceeded {
			decisiveRan++
		}
		switch outcome {
		case OutcomeSucceeded:
			cov.Run++
			cov.Succeeded++
			if tc.PlanReason == planRetry || tc.PlanReason == planRetryArgs {
				retried[fmt.Sprintf("%s:%d", tc.SkillFile, tc.SkillLine)] = tc.PlanReason
			}
			ranCmds = append(ranCmds, cmd)
			if len(stubs) == 0 && len(missing) == 0 {
				continue
			}
			var why []string
			if len(stubs) > 0 {
				why = append(why, "vendor CLI stub: "+strings.Join(stubs, ", "))
			}
			if len(missing) > 0 {
				why = append(why, "not installed, a stand-in ran: "+strings.Join(missing, ", "))
			}
			reason = strings.Join(why, "; ")
		case OutcomeFailed:
			cov.Run++
			cov.Failed++
		case OutcomeNotRun:
			if !strings.HasPrefix(reason, "rejected") {
				cov.Run++ // it was attempted
			}
			cov.NotRun++
			if decisive {
				cov.DecisiveNotRun++
			}
			if name, ok := strings.CutPrefix(reason, "command not found: "); ok && otherPlatform(name) != "" && decisive {
				otherSteps = append(otherSteps, len(cov.Steps))
			}
		}
		a := decodeArgs(tc)
		stepCmds[len(cov.Steps)] = cmd
		if outcome == OutcomeNotRun {
			stepScripts[len(cov.Steps)] = missingScript(tc.Stderr + "\n" + tc.Stdout)
		}
		cov.Steps = append(cov.Steps, StepCoverage{ToolCallID: tc.ID, Seq: e.Seq, Tool: tc.Tool,
			Summary: c.redact(short(firstOf(a.Command, a.Path, a.URL, a.Pattern))), PlanReason: tc.PlanReason,
			SkillFile: tc.SkillFile, SkillLine: tc.SkillLine, ExitCode: tc.ExitCode, Outcome: outcome,
			Reason: c.redact(reason), Decisive: decisive, Stubs: append(slices.Clip(stubs), missing...)})
	}
	// A bundled script that stopped at its usage message (called bare, or
	// probed with --help) and ran in another step, given its arguments,
	// was seen: the step that only showed its usage hid nothing.
	for i := range cov.Steps {
		st := &cov.Steps[i]
		if !st.Decisive || st.Outcome != OutcomeNotRun || StepCause(st.Reason) != CauseUsageError {
			continue
		}
		if s := c.skillScript(stepCmds[i]); s != "" && slices.ContainsFunc(ranCmds, func(x string) bool { return c.skillScript(x) == s }) {
			st.Decisive = false
			st.Reason += " (the same script ran with its arguments in another step)"
			cov.Decisive--
			cov.DecisiveNotRun--
		}
	}
	// A step that stopped at a missing module and ran again after the
	// driver installed it (agent.ReasonRetry, same skill line) was seen
	// when the retry ran: the retry is the step that counts.
	for i := range cov.Steps {
		st := &cov.Steps[i]
		if !st.Decisive || st.Outcome == OutcomeSucceeded || st.SkillFile == "" || st.PlanReason == planRetry || st.PlanReason == planRetryArgs {
			continue
		}
		if how := retried[fmt.Sprintf("%s:%d", st.SkillFile, st.SkillLine)]; how != "" {
			st.Decisive = false
			if how == planRetryArgs {
				st.Reason += " (ran again without the arguments its parser did not recognise)"
			} else {
				st.Reason += " (ran again after the install it asked for)"
			}
			cov.Decisive--
			if st.Outcome == OutcomeNotRun {
				cov.DecisiveNotRun--
			}
		}
	}
	// A script the skill calls and does not ship, that no step made, hides
	// nothing: there is no code of the skill's to see there.
	for i := range cov.Steps {
		st := &cov.Steps[i]
		if !st.Decisive || st.Outcome != OutcomeNotRun || !strings.HasPrefix(st.Reason, "missing file") && st.Reason != "command not found" {
			continue
		}
		if script := stepScripts[i]; script != "" && !c.shipsOrMade(script) {
			st.Decisive = false
			st.Reason += " (the skill does not ship " + path.Base(script) + " and no step made it)"
			cov.Decisive--
			cov.DecisiveNotRun--
		}
	}
	// A Windows command (irm | iex, powershell) next to the Linux and macOS
	// ones, or a macOS installer (brew install) next to the Linux one, is
	// the skill's other platform, not a step this sandbox missed, as long
	// as some decisive step of the skill did run.
	if decisiveRan > 0 {
		for _, i := range otherSteps {
			st := &cov.Steps[i]
			st.Decisive = false
			st.Reason += " (a " + otherPlatform(strings.TrimPrefix(st.Reason, "command not found: ")) + " command: the skill's steps for this platform ran)"
			cov.Decisive--
			cov.DecisiveNotRun--
		}
	}
	return cov
}

// planRetry is agent.ReasonRetry: a call made again after the install its
// output asked for.
const planRetry = "retry after install"

// planRetryArgs is agent.ReasonRetryArgs: a call made again without the
// arguments its parser refused.
const planRetryArgs = "retry without unrecognized arguments"

// windowsOnly are commands only Windows has (PowerShell and its aliases,
// cmd's built-ins and package managers): a skill lists them beside the
// commands for Linux and macOS.
var windowsOnly = set("powershell", "powershell.exe", "pwsh", "irm", "iex", "iwr", "invoke-webrequest", "invoke-restmethod",
	"invoke-expression", "set-executionpolicy", "start-process", "new-item", "get-childitem", "winget", "choco", "scoop",
	"cmd", "cmd.exe", "setx", "msiexec", "reg", "wsl", "start-bitstransfer")

// macOSInstallers are the package managers and installers only macOS has
// (Homebrew, MacPorts, the App Store's CLI, Apple's tool installers): a
// skill lists "brew install X" beside "apt-get install X". Not macOS's
// other commands (security, launchctl, defaults, osascript): those are
// what a skill does, not how it installs, and a trace with the Linux
// persona that did not see them did not see the skill.
var macOSInstallers = set("brew", "port", "mas", "xcode-select", "softwareupdate", "installer")

// otherPlatform names the platform only which has the command name, or "".
func otherPlatform(name string) string {
	name = strings.ToLower(name)
	switch {
	case windowsOnly[name]:
		return "Windows"
	case macOSInstallers[name]:
		return "macOS"
	}
	return ""
}

func firstOf(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

// outcome classifies one tool call's result.
func (c *ctx) outcome(e *trace.Event, tc *trace.ToolCall, facts *shellFacts) (string, string) {
	if tc.Error != "" && tc.ExitCode == -1 {
		return OutcomeNotRun, "rejected by the driver: " + capString(oneLine(tc.Error), 120)
	}
	for _, si := range c.standIns(tc.ID) {
		if why := c.standInHides(si); why != "" {
			return OutcomeNotRun, why
		}
	}
	if tc.ExitCode == 0 && !tc.IsError {
		return OutcomeSucceeded, ""
	}
	out := tc.Stderr + "\n" + tc.Stdout + "\n" + tc.Error
	if name := c.missingCommand(tc.ID); name != "" {
		return OutcomeNotRun, "command not found: " + name
	}
	if tc.ExitCode == 127 {
		if m := failurePatterns[0].re.FindStringSubmatch(out); m != nil {
			return OutcomeNotRun, "command not found: " + path.Base(m[1])
		}
		return OutcomeNotRun, "command not found"
	}
	if tc.ExitCode == 126 {
		return OutcomeNotRun, "not executable (exit 126)"
	}
	for _, p := range failurePatterns {
		m := p.re.FindStringSubmatch(out)
		if m == nil {
			continue
		}
		reason := p.reason
		if p.reason == "command not found" && len(m) > 1 {
			reason += ": " + path.Base(m[1])
		}
		if p.reason == "missing file" || p.reason == "missing module" || p.reason == "script error" {
			reason += ": " + capString(oneLine(lineOf(out, m[0])), 100)
		}
		if p.notRun {
			return OutcomeNotRun, reason
		}
		return OutcomeFailed, reason
	}
	if tc.IsError && tc.ExitCode == 0 {
		return OutcomeFailed, "tool error: " + capString(oneLine(firstLine(out)), 100)
	}
	return OutcomeFailed, fmt.Sprintf("exit %d", tc.ExitCode)
}

func lineOf(s, sub string) string {
	i := strings.Index(s, sub)
	if i < 0 {
		return sub
	}
	start := strings.LastIndexByte(s[:i], '\n') + 1
	end := strings.IndexByte(s[i:], '\n')
	if end < 0 {
		return s[start:]
	}
	return s[start : i+end]
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// vendorStubs returns the vendor CLI stubs (persona.IsVendorStub) the
// call's processes ran, each once, in the order they ran.
func (c *ctx) vendorStubs(call string) []string {
	if c.stubs == nil {
		c.stubs = map[string][]string{}
		for i := range c.events {
			e := &c.events[i]
			x, ok := e.Data.(*trace.Exec)
			if !ok || x.Errno != "" || e.ToolCallID == "" {
				continue
			}
			if name, ok := persona.IsVendorStub(x.Path); ok && !slices.Contains(c.stubs[e.ToolCallID], name) {
				c.stubs[e.ToolCallID] = append(c.stubs[e.ToolCallID], name)
			}
		}
	}
	return c.stubs[call]
}

// A standIn is the image's stand-in running for a missing program.
type standIn struct {
	argv []string // the command line, the missing program first
	cwd  string
	at   int // index of the exec in the timeline
}

// standIns returns the programs the call's shells could not find and the
// image's stand-in took the place of (persona.StandIn), in the order they
// ran. One pass over the timeline serves every call, and with it the
// processes' exits and the files of code written (codeWrittenUnder).
func (c *ctx) standIns(call string) []standIn {
	if c.standInsByCall == nil {
		c.standInsByCall = map[string][]standIn{}
		exits := map[int][]int{} // pid -> indexes of its exits, in order
		type pending struct {
			call string
			si   standIn
			pid  int
		}
		var found []pending
		for i := range c.events {
			e := &c.events[i]
			switch d := e.Data.(type) {
			case *trace.Exec:
				if d.Errno != "" || e.ToolCallID == "" {
					continue
				}
				if argv, ok := persona.StandIn(d.Path, d.Argv); ok {
					found = append(found, pending{e.ToolCallID, standIn{argv, d.Cwd, i}, e.PID})
				}
			case *trace.Process:
				if e.Type == trace.TypeExit {
					exits[e.PID] = append(exits[e.PID], i)
				}
			case *trace.File:
				if d.Errno == "" && d.Write && reCodeFile.MatchString(d.Path) {
					c.codeWrites = append(c.codeWrites, codeWrite{i, d.Path})
				}
			case *trace.FSChange:
				if reCodeFile.MatchString(d.Path) {
					c.codeWrites = append(c.codeWrites, codeWrite{i, d.Path})
				}
			}
		}
		for _, f := range found {
			// The process's first exit after the exec: a stand-in that
			// answered 127 found no program (import, SELECT): bash's own
			// answer, not a stand-in.
			xs := exits[f.pid]
			if k, _ := slices.BinarySearch(xs, f.si.at); k < len(xs) {
				if p, ok := c.events[xs[k]].Data.(*trace.Process); ok && (p.ExitCode != 0 || p.Signal != "") {
					continue
				}
			}
			c.standInsByCall[f.call] = append(c.standInsByCall[f.call], f.si)
		}
	}
	return c.standInsByCall[call]
}

// A codeWrite is a file of code (reCodeFile) the trace wrote, and where in
// the timeline.
type codeWrite struct {
	at   int
	path string
}

// standInHides says why a stand-in for a missing program hid what the
// step would have done, or "": a program of another platform (the
// platform's steps are judged as before), an install (what it would have
// fetched is code nobody saw), or a program that would have run a file of
// code the skill ships or the trace wrote. Otherwise the missing program's
// own work (a build, a query, a vendor's API call) is not the skill's
// behaviour, and the flow that goes on past it is.
func (c *ctx) standInHides(si standIn) string {
	argv := si.argv
	name := argv[0]
	if otherPlatform(name) != "" {
		return "command not found: " + name
	}
	var words []string // the operands, options left out
	for _, a := range argv[1:] {
		if a != "" && a[0] != '-' {
			words = append(words, a)
		}
	}
	for i, w := range words[:min(len(words), 2)] {
		if w != "install" && (i > 0 || !packageManagers[name] || !installVerbs[w]) {
			continue
		}
		// A package from its registry stands as a stub package from the
		// jail's registry does for pip and npm: its name is on record, its
		// code is nobody's to see. One from a URL, a repository or a path
		// is the skill's choice of code.
		for j, a := range argv[1:] {
			if !reInstallSource.MatchString(a) {
				continue
			}
			if strings.HasPrefix(a, "--") && !strings.Contains(a, "=") && j+2 < len(argv) {
				a = argv[j+2] // the option's value
			}
			return "command not found: " + name + " (not installed; it would have installed from " + a + ")"
		}
		break
	}
	for _, w := range words {
		if strings.Contains(w, "://") || !reCodeFile.MatchString(w) {
			continue
		}
		if c.shipsOrMade(w) {
			return "command not found: " + name + " (not installed; it would have run " + path.Base(w) + ", which the skill ships or wrote)"
		}
	}
	if f := c.codeWrittenUnder(si.cwd, si.at); f != "" {
		return "command not found: " + name + " (not installed; it would have built or run the code the trace wrote in " + si.cwd + ": " + path.Base(f) + ")"
	}
	return ""
}

// codeWrittenUnder returns a file of code (reCodeFile) the trace wrote in
// dir or below before the event at index before, or "": a toolchain run
// bare there (cargo run, dotnet build, go test) works on it. standIns
// collected the writes.
func (c *ctx) codeWrittenUnder(dir string, before int) string {
	if dir == "" || dir == "/" {
		return ""
	}
	prefix := strings.TrimSuffix(dir, "/") + "/"
	for _, w := range c.codeWrites {
		if w.at < before && strings.HasPrefix(w.path, prefix) {
			return w.path
		}
	}
	return ""
}

// reInstallSource matches an install's operand or option that names where
// the code comes from rather than a registry's package: a URL, a git
// remote, a path, a --git or --index option.
var reInstallSource = regexp.MustCompile(`://|^git@|^(?:\.{0,2}/|~/)|^--(?:git|path|index-url|extra-index-url|registry|source|add-source)\b`)

// An install fetches code: "install" as the first or second operand of any
// program (cargo install, rustup toolchain install, dotnet tool install),
// and installVerbs as the first operand of a package manager (go get,
// dotnet add package, poetry add, composer require). Of other programs,
// "add" and "get" are the program's own business (argocd repo add, config
// get).
var (
	installVerbs    = set("add", "get", "require", "i")
	packageManagers = set("cargo", "go", "gem", "bundle", "dotnet", "nuget", "poetry", "pipenv", "pdm", "hatch", "conda",
		"mamba", "micromamba", "composer", "rustup", "cpan", "cpanm", "luarocks", "opam", "cabal", "stack", "mix",
		"dart", "flutter", "swift", "vcpkg", "conan", "asdf", "mise", "sdk", "nix-env", "apk", "dnf", "yum", "pacman",
		"zypper", "snap", "flatpak", "deno", "bun")
)

// reCodeFile matches the names of files a toolchain or interpreter runs or
// builds: source, scripts, project and build files.
var reCodeFile = regexp.MustCompile(`(?i)\.(py|sh|bash|js|mjs|cjs|ts|rb|pl|php|r|go|rs|cs|csx|fs|fsx|vb|java|kt|kts|scala|swift|lua|ps1|sql|jl|ex|exs|dart|zig|nim|csproj|fsproj|vbproj|sln|gradle)$|(^|/)(cargo\.toml|go\.mod|pom\.xml|build\.gradle|gemfile|rakefile|makefile|cmakelists\.txt)$`)

// missingCommand returns a program the call's processes looked up along
// PATH and never found (every execve of that name failed with ENOENT).
func (c *ctx) missingCommand(call string) string {
	if c.missing == nil {
		// one pass over the timeline for every call
		type state struct {
			failed, ok map[string]bool
			order      []string
		}
		per := map[string]*state{}
		for i := range c.events {
			e := &c.events[i]
			x, isExec := e.Data.(*trace.Exec)
			if !isExec {
				continue
			}
			st := per[e.ToolCallID]
			if st == nil {
				st = &state{failed: map[string]bool{}, ok: map[string]bool{}}
				per[e.ToolCallID] = st
			}
			name := path.Base(x.Path)
			switch x.Errno {
			case "":
				st.ok[name] = true
			case "ENOENT":
				if !st.failed[name] {
					st.order = append(st.order, name)
				}
				st.failed[name] = true
			}
		}
		c.missing = map[string]string{}
		for id, st := range per {
			for _, n := range st.order {
				if !st.ok[n] {
					c.missing[id] = n
					break
				}
			}
		}
	}
	return c.missing[call]
}

// skillScript is the first of the skill's own files a command names (by
// its path in the sandbox), or "".
func (c *ctx) skillScript(cmd string) string {
	dir := strings.TrimSuffix(c.in.SkillDir, "/")
	if dir == "" || cmd == "" {
		return ""
	}
	i := strings.Index(cmd, dir+"/")
	if i < 0 {
		return ""
	}
	end := i + len(dir) + 1
	for end < len(cmd) && !strings.ContainsRune(" \t\n'\";|&)<>", rune(cmd[end])) {
		end++
	}
	return cmd[i:end]
}

// missingScriptRE are interpreters' messages for a script file that is not
// there (not a file the script itself then failed to open).
var missingScriptRE = []*regexp.Regexp{
	regexp.MustCompile(`(?m)^python[0-9.]*: can't open file '([^'\n]+)'`),
	regexp.MustCompile(`(?m)^(?:/bin/)?(?:ba)?sh: (?:line \d+: )?([^:\n]+\.(?:sh|bash)): No such file or directory`),
	regexp.MustCompile(`(?m)^Error: Cannot find module '(/[^'\n]+\.(?:js|mjs|cjs|ts))'`),
	regexp.MustCompile(`(?m)^ruby: No such file or directory -- (\S+)`),
	regexp.MustCompile(`(?m)^Can't open perl script "([^"\n]+)": No such file or directory`),
}

// missingScript returns the script an interpreter could not find, from a
// step's output ("" when the output says no such thing).
func missingScript(out string) string {
	for _, re := range missingScriptRE {
		if m := re.FindStringSubmatch(out); m != nil {
			return m[1]
		}
	}
	return ""
}

// shipsOrMade reports whether the skill ships a file of script's name, or
// the trace created a file at that path (a download, a file block).
func (c *ctx) shipsOrMade(script string) bool {
	base := path.Base(script)
	if c.in.Skill != nil {
		for _, f := range c.in.Skill.Files {
			if path.Base(f.Path) == base {
				return true
			}
		}
	} else {
		return true // without the skill's files nothing can be said
	}
	for i := range c.events {
		switch d := c.events[i].Data.(type) {
		case *trace.File:
			if d.Errno == "" && (path.Base(d.Path) == base && d.Write || path.Base(d.NewPath) == base) {
				return true
			}
		case *trace.FSChange:
			if path.Base(d.Path) == base {
				return true
			}
		}
	}
	return false
}
