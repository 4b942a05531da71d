package literal

import (
	"regexp"
	"sort"
	"strings"
)

// Environment variables a skill's scripts or commands read but the home
// does not set (a webhook URL, an API endpoint, a key the skill requires) are
// set for the call that needs them, to jail URLs and planted-looking tokens,
// in an "export" line the call's command starts with, so the report shows
// them as set by the driver.

var (
	// Reads in scripts: os.environ["X"], os.environ.get("X"), os.getenv("X"),
	// process.env.X, process.env["X"], ENV["X"], ENV.fetch("X"), $ENV{X},
	// Go's os.Getenv, Rust's std::env::var.
	envReadRE = regexp.MustCompile(`(?:os\.environ(?:\.get)?\s*[\[(]\s*|os\.getenv\s*\(\s*|getenv\s*\(\s*|ENV(?:\.fetch)?\s*[\[(]\s*|env::var\s*\(\s*|Getenv\s*\(\s*)["']([A-Z][A-Z0-9_]{2,})["']|process\.env\.([A-Z][A-Z0-9_]{2,})|process\.env\[\s*["']([A-Z][A-Z0-9_]{2,})["']|\$ENV\{([A-Z][A-Z0-9_]{2,})\}`)
	// Shell expansions: $X, ${X}; ${X:-default} and ${X-default} have a default.
	shellVarRE = regexp.MustCompile(`\$\{([A-Z][A-Z0-9_]{2,})(:?[-=?+][^}]*)?\}|\$([A-Z][A-Z0-9_]{2,})`)
	// Assignments: X=..., export X=..., os.environ["X"] = ...
	assignVarRE = regexp.MustCompile(`(?m)(?:^|[\s;&|(])(?:export\s+|declare\s+(?:-\w+\s+)?|local\s+|readonly\s+)?([A-Z][A-Z0-9_]{2,})=|os\.environ\[["']([A-Z][A-Z0-9_]{2,})["']\]\s*=[^=]|process\.env\.([A-Z][A-Z0-9_]{2,})\s*=[^=]`)
)

// systemVars are set by every shell or are not the user's to provide.
var systemVars = map[string]bool{"HOME": true, "PATH": true, "USER": true, "LOGNAME": true, "SHELL": true, "PWD": true, "OLDPWD": true,
	"TERM": true, "LANG": true, "TMPDIR": true, "TMP": true, "TEMP": true, "EDITOR": true, "HOSTNAME": true, "UID": true, "EUID": true,
	"PPID": true, "RANDOM": true, "SECONDS": true, "LINENO": true, "BASH_SOURCE": true, "IFS": true, "PS1": true, "DISPLAY": true,
	"XDG_CONFIG_HOME": true, "XDG_DATA_HOME": true, "XDG_CACHE_HOME": true, "XDG_RUNTIME_DIR": true, "NODE_ENV": true, "DEBUG": true,
	"CI": true, "PYTHONPATH": true, "NODE_PATH": true, "VIRTUAL_ENV": true, "LC_ALL": true, "COLUMNS": true, "LINES": true, "SHLVL": true}

// envRole says what a variable holds, from its name: "" for a variable
// the driver leaves alone.
func envRole(name string) string {
	switch name {
	case "CLAUDE_PLUGIN_ROOT", "CLAUDE_SKILL_DIR", "SKILL_DIR", "SKILL_ROOT", "SKILL_PATH", "SKILL_BASE_DIR":
		return kindSkillDir
	case "CLAUDE_PROJECT_DIR", "PROJECT_DIR", "PROJECT_ROOT", "REPO_ROOT", "WORKSPACE_DIR", "GITHUB_WORKSPACE":
		return kindRepo
	}
	ws := words(name)
	last := ws[len(ws)-1]
	switch {
	case has(ws, "webhook", "hook") || last == "callback":
		return kindWebhook
	case last == "url" || last == "uri" || last == "endpoint" || last == "base" && has(ws, "api") || last == "dsn" || last == "addr" && has(ws, "server", "api"):
		return kindURL
	case last == "host" || last == "hostname" || last == "domain" || last == "server":
		return kindHost
	case last == "port":
		return kindPort
	case last == "key" || last == "token" || last == "secret" || last == "pat" || last == "apikey" || has(ws, "api") && last == "key":
		return kindKey
	case last == "password" || last == "passwd" || last == "pass":
		return kindPassword
	}
	return ""
}

// envReads lists the variables text reads (a script's source, or a shell
// command when shell is set), without those it also assigns itself or
// reads with a default.
func envReads(text string, shell bool) []string {
	seen := map[string]bool{}
	var out []string
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, m := range envReadRE.FindAllStringSubmatch(text, -1) {
		for _, g := range m[1:] {
			add(g)
		}
	}
	if shell || !strings.Contains(text, "import ") && !strings.Contains(text, "require(") {
		for _, m := range shellVarRE.FindAllStringSubmatch(text, -1) {
			if m[2] != "" {
				continue // has a default
			}
			add(m[1])
			add(m[3])
		}
	}
	assigned := map[string]bool{}
	for _, m := range assignVarRE.FindAllStringSubmatch(text, -1) {
		for _, g := range m[1:] {
			if g != "" {
				assigned[g] = true
			}
		}
	}
	var keep []string
	for _, n := range out {
		if !assigned[n] && !systemVars[n] {
			keep = append(keep, n)
		}
	}
	return keep
}

var assignValueRE = regexp.MustCompile(`(?m)(?:^|[\s;&|(])(?:export\s+)?([A-Z][A-Z0-9_]{2,})=("[^"$\x60]*"|'[^']*'|[^\s;&|"'$\x60]*)(?:$|[\s;&|)])`)

// noteAssignments remembers the variables a shell command sets, with their
// values when they are plain words or quoted strings: a later call that
// reads one gets it again (each call runs in a fresh shell, but the skill
// meant the value to carry over).
func (p *planner) noteAssignments(cmd string) {
	for _, m := range assignVarRE.FindAllStringSubmatch(cmd, -1) {
		if m[1] != "" {
			if _, ok := p.exported[m[1]]; !ok {
				p.exported[m[1]] = ""
			}
			p.setBy[m[1]] = cmd
		}
	}
	for _, m := range assignValueRE.FindAllStringSubmatch(cmd, -1) {
		if m[2] != "" && m[2] != `""` && m[2] != "''" {
			p.exported[m[1]] = m[2]
		}
	}
}

// envFor returns the variables to set for a call that reads names: those
// with a role that neither the home nor an earlier call sets, with their
// values, sorted by name.
func (p *planner) envFor(names []string) [][2]string {
	var out [][2]string
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] || p.vals.env[n] {
			continue
		}
		seen[n] = true
		if v, ok := p.exported[n]; ok {
			if v != "" {
				out = append(out, [2]string{n, v})
			}
			continue
		}
		role := envRole(n)
		if role == "" {
			continue
		}
		var val string
		switch role {
		case kindSkillDir:
			val = p.dir
		case kindRepo:
			val = p.vals.cfg.Fixtures["git"]
		case kindKey:
			if env := p.vals.plantedKey(words(n), ""); env != "" {
				val = `"$` + env + `"`
			} else {
				val = token(n)
			}
		default:
			val, _ = p.vals.value(placeholder{name: n, style: styleAngle}, fillSite{shell: true})
			if role == kindURL && has(words(n), "database", "db", "postgres", "pg") && p.vals.env["DATABASE_URL"] {
				val = `"$DATABASE_URL"`
			}
		}
		if val == "" {
			continue
		}
		if !strings.HasPrefix(val, `"$`) {
			val = shellQuote(val)
		}
		out = append(out, [2]string{n, val})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// withEnv prefixes cmd with an export of vars, so the call's arguments
// show what the driver set.
func withEnv(cmd string, vars [][2]string) string {
	if len(vars) == 0 {
		return cmd
	}
	parts := make([]string, len(vars))
	for i, v := range vars {
		parts[i] = v[0] + "=" + v[1]
	}
	return "export " + strings.Join(parts, " ") + "\n" + cmd
}
