package literal

import (
	"path"
	"regexp"
	"strings"

	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/toolspec"
)

// A file block is a code block the text says to save as a file: "Create
// `.claude/settings.json` with the following content:", "Add this to
// `~/.gitconfig`:", or a heading naming the file ("### Settings
// (`.claude/settings.json`)") right above the block. An obedient agent
// writes it (or appends it, for add and append); shell blocks are run as
// before, whatever the text says about them.
var (
	// writeVerbRE and appendVerbRE are the instructions that make a block
	// a file's content.
	writeVerbRE  = regexp.MustCompile(`(?i)\b(?:create|write|save|put|place|store|paste|copy)\b`)
	appendVerbRE = regexp.MustCompile(`(?i)\b(?:add|append|insert)\b`)
	// filePathRE is inline code that names a file: a home, absolute or
	// relative path with a file name, no spaces, placeholders or globs.
	filePathRE = regexp.MustCompile(`^(?:~/|/|\./)?(?:[\w.@+-]+/)*\.?[\w@+-][\w.@+-]*$`)
)

// fileExts are the extensions a block of each language may be saved as;
// a block named only by a heading must agree with the file.
var fileExts = map[string][]string{
	"json": {".json"}, "jsonc": {".json", ".jsonc"}, "yaml": {".yml", ".yaml"}, "yml": {".yml", ".yaml"},
	"toml": {".toml"}, "markdown": {".md", ".mdc"}, "md": {".md", ".mdc"}, "ini": {".ini", ".cfg", ".conf"},
	"python": {".py"}, "py": {".py"}, "javascript": {".js", ".mjs", ".cjs"}, "js": {".js", ".mjs", ".cjs"},
	"typescript": {".ts"}, "ts": {".ts"}, "xml": {".xml"}, "dockerfile": {"Dockerfile"}, "makefile": {"Makefile"},
}

// fileBlock plans the write of block b when the prose lines before it
// (since the previous block) say it is a file's content. It reports
// whether it planned one.
func (p *planner) fileBlock(file string, b skill.Block, before []string) bool {
	if consoleLangs[b.Lang] || strings.TrimSpace(strings.Join(b.Lines, "")) == "" {
		return false
	}
	if len(before) > 8 {
		before = before[len(before)-8:]
	}
	target, heading, verbAt := "", false, -1
	for i := len(before) - 1; i >= 0 && target == ""; i-- {
		l := strings.TrimSpace(before[i])
		if verbAt < 0 && (writeVerbRE.MatchString(l) || appendVerbRE.MatchString(l)) {
			verbAt = i
		}
		for _, m := range inlineRE.FindAllStringSubmatch(l, -1) {
			if c := strings.TrimSpace(m[1]); isFileName(c) {
				target, heading = c, strings.HasPrefix(l, "#")
				if verbAt < 0 && (writeVerbRE.MatchString(l) || appendVerbRE.MatchString(l)) {
					verbAt = i
				}
			}
		}
		if target == "" && strings.HasPrefix(l, "#") {
			break // a new section: what came before is about another block
		}
	}
	if target == "" || strings.HasSuffix(target, "/") {
		return false
	}
	if verbAt < 0 && !heading || !langFits(b.Lang, target) {
		return false
	}
	// Shell is run, not saved, unless the file is a shell's startup file:
	// "add this to your ~/.bashrc" is an edit of the user's shell.
	if (shellLangs[b.Lang] || b.Lang == "" && looksLikeShell(b.Lines)) && !shellStartup[path.Base(target)] {
		return false
	}
	appendTo := verbAt >= 0 && appendVerbRE.MatchString(before[verbAt]) && !writeVerbRE.MatchString(before[verbAt])
	dest := p.fileDest(target)
	if dest == "" {
		return false
	}
	content := strings.Join(b.Lines, "\n") + "\n"
	if appendTo {
		p.push(toolspec.Bash, map[string]any{"command": appendCommand(dest, content)}, file, b.Line, agent.ReasonFileBlock, "")
		return true
	}
	p.push(toolspec.WriteFile, map[string]any{"path": dest, "content": content}, file, b.Line, agent.ReasonFileBlock, "")
	return true
}

// fileNameExts are the extensions of the files a block is saved as
// (configuration, text, code); a dot file or an extension-less file of
// fileNames also counts. Anything else in inline code (a version, a host
// name) is not a file.
var fileNameExts = set("json", "jsonc", "yml", "yaml", "toml", "md", "mdc", "txt", "ini", "cfg", "conf", "py", "js",
	"mjs", "cjs", "ts", "tsx", "jsx", "sh", "bash", "zsh", "rb", "go", "rs", "java", "kt", "xml", "html", "css", "env",
	"properties", "sql", "csv", "plist", "service", "timer", "desktop", "rules", "local")

var fileNames = set("Dockerfile", "Makefile", "Procfile", "Gemfile", "Justfile", "CODEOWNERS", ".bashrc", ".zshrc",
	".profile", ".bash_profile", ".zprofile", ".gitconfig", ".gitignore", ".npmrc", ".pypirc", ".netrc", ".env",
	".cursorrules", ".windsurfrules", ".clinerules", ".editorconfig", ".dockerignore", ".prettierrc", ".eslintrc",
	".zshenv", ".bash_login", "config.fish")

// isFileName reports whether inline code c names a file.
func isFileName(c string) bool {
	if !filePathRE.MatchString(c) {
		return false
	}
	base := path.Base(c)
	if fileNames[base] {
		return true
	}
	if i := strings.LastIndexByte(base, '.'); i > 0 && fileNameExts[base[i+1:]] {
		return true
	}
	// A file with no extension in a hidden folder: ~/.ssh/config,
	// .git/hooks/pre-commit, ~/.aws/credentials.
	dir := strings.TrimPrefix(strings.TrimPrefix(path.Dir(c), "~/"), "./")
	return dir != "." && strings.HasPrefix(dir, ".") && !strings.HasPrefix(base, ".")
}

var shellStartup = set(".bashrc", ".zshrc", ".profile", ".bash_profile", ".zprofile", ".zshenv", ".bash_login", "config.fish")

var codeLangs = set("python", "py", "javascript", "js", "typescript", "ts", "tsx", "jsx", "go", "rust", "rs", "java",
	"ruby", "rb", "csharp", "cs", "kotlin", "swift", "c", "cpp", "php")

// langFits reports whether a block tagged lang may be the file target: a
// language with known extensions must match the file's; others (text,
// env, gitignore, none) fit any file, and any block fits a file with no
// extension (.gitconfig, a hook).
func langFits(lang, target string) bool {
	exts, ok := fileExts[lang]
	base := path.Base(target)
	if !strings.Contains(strings.TrimPrefix(base, "."), ".") && base != "Dockerfile" && base != "Makefile" {
		return !codeLangs[lang] // .gitconfig, .env, a hook: configuration, not a program's source
	}
	if !ok {
		return true
	}
	for _, ext := range exts {
		if strings.HasSuffix(target, ext) {
			return true
		}
	}
	return false
}

// fileDest is where a file block goes: home and absolute paths as
// written, relative ones in the directory the commands run in (the home
// when none). Never the skill's own folder: it is installed read-only.
func (p *planner) fileDest(target string) string {
	dest := target
	switch {
	case strings.HasPrefix(target, "~/"), strings.HasPrefix(target, "/"):
	case p.cwd != "":
		dest = path.Join(p.cwd, target)
	default:
		dest = path.Join("~", target)
	}
	if dir := strings.TrimSuffix(p.dir, "/"); dest == dir || strings.HasPrefix(dest, dir+"/") {
		return ""
	}
	return dest
}

// appendCommand appends content to dest with a quoted heredoc whose
// terminator the content does not hold.
func appendCommand(dest, content string) string {
	term := "SKILL_EOF"
	for strings.Contains(content, term) {
		term += "_"
	}
	q := shellQuote(dest)
	if strings.HasPrefix(dest, "~/") {
		q = `"$HOME"/` + shellQuote(dest[2:])
	}
	return "mkdir -p \"$(dirname " + q + ")\" && cat >> " + q + " <<'" + term + "'\n" + content + term
}

func set(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}
