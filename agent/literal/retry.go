package literal

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/internal/pyimport"
	"github.com/sandboxctl/sandboxctl/toolspec"
)

// Retries after an install: a step that stops because a module is missing
// (ModuleNotFoundError, node's "Cannot find module"), or whose output tells
// the user to `pip install X`, is what an agent answers by installing it and
// running the step again. The driver does the same, once per install in a
// trace and at most maxRetries times: the install comes from the jail's
// registry (a stub standing in for the package, on record as a package
// event), and the step then runs the skill's own code past its imports.

const maxRetries = 8

var (
	// Python's messages for a missing module: the name, or a dotted path.
	pyMissingRE = regexp.MustCompile(`(?:ModuleNotFoundError: No module named|ImportError: No module named) '?([A-Za-z_][\w.]*)'?`)
	// Node's, for a package (not a relative or absolute path).
	nodeMissingRE = regexp.MustCompile(`Cannot find (?:module|package) '((?:@[\w.-]+/)?[\w][\w.-]*)(?:/[^']*)?'`)
	// A pip command the output tells the user to run.
	pipHintRE = regexp.MustCompile(`(?m)\b(?:pip3?|python3? -m pip) install ((?:[ \t]+|[A-Za-z0-9][A-Za-z0-9._\-\[\],<>=!~]*|-U|--upgrade|--user)+)`)
	// A distribution name as pip accepts it (with extras and a version).
	pipPkgRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[A-Za-z0-9._,-]+\])?(?:[<>=!~]=?[A-Za-z0-9.*+!-]+(?:,[<>=!~]=?[A-Za-z0-9.*+!-]+)*)?$`)
)

// tail keeps an install's last lines in the step's output.
const tail = " 2>&1 | tail -n 2"

// installFor returns the install a failed step's output asks for, as a
// shell command, and a key that names it (one retry per key in a trace).
func installFor(out string) (cmd, key string, ok bool) {
	if m := pyMissingRE.FindStringSubmatch(out); m != nil {
		d := pyimport.Dist(m[1])
		if pipPkgRE.MatchString(d) {
			return "python3 -m pip install " + shellQuote(d) + tail, "pypi:" + pyimport.Normalize(d), true
		}
	}
	if m := nodeMissingRE.FindStringSubmatch(out); m != nil && !nodeBuiltin[m[1]] {
		return "npm install -g " + shellQuote(m[1]) + tail + "\n" + `export NODE_PATH="$(npm root -g)${NODE_PATH:+:$NODE_PATH}"`, "npm:" + strings.ToLower(m[1]), true
	}
	if m := pipHintRE.FindStringSubmatch(out); m != nil {
		var pkgs []string
		for _, f := range strings.Fields(m[1]) {
			f = strings.TrimRight(f, ".,")
			if strings.HasPrefix(f, "-") || !pipPkgRE.MatchString(f) {
				continue
			}
			pkgs = append(pkgs, f)
			if len(pkgs) == 8 {
				break
			}
		}
		if len(pkgs) > 0 {
			q := make([]string, len(pkgs))
			for i, p := range pkgs {
				q[i] = shellQuote(p)
			}
			return "python3 -m pip install " + strings.Join(q, " ") + tail, "pypi:" + pyimport.Normalize(strings.Join(pkgs, " ")), true
		}
	}
	return "", "", false
}

// nodeBuiltin are node's own modules: never installed.
var nodeBuiltin = set("assert", "buffer", "child_process", "crypto", "dns", "events", "fs", "http", "https", "net",
	"os", "path", "process", "querystring", "readline", "stream", "string_decoder", "timers", "tls", "url", "util",
	"zlib", "worker_threads", "node")

// retry returns the call that installs what the previous exchange's output
// said was missing and runs its command again, if it calls for one.
func (d *Driver) retry(ex agent.Exchange) (agent.Proposal, bool) {
	if ex.Reject != "" || ex.Call.Name != toolspec.Bash || (ex.Result.ExitCode == 0 && !ex.Result.IsError) || d.retries >= maxRetries {
		return agent.Proposal{}, false
	}
	var args map[string]any
	if json.Unmarshal(ex.Call.Arguments, &args) != nil {
		return agent.Proposal{}, false
	}
	cmd, _ := args["command"].(string)
	if cmd == "" {
		return agent.Proposal{}, false
	}
	out := ex.Result.Stderr + "\n" + ex.Result.Stdout
	reason := agent.ReasonRetry
	install, key, ok := installFor(out)
	if ok {
		cmd = install + "\n" + cmd
	} else if trimmed, ok2 := withoutUnrecognized(cmd, out); ok2 {
		cmd, key, ok, reason = trimmed, "args:"+ex.Call.SkillFile+":"+strconv.Itoa(ex.Call.SkillLine), true, agent.ReasonRetryArgs
	}
	if !ok || d.installed[key] {
		return agent.Proposal{}, false
	}
	if d.installed == nil {
		d.installed = map[string]bool{}
	}
	d.installed[key] = true
	d.retries++
	args["command"] = cmd
	b, _ := json.Marshal(args) // strings and plain values: cannot fail
	return agent.Proposal{ToolCall: agent.ToolCall{Name: toolspec.Bash, Arguments: b, SkillFile: ex.Call.SkillFile,
		SkillLine: ex.Call.SkillLine, PlanReason: reason}}, true
}

// argparse's refusal of arguments a script does not define: the skill's
// text documents options its bundled script does not have (or no longer
// has). An agent reads the usage line and runs the script again without
// them; so does the driver.
var unrecognizedRE = regexp.MustCompile(`(?m)^[\w.-]+: error: unrecognized arguments: (.+)$`)

// withoutUnrecognized returns cmd without the arguments out says a
// script's parser did not recognise, when each is a word of cmd (as
// written, or quoted whole); false when there are none or one is not.
func withoutUnrecognized(cmd, out string) (string, bool) {
	ms := unrecognizedRE.FindAllStringSubmatch(out, -1)
	if len(ms) == 0 {
		return "", false
	}
	for _, m := range ms {
		for _, arg := range strings.Fields(m[1]) {
			var found bool
			if cmd, found = dropWord(cmd, arg); !found {
				return "", false
			}
		}
	}
	return cmd, true
}

// dropWord removes the first occurrence of w from cmd as a whole shell
// word (bare, or in single or double quotes) with the blank before it.
func dropWord(cmd, w string) (string, bool) {
	for _, q := range []string{"", "'", `"`} {
		word := q + w + q
		for from := 0; ; {
			i := strings.Index(cmd[from:], word)
			if i < 0 {
				break
			}
			i += from
			end := i + len(word)
			before := i == 0 || cmd[i-1] == ' ' || cmd[i-1] == '\t'
			after := end == len(cmd) || strings.ContainsRune(" \t\n;|&)", rune(cmd[end]))
			if before && after {
				start := i
				for start > 0 && (cmd[start-1] == ' ' || cmd[start-1] == '\t') {
					start--
				}
				return cmd[:start] + cmd[end:], true
			}
			from = i + 1
		}
	}
	return cmd, false
}
