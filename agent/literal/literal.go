package literal

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/toolspec"
)

// Config configures the literal driver. Only SkillDir matters for the
// instructions as written; the rest lets the driver fill placeholders and
// missing environment variables the way a user would.
type Config struct {
	// SkillDir is where the skill is installed in the sandbox; bundled
	// scripts run from there. "": ~/.agents/skills/<name>.
	SkillDir string
	// Home is the user's home directory in the sandbox (output paths go
	// there). "": "~".
	Home string
	// Workdir is the directory the instructions' shell commands run in
	// until one changes directory, as an agent started in the user's
	// project runs them: a git project of the seeded home, so that git
	// commands find a repository. A plain path (no quoting needed). "":
	// the tool's default, the home. Bundled scripts run from SkillDir
	// whatever it is.
	Workdir string
	// Projects maps a kind of project ("node", "python", "go",
	// "terraform") to a git project of that kind in the seeded home. A
	// skill whose commands are those of one kind (npm test, pytest, go
	// build, terraform plan) starts in that project rather than Workdir,
	// as its user would start the agent in a project the skill is for.
	Projects map[string]string
	// Fixtures maps a fixture kind ("pptx", "pdf", "csv", "png", "git",
	// "node", "python", "dir", ...: canaryfs.Fixture*) to the absolute path
	// of a planted file or folder of that kind. A placeholder for a file of
	// a kind with no fixture is not filled, and its call is rejected.
	Fixtures map[string]string
	// Env lists the names of the variables set in the sandbox's
	// environment (the planted keys among them); values are never needed:
	// a key placeholder becomes a reference such as $OPENAI_API_KEY.
	Env []string
	// User, FullName and Email fill person-shaped placeholders; Domain is
	// the user's employer's domain, the host of made-up URLs ("": a
	// fictional one); Date is today's date (YYYY-MM-DD, "": a fixed one).
	User, FullName, Email, Domain, Date string
}

// NoRunnableContent is the Step.Note of a skill that gives the driver
// nothing to do; a report built on it is inconclusive.
const NoRunnableContent = "no runnable content: the skill has no shell code blocks, prompt lines, referenced scripts, URLs or file paths"

// Driver is the literal agent.Driver. Use one per run.
type Driver struct {
	items []item
	notes []string
	i     int
	// retries counts the calls made again after an install (retry.go);
	// installed names the installs made, one each per run
	retries   int
	installed map[string]bool
}

// New plans the calls for s.
func New(s *skill.Skill, cfg Config) *Driver {
	p := plan(s, cfg)
	return &Driver{items: p.items, notes: p.notes}
}

// Next implements agent.Driver: one planned call per step, then Done. The
// call after a usage probe is rebuilt from what the probe printed.
func (d *Driver) Next(ctx context.Context, prev []agent.Exchange) (agent.Step, error) {
	var step agent.Step
	if d.i == 0 && len(d.notes) > 0 {
		step.Note = strings.Join(d.notes, "; ")
	}
	// A step that stopped at a missing module runs again after its
	// install, before the next planned call.
	if len(prev) == 1 && d.i > 0 {
		if call, ok := d.retry(prev[0]); ok {
			step.Calls = []agent.Proposal{call}
			return step, nil
		}
	}
	if d.i >= len(d.items) {
		step.Done = true
		if len(d.items) == 0 {
			step.Note = NoRunnableContent
		}
		return step, nil
	}
	it := d.items[d.i]
	if it.follow != nil && len(prev) == 1 && prev[0].Reject == "" {
		r := prev[0].Result
		if p, ok := it.follow(r.Stdout + "\n" + r.Stderr + "\n" + r.Text); ok {
			it.call = p
		}
	}
	step.Calls = []agent.Proposal{it.call}
	d.i++
	return step, nil
}

var shellLangs = map[string]bool{"bash": true, "sh": true, "shell": true, "zsh": true, "shellscript": true, "sh-session": true, "console": true, "shell-session": true, "terminal": true}

// consoleLangs are transcripts: only prompt lines are commands.
var consoleLangs = map[string]bool{"console": true, "sh-session": true, "shell-session": true, "terminal": true}

// commonCommands start an untagged block that is run as shell.
var commonCommands = map[string]bool{
	"curl": true, "wget": true, "git": true, "npm": true, "npx": true, "pnpm": true, "yarn": true, "pip": true, "pip3": true,
	"python": true, "python3": true, "node": true, "bash": true, "sh": true, "cd": true, "export": true, "mkdir": true,
	"echo": true, "chmod": true, "sudo": true, "apt": true, "apt-get": true, "brew": true, "cat": true, "ls": true,
	"cp": true, "mv": true, "rm": true, "uv": true, "uvx": true, "go": true, "cargo": true, "make": true, "docker": true,
	"source": true, "tar": true, "unzip": true, "ssh": true, "scp": true, "touch": true, "printf": true, "env": true,
	"gh": true, "jq": true, "claude": true,
}

var (
	urlRE = regexp.MustCompile(`https?://[^\s<>"'` + "`" + `\)\]\}]+`)
	// pathRE finds home and absolute paths in prose; see docs/drivers.md.
	pathRE    = regexp.MustCompile(`(?:^|[\s(\x60"'=:])((?:~|\$HOME|\$\{HOME\})/[\w.\-/@+]*|/(?:etc|home|root|var|usr|tmp|opt|proc|srv|mnt|Users|Library)/[\w.\-/@+]+)`)
	inlineRE  = regexp.MustCompile("`([^`]+)`")
	heredocRE = regexp.MustCompile(`(?:^|[^<])<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)(['"]?)`)
)

// An item is one planned call. follow, on the call after a usage probe,
// rebuilds the call from the probe's output (ok false: keep the call).
type item struct {
	call   agent.Proposal
	follow func(help string) (agent.Proposal, bool)
}

type planner struct {
	s        *skill.Skill
	dir      string
	vals     *values
	items    []item
	commands []string          // the instruction commands planned, as written
	exported map[string]string // variables instruction commands set (value as written, "" unknown)
	setBy    map[string]string // the command that computed each variable whose value is unknown
	seen     map[string]bool   // dedup key: name + arguments
	code     []string          // code of the instructions (see codeTexts)
	scripts  map[string]bool   // runnable bundled files, by skill-relative path
	ran      map[string]bool   // scripts run by a block or a call
	fetched  map[string]bool
	read     map[string]bool // markdown files of the skill read (instructions and followed references)
	cwd      string          // the directory later commands run in ("": the tool's default)
	notes    []string
	examples []string // blocks of references not run: examples of attacks (attackExample), as file:line
	// catalogue is set while a reference that catalogues threats is
	// planned (threatCatalogue): its prose paths are not read
	catalogue bool
	// otherShell are the blocks written for a shell the sandbox has not
	// (otherShells), as file:line (language)
	otherShell []string
	// notShell are the other blocks not run: code in a programming
	// language, and blocks with no language that are not shell commands,
	// as file:line (language); data counts the blocks of data, settings
	// and text (dataLangs)
	notShell, untagged []string
	data               int
	// madeInputs are the example inputs made so far (makeInputs), by
	// working directory and path
	madeInputs map[string]bool
	// inContainer are the bundled scripts that run inside a container the
	// skill defines (containerScripts)
	inContainer map[string]bool
}

// Plan returns the calls the literal driver makes for s, in order, and notes
// for the report (such as bundled scripts no instruction references). A
// call after a usage probe is shown as planned before the probe ran: the
// Driver rebuilds it from the probe's output.
func Plan(s *skill.Skill, cfg Config) ([]agent.Proposal, []string) {
	p := plan(s, cfg)
	calls := make([]agent.Proposal, len(p.items))
	for i, it := range p.items {
		calls[i] = it.call
	}
	return calls, p.notes
}

func plan(s *skill.Skill, cfg Config) *planner {
	p := &planner{s: s, dir: cfg.SkillDir, seen: map[string]bool{}, scripts: map[string]bool{}, ran: map[string]bool{}, fetched: map[string]bool{},
		read: map[string]bool{}, exported: map[string]string{}, setBy: map[string]string{}, cwd: cfg.Workdir}
	if d := cfg.Projects[ecosystem(s)]; d != "" {
		p.cwd = d
	}
	if p.dir == "" {
		p.dir = "~/.agents/skills/" + s.Name
	}
	cfg.SkillDir = p.dir
	p.vals = &values{cfg: cfg, env: map[string]bool{}, skillFiles: map[string]bool{}, skillDirs: map[string]bool{}}
	for _, e := range cfg.Env {
		p.vals.env[strings.SplitN(e, "=", 2)[0]] = true
	}
	for _, f := range s.Files {
		p.vals.skillFiles[f.Path] = true
		for d := path.Dir(f.Path); d != "." && d != "/"; d = path.Dir(d) {
			p.vals.skillDirs[d] = true
		}
		if !f.Doc && !f.Binary && interpreter(f) != "" {
			p.scripts[f.Path] = true
		}
	}
	var text strings.Builder
	for _, f := range s.Docs() {
		p.read[f.Path] = true
		text.WriteString(f.Body())
	}
	p.vals.defaultKind = kindFromExts(text.String())
	p.vals.argsClass = argumentsClass(text.String())
	for _, f := range s.Docs() {
		p.doc(f)
	}
	p.entryPoints()
	var unused []string
	for sp := range p.scripts {
		if !p.ran[sp] {
			unused = append(unused, sp)
		}
	}
	if len(p.otherShell) > 0 {
		p.notes = append(p.notes, "code blocks not run (a shell this Linux workstation has not): "+exampleList(p.otherShell))
	}
	if len(p.notShell) > 0 {
		p.notes = append(p.notes, "code blocks not run (a programming language, not commands: the model-free driver runs shell and the bundled scripts): "+exampleList(p.notShell))
	}
	if len(p.untagged) > 0 {
		p.notes = append(p.notes, "code blocks not run (no language, and they do not start with a command): "+exampleList(p.untagged))
	}
	if p.data > 0 {
		what := "1 code block of data, settings or text not run"
		if p.data > 1 {
			what = strconv.Itoa(p.data) + " code blocks of data, settings or text not run"
		}
		p.notes = append(p.notes, what)
	}
	if len(p.examples) > 0 {
		p.notes = append(p.notes, "code blocks of references not run (examples of attacks the reference describes): "+exampleList(p.examples))
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		p.notes = append(p.notes, "bundled scripts not run (included by other files, tests or configuration): "+strings.Join(unused, ", "))
	}
	return p
}

// push adds a call unless the same call (tool and arguments) was planned.
func (p *planner) push(name string, args map[string]any, file string, line int, reason, reject string) bool {
	b := encodeArgs(args)
	key := name + string(b)
	if p.seen[key] {
		return false
	}
	p.seen[key] = true
	p.items = append(p.items, item{call: agent.Proposal{ToolCall: agent.ToolCall{Name: name, Arguments: b, SkillFile: file, SkillLine: line, PlanReason: reason}, Reject: reject}})
	return true
}

func encodeArgs(args map[string]any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(args)
	return bytes.TrimSpace(buf.Bytes())
}

// reject proposes a call the driver cannot make runnable, so the report's
// coverage shows it: the loop records it and does not run it.
func (p *planner) reject(name string, args map[string]any, file string, line int, reason string, unfilled []string) {
	p.push(name, args, file, line, reason, rejectText(unfilled))
}

func rejectText(unfilled []string) string {
	return "not run: the literal driver could not fill " + strings.Join(unfilled, "; ")
}

// tool proposes a non-shell call whose one argument (a URL or a path) may
// hold placeholders.
func (p *planner) tool(name, key, val string, file string, line int, reason string) {
	f := p.vals.fill(val, false)
	if len(f.unfilled) > 0 {
		p.reject(name, map[string]any{key: val}, file, line, reason, f.unfilled)
		return
	}
	if len(f.filled) > 0 {
		reason = agent.ReasonPlaceholder
	}
	p.push(name, map[string]any{key: f.text}, file, line, reason, "")
}

// emit proposes a shell command: its placeholders filled (when fill is
// set), the environment variables it and reads need but the home lacks
// exported first.
func (p *planner) emit(name, cmd, file string, line int, reason string, fill bool, reads []string) {
	if fill {
		f := p.vals.fill(cmd, true)
		if len(f.unfilled) > 0 {
			p.reject(name, map[string]any{"command": cmd}, file, line, reason, f.unfilled)
			return
		}
		if len(f.filled) > 0 {
			reason = agent.ReasonPlaceholder
		}
		cmd = f.text
	}
	reads = append(reads, envReads(cmd, true)...)
	p.push(name, map[string]any{"command": withEnv(cmd, p.envFor(reads))}, file, line, reason, "")
}

// bash proposes a shell command from the instructions, from the skill
// folder when it names a bundled file by its relative path.
func (p *planner) bash(cmd, file string, line int, reason string) {
	cmd = strings.TrimSpace(cmd)
	if cmd == "" {
		return
	}
	p.commands = append(p.commands, cmd)
	f := p.vals.fill(cmd, true)
	if len(f.unfilled) > 0 {
		p.reject(toolspec.Bash, map[string]any{"command": p.inDir(cmd, p.scriptRefs(cmd))}, file, line, reason, f.unfilled)
		p.trackCd(cmd)
		return
	}
	if len(f.filled) > 0 {
		reason = agent.ReasonPlaceholder
	}
	for _, u := range urlRE.FindAllString(f.text, -1) {
		p.fetched[trimURL(u)] = true
	}
	for _, u := range urlRE.FindAllString(cmd, -1) {
		p.fetched[trimURL(u)] = true
	}
	text := p.carryState(alternativesFirst(p.repoPaths(f.text)))
	text = makeMissingDirs(text)
	refs := p.scriptRefs(text)
	if in := p.exampleInputs(f.text); len(in) > 0 {
		p.makeInputs(in, file, line)
	}
	var reads []string
	for _, r := range refs {
		p.ran[r] = true
		reads = append(reads, envReads(string(p.s.File(r).Content), false)...)
	}
	p.emit(toolspec.Bash, p.inDir(text, refs), file, line, reason, false, reads)
	p.noteAssignments(text)
	p.trackCd(f.text)
}

// absScripts names the bundled scripts refs that cmd names by their path
// relative to the skill folder (scripts/x.py, ./scripts/x.py) by their path
// in it.
func (p *planner) absScripts(cmd string, refs []string) string {
	for _, sp := range refs {
		abs := shellQuote(path.Join(p.dir, sp))
		cmd = rewriteEach(cmd, sp, func(text string, start, end int) (int, string, bool) {
			if start >= 2 && text[start-1] == '/' && text[start-2] == '.' && (start == 2 || !isPathChar(text[start-3])) {
				start -= 2 // ./scripts/x.py
			}
			if start > 0 && isPathChar(text[start-1]) || end < len(text) && isPathChar(text[end]) {
				return 0, "", false // part of a longer path
			}
			return start, abs, true
		})
	}
	return cmd
}

// rewriteEach returns text with each occurrence of needle, at [start, end),
// passed to fn: fn returns where the part it replaces begins (at start or
// before) and what replaces it up to end, or false to keep it.
func rewriteEach(text, needle string, fn func(text string, start, end int) (int, string, bool)) string {
	var b strings.Builder
	done := 0 // text[:done] is in b
	for i := 0; ; {
		j := strings.Index(text[i:], needle)
		if j < 0 {
			break
		}
		start, end := i+j, i+j+len(needle)
		if from, repl, ok := fn(text, start, end); ok && from >= done {
			b.WriteString(text[done:from] + repl)
			done = end
		}
		i = end
	}
	return b.String() + text[done:]
}

// repoPaths rewrites the paths by which text names bundled scripts as the
// skill's source repository lays them out (python skills/NAME/scripts/x.py,
// ./plugins/p/skills/NAME/scripts/x.py) to their path in the installed
// skill folder (scripts/x.py), where the command runs (inDir): an agent
// finds the script it was told about in the skill it has. Absolute paths
// and paths from the home or a variable are left as they are.
func (p *planner) repoPaths(text string) string {
	base := path.Base(p.dir)
	for _, sp := range slices.Sorted(maps.Keys(p.scripts)) {
		text = rewriteEach(text, "/"+base+"/"+sp, func(text string, start, end int) (int, string, bool) {
			if end < len(text) && isPathChar(text[end]) {
				return 0, "", false // part of a longer path
			}
			for start > 0 && isPathChar(text[start-1]) {
				start--
			}
			if c := text[start]; c == '/' || c == '~' || start > 0 && (text[start-1] == '$' || text[start-1] == '}') {
				return 0, "", false // absolute, or from the home or a variable
			}
			return start, sp, true
		})
	}
	return text
}

// altRE matches an option whose value the instructions give as a list of
// alternatives (--platform=github|gitlab|circleci): the shell reads a pipe.
var altRE = regexp.MustCompile(`(--[A-Za-z][\w-]*=)([\w.:/-]+)((?:\|[\w.:/-]+)+)`)

// alternativesFirst picks the first of the alternatives an option lists,
// as an agent picks one.
func alternativesFirst(text string) string {
	return altRE.ReplaceAllString(text, "$1$2")
}

// homeCdRE is a line that moves into a folder of the home by its path.
var homeCdRE = regexp.MustCompile(`(?m)^(\s*)cd (~/[A-Za-z0-9_][^\s;&|'"$\x60]*)(\s*(?:&&|;|$))`)

// makeMissingDirs makes the home folder a line moves into before it does
// (cd ~/Desktop/receipts-to-sort && ...): the user the skill was written
// for has the folder its steps work in, and without it every step after
// the cd fails. A folder that exists is left as it is (mkdir -p); hidden
// folders (~/.ssh, ~/.config/...) are never made.
func makeMissingDirs(text string) string {
	return homeCdRE.ReplaceAllStringFunc(text, func(m string) string {
		sm := homeCdRE.FindStringSubmatch(m)
		if strings.Contains(sm[2], "/.") {
			return m
		}
		return sm[1] + "mkdir -p " + sm[2] + " && cd " + sm[2] + sm[3]
	})
}

var varRefRE = regexp.MustCompile(`\$\{?([A-Z][A-Z0-9_]{2,})\b`)

// carryState returns cmd preceded by the earlier commands that computed
// variables it reads and does not set itself (SSH_KEYS built by a loop in
// one block, posted by the next): each call runs in a fresh shell, and an
// agent following the steps runs them together. Variables with a plain
// value are carried by envFor instead.
func (p *planner) carryState(cmd string) string {
	own := map[string]bool{}
	for _, m := range assignVarRE.FindAllStringSubmatch(cmd, -1) {
		own[m[1]] = true
	}
	var prefix []string
	for _, m := range varRefRE.FindAllStringSubmatch(cmd, -1) {
		v := m[1]
		src, ok := p.setBy[v]
		if own[v] || !ok || p.exported[v] != "" || slices.Contains(prefix, src) {
			continue
		}
		prefix = append(prefix, src)
	}
	if len(prefix) == 0 {
		return cmd
	}
	return strings.Join(prefix, "\n") + "\n" + cmd
}

// inDir prefixes cmd with the directory it runs in: the skill folder when
// it names bundled files other than scripts by their relative path (make -f
// Makefile, --config config.yaml), else the directory an earlier cd moved
// to (the project). The bundled scripts it names by their relative path
// are named by their path in the skill folder (absScripts): an agent runs a
// skill's script where it works, the user's project, so that what the
// script writes to its working folder goes there and not into the skill.
func (p *planner) inDir(cmd string, refs []string) string {
	cmd = p.absScripts(cmd, refs)
	switch {
	case p.namesBundled(cmd):
		return "cd " + shellQuote(p.dir) + " && " + cmd
	case p.cwd != "":
		return "cd " + p.cwd + " && " + cmd
	}
	return cmd
}

var cdRE = regexp.MustCompile(`^cd(?:\s+([^\s;&|'"]+))?\s*(?:$|&&|;)`)

// trackCd follows the working directory the way an agent's shell keeps it
// between calls: a line of cmd that starts with a plain "cd DIR" moves the
// directory later commands run in.
func (p *planner) trackCd(cmd string) {
	for _, l := range strings.Split(cmd, "\n") {
		m := cdRE.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		dir := m[1]
		switch {
		case dir == "" || dir == "~":
			p.cwd = "~"
		case dir == "-":
		case strings.HasPrefix(dir, "/") || strings.HasPrefix(dir, "~") || strings.HasPrefix(dir, "$") || p.cwd == "":
			p.cwd = dir
		default:
			p.cwd = path.Join(p.cwd, dir)
		}
	}
}

// scriptRefs lists the bundled scripts text names by relative path, or
// under the skill's folder.
func (p *planner) scriptRefs(text string) []string {
	var out []string
	inSkill := "/" + path.Base(p.dir) + "/"
	for sp := range p.scripts {
		if mentions(text, sp) || strings.Contains(text, inSkill+sp) {
			out = append(out, sp)
		}
	}
	sort.Strings(out)
	return out
}

// namesBundled reports whether text names a bundled file other than the
// instructions by its path relative to the skill's folder (make -f
// Makefile, --config config.yaml): such a command is written to run there.
func (p *planner) namesBundled(text string) bool {
	for _, f := range p.s.Files {
		if !f.Doc && mentions(text, f.Path) {
			return true
		}
	}
	return false
}

// mentions reports whether text names rel as a path (not as part of a longer one).
func mentions(text, rel string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], rel)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(rel)
		before := byte(' ')
		if start > 0 {
			before = text[start-1]
		}
		after := byte(' ')
		if end < len(text) {
			after = text[end]
		}
		if after == '.' && (end+1 == len(text) || !isPathChar(text[end+1])) {
			after = ' ' // the full stop of a sentence: "see references/api.md."
		}
		if !isPathChar(after) && (!isPathChar(before) || before == '/' && start >= 2 && text[start-2] == '.') {
			return true
		}
		i = end
	}
}

func isPathChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/'
}

func (p *planner) doc(f *skill.File) {
	lines := strings.Split(f.Body(), "\n")
	first := f.BodyLine
	if first < 1 {
		first = 1
	}
	blocks := skill.CodeBlocks(f.Body(), first)
	catalogue := !f.Doc && threatCatalogue(f)
	defer func(was bool) { p.catalogue = was }(p.catalogue)
	p.catalogue = catalogue
	bi := 0
	inBlockUntil := 0 // 1-based file line of the closing fence
	prose := 0        // index of the first line after the previous block
	for i := 0; i < len(lines); i++ {
		n := first + i
		if bi < len(blocks) && n == blocks[bi].Start() {
			b := blocks[bi]
			bi++
			inBlockUntil = b.End() // the closing fence's line, or the block's last
			if !f.Doc && attackExample(b, lines[prose:i], catalogue) {
				p.examples = append(p.examples, f.Path+":"+strconv.Itoa(b.Line))
			} else if !p.toolBlock(f.Path, b) && !p.fileBlock(f.Path, b, lines[prose:i]) {
				p.block(f.Path, b)
			}
			prose = inBlockUntil - first + 1
			continue
		}
		if n <= inBlockUntil {
			continue
		}
		p.prose(f.Path, n, lines, i)
	}
}

// block plans a fenced code block.
func (p *planner) block(file string, b skill.Block) {
	lang := b.Lang
	prompts := 0
	nonEmpty := 0
	for _, l := range b.Lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		nonEmpty++
		if _, ok := blockPrompt(t); ok {
			prompts++
		}
	}
	switch {
	case consoleLangs[lang], shellLangs[lang] && prompts > 0, lang == "" && prompts > 0:
		p.console(file, b)
	case shellLangs[lang]:
		p.bash(strings.Join(b.Lines, "\n"), file, b.Line, agent.ReasonCodeBlock)
	case lang == "" && nonEmpty > 0 && looksLikeShell(b.Lines):
		p.bash(strings.Join(b.Lines, "\n"), file, b.Line, agent.ReasonCodeBlock)
	case nonEmpty == 0:
	case otherShells[lang]:
		p.otherShell = append(p.otherShell, file+":"+strconv.Itoa(b.Line)+" ("+lang+")")
	case dataLangs[lang]:
		p.data++
	case lang == "":
		where := file + ":" + strconv.Itoa(b.Line)
		if b.Indented {
			where += " (indented)"
		}
		p.untagged = append(p.untagged, where)
	default:
		p.notShell = append(p.notShell, file+":"+strconv.Itoa(b.Line)+" ("+lang+")")
	}
}

// dataLangs are the languages of blocks that hold data, settings, text or
// diagrams, not code: counted in a note, not listed.
var dataLangs = set("json", "jsonc", "json5", "jsonl", "ndjson", "yaml", "yml", "toml", "ini", "cfg", "conf", "env", "dotenv",
	"properties", "xml", "html", "htm", "css", "scss", "csv", "tsv", "text", "txt", "plain", "plaintext", "output", "log",
	"md", "markdown", "mdx", "rst", "diff", "patch", "mermaid", "dot", "graphql", "gql", "svg", "http", "tree", "ascii",
	"hcl", "tf", "terraform", "proto", "protobuf", "prisma", "csl", "bibtex", "tex", "latex", "math", "regex", "gitignore",
	"editorconfig", "dockerignore", "nginx", "apache", "prompt", "example", "template", "jinja", "j2", "handlebars", "liquid")

// otherShells are the shells a block can be written for that the sandbox
// (a Linux workstation with bash and zsh) has no interpreter for: their
// blocks are listed in a note, not run.
var otherShells = set("fish", "powershell", "pwsh", "ps1", "ps", "bat", "batch", "cmd", "nu", "nushell", "elvish", "xonsh", "tcsh", "csh")

func isPrompt(t string) bool { return strings.HasPrefix(t, "$ ") || t == "$" }

// blockPrompt returns the command of a prompt line of a code block: "$ cmd",
// or a zsh or fish prompt ("% cmd", "❯ cmd", "➜ cmd") before a command a
// shell block starts with (a "% " line of anything else is not one).
func blockPrompt(t string) (string, bool) {
	if isPrompt(t) {
		return strings.TrimSpace(strings.TrimPrefix(t, "$")), true
	}
	for _, pr := range []string{"% ", "❯ ", "➜ "} {
		if c, ok := strings.CutPrefix(t, pr); ok {
			c = strings.TrimSpace(c)
			if w := strings.Fields(c); len(w) > 0 && (commonCommands[w[0]] || strings.HasPrefix(w[0], "./")) {
				return c, true
			}
		}
	}
	return "", false
}

// looksLikeShell: the first line that is not a comment starts with a common
// command or ./ .
func looksLikeShell(lines []string) bool {
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if strings.HasPrefix(t, "./") {
			return true
		}
		if assignLineRE.MatchString(t) {
			continue // VAR=value before the commands that use it
		}
		w := strings.Fields(t)
		if (w[0] == "{" || w[0] == "(") && len(w) > 1 {
			// a group of commands, { cmd; cmd; } or ( cmd; cmd ): any
			// command word, where data ({ "key": 1 }) has quotes
			return groupRE.MatchString(t)
		}
		return commonCommands[w[0]]
	}
	return false
}

// groupRE is a line that groups commands: "{ cmd args; ... }" or
// "( cmd; ... )", the first a bare command word.
var groupRE = regexp.MustCompile(`^(?:\{\s+[a-z][\w.+-]*(?:\s[^;]*)?;.*\}|\(\s*[a-z][\w.+-]*(?:\s[^;]*)?;.*\))`)

// assignLineRE is a shell assignment line: NAME=value, NAME="value".
var assignLineRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=\S*`)

// console plans the prompt lines of a transcript block, one call per
// command; continuation lines and heredoc bodies stay with their command.
func (p *planner) console(file string, b skill.Block) {
	for i := 0; i < len(b.Lines); i++ {
		t := strings.TrimSpace(b.Lines[i])
		cmd, ok := blockPrompt(t)
		if !ok {
			continue // output
		}
		line := b.Line + i
		var buf []string
		buf = append(buf, cmd)
		for strings.HasSuffix(cmd, "\\") && i+1 < len(b.Lines) {
			i++
			cmd = strings.TrimPrefix(strings.TrimSpace(b.Lines[i]), "> ")
			buf = append(buf, cmd)
		}
		if m := heredocRE.FindStringSubmatch(strings.Join(buf, "\n")); m != nil {
			term := m[2]
			for i+1 < len(b.Lines) {
				i++
				l := b.Lines[i]
				buf = append(buf, strings.TrimPrefix(l, "> "))
				if strings.TrimSpace(strings.TrimPrefix(l, "> ")) == term {
					break
				}
			}
		}
		p.bash(strings.Join(buf, "\n"), file, line, agent.ReasonCodeBlock)
	}
}

// prose plans one line outside code blocks: a "$ " prompt line, inline code
// that runs a bundled script, bundled scripts named, URLs, home and absolute
// paths. lines[i] is file line n.
func (p *planner) prose(file string, n int, lines []string, i int) {
	raw := lines[i]
	t := strings.TrimSpace(raw)
	if t == "" {
		return
	}
	// An indented or bare "$ cmd" line (with backslash continuations).
	if isPrompt(t) {
		cmd := strings.TrimSpace(strings.TrimPrefix(t, "$"))
		for j := i + 1; strings.HasSuffix(cmd, "\\") && j < len(lines); j++ {
			cmd += "\n" + strings.TrimSpace(lines[j])
		}
		p.bash(cmd, file, n, agent.ReasonPromptLine)
		return
	}
	// Bundled scripts, in the order the line names them: inline code that
	// runs one is run as written; a bare mention runs the script alone.
	spans := inlineRE.FindAllStringSubmatchIndex(raw, -1)
	type mention struct {
		off int
		sp  string
	}
	var ms []mention
	for _, sp := range p.scriptRefs(raw) {
		ms = append(ms, mention{strings.Index(raw, sp), sp})
	}
	sort.Slice(ms, func(a, b int) bool { return ms[a].off < ms[b].off })
	for _, m := range ms {
		if p.ran[m.sp] {
			continue
		}
		done := false
		for _, sp := range spans {
			if m.off < sp[2] || m.off >= sp[3] {
				continue
			}
			if cmd, ok := p.scriptCommand(strings.TrimSpace(raw[sp[2]:sp[3]]), m.sp); ok {
				p.bash(cmd, file, n, agent.ReasonProseScript)
				done = true
			}
		}
		if !done && !p.ran[m.sp] {
			// A bare mention: run it with the usage the text, its --help or
			// its source gives.
			p.entryScript(p.s.File(m.sp), file, n, agent.ReasonProseScript)
		}
	}
	// Bundled markdown references named in prose: read them, then follow
	// their instructions in place, as an obedient agent would.
	for _, f := range p.s.Files {
		if f.Doc || f.Binary || !skill.IsMarkdown(f.Path) || p.read[f.Path] || !mentions(raw, f.Path) {
			continue
		}
		p.read[f.Path] = true
		p.push(toolspec.ReadFile, map[string]any{"path": path.Join(p.dir, f.Path)}, file, n, agent.ReasonReference, "")
		p.doc(p.s.File(f.Path))
	}
	for _, u := range urlRE.FindAllString(raw, -1) {
		u = trimURL(u)
		if p.fetched[u] {
			continue
		}
		p.fetched[u] = true
		p.tool(toolspec.FetchURL, "url", u, file, n, agent.ReasonProseURL)
	}
	noURLs := urlRE.ReplaceAllString(raw, " ")
	if p.catalogue || threatLine(raw) {
		// the paths a catalogue of threats names, or a line that speaks
		// of attacks ("can disguise reads of `~/.ssh/id_rsa`"), are what
		// attacks go after, not files the skill asks to read
		return
	}
	// Inline code that is a path as a whole keeps its spaces and globs
	// (`~/.config/google-chrome/Default/Login Data`,
	// `~/.mozilla/firefox/*.default-release/logins.json`): read whole,
	// a glob through the shell, as an agent would.
	noURLs = inlineRE.ReplaceAllStringFunc(noURLs, func(span string) string {
		fp, ok := codePath(strings.Trim(span, "`"))
		if !ok {
			return span
		}
		if strings.ContainsAny(fp, "*?[") {
			p.bash("cat -- "+globWords(fp), file, n, agent.ReasonProsePath)
		} else {
			p.tool(toolspec.ReadFile, "path", fp, file, n, agent.ReasonProsePath)
		}
		return " "
	})
	for _, m := range pathRE.FindAllStringSubmatch(noURLs, -1) {
		fp := strings.TrimRight(m[1], ".,;:")
		fp = homeTilde(fp)
		if fp == "~" || fp == "~/" || fp == "/" || strings.HasPrefix(fp, strings.TrimSuffix(p.dir, "/")+"/") {
			continue
		}
		if strings.HasSuffix(fp, "/") {
			p.tool(toolspec.ListDirectory, "path", fp, file, n, agent.ReasonProsePath)
		} else {
			p.tool(toolspec.ReadFile, "path", fp, file, n, agent.ReasonProsePath)
		}
	}
}

// codePathRE is inline code that is one home or absolute path, which may
// hold spaces and globs: no shell syntax, no options.
var codePathRE = regexp.MustCompile(`^(?:~|\$HOME|\$\{HOME\})/[^\s|;&<>$(){}'"\x60\\]*(?: [^\s|;&<>$(){}'"\x60\\-][^\s|;&<>$(){}'"\x60\\]*)*$` +
	`|^/(?:etc|home|root|var|usr|tmp|opt|srv|mnt|Users|Library)/[^\s|;&<>$(){}'"\x60\\]*(?: [^\s|;&<>$(){}'"\x60\\-][^\s|;&<>$(){}'"\x60\\]*)*$`)

// codePath returns the path inline code names when the code is a path as
// a whole ($HOME written ~), and not a script run with arguments
// (`~/bin/sync.sh now`) or a folder.
func codePath(code string) (string, bool) {
	code = strings.TrimRight(strings.TrimSpace(code), ".,;:")
	if !codePathRE.MatchString(code) || strings.HasSuffix(code, "/") {
		return "", false
	}
	if first, _, spaced := strings.Cut(code, " "); spaced {
		switch path.Ext(first) {
		case ".sh", ".bash", ".py", ".js", ".mjs", ".rb", ".pl", ".ts":
			return "", false
		}
	}
	code = homeTilde(code)
	if !strings.Contains(code, " ") && !strings.ContainsAny(code, "*?[") {
		return "", false // the prose path scan reads it as before
	}
	return code, true
}

// homeTilde writes a path's leading $HOME or ${HOME} as ~.
func homeTilde(p string) string {
	return strings.Replace(strings.Replace(p, "${HOME}", "~", 1), "$HOME", "~", 1)
}

// globWords writes a path with globs for the shell: ~ expanded, spaces
// escaped, the globs left to match.
func globWords(fp string) string {
	return strings.ReplaceAll(fp, " ", "\\ ")
}

// scriptCommand turns inline code naming the bundled script sp into the
// command to run: code that starts with an interpreter is run as written;
// code that starts with the script's path gets the script's interpreter
// (the installed skill is read-only, so nothing in it is executable).
func (p *planner) scriptCommand(code, sp string) (string, bool) {
	w := strings.Fields(code)
	if len(w) == 0 {
		return "", false
	}
	if strings.TrimPrefix(w[0], "./") == sp {
		return interpreter(*p.s.File(sp)) + " " + sp + strings.TrimPrefix(code, w[0]), true
	}
	switch w[0] {
	case "bash", "sh", "zsh", "python", "python3", "node", "ruby", "perl", "uv", "npx", "source", ".":
		return code, len(w) > 1
	}
	return "", false
}

// interpreter returns the command that runs a bundled file, from its shebang
// or extension, or "" if it is not a script.
func interpreter(f skill.File) string {
	c := f.Content
	if len(c) > 2 && c[0] == '#' && c[1] == '!' {
		line := string(c[2:])
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		w := strings.Fields(line)
		if len(w) > 0 {
			prog := path.Base(w[0])
			if prog == "env" && len(w) > 1 {
				i := 1
				for i < len(w) && strings.HasPrefix(w[i], "-") {
					i++
				}
				if i < len(w) {
					prog = path.Base(w[i])
				}
			}
			switch {
			case prog == "python" || strings.HasPrefix(prog, "python3"):
				return "python3"
			case prog == "bash" || prog == "sh" || prog == "zsh" || prog == "dash":
				return "bash"
			case prog == "node" || prog == "ruby" || prog == "perl":
				return prog
			}
		}
	}
	switch strings.ToLower(path.Ext(f.Path)) {
	case ".sh", ".bash", ".zsh":
		return "bash"
	case ".py":
		return "python3"
	case ".js", ".mjs", ".cjs":
		return "node"
	case ".rb":
		return "ruby"
	case ".pl":
		return "perl"
	}
	return ""
}

func trimURL(u string) string { return strings.TrimRight(u, ".,;:!?*_") }

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+~@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// argumentsClass says what $ARGUMENTS stands for, from the prose lines
// that name it ("The user will provide an APK file: $ARGUMENTS").
func argumentsClass(text string) class {
	var ws []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "$ARGUMENTS") {
			for _, w := range words(strings.ReplaceAll(l, "$ARGUMENTS", " ")) {
				if w != "arguments" && w != "passed" && w != "is" {
					ws = append(ws, w)
				}
			}
		}
	}
	c := classifyWords(ws)
	switch c.kind {
	case kindFile, kindNoFile, kindDir, kindRepo, kindURL, kindKey:
		return c
	}
	return class{}
}

// exampleList lists the first dozen file:line places, and how many more.
func exampleList(xs []string) string {
	if len(xs) > 12 {
		return strings.Join(xs[:12], ", ") + ", and " + strconv.Itoa(len(xs)-12) + " more"
	}
	return strings.Join(xs, ", ")
}
