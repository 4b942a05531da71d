package literal

import (
	"bytes"
	"encoding/json"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/toolspec"
)

// Bundled entry points: after the instructions, the driver runs what a skill
// ships to be run but its text does not call: package.json lifecycle
// scripts, main and bin; Makefile default targets; Python console scripts;
// Python files with a __main__ block; shell, Node, Ruby and Perl scripts no
// other bundled file includes; ELF executables. Those the text alludes to
// (by file name) come first, in the order of their first mention; then
// packages, Makefiles, then scripts by path. Each gets the usage the text
// shows, or the one its --help prints (a usage probe first, then the real
// call built from its output), or the one its source suggests.

// A unit is one entry point, or a package's steps.
type unit struct {
	key   string // what it is ("scripts/run.py", "package.json")
	first int    // offset of its first mention in the instructions; -1: none
	tier  int    // 0 packages, 1 make, 2 console scripts, 3 scripts
	plan  func()
}

var (
	pyImportRE  = regexp.MustCompile(`(?m)^\s*(?:from\s+\.*([\w.]*)\s+import\s+([\w, ]+)|import\s+([\w., ]+))`)
	jsImportRE  = regexp.MustCompile(`(?:require\(\s*|from\s+|import\s+|import\(\s*)['"](\.{1,2}/[^'"]+)['"]`)
	shSourceRE  = regexp.MustCompile(`(?m)(?:^|[;&|]\s*)(?:source|\.)\s+["']?([^\s"';]+)`)
	rbRequireRE = regexp.MustCompile(`require(?:_relative)?\s*\(?\s*['"]([^'"]+)['"]`)
	makeRuleRE  = regexp.MustCompile(`(?m)^([A-Za-z0-9_][\w./-]*)\s*:(?:[^=]|$)`)
	consoleRE   = regexp.MustCompile(`(?m)^\s*["']?([\w.-]+)["']?\s*=\s*["']([\w.]+):([\w.]+)["']`)
	setupEntry  = regexp.MustCompile(`["']([\w.-]+)\s*=\s*([\w.]+):([\w.]+)["']`)
)

type pkgJSON struct {
	Name            string            `json:"name"`
	Main            string            `json:"main"`
	Bin             json.RawMessage   `json:"bin"`
	Scripts         map[string]string `json:"scripts"`
	Dependencies    map[string]any    `json:"dependencies"`
	DevDependencies map[string]any    `json:"devDependencies"`
}

func (pj pkgJSON) bins() []string {
	var one string
	if json.Unmarshal(pj.Bin, &one) == nil && one != "" {
		return []string{one}
	}
	var many map[string]string
	if json.Unmarshal(pj.Bin, &many) != nil {
		return nil
	}
	var out []string
	for _, v := range many {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// lifecycle is the order npm runs a package's scripts in on install, then
// what a user runs.
var lifecycle = []string{"preinstall", "install", "postinstall", "prepublish", "preprepare", "prepare", "postprepare", "start", "test"}

// entryPoints plans the bundled entry points the instructions did not run.
func (p *planner) entryPoints() {
	text := p.instructionText()
	covered := map[string]bool{}
	var units []unit
	mention := func(names ...string) int {
		best := -1
		for _, n := range names {
			if n == "" {
				continue
			}
			if i := wordIndex(text, n); i >= 0 && (best < 0 || i < best) {
				best = i
			}
		}
		return best
	}
	for i := range p.s.Files {
		f := &p.s.Files[i]
		if f.Doc || f.Binary || path.Base(f.Path) != "package.json" || strings.Contains(f.Path, "node_modules/") {
			continue
		}
		var pj pkgJSON
		if json.Unmarshal(f.Content, &pj) != nil {
			continue
		}
		dir := path.Dir(f.Path)
		files := append([]string{pj.Main}, pj.bins()...)
		for _, s := range pj.Scripts {
			files = append(files, strings.Fields(s)...)
		}
		for _, x := range files {
			covered[path.Clean(path.Join(dir, x))] = true
		}
		if p.textRan("npm install") && dir == "." && p.textRan("npm start") {
			continue
		}
		pjc, fc := pj, f
		units = append(units, unit{key: f.Path, first: mention(pj.Name, "package.json", "npm", pj.Main), tier: 0, plan: func() { p.npmUnit(fc, pjc) }})
	}
	for i := range p.s.Files {
		f := &p.s.Files[i]
		base := path.Base(f.Path)
		if f.Doc || f.Binary || base != "Makefile" && base != "makefile" && base != "GNUmakefile" || p.textRan("make") {
			continue
		}
		target := ""
		for _, m := range makeRuleRE.FindAllStringSubmatch(string(f.Content), -1) {
			if !strings.HasPrefix(m[1], ".") && !strings.Contains(m[1], "%") {
				target = m[1]
				break
			}
		}
		fc := f
		units = append(units, unit{key: f.Path, first: mention("Makefile", "make"), tier: 1, plan: func() { p.makeUnit(fc, target) }})
	}
	for i := range p.s.Files {
		f := &p.s.Files[i]
		base := path.Base(f.Path)
		if f.Doc || f.Binary || base != "pyproject.toml" && base != "setup.py" {
			continue
		}
		var scripts [][3]string // name, module, function
		if base == "pyproject.toml" {
			scripts = pyprojectScripts(string(f.Content))
		} else {
			for _, m := range setupEntry.FindAllStringSubmatch(string(f.Content), -1) {
				scripts = append(scripts, [3]string{m[1], m[2], m[3]})
			}
		}
		dir := path.Dir(f.Path)
		for _, sc := range scripts {
			mod := strings.ReplaceAll(sc[1], ".", "/")
			for _, cand := range []string{mod + ".py", "src/" + mod + ".py", mod + "/__init__.py", "src/" + mod + "/__init__.py"} {
				covered[path.Clean(path.Join(dir, cand))] = true
			}
		}
		if len(scripts) == 0 && base == "pyproject.toml" {
			continue
		}
		fc := f
		units = append(units, unit{key: f.Path, first: mention(append([]string{base}, names(scripts)...)...), tier: 2, plan: func() { p.pythonPackageUnit(fc, scripts) }})
	}
	imported := p.includedFiles()
	p.inContainer = p.containerScripts()
	for i := range p.s.Files {
		f := &p.s.Files[i]
		if f.Doc || p.ran[f.Path] || covered[f.Path] || imported[f.Path] || !p.isEntryScript(f) {
			continue
		}
		fc := f
		units = append(units, unit{key: f.Path, first: mention(path.Base(f.Path)), tier: 3, plan: func() { p.entryScript(fc, "", 0, agent.ReasonEntryPoint) }})
	}
	sort.SliceStable(units, func(i, j int) bool {
		a, b := units[i], units[j]
		if (a.first >= 0) != (b.first >= 0) {
			return a.first >= 0
		}
		if a.first != b.first {
			return a.first < b.first
		}
		if a.tier != b.tier {
			return a.tier < b.tier
		}
		da, db := strings.Count(a.key, "/"), strings.Count(b.key, "/")
		if da != db {
			return da < db
		}
		return a.key < b.key
	})
	for _, u := range units {
		u.plan()
	}
	for f := range covered {
		if p.s.File(f) != nil {
			p.ran[f] = true // run by a package's scripts or a console script
		}
	}
}

func names(scripts [][3]string) []string {
	var out []string
	for _, s := range scripts {
		out = append(out, s[0])
	}
	return out
}

// pyprojectScripts reads the [project.scripts] (or [tool.poetry.scripts])
// table of a pyproject.toml: name = "module:function" lines.
func pyprojectScripts(toml string) [][3]string {
	var out [][3]string
	in := false
	for _, l := range strings.Split(toml, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			in = t == "[project.scripts]" || t == "[tool.poetry.scripts]"
			continue
		}
		if !in {
			continue
		}
		if m := consoleRE.FindStringSubmatch(t); m != nil {
			out = append(out, [3]string{m[1], m[2], m[3]})
		}
	}
	return out
}

// instructionText is the instruction files' bodies and the references they
// read, for finding allusions.
func (p *planner) instructionText() string {
	var b strings.Builder
	for i := range p.s.Files {
		f := &p.s.Files[i]
		if f.Doc || p.read[f.Path] && skill.IsMarkdown(f.Path) {
			b.WriteString(f.Body())
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// wordIndex finds name in text as a whole word (not inside a longer name).
func wordIndex(text, name string) int {
	for i := 0; ; {
		j := strings.Index(text[i:], name)
		if j < 0 {
			return -1
		}
		s, e := i+j, i+j+len(name)
		if (s == 0 || !isNameChar(text[s-1])) && (e == len(text) || !isNameChar(text[e]) || text[e] == '.' && (e+1 == len(text) || !isNameChar(text[e+1]))) {
			return s
		}
		i = e
	}
}

func isNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// textRan reports whether an instruction command already did cmd ("npm
// install").
func (p *planner) textRan(cmd string) bool {
	for _, c := range p.commands {
		if wordIndex(c, cmd) >= 0 {
			return true
		}
	}
	return false
}

// includedFiles lists the bundled files another bundled file imports,
// requires or sources: libraries, not entry points.
func (p *planner) includedFiles() map[string]bool {
	out := map[string]bool{}
	stems := map[string][]string{} // python module stem → files
	for i := range p.s.Files {
		f := &p.s.Files[i]
		if strings.HasSuffix(f.Path, ".py") {
			stem := strings.TrimSuffix(path.Base(f.Path), ".py")
			if stem == "__init__" {
				stem = path.Base(path.Dir(f.Path))
			}
			stems[stem] = append(stems[stem], f.Path)
		}
	}
	for i := range p.s.Files {
		f := &p.s.Files[i]
		if f.Doc || f.Binary {
			continue
		}
		src := string(f.Content)
		dir := path.Dir(f.Path)
		switch interpreter(*f) {
		case "python3":
			for _, m := range pyImportRE.FindAllStringSubmatch(src, -1) {
				var mods []string
				if m[1] != "" {
					mods = append(mods, m[1])
				}
				list := m[3]
				if m[2] != "" {
					list += "," + m[2] // "from . import util", "from pkg import mod"
				}
				for _, x := range strings.Split(list, ",") {
					if w := strings.Fields(x); len(w) > 0 {
						mods = append(mods, w[0]) // "import x as y": x
					}
				}
				for _, mod := range mods {
					parts := strings.Split(mod, ".")
					for _, part := range parts {
						for _, target := range stems[part] {
							if target != f.Path {
								out[target] = true
							}
						}
					}
				}
			}
		case "node":
			for _, m := range jsImportRE.FindAllStringSubmatch(src, -1) {
				t := path.Clean(path.Join(dir, m[1]))
				for _, cand := range []string{t, t + ".js", t + ".mjs", t + ".cjs", t + "/index.js"} {
					if cand != f.Path && p.s.File(cand) != nil {
						out[cand] = true
					}
				}
			}
		case "bash":
			for _, m := range shSourceRE.FindAllStringSubmatch(src, -1) {
				base := path.Base(m[1])
				for j := range p.s.Files {
					g := &p.s.Files[j]
					if path.Base(g.Path) == base && g.Path != f.Path {
						out[g.Path] = true
					}
				}
			}
		case "ruby", "perl":
			for _, m := range rbRequireRE.FindAllStringSubmatch(src, -1) {
				base := strings.TrimSuffix(path.Base(m[1]), path.Ext(m[1]))
				for j := range p.s.Files {
					g := &p.s.Files[j]
					if strings.TrimSuffix(path.Base(g.Path), path.Ext(g.Path)) == base && g.Path != f.Path {
						out[g.Path] = true
					}
				}
			}
		}
	}
	return out
}

// isEntryScript reports whether a bundled file is meant to be run: a
// script (see interpreter) that is not a package's __init__, a test or a
// tool's config, or an ELF executable.
func (p *planner) isEntryScript(f *skill.File) bool {
	if f.Binary {
		return bytes.HasPrefix(f.Content, []byte("\x7fELF")) && f.Mode&0o111 != 0
	}
	in := interpreter(*f)
	if in == "" {
		return false
	}
	base := path.Base(f.Path)
	switch {
	case base == "__init__.py" || base == "conftest.py" || base == "setup.py",
		strings.HasPrefix(base, "test_") || strings.Contains(base, "_test.") || strings.Contains(base, ".test.") || strings.Contains(base, ".spec."),
		strings.Contains(base, ".config."), strings.Contains(f.Path, "node_modules/"):
		return false
	}
	return true
}

// entryScript plans a bundled script: with the arguments the text shows,
// or after a usage probe, or with those its source suggests. file and
// line point at the instruction that named it (for a prose mention); for
// an entry point nothing names, they point at the instruction file's first
// line.
func (p *planner) entryScript(f *skill.File, file string, line int, reason string) {
	p.ran[f.Path] = true
	if file == "" {
		file, line = p.anchor()
	}
	// A script runs where the agent works (the project), by its path in
	// the skill folder: what it writes to its working folder goes there.
	where := p.inDir("", nil)
	if p.inContainer[f.Path] && reason == agent.ReasonEntryPoint {
		// run as the container the skill defines runs it: its own home,
		// the project as the workspace, the environment passed through
		where += containerHome
	}
	script := shellQuote(path.Join(p.dir, f.Path))
	if f.Binary {
		p.emit(toolspec.Bash, where+script, file, line, reason, true, envReads(string(f.Content), false))
		return
	}
	in := interpreter(*f)
	run := where + in + " " + script
	if path.Base(f.Path) == "__main__.py" && path.Dir(f.Path) != "." {
		// A package's __main__: python3 -m pkg, from the package's parent.
		pkg := path.Dir(f.Path)
		run = "cd " + shellQuote(path.Join(p.dir, path.Dir(pkg))) + " && " + in + " -m " + path.Base(pkg)
	}
	reads := envReads(string(f.Content), false)
	src := string(f.Content)
	if args, ok := textUsage(p.codeTexts(), path.Base(f.Path)); ok {
		p.emit(toolspec.Bash, run+" "+args, file, line, reason, true, reads)
		return
	}
	u := staticUsage(src)
	hint := cmpOr(p.vals.defaultKind, kindFromExts(src))
	if !u.takesArgs {
		p.emit(toolspec.Bash, run, file, line, reason, false, reads)
		return
	}
	// Ask the script how it is called, then call it so.
	p.emit(toolspec.Bash, run+" --help", file, line, agent.ReasonUsageProbe, false, reads)
	tail, unfilled := p.vals.render(u.args, hint)
	call := func(tail string, unfilled []string) agent.Proposal {
		cmd := strings.TrimSpace(run + " " + tail)
		tc := agent.ToolCall{Name: toolspec.Bash, SkillFile: file, SkillLine: line, PlanReason: reason}
		if len(unfilled) > 0 {
			tc.Arguments = encodeArgs(map[string]any{"command": cmd})
			return agent.Proposal{ToolCall: tc, Reject: rejectText(unfilled)}
		}
		if tail != "" {
			tc.PlanReason = agent.ReasonPlaceholder
		}
		tc.Arguments = encodeArgs(map[string]any{"command": withEnv(cmd, p.envFor(append(reads, envReads(cmd, true)...)))})
		return agent.Proposal{ToolCall: tc}
	}
	p.items = append(p.items, item{call: call(tail, unfilled), follow: func(help string) (agent.Proposal, bool) {
		args, ok := parseHelp(help)
		if !ok {
			return agent.Proposal{}, false
		}
		return call(p.vals.render(args, cmpOr(hint, kindFromText(help)))), true
	}})
}

// anchor is where calls no instruction line asks for point: the first body
// line of the first instruction file.
func (p *planner) anchor() (string, int) {
	docs := p.s.Docs()
	if len(docs) == 0 {
		return "", 0
	}
	return docs[0].Path, max(1, docs[0].BodyLine)
}

// workCopy returns a command making a writable copy of a skill folder (the
// installed skill is read-only) and the copy's path.
func (p *planner) workCopy(dir string) (string, string) {
	name := path.Base(p.dir)
	if dir != "." && dir != "" {
		name += "-" + strings.ReplaceAll(dir, "/", "-")
	}
	w := "/tmp/" + name
	src := p.dir
	if dir != "." && dir != "" {
		src = path.Join(p.dir, dir)
	}
	return "rm -rf " + shellQuote(w) + " && cp -r " + shellQuote(src) + " " + shellQuote(w) + " && chmod -R u+w " + shellQuote(w), w
}

// npmUnit plans a package: its dependencies (without their install
// scripts), then its own lifecycle scripts one by one, then main or bin
// unless start runs it, then test.
func (p *planner) npmUnit(f *skill.File, pj pkgJSON) {
	file, line := p.anchor()
	dir := path.Dir(f.Path)
	where := path.Join(p.dir, dir)
	if len(pj.Dependencies)+len(pj.DevDependencies) > 0 {
		setup, w := p.workCopy(dir)
		where = w
		p.emit(toolspec.Bash, setup+" && cd "+shellQuote(w)+" && npm install --ignore-scripts --no-audit --no-fund", file, line, agent.ReasonDependency, false, nil)
	}
	cd := "cd " + shellQuote(where) + " && "
	reads := envReads(string(f.Content), true)
	scriptReads := func(cmd string) []string {
		r := append([]string(nil), reads...)
		for _, w := range strings.Fields(cmd) {
			if g := p.s.File(path.Clean(path.Join(dir, w))); g != nil {
				r = append(r, envReads(string(g.Content), false)...)
			}
		}
		return r
	}
	startRuns := ""
	var ran []string // the lifecycle scripts' commands: main need not run again if one runs it
	for _, name := range lifecycle {
		cmd, ok := pj.Scripts[name]
		if !ok {
			continue
		}
		if name == "start" {
			startRuns = cmd
		}
		if name == "test" && startRuns == "" {
			p.npmMain(f, pj, cd, file, line, scriptReads, ran)
		}
		ran = append(ran, cmd)
		p.emit(toolspec.Bash, cd+"npm run "+name, file, line, agent.ReasonEntryPoint, false, scriptReads(cmd))
	}
	if startRuns == "" && pj.Scripts["test"] == "" {
		p.npmMain(f, pj, cd, file, line, scriptReads, ran)
	}
	var other []string
	for name := range pj.Scripts {
		if !contains(lifecycle, name) {
			other = append(other, name)
		}
	}
	sort.Strings(other)
	if len(other) > 0 {
		p.notes = append(p.notes, f.Path+" scripts not run: "+strings.Join(other, ", "))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// npmMain runs a package's main and bin files with node.
func (p *planner) npmMain(f *skill.File, pj pkgJSON, cd, file string, line int, reads func(string) []string, ran []string) {
	dir := path.Dir(f.Path)
	mains := pj.bins()
	if pj.Main != "" {
		mains = append([]string{pj.Main}, mains...)
	}
	if len(mains) == 0 && p.s.File(path.Join(dir, "index.js")) != nil {
		mains = []string{"index.js"}
	}
	seen := map[string]bool{}
	for _, m := range mains {
		m = path.Clean(m)
		if seen[m] {
			continue
		}
		seen[m] = true
		g := p.s.File(path.Join(dir, m))
		if g == nil || p.ran[g.Path] || slices.ContainsFunc(ran, func(cmd string) bool { return mentions(cmd, m) }) {
			// missing, run by the skill's own commands, or by a lifecycle script
			continue
		}
		p.ran[g.Path] = true
		run := "node " + shellQuote(m)
		if args, ok := textUsage(p.codeTexts(), path.Base(m)); ok {
			p.emit(toolspec.Bash, cd+run+" "+args, file, line, agent.ReasonEntryPoint, true, reads(m))
			continue
		}
		u := staticUsage(string(g.Content))
		tail, unfilled := p.vals.render(u.args, cmpOr(p.vals.defaultKind, kindFromExts(string(g.Content))))
		if len(unfilled) > 0 {
			p.reject(toolspec.Bash, map[string]any{"command": cd + run + " " + tail}, file, line, agent.ReasonEntryPoint, unfilled)
			continue
		}
		r := agent.ReasonEntryPoint
		if tail != "" {
			r = agent.ReasonPlaceholder
		}
		p.emit(toolspec.Bash, strings.TrimSpace(cd+run+" "+tail), file, line, r, false, reads(m))
	}
}

// makeUnit runs a Makefile's default target in a writable copy.
func (p *planner) makeUnit(f *skill.File, target string) {
	file, line := p.anchor()
	setup, w := p.workCopy(path.Dir(f.Path))
	cmd := setup + " && make -C " + shellQuote(w)
	if target != "" {
		p.notes = append(p.notes, f.Path+": default target "+target)
	}
	p.emit(toolspec.Bash, cmd, file, line, agent.ReasonEntryPoint, false, envReads(string(f.Content), true))
}

// pythonPackageUnit installs a Python package (which runs setup.py) and
// runs its console scripts.
func (p *planner) pythonPackageUnit(f *skill.File, scripts [][3]string) {
	file, line := p.anchor()
	dir := path.Dir(f.Path)
	setup, w := p.workCopy(dir)
	if !p.textRan("pip install") {
		p.emit(toolspec.Bash, setup+" && cd "+shellQuote(w)+" && python3 -m pip install --user --break-system-packages --no-build-isolation .", file, line, agent.ReasonDependency, false, nil)
	}
	for _, sc := range scripts {
		run := "PYTHONPATH=src:. python3 -c " + shellQuote("import sys; sys.argv[0] = '"+sc[0]+"'; from "+sc[1]+" import "+sc[2]+"; sys.exit("+sc[2]+"())")
		var reads []string
		mod := strings.ReplaceAll(sc[1], ".", "/")
		for _, cand := range []string{mod + ".py", "src/" + mod + ".py"} {
			if g := p.s.File(path.Clean(path.Join(dir, cand))); g != nil {
				reads = envReads(string(g.Content), false)
				p.ran[g.Path] = true
			}
		}
		cd := "cd " + shellQuote(path.Join(p.dir, dir)) + " && "
		if args, ok := textUsage(p.codeTexts(), sc[0]); ok {
			p.emit(toolspec.Bash, cd+run+" "+args, file, line, agent.ReasonEntryPoint, true, reads)
			continue
		}
		p.emit(toolspec.Bash, cd+run, file, line, agent.ReasonEntryPoint, false, reads)
	}
}

// codeTexts is the code of the instructions (and the references read):
// fenced blocks and inline code spans, where usage examples are.
func (p *planner) codeTexts() []string {
	if p.code != nil {
		return p.code
	}
	p.code = []string{}
	for i := range p.s.Files {
		f := &p.s.Files[i]
		if !f.Doc && !(p.read[f.Path] && skill.IsMarkdown(f.Path)) {
			continue
		}
		body := f.Body()
		for _, b := range skill.CodeBlocks(body, 1) {
			p.code = append(p.code, strings.Join(b.Lines, "\n"))
		}
		for _, m := range inlineRE.FindAllStringSubmatch(body, -1) {
			p.code = append(p.code, m[1])
		}
	}
	return p.code
}

// containerHome starts a bundled script that runs inside the container the
// skill defines with a home of its own, as the container has.
const containerHome = `HOME="$(mktemp -d)" `

// containerDefs are the files that define a container (an image and what
// runs in it when it is built, created or started).
var containerDefs = regexp.MustCompile(`(?i)^(?:dockerfile(?:\..*)?|.*\.dockerfile|containerfile|devcontainer\.json|\.devcontainer\.json|(?:docker-)?compose(?:\.[a-z0-9_-]+)?\.ya?ml)$`)

// containerScripts finds the bundled scripts that run inside a container
// the skill defines: a Dockerfile copies them into the image, a
// devcontainer.json runs them after it creates the container (a
// devcontainer's post-create script configures the container's own home
// and agent: run on the user's machine, it would change the user's). The
// instructions never ran them on the user's machine (entryPoints plans
// only those): they run with a home of their own (containerHome).
func (p *planner) containerScripts() map[string]bool {
	var defs []string
	for _, f := range p.s.Files {
		if !f.Binary && containerDefs.MatchString(path.Base(f.Path)) {
			defs = append(defs, string(f.Content))
		}
	}
	out := map[string]bool{}
	if len(defs) == 0 {
		return out
	}
	text := strings.Join(defs, "\n")
	for sp := range p.scripts {
		if wordIndex(text, path.Base(sp)) >= 0 {
			out[sp] = true
		}
	}
	return out
}
