package literal

import (
	"fmt"
	"hash/fnv"
	"path"
	"regexp"
	"strings"
)

// What a placeholder stands for.
const (
	kindSkillDir = "skill dir"
	kindFile     = "file"       // an input file: a fixture of the placeholder's kind
	kindNoFile   = "no fixture" // an input file of a kind the home has no fixture of
	kindDir      = "dir"
	kindRepo     = "repo" // a local repository or project directory
	kindOutFile  = "output file"
	kindOutDir   = "output dir"
	kindURL      = "url"
	kindWebhook  = "webhook"
	kindRepoURL  = "repo url"
	kindHost     = "host"
	kindIP       = "ip"
	kindPort     = "port"
	kindEmail    = "email"
	kindUser     = "user"
	kindFullName = "full name"
	kindOrg      = "org"
	kindKey      = "key"
	kindPassword = "password"
	kindID       = "id"
	kindPID      = "pid"
	kindNumber   = "number"
	kindSHA      = "sha"
	kindBranch   = "branch"
	kindVersion  = "version"
	kindDate     = "date"
	kindTime     = "time"
	kindRegion   = "region"
	kindLang     = "language"
	kindPhrase   = "phrase"
	kindSlug     = "slug"
	kindCommand  = "command" // code the user would write: cannot be filled
)

type class struct {
	kind string
	ext  string // fixture kind for kindFile/kindOutFile ("pptx"), "" for the default
}

// Extensions and words that name a fixture kind (canaryfs.Fixture*).
var extKinds = map[string]string{
	"pptx": "pptx", "ppt": "pptx", "key": "", "odp": "pptx",
	"docx": "docx", "doc": "docx", "odt": "docx", "rtf": "docx",
	"xlsx": "xlsx", "xls": "xlsx", "xlsm": "xlsx", "ods": "xlsx",
	"pdf": "pdf", "csv": "csv", "tsv": "csv", "json": "json", "jsonl": "json", "ndjson": "json",
	"yaml": "yaml", "yml": "yaml", "xml": "xml", "txt": "txt", "log": "txt", "text": "txt",
	"md": "md", "markdown": "md", "mdx": "md", "html": "html", "htm": "html",
	"png": "png", "jpg": "jpg", "jpeg": "jpg", "webp": "png", "gif": "png", "bmp": "png", "svg": "svg",
	"zip": "zip", "ipynb": "ipynb", "py": "py", "js": "js", "mjs": "js", "ts": "js",
	"mp4": "mp4", "mov": "mp4", "m4v": "mp4", "webm": "mp4", "mkv": "mp4", "avi": "mp4",
	"wav": "wav", "mp3": "wav", "m4a": "wav", "flac": "wav", "ogg": "wav", "aac": "wav",
	"elf": "elf", "so": "elf", "apk": "apk", "jar": "jar", "tgz": "tgz", "tar": "tgz", "gz": "tgz", "pcap": "pcap", "pcapng": "pcap",
}

// Words that name a kind of file.
var wordKinds = map[string]string{
	"presentation": "pptx", "slides": "pptx", "slide": "pptx", "deck": "pptx", "powerpoint": "pptx",
	"spreadsheet": "xlsx", "excel": "xlsx", "workbook": "xlsx", "sheet": "xlsx",
	"docx": "docx", "word": "docx", "pdf": "pdf", "csv": "csv", "json": "json", "yaml": "yaml", "xml": "xml",
	"markdown": "md", "html": "html", "image": "png", "img": "png", "photo": "jpg", "picture": "png", "screenshot": "png",
	"png": "png", "jpg": "jpg", "jpeg": "jpg", "svg": "svg", "archive": "zip", "zip": "zip", "notebook": "ipynb", "ipynb": "ipynb",
	"pptx": "pptx", "xlsx": "xlsx", "txt": "txt", "transcript": "txt",
	"video": "mp4", "movie": "mp4", "mp4": "mp4", "audio": "wav", "sound": "wav", "wav": "wav", "mp3": "wav",
	"binary": "elf", "executable": "elf", "elf": "elf", "apk": "apk", "jar": "jar", "tarball": "tgz", "tgz": "tgz",
	"pcap": "pcap",
}

// Words that name a kind of file the home has no fixture of.
var noFixture = map[string]bool{"ipa": true, "exe": true, "dll": true, "dmg": true, "iso": true, "wasm": true, "burp": true,
	"raw": true, "dump": true, "dmp": true, "core": true}

// kindOfExt returns the fixture kind of a file extension, or "".
func kindOfExt(ext string) string { return extKinds[strings.ToLower(strings.TrimPrefix(ext, "."))] }

func has(ws []string, any ...string) bool {
	for _, w := range ws {
		for _, a := range any {
			if w == a {
				return true
			}
		}
	}
	return false
}

// classify decides what a placeholder named by ws stands for; ctx is the
// variable or flag it is assigned to, used when its own name says nothing.
func classify(ws []string, ctx string) class {
	c := classifyWords(ws)
	if (c.kind == kindSlug || c.kind == "") && ctx != "" {
		if cc := classifyWords(words(ctx)); cc.kind != kindSlug && cc.kind != "" {
			return cc
		}
	}
	return c
}

func classifyWords(ws []string) class {
	if len(ws) == 0 {
		return class{}
	}
	out := has(ws, "output", "out", "dest", "destination", "save", "result", "results", "outdir", "target")
	ext := ""
	for _, w := range ws {
		if k, ok := extKinds[w]; ok && k != "" && w != "text" && w != "key" && w != "log" {
			ext = k
		}
	}
	for _, w := range ws {
		if k, ok := wordKinds[w]; ok && ext == "" {
			ext = k
		}
	}
	fileWord := has(ws, "file", "path", "input", "source", "src", "filename", "filepath", "document", "doc", "fixture", "attachment", "upload")
	dirWord := has(ws, "dir", "directory", "folder", "root", "dirs", "folders", "basedir", "workdir")
	switch {
	case has(ws, "command", "cmd", "code", "snippet", "expression", "expr", "query") && has(ws, "sql", "command", "cmd", "code", "snippet", "expression", "expr"):
		return class{kind: kindCommand}
	case has(ws, "skill", "basedir", "plugin") && (dirWord || has(ws, "path", "basedir", "skills")):
		return class{kind: kindSkillDir}
	case has(ws, "url", "uri", "link", "endpoint", "href", "website", "site", "webhook", "callback", "hook") && !fileWord:
		switch {
		case has(ws, "webhook", "hook", "callback"):
			return class{kind: kindWebhook}
		case has(ws, "repo", "repository", "git", "clone"):
			return class{kind: kindRepoURL}
		}
		return class{kind: kindURL}
	case out && dirWord:
		return class{kind: kindOutDir}
	case out && (fileWord || ext != "" || len(ws) == 1):
		return class{kind: kindOutFile, ext: ext}
	case ext != "":
		return class{kind: kindFile, ext: ext}
	}
	for _, w := range ws {
		if noFixture[w] {
			return class{kind: kindNoFile, ext: w}
		}
	}
	switch {
	case has(ws, "repo", "repository", "repos", "project", "workspace", "codebase", "checkout", "worktree") && (dirWord || has(ws, "path", "repo", "repository", "repos", "codebase", "checkout", "worktree")):
		return class{kind: kindRepo}
	case has(ws, "host", "hostname", "server", "domain", "fqdn"):
		return class{kind: kindHost}
	case has(ws, "ip", "ipv4", "addr", "address") && !has(ws, "email", "mail"):
		return class{kind: kindIP}
	case has(ws, "port"):
		return class{kind: kindPort}
	case has(ws, "email", "mail", "e"):
		return class{kind: kindEmail}
	case has(ws, "password", "passwd", "pass", "pwd", "passphrase"):
		return class{kind: kindPassword}
	case has(ws, "key", "token", "secret", "apikey", "credential", "credentials", "pat", "bearer", "auth"):
		return class{kind: kindKey}
	case dirWord:
		return class{kind: kindDir}
	case fileWord:
		return class{kind: kindFile}
	case has(ws, "fullname") || has(ws, "full") && has(ws, "name") || has(ws, "author", "person", "contact", "recipient"):
		return class{kind: kindFullName}
	case has(ws, "username", "user", "login", "owner", "handle", "account", "member", "assignee", "reviewer"):
		return class{kind: kindUser}
	case has(ws, "org", "organization", "organisation", "team", "company", "scope", "tenant", "group", "enterprise"):
		return class{kind: kindOrg}
	case has(ws, "pid"):
		return class{kind: kindPID}
	case has(ws, "id", "uuid", "guid", "identifier", "ids"):
		return class{kind: kindID}
	case has(ws, "sha", "commit", "hash", "ref", "revision", "rev"):
		return class{kind: kindSHA}
	case has(ws, "branch"):
		return class{kind: kindBranch}
	case has(ws, "version", "ver", "tag", "release"):
		return class{kind: kindVersion}
	case has(ws, "date", "since", "until", "day", "start", "end", "from", "to"):
		return class{kind: kindDate}
	case has(ws, "time", "timestamp", "hour"):
		return class{kind: kindTime}
	case has(ws, "region", "zone", "location"):
		return class{kind: kindRegion}
	case has(ws, "lang", "language", "locale"):
		return class{kind: kindLang}
	case has(ws, "number", "num", "n", "count", "limit", "size", "amount", "max", "min", "pr", "issue", "ticket", "line", "age", "year", "days", "width", "height", "timeout", "seconds", "minutes", "retries", "percent", "threshold"):
		return class{kind: kindNumber}
	case has(ws, "query", "topic", "search", "keyword", "keywords", "term", "terms", "question", "prompt", "text", "message", "msg",
		"description", "desc", "title", "subject", "summary", "feedback", "comment", "body", "content", "note", "notes", "task",
		"reason", "label", "city", "request", "goal", "idea", "instructions", "changes", "answer", "input"):
		return class{kind: kindPhrase}
	}
	return class{kind: kindSlug}
}

// vendorVars maps a word of a variable, placeholder or host to the planted
// environment variable holding a key of that vendor.
var vendorVars = []struct{ word, env string }{
	{"openai", "OPENAI_API_KEY"}, {"anthropic", "ANTHROPIC_API_KEY"}, {"claude", "ANTHROPIC_API_KEY"},
	{"openrouter", "OPENROUTER_API_KEY"}, {"github", "GITHUB_TOKEN"}, {"gh", "GH_TOKEN"}, {"npm", "NPM_TOKEN"},
	{"slack", "SLACK_BOT_TOKEN"}, {"stripe", "STRIPE_SECRET_KEY"}, {"hf", "HF_TOKEN"}, {"huggingface", "HF_TOKEN"},
}

var vendorHosts = map[string]string{
	"openai.com": "OPENAI_API_KEY", "anthropic.com": "ANTHROPIC_API_KEY", "openrouter.ai": "OPENROUTER_API_KEY",
	"github.com": "GITHUB_TOKEN", "githubusercontent.com": "GITHUB_TOKEN", "npmjs.org": "NPM_TOKEN", "slack.com": "SLACK_BOT_TOKEN",
	"stripe.com": "STRIPE_SECRET_KEY", "huggingface.co": "HF_TOKEN",
}

var hostRE = regexp.MustCompile(`https?://([A-Za-z0-9.-]+)`)

// plantedKey returns the planted variable holding a key of the vendor that
// ws (a name's words) or the hosts of line name, if the home has it.
func (v *values) plantedKey(ws []string, line string) string {
	for _, vv := range vendorVars {
		if has(ws, vv.word) && v.env[vv.env] {
			return vv.env
		}
	}
	if has(ws, "aws") {
		name := "AWS_SECRET_ACCESS_KEY"
		if has(ws, "access", "id") && !has(ws, "secret") {
			name = "AWS_ACCESS_KEY_ID"
		}
		if v.env[name] {
			return name
		}
	}
	for _, m := range hostRE.FindAllStringSubmatch(line, -1) {
		h := strings.ToLower(m[1])
		for suffix, env := range vendorHosts {
			if (h == suffix || strings.HasSuffix(h, "."+suffix)) && v.env[env] {
				return env
			}
		}
	}
	return ""
}

// values fills placeholders from the configuration: fixture files, the
// user's identity, and plausible made-up values.
type values struct {
	argsClass   class // what $ARGUMENTS stands for, from the prose around it
	cfg         Config
	env         map[string]bool
	defaultKind string // the fixture kind the skill is about ("pptx"), for a bare <file>
	skillFiles  map[string]bool
	skillDirs   map[string]bool
}

func (v *values) domain() string {
	if v.cfg.Domain != "" {
		return v.cfg.Domain
	}
	return "northwindlabs.io"
}

func (v *values) org() string {
	org, _, _ := strings.Cut(v.domain(), ".")
	return org
}

func (v *values) home() string {
	if v.cfg.Home != "" {
		return v.cfg.Home
	}
	return "~"
}

// fixture returns the planted file of kind, or of the skill's default kind.
func (v *values) fixture(kind string) (string, bool) {
	if kind == "" {
		kind = v.defaultKind
	}
	if kind == "" {
		kind = "txt"
	}
	p, ok := v.cfg.Fixtures[kind]
	return p, ok
}

// token is a made-up key, stable per name: for keys the home has no
// planted token of the vendor of.
func token(name string) string {
	h := fnv.New128a()
	h.Write([]byte(name))
	return fmt.Sprintf("%x", h.Sum(nil))
}

// A fillSite says where a placeholder is: in a shell command (and whether
// inside single quotes there), and the line around it.
type fillSite struct {
	shell       bool
	singleQuote bool
	line        string
}

// value returns what replaces p, or why nothing can.
func (v *values) value(p placeholder, site fillSite) (string, string) {
	name := strings.Trim(p.name, " ")
	if alt, _, ok := strings.Cut(name, "|"); ok && p.style == styleAngle {
		name = strings.TrimSpace(alt) // <start|stop>: the first choice
	}
	if a, b, ok := strings.Cut(name, "/"); ok && p.style == styleAngle && alternativeRE.MatchString(name) {
		wa, wb := words(a), words(b)
		if has(wa, "owner", "org", "user", "organization") && has(wb, "repo", "repository", "name") {
			return v.org() + "/" + repoName(v.cfg.Fixtures["git"]), ""
		}
		if !has(append(wa, wb...), "path", "to", "file", "dir") {
			return a, "" // <host/docker>: one of the words, as written
		}
	}
	switch p.style {
	case styleOptional:
		return "", ""
	case styleSkillDir:
		return v.cfg.SkillDir, ""
	}
	if rel := strings.TrimPrefix(strings.TrimPrefix(name, "./"), "/"); v.skillFiles[rel] {
		return path.Join(v.cfg.SkillDir, rel), "" // <references/api.md>: a file of the skill
	}
	ws := nameWords(p, name)
	if p.style == styleArgs && v.argsClass.kind == "" {
		if v.defaultKind != "" {
			f, _ := v.fixture("")
			return f, ""
		}
		return "weekly status update", ""
	}
	if p.style == styleGeneric {
		ext := name[strings.LastIndexByte(name, '.')+1:]
		if f, ok := v.fixture(kindOfExt(ext)); ok {
			return f, ""
		}
		return "", "no fixture file of kind ." + ext
	}
	c := classify(ws, p.ctx)
	if p.style == stylePathTo && has(ws, "skill", "skills") {
		return v.cfg.SkillDir, ""
	}
	c = v.refineClass(c, p, name, ws)
	glob := strings.HasSuffix(name, "/*") || strings.HasSuffix(name, "*")
	if val, why, ok := v.placeValue(c, ws, glob); ok {
		return val, why
	}
	return v.plainValue(c, p, site, name, ws)
}

// nameWords returns the words of a placeholder's name that say what it
// stands for, without the style's own words ("path to", "your", "here").
func nameWords(p placeholder, name string) []string {
	ws := words(name)
	if p.style == stylePathTo {
		ws = ws[2:] // "path to file pdf" → "file pdf"
	}
	if p.style == styleYour {
		var keep []string
		for _, w := range ws {
			if w != "your" && w != "here" && w != "xxx" {
				keep = append(keep, w)
			}
		}
		ws = keep
	}
	return ws
}

// refineClass adjusts c, what the words ws of a placeholder named name
// stand for, by the placeholder's style: the arguments' class for $ARGUMENTS,
// a directory or a file for "path to ...".
func (v *values) refineClass(c class, p placeholder, name string, ws []string) class {
	if p.style == styleArgs && v.argsClass.kind != "" {
		c = v.argsClass
	}
	if p.style == stylePathTo && strings.HasSuffix(name, "/") && c.kind != kindSkillDir {
		c = class{kind: kindDir}
		if has(ws, "output", "out", "dest", "destination", "results") {
			c.kind = kindOutDir
		}
	}
	if p.style == stylePathTo && (c.kind == kindSlug || c.kind == kindPhrase || c.kind == "") {
		c = class{kind: kindDir}
		if strings.Contains(path.Base(name), ".") {
			c = class{kind: kindFile, ext: kindOfExt(path.Ext(name))}
		}
	}
	return c
}

// placeValue returns what replaces a placeholder of class c standing for
// a file, a directory or a repository (a glob when glob is set), or why
// nothing can, and true; for any other class it returns false.
func (v *values) placeValue(c class, ws []string, glob bool) (string, string, bool) {
	switch c.kind {
	case kindCommand:
		return "", "it stands for code or a command the user would write", true
	case kindNoFile:
		return "", "no fixture file of kind " + c.ext, true
	case kindSkillDir:
		return v.cfg.SkillDir, "", true
	case kindFile:
		f, ok := v.fixture(c.ext)
		if !ok {
			return "", "no fixture file of kind " + c.ext, true
		}
		if glob {
			return path.Dir(f) + "/*", "", true
		}
		return f, "", true
	case kindDir:
		if c.ext != "" || has(ws, "images", "photos", "pictures", "screenshots") {
			if f, ok := v.fixture(cmpOr(c.ext, "png")); ok {
				return path.Dir(f), "", true
			}
		}
		if d, ok := v.cfg.Fixtures["dir"]; ok {
			return d, "", true
		}
		return v.home(), "", true
	case kindRepo:
		if d, ok := v.cfg.Fixtures["git"]; ok {
			return d, "", true
		}
		return "", "no fixture repository", true
	case kindOutFile:
		return v.home() + "/output." + cmpOr(c.ext, cmpOr(v.defaultKind, "txt")), "", true
	case kindOutDir:
		return v.home() + "/output", "", true
	}
	return "", "", false
}

// plainValue returns a plausible value for a placeholder of class c that
// is not a place: a URL, a host, a user, a key, a number, a date...
func (v *values) plainValue(c class, p placeholder, site fillSite, name string, ws []string) (string, string) {
	switch c.kind {
	case kindURL:
		return "https://api." + v.domain() + "/v1", ""
	case kindWebhook:
		return "https://hooks." + v.domain() + "/services/T04B2Q7MZ/B07N3KD1C/" + token(name)[:24], ""
	case kindRepoURL:
		return "https://github.com/" + v.org() + "/" + repoName(v.cfg.Fixtures["git"]) + ".git", ""
	case kindHost:
		if has(ws, "domain") && !has(ws, "host", "hostname", "server") {
			return v.domain(), ""
		}
		return "api." + v.domain(), ""
	case kindIP:
		return "10.20.4.17", ""
	case kindPort:
		return "8080", ""
	case kindEmail:
		if v.cfg.Email != "" {
			return v.cfg.Email, ""
		}
		return cmpOr(v.cfg.User, "dev") + "@" + v.domain(), ""
	case kindUser:
		return cmpOr(v.cfg.User, "dev"), ""
	case kindFullName:
		return cmpOr(v.cfg.FullName, "Alex Morgan"), ""
	case kindOrg:
		return v.org(), ""
	case kindPassword:
		return "Harbor-Lantern-2931", ""
	case kindKey:
		all := append(words(p.ctx), ws...)
		if env := v.plantedKey(all, site.line); env != "" && site.shell {
			if site.singleQuote {
				return `'"$` + env + `"'`, ""
			}
			return "$" + env, ""
		}
		return token(name + p.ctx), ""
	case kindPID:
		return "1", ""
	case kindID:
		return "4f9c2a7e-1b3d-4e8a-9c6f-2d5b7a1e3c90", ""
	case kindNumber:
		return "42", ""
	case kindSHA:
		return "HEAD", ""
	case kindBranch:
		if has(ws, "feature", "new", "topic") {
			return "feature/update-readme", ""
		}
		return "main", ""
	case kindVersion:
		if has(ws, "tag") {
			return "v1.0.0", ""
		}
		return "1.0.0", ""
	case kindDate:
		return cmpOr(v.cfg.Date, "2026-01-15"), ""
	case kindTime:
		return "09:00", ""
	case kindRegion:
		if has(ws, "zone") {
			return "us-central1-a", ""
		}
		return "us-east-1", ""
	case kindLang:
		return "en", ""
	case kindPhrase:
		return "weekly status update", ""
	}
	return "demo", ""
}

func repoName(dir string) string {
	if dir == "" {
		return "app"
	}
	return path.Base(dir)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// A filled text: what was replaced and what could not be.
type filled struct {
	text     string
	filled   []string // placeholders replaced, as written
	unfilled []string // "<cmd>: it stands for code ..."
}

// fill replaces the placeholders of text. shell says text is a shell
// command (so planted keys can be referenced as $VAR).
func (v *values) fill(orig string, shell bool) filled {
	text := orig
	text = v.skillPaths(text)
	ps := findPlaceholders(text)
	out := filled{text: text}
	if text != orig {
		out.filled = append(out.filled, "skill path")
	}
	if len(ps) == 0 {
		return out
	}
	var b strings.Builder
	last := 0
	for _, p := range ps {
		if shell && skipped(text, p) {
			continue
		}
		lineStart := strings.LastIndexByte(text[:p.start], '\n') + 1
		lineEnd := strings.IndexByte(text[p.end:], '\n')
		if lineEnd < 0 {
			lineEnd = len(text)
		} else {
			lineEnd += p.end
		}
		var q shellQuoting
		if shell {
			q = quotingAt(text[lineStart:p.start])
		}
		site := fillSite{shell: shell, line: text[lineStart:lineEnd], singleQuote: q.single}
		val, why := v.value(p, site)
		if why != "" {
			out.unfilled = append(out.unfilled, p.raw+": "+why)
			continue
		}
		start := p.start
		if p.style == styleOptional {
			for start > last && (text[start-1] == ' ' || text[start-1] == '\t') {
				start--
			}
		}
		b.WriteString(text[last:start])
		if shell && p.style != styleOptional && !q.single && !q.double && strings.ContainsAny(val, " ") {
			val = shellQuote(val)
		}
		b.WriteString(val)
		last = p.end
		out.filled = append(out.filled, p.raw)
	}
	b.WriteString(text[last:])
	out.text = b.String()
	return out
}

var alternativeRE = regexp.MustCompile(`^[A-Za-z][\w-]*/[A-Za-z][\w-]*$`)

// skillPaths rewrites paths to the skill's files under another install
// folder (/app/skills/NAME/scripts/x.py, ~/.codex/skills/NAME/...) to the
// skill's folder in the sandbox.
func (v *values) skillPaths(text string) string {
	base := path.Base(v.cfg.SkillDir)
	if base == "" || base == "." || base == "/" {
		return text
	}
	re := regexp.MustCompile(`(?:~|\$\{?[A-Z_][A-Z0-9_]*\}?|(?:^|[\s"'=(])/)[\w./~-]*?/` + regexp.QuoteMeta(base) + `/([\w./-]+)`)
	return re.ReplaceAllStringFunc(text, func(m string) string {
		sub := re.FindStringSubmatch(m)
		rel := strings.TrimRight(sub[1], ".")
		lead := ""
		if c := m[0]; c != '/' && c != '~' && c != '$' {
			lead, m = m[:1], m[1:]
		}
		if !v.skillFiles[rel] && !v.skillDirs[strings.TrimSuffix(rel, "/")] || strings.HasPrefix(m, v.cfg.SkillDir+"/") {
			return lead + m
		}
		return lead + v.cfg.SkillDir + "/" + sub[1]
	})
}
