package literal

import (
	"bytes"
	"context"
	"encoding/json"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/skill"
)

// Config configures the literal driver.
type Config struct {
	// SkillDir is where the skill is installed in the sandbox; bundled
	// scripts run from there. "": ~/.agents/skills/<name>.
	SkillDir string
}

// NoRunnableContent is the Step.Note of a skill that gives the driver
// nothing to do; a report built on it is inconclusive.
const NoRunnableContent = "no runnable content: the skill has no shell code blocks, prompt lines, referenced scripts, URLs or file paths"

// Driver is the literal agent.Driver. Use one per run.
type Driver struct {
	calls []agent.Proposal
	notes []string
	i     int
}

// New plans the calls for s.
func New(s *skill.Skill, cfg Config) *Driver {
	calls, notes := Plan(s, cfg)
	return &Driver{calls: calls, notes: notes}
}

// Next implements agent.Driver: one planned call per step, then Done.
func (d *Driver) Next(ctx context.Context, prev []agent.Exchange) (agent.Step, error) {
	var step agent.Step
	if d.i == 0 && len(d.notes) > 0 {
		step.Note = strings.Join(d.notes, "; ")
	}
	if d.i >= len(d.calls) {
		step.Done = true
		if len(d.calls) == 0 {
			step.Note = NoRunnableContent
		}
		return step, nil
	}
	step.Calls = []agent.Proposal{d.calls[d.i]}
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

type planner struct {
	s       *skill.Skill
	dir     string
	calls   []agent.Proposal
	seen    map[string]bool // dedup key: name + arguments
	scripts map[string]bool // runnable bundled files, by skill-relative path
	ran     map[string]bool // scripts run by a block or a call
	fetched map[string]bool
	read    map[string]bool // markdown files of the skill read (instructions and followed references)
	cwd     string          // the directory later commands run in ("": the tool's default)
	notes   []string
}

// Plan returns the calls the literal driver makes for s, in order, and notes
// for the report (such as bundled scripts no instruction references).
func Plan(s *skill.Skill, cfg Config) ([]agent.Proposal, []string) {
	p := &planner{s: s, dir: cfg.SkillDir, seen: map[string]bool{}, scripts: map[string]bool{}, ran: map[string]bool{}, fetched: map[string]bool{}, read: map[string]bool{}}
	if p.dir == "" {
		p.dir = "~/.agents/skills/" + s.Name
	}
	for _, f := range s.Files {
		if !f.Doc && !f.Binary && interpreter(f) != "" {
			p.scripts[f.Path] = true
		}
	}
	for _, f := range s.Docs() {
		p.read[f.Path] = true
	}
	for _, f := range s.Docs() {
		p.doc(f)
	}
	var unused []string
	for sp := range p.scripts {
		if !p.ran[sp] {
			unused = append(unused, sp)
		}
	}
	sort.Strings(unused)
	if len(unused) > 0 {
		p.notes = append(p.notes, "bundled scripts no instruction references (not run): "+strings.Join(unused, ", "))
	}
	return p.calls, p.notes
}

func (p *planner) add(name string, args map[string]any, file string, line int) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(args)
	b := bytes.TrimSpace(buf.Bytes())
	key := name + string(b)
	if p.seen[key] {
		return
	}
	p.seen[key] = true
	p.calls = append(p.calls, agent.Proposal{ToolCall: agent.ToolCall{Name: name, Arguments: b, SkillFile: file, SkillLine: line}})
}

// bash proposes a shell command, from the skill folder when it names a
// bundled file by its relative path.
func (p *planner) bash(cmd, file string, line int) {
	cmd = strings.TrimSpace(cmd)
	if cmd == "" {
		return
	}
	for _, u := range urlRE.FindAllString(cmd, -1) {
		p.fetched[trimURL(u)] = true
	}
	run := cmd
	if refs := p.scriptRefs(cmd); len(refs) > 0 {
		for _, r := range refs {
			p.ran[r] = true
		}
		run = "cd " + shellQuote(p.dir) + " && " + cmd
	} else if p.cwd != "" {
		run = "cd " + p.cwd + " && " + cmd
	}
	p.add(agent.ToolBash, map[string]any{"command": run}, file, line)
	p.trackCd(cmd)
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

// scriptRefs lists the bundled scripts text names by relative path.
func (p *planner) scriptRefs(text string) []string {
	var out []string
	for sp := range p.scripts {
		if mentions(text, sp) {
			out = append(out, sp)
		}
	}
	sort.Strings(out)
	return out
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
	bi := 0
	inBlockUntil := 0 // 1-based file line of the closing fence
	for i := 0; i < len(lines); i++ {
		n := first + i
		if bi < len(blocks) && n == blocks[bi].Line-1 {
			b := blocks[bi]
			bi++
			inBlockUntil = b.Line + len(b.Lines) // the closing fence's line
			p.block(f.Path, b)
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
		if isPrompt(t) {
			prompts++
		}
	}
	switch {
	case consoleLangs[lang], shellLangs[lang] && prompts > 0, lang == "" && prompts > 0:
		p.console(file, b)
	case shellLangs[lang]:
		p.bash(strings.Join(b.Lines, "\n"), file, b.Line)
	case lang == "" && nonEmpty > 0 && looksLikeShell(b.Lines):
		p.bash(strings.Join(b.Lines, "\n"), file, b.Line)
	}
}

func isPrompt(t string) bool { return strings.HasPrefix(t, "$ ") || t == "$" }

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
		w := strings.Fields(t)[0]
		return commonCommands[w]
	}
	return false
}

// console plans the prompt lines of a transcript block, one call per
// command; continuation lines and heredoc bodies stay with their command.
func (p *planner) console(file string, b skill.Block) {
	for i := 0; i < len(b.Lines); i++ {
		t := strings.TrimSpace(b.Lines[i])
		if !isPrompt(t) {
			continue // output
		}
		line := b.Line + i
		cmd := strings.TrimSpace(strings.TrimPrefix(t, "$"))
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
		p.bash(strings.Join(buf, "\n"), file, line)
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
		p.bash(cmd, file, n)
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
				p.bash(cmd, file, n)
				done = true
			}
		}
		if !done && !p.ran[m.sp] {
			p.ran[m.sp] = true
			f := p.s.File(m.sp)
			p.add(agent.ToolBash, map[string]any{"command": "cd " + shellQuote(p.dir) + " && " + interpreter(*f) + " " + shellQuote(m.sp)}, file, n)
		}
	}
	// Bundled markdown references named in prose: read them, then follow
	// their instructions in place, as an obedient agent would.
	for _, f := range p.s.Files {
		if f.Doc || f.Binary || !skill.IsMarkdown(f.Path) || p.read[f.Path] || !mentions(raw, f.Path) {
			continue
		}
		p.read[f.Path] = true
		p.add(agent.ToolReadFile, map[string]any{"path": path.Join(p.dir, f.Path)}, file, n)
		p.doc(p.s.File(f.Path))
	}
	for _, u := range urlRE.FindAllString(raw, -1) {
		u = trimURL(u)
		if p.fetched[u] {
			continue
		}
		p.fetched[u] = true
		p.add(agent.ToolFetchURL, map[string]any{"url": u}, file, n)
	}
	noURLs := urlRE.ReplaceAllString(raw, " ")
	for _, m := range pathRE.FindAllStringSubmatch(noURLs, -1) {
		fp := strings.TrimRight(m[1], ".,;:")
		fp = strings.Replace(strings.Replace(fp, "${HOME}", "~", 1), "$HOME", "~", 1)
		if fp == "~" || fp == "~/" || fp == "/" || strings.HasPrefix(fp, strings.TrimSuffix(p.dir, "/")+"/") {
			continue
		}
		if strings.HasSuffix(fp, "/") {
			p.add(agent.ToolListDirectory, map[string]any{"path": fp}, file, n)
		} else {
			p.add(agent.ToolReadFile, map[string]any{"path": fp}, file, n)
		}
	}
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
