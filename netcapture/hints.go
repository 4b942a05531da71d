package netcapture

import (
	"regexp"
	"slices"
	"strings"
)

// Package version hints: npm and pip never tell the registry which
// version they want (they fetch the whole version list and choose), so an
// exact pin the stub registry does not list fails. The orchestrator reads
// the skill's files with AddPackageHints before the jail starts, so the
// versions a skill names (`pip install x==1.2.3`, `npm i x@1.2.3`, a
// requirements line, a package.json dependency) are among those served.
// The lower bound of a range (^1.2.3, >=2.31) is added too, which
// satisfies it.

const maxHints = 512

var (
	// name==1.2.3, name~=1.2, name>=2.31 (pip, requirements, uv).
	pyPin = regexp.MustCompile(`(?m)(?:^|[\s'"\[,])([A-Za-z0-9][A-Za-z0-9._-]{0,99})\s*(?:\[[^\]]*\])?\s*(===?|~=|>=)\s*v?([0-9]+(?:\.[0-9]+){0,3}(?:[a-z]+[0-9]*)?)`)
	// name@1.2.3, @scope/name@^1.2.3 (npm, npx, pnpm, yarn, bun).
	npmPin = regexp.MustCompile(`(?:^|[\s'"(])((?:@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]{0,213})@[\^~=v]*([0-9]+(?:\.[0-9]+){0,2}(?:-[0-9A-Za-z.]+)?)`)
	// "name": "^1.2.3" in a package.json.
	npmDep = regexp.MustCompile(`"((?:@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]{0,213})"\s*:\s*"[\^~=>v ]*([0-9]+(?:\.[0-9]+){0,2}(?:-[0-9A-Za-z.]+)?)"`)
)

// AddPackageHints adds to cfg.PackageVersions the package versions text
// names.
func AddPackageHints(cfg *Config, text []byte) {
	if len(text) == 0 {
		return
	}
	s := string(text)
	add := func(key, v string) {
		if cfg.PackageVersions == nil {
			cfg.PackageVersions = map[string][]string{}
		}
		if !validVersion(v) || slices.Contains(cfg.PackageVersions[key], v) || hintCount(cfg) >= maxHints {
			return
		}
		cfg.PackageVersions[key] = append(cfg.PackageVersions[key], v)
	}
	for _, m := range pyPin.FindAllStringSubmatch(s, -1) {
		v := m[3]
		if strings.Count(v, ".") == 0 {
			v += ".0"
		}
		add("pypi:"+pyNormalize(m[1]), v)
		if v != m[3] {
			add("pypi:"+pyNormalize(m[1]), m[3])
		}
	}
	for _, re := range []*regexp.Regexp{npmPin, npmDep} {
		for _, m := range re.FindAllStringSubmatch(s, -1) {
			name := strings.ToLower(m[1])
			if !npmName.MatchString(name) {
				continue
			}
			v := m[2]
			for strings.Count(v, ".") < 2 && !strings.Contains(v, "-") {
				v += ".0"
			}
			add("npm:"+name, v)
		}
	}
}

func hintCount(cfg *Config) int {
	n := 0
	for _, vs := range cfg.PackageVersions {
		n += len(vs)
	}
	return n
}

// Package executables: a skill installs a tool and then runs it, often by
// a name that is not the package's (`npm i -g @google/gemini-cli` then
// `gemini`, `pip install openai-whisper` then `whisper`). The orchestrator
// reads the skill's files with AddPackageBins before the jail starts, so
// the stub package provides each such name as an executable and the
// skill's next step finds it.
//
// A name qualifies when it is derived from a package the text installs (a
// global npm, pnpm, yarn or bun install, npx, pnpm dlx, bunx; pip, pipx, uv
// tool, uv pip, uvx) and the text runs it as a command: at the start of a
// line or a pipeline stage, after $( or a backquote, or as the first
// element of an argv list in a script. The derived names are the
// package's own name, its hyphen-separated parts, the name without a
// "cli" part (gemini-cli, cli-foo), the part before a generic suffix
// (claude-code, x-tool) and, for a package named cli, its scope
// (@devcontainers/cli: devcontainers, devcontainer). A name the system
// already has, or that is too generic to be a tool's, is never given
// (shadowBins): a stub must not hide a real program earlier on PATH.

const (
	maxBinsPerPackage = 8
	maxBinHints       = 256
)

// validBin is a name npm and pip accept for an executable.
var validBinRe = regexp.MustCompile(`^[a-z][a-z0-9._-]{1,63}$`)

func validBin(b string) bool { return validBinRe.MatchString(b) && !shadowBins[b] }

// shadowBins are names a stub package never provides: the commands of the
// image's toolset that a package name may contain (sandbox-image/setup.sh),
// shell words, and words too generic to be a tool's name.
var shadowBins = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		git node nodejs npm npx pnpm yarn python python3 pip pip3 pipx uv uvx curl wget bash sh zsh
		dash env make gcc cc ld ssh scp sftp tar zip unzip gzip xz jq yq gh aws kubectl docker
		ls cat cp mv rm ln find grep egrep rg sed awk sort head tail cut tr tee xargs test true false
		echo printf date time kill ps top watch diff patch file which less more vi vim nano open
		install init create run build dev start serve server http https get set add new update
		upgrade login logout link config help version test tests lint format check setup sdk api
		app apps code core lib libs utils util tool tools cli js node py ts types plugin plugins
		react vue next web www mcp client openai google anthropic ai sudo su id who whoami stat
		mkdir rmdir touch chmod chown du df mount ping host dig nc ncat socat openssl gpg rsync
		sqlite3 strace ruby perl gem bundle go cargo rustc dotnet java deno bun conda mamba`) {
		m[w] = true
	}
	return m
}()

var (
	// An install command and what follows it on its line.
	npmInstall = regexp.MustCompile(`\b(?:(?:npm|pnpm|bun)\s+(?:i|install|add)\b|yarn\s+global\s+add\b)([^\n;&|` + "`" + `)]*)`)
	npmRunner  = regexp.MustCompile(`\b(?:npx|bunx|pnpm\s+dlx|npm\s+exec)\b([^\n;&|` + "`" + `)]*)`)
	pyInstall  = regexp.MustCompile(`\b(?:pip3?|python3?\s+-m\s+pip|uv\s+pip|pipx|uv\s+tool)\s+install\b([^\n;&|` + "`" + `)]*)`)
	pyRunner   = regexp.MustCompile(`\b(?:uvx|pipx\s+run|uv\s+tool\s+run)\b([^\n;&|` + "`" + `)]*)`)
	// Options of those commands that take a value: the value is not a
	// package.
	optWithValue = map[string]bool{"-r": true, "--requirement": true, "-c": true, "--constraint": true, "-e": true,
		"--editable": true, "-i": true, "--index-url": true, "--extra-index-url": true, "-t": true, "--target": true,
		"--prefix": true, "--root": true, "-f": true, "--find-links": true, "--registry": true, "-p": false,
		"--python": true, "--cache": true, "-C": true, "--dir": true, "--from": false, "--package": false, "--with": false}
)

// AddPackageBins adds to cfg.PackageBins the executables the skill's
// files (all of them, as one text) run after installing a package.
func AddPackageBins(cfg *Config, files ...[]byte) {
	var b strings.Builder
	for _, f := range files {
		b.Write(f)
		b.WriteByte('\n')
	}
	text := b.String()
	if len(text) > 4<<20 {
		text = text[:4<<20]
	}
	type pkg struct{ eco, name string }
	var pkgs []pkg
	seen := map[pkg]bool{}
	addPkg := func(eco, spec string) {
		name, ok := packageName(eco, spec)
		if p := (pkg{eco, name}); ok && !seen[p] && len(pkgs) < maxBinHints {
			seen[p] = true
			pkgs = append(pkgs, p)
		}
	}
	for _, m := range npmInstall.FindAllStringSubmatch(text, -1) {
		if a := installArgs(m[1], false); hasGlobal(m[0]) {
			for _, s := range a {
				addPkg("npm", s)
			}
		}
	}
	for _, m := range npmRunner.FindAllStringSubmatch(text, -1) {
		for _, s := range installArgs(m[1], true) {
			addPkg("npm", s)
		}
	}
	for _, m := range pyInstall.FindAllStringSubmatch(text, -1) {
		for _, s := range installArgs(m[1], false) {
			addPkg("pypi", s)
		}
	}
	for _, m := range pyRunner.FindAllStringSubmatch(text, -1) {
		for _, s := range installArgs(m[1], true) {
			addPkg("pypi", s)
		}
	}
	n := 0
	for _, vs := range cfg.PackageBins {
		n += len(vs)
	}
	var commands map[string]bool // the words text runs as commands, read once
	for _, p := range pkgs {
		key := p.eco + ":" + strings.ToLower(p.name)
		if p.eco == "pypi" {
			key = "pypi:" + pyNormalize(p.name)
		}
		for _, bin := range derivedBins(p.name) {
			if n >= maxBinHints || len(cfg.PackageBins[key]) >= maxBinsPerPackage || slices.Contains(cfg.PackageBins[key], bin) {
				continue
			}
			if commands == nil {
				commands = commandWords(text)
			}
			if !commands[bin] {
				continue
			}
			if cfg.PackageBins == nil {
				cfg.PackageBins = map[string][]string{}
			}
			cfg.PackageBins[key] = append(cfg.PackageBins[key], bin)
			n++
		}
	}
}

// hasGlobal reports a global install: -g, --global, --location=global,
// yarn global add.
func hasGlobal(cmd string) bool {
	for _, f := range strings.Fields(cmd) {
		if f == "-g" || f == "--global" || f == "--location=global" || f == "global" {
			return true
		}
	}
	return false
}

// installArgs returns the package specs among an install command's
// arguments; with first, only the first one (a runner runs one package;
// what follows are its own arguments).
func installArgs(rest string, first bool) []string {
	var out []string
	f := strings.Fields(rest)
	for i := 0; i < len(f); i++ {
		a := strings.Trim(f[i], `"'`)
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "-") {
			if k == "--package" || k == "--from" {
				out = append(out, v)
			}
			continue
		}
		if strings.HasPrefix(a, "-") {
			takes, known := optWithValue[a]
			if known && i+1 < len(f) {
				if !takes { // -p/--package/--from/--with NAME: a package
					out = append(out, strings.Trim(f[i+1], `"'`))
				}
				i++
			}
			continue
		}
		if a == "#" || strings.HasPrefix(a, "#") {
			break
		}
		out = append(out, a)
		if first {
			break
		}
	}
	return out
}

// packageName reads a package name off a spec (name@1.2, name==1.2,
// name[extra]>=1, @scope/name@latest); paths, URLs and placeholders are not
// packages.
func packageName(eco, spec string) (string, bool) {
	if spec == "" || strings.ContainsAny(spec, ":<>{}$*") && !strings.ContainsAny(spec, "=~") || strings.HasPrefix(spec, ".") {
		return "", false
	}
	if eco == "npm" {
		name := spec
		if i := strings.LastIndexByte(spec, '@'); i > 0 {
			name = spec[:i]
		}
		if !npmName.MatchString(strings.ToLower(name)) {
			return "", false
		}
		return name, true
	}
	name := spec
	if i := strings.IndexAny(spec, "[=<>!~; "); i >= 0 {
		name = spec[:i]
	}
	if !pyName.MatchString(pyNormalize(name)) || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}

// genericSuffix are the parts a tool's package name adds to the tool's
// own name.
var genericSuffix = map[string]bool{"code": true, "cli": true, "tool": true, "tools": true, "bin": true, "app": true,
	"sdk": true, "js": true, "node": true, "py": true, "python": true, "ctl": true}

// derivedBins returns the executable names a package plausibly provides,
// its own name first.
func derivedBins(name string) []string {
	name = strings.ToLower(name)
	scope, short := "", name
	if i := strings.IndexByte(name, '/'); i >= 0 {
		scope, short = strings.TrimPrefix(name[:i], "@"), name[i+1:]
	}
	var out []string
	add := func(s string) {
		if validBin(s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	add(short)
	parts := strings.FieldsFunc(short, func(r rune) bool { return r == '-' || r == '_' || r == '.' })
	var kept []string
	for _, p := range parts {
		if p != "cli" {
			kept = append(kept, p)
		}
	}
	add(strings.Join(kept, "-"))
	if len(parts) > 1 && genericSuffix[parts[len(parts)-1]] {
		add(strings.Join(parts[:len(parts)-1], "-"))
	}
	for _, p := range parts {
		if len(p) >= 3 {
			add(p)
		}
	}
	if scope != "" && (short == "cli" || genericSuffix[short]) {
		add(scope)
		add(strings.TrimSuffix(scope, "s"))
	}
	return out
}

// commandWords are the words text runs as commands: the first word of a
// line (after a prompt or a quote mark), and the word after &&, ||, |, ;,
// a backtick, $( or the opening quote of a JSON array ("["cmd", ...]").
// One pass over the text, whatever the number of names asked about (a
// skill may bring megabytes of text; a pattern per name over all of it
// took minutes).
func commandWords(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range commandWordRE.FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

var commandWordRE = regexp.MustCompile(`(?m)(?:^[ \t>$]*|&&[ \t]*|\|\|?[ \t]*|;[ \t]*|` + "`" + `|\$\([ \t]*|\[[ \t]*["']|\([ \t]*["']|^[ \t]*\$[ \t]+)([^\s"'` + "`" + `,;|&()\[\]]+)`)
