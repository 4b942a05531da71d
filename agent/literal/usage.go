package literal

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// An argSpec is one argument a script wants: a positional (flag "") or a
// required option (flag "--out") with a value named name; desc is what its
// help says about it, used to choose the value.
type argSpec struct {
	name, flag, desc string
	choice           string // the first of {a,b,c} choices: written as is
	noValue          bool   // a required flag without a value
}

// A usage is what the driver knows of how a script is called.
type usage struct {
	args      []argSpec
	takesArgs bool // the script reads arguments (even if their names are unknown)
	probe     bool // worth asking the script itself with --help
}

var (
	usageLineRE = regexp.MustCompile(`(?i)^\s*usage:\s*(.*)$`)
	sectionRE   = regexp.MustCompile(`(?i)^\s*(positional arguments|arguments|options|optional arguments|required arguments|commands)\s*:?\s*$`)
	helpItemRE  = regexp.MustCompile(`^\s{1,8}((?:-\w, )?(?:--?[\w-]+|<[^>]+>|[\w-]+)(?:[ =](?:<[^>]+>|[A-Z_]+))?)(?:\s{2,}|\t)(.*)$`)
)

// parseHelp reads a script's --help (or usage) text: the usage line's
// positional arguments and required options, with the description each
// has in the sections below it. ok is false when there is no usage line.
func parseHelp(out string) (args []argSpec, ok bool) {
	lines := strings.Split(strings.ReplaceAll(out, "\r", ""), "\n")
	var spec string
	descs := map[string]string{}
	for i := 0; i < len(lines); i++ {
		m := usageLineRE.FindStringSubmatch(lines[i])
		if m == nil || ok {
			if im := helpItemRE.FindStringSubmatch(lines[i]); im != nil && ok {
				key := strings.Fields(strings.TrimPrefix(im[1], "-x, "))[0]
				key = strings.Trim(strings.SplitN(key, "=", 2)[0], "<>")
				if strings.HasPrefix(im[1], "-") && strings.Contains(im[1], ", ") {
					key = strings.Fields(im[1][strings.Index(im[1], ", ")+2:])[0]
				}
				if descs[key] == "" {
					descs[key] = strings.TrimSpace(im[2])
				}
			}
			continue
		}
		ok = true
		spec = m[1]
		// Continuation lines are indented further than "usage:".
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "  ") && strings.TrimSpace(lines[i+1]) != "" && !sectionRE.MatchString(lines[i+1]) {
			i++
			spec += " " + strings.TrimSpace(lines[i])
		}
	}
	if !ok {
		return nil, false
	}
	args = parseSpec(spec)
	for i := range args {
		key := strings.Trim(args[i].name, "<>")
		if args[i].flag != "" {
			key = args[i].flag
		}
		args[i].desc = descs[key]
	}
	return args, true
}

// parseSpec reads a synopsis after "usage:": the program name (and its
// interpreter) first, then arguments; bracketed parts are optional and
// skipped; "{a,b}" is a choice; "--flag VALUE" outside brackets is required.
func parseSpec(spec string) []argSpec {
	toks := strings.Fields(spec)
	i := 0
	if i < len(toks) && isInterp(toks[i]) {
		i++
	}
	if i < len(toks) && !strings.HasPrefix(toks[i], "[") && !strings.HasPrefix(toks[i], "<") && !strings.HasPrefix(toks[i], "-") {
		i++ // the program
	}
	var out []argSpec
	depth := 0
	for ; i < len(toks); i++ {
		t := toks[i]
		open := strings.Count(t, "[")
		close := strings.Count(t, "]")
		inside := depth > 0 || open > 0
		depth += open - close
		if depth < 0 {
			depth = 0
		}
		if inside || t == "..." || t == "|" || strings.HasPrefix(t, "...") {
			continue
		}
		switch {
		case strings.HasPrefix(t, "{"):
			c := strings.Trim(strings.SplitN(strings.Trim(t, "{}"), ",", 2)[0], "{} ")
			if c != "" {
				out = append(out, argSpec{name: c, choice: c})
			}
			return out // a subcommand: what follows belongs to it
		case strings.HasPrefix(t, "-"):
			flag, val, hasEq := strings.Cut(t, "=")
			a := argSpec{flag: flag}
			switch {
			case hasEq:
				a.name = val
			case i+1 < len(toks) && strings.HasPrefix(toks[i+1], "{"):
				i++
				a.choice = strings.Trim(strings.SplitN(strings.Trim(toks[i], "{}"), ",", 2)[0], "{} ")
				a.name = a.choice
			case i+1 < len(toks) && isMetavar(toks[i+1]):
				i++
				a.name = toks[i]
			default:
				a.noValue = true
			}
			if flag != "-h" && flag != "--help" {
				out = append(out, a)
			}
		case isMetavar(t) || isLowerName(t):
			if strings.EqualFold(strings.Trim(t, "<>"), "options") || strings.EqualFold(t, "command") && false {
				continue
			}
			out = append(out, argSpec{name: strings.TrimSuffix(t, "...")})
		}
	}
	return out
}

func isInterp(t string) bool {
	switch t {
	case "python", "python3", "node", "bash", "sh", "ruby", "perl", "uv", "npx":
		return true
	}
	return false
}

// isMetavar: INPUT, OUT_DIR, <file>.
func isMetavar(t string) bool {
	t = strings.TrimSuffix(t, "...")
	if strings.HasPrefix(t, "<") && strings.HasSuffix(t, ">") && len(t) > 2 {
		return true
	}
	if t == "" {
		return false
	}
	for _, c := range t {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return t[0] >= 'A' && t[0] <= 'Z'
}

// isLowerName: argparse prints positionals by their dest ("input_file").
func isLowerName(t string) bool {
	t = strings.TrimSuffix(t, "...")
	if t == "" || !(t[0] >= 'a' && t[0] <= 'z') {
		return false
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

var (
	argparseRE   = regexp.MustCompile(`add_argument\(\s*['"]([^'"]+)['"](?:\s*,\s*['"](--?[\w-]+)['"])?((?:[^()]|\([^()]*\))*)\)`)
	clickArgRE   = regexp.MustCompile(`@click\.argument\(\s*['"]([\w-]+)['"]`)
	clickOptRE   = regexp.MustCompile(`@click\.option\(\s*['"](?:-\w['"]\s*,\s*['"])?(--[\w-]+)['"]((?:[^()]|\([^()]*\))*)\)`)
	sysArgvRE    = regexp.MustCompile(`sys\.argv\[(\d)\]`)
	sysArgvVarRE = regexp.MustCompile(`(\w+)\s*=\s*sys\.argv\[(\d)\]`)
	nodeArgvRE   = regexp.MustCompile(`process\.argv\[(\d)\]`)
	nodeArgvVar  = regexp.MustCompile(`(?:const|let|var)\s+(\w+)\s*=\s*process\.argv\[(\d)\]`)
	commanderArg = regexp.MustCompile(`\.argument\(\s*['"]<([^>]+)>['"](?:\s*,\s*['"]([^'"]*)['"])?`)
	commanderReq = regexp.MustCompile(`\.requiredOption\(\s*['"](?:-\w,\s*)?(--[\w-]+)\s+<([^>]+)>['"](?:\s*,\s*['"]([^'"]*)['"])?`)
	shellArgRE   = regexp.MustCompile(`\$\{?([1-9])\b`)
	shellArgVar  = regexp.MustCompile(`(\w+)=["']?\$\{?([1-9])\b`)
	srcUsageRE   = regexp.MustCompile(`(?i)usage:\s*([^"'\x60\n\\]*)`)
	helpKwRE     = regexp.MustCompile(`help\s*=\s*(?:f?["']([^"']*)["'])`)
	choicesRE    = regexp.MustCompile(`choices\s*=\s*[\[(]\s*['"]([^'"]+)['"]`)
	argsHintRE   = regexp.MustCompile(`argparse|ArgumentParser|sys\.argv|process\.argv|click\.|typer\.|commander|yargs|minimist|getopts|\$[1-9@*#]|optparse|docopt|ARGV|@ARGV`)
)

// staticUsage reads the arguments a script wants from its source: argparse,
// click, commander, sys.argv / process.argv / $1 indexes, a usage string.
func staticUsage(src string) usage {
	u := usage{takesArgs: argsHintRE.MatchString(src)}
	if !u.takesArgs {
		return u
	}
	u.probe = true
	for _, m := range argparseRE.FindAllStringSubmatch(src, -1) {
		first, rest := m[1], m[3]
		desc := ""
		if h := helpKwRE.FindStringSubmatch(rest); h != nil {
			desc = h[1]
		}
		choice := ""
		if c := choicesRE.FindStringSubmatch(rest); c != nil {
			choice = c[1]
		}
		switch {
		case !strings.HasPrefix(first, "-"):
			if regexp.MustCompile(`nargs\s*=\s*['"][?*]['"]`).MatchString(rest) || strings.Contains(rest, "default=") {
				continue
			}
			u.args = append(u.args, argSpec{name: first, desc: desc, choice: choice})
		case regexp.MustCompile(`required\s*=\s*True`).MatchString(rest):
			flag := first
			if m[2] != "" && strings.HasPrefix(m[2], "--") {
				flag = m[2]
			}
			a := argSpec{flag: flag, name: strings.TrimLeft(flag, "-"), desc: desc, choice: choice}
			if strings.Contains(rest, "store_true") {
				a.noValue = true
			}
			u.args = append(u.args, a)
		}
	}
	for _, m := range clickArgRE.FindAllStringSubmatch(src, -1) {
		u.args = append(u.args, argSpec{name: m[1]})
	}
	for _, m := range clickOptRE.FindAllStringSubmatch(src, -1) {
		if strings.Contains(m[2], "required=True") {
			u.args = append(u.args, argSpec{flag: m[1], name: strings.TrimLeft(m[1], "-")})
		}
	}
	for _, m := range commanderArg.FindAllStringSubmatch(src, -1) {
		u.args = append(u.args, argSpec{name: m[1], desc: m[2]})
	}
	for _, m := range commanderReq.FindAllStringSubmatch(src, -1) {
		u.args = append(u.args, argSpec{flag: m[1], name: m[2], desc: m[3]})
	}
	if len(u.args) > 0 {
		return u
	}
	// Indexed argv: as many positionals as the highest index read.
	named := map[int]string{}
	maxIdx := 0
	note := func(re, varRE *regexp.Regexp, offset int) {
		for _, m := range re.FindAllStringSubmatch(src, -1) {
			n, _ := strconv.Atoi(m[1])
			maxIdx = max(maxIdx, n-offset)
		}
		for _, m := range varRE.FindAllStringSubmatch(src, -1) {
			n, _ := strconv.Atoi(m[2])
			if named[n-offset] == "" {
				named[n-offset] = m[1]
			}
		}
	}
	note(sysArgvRE, sysArgvVarRE, 0)
	note(nodeArgvRE, nodeArgvVar, 1)
	note(shellArgRE, shellArgVar, 0)
	for i := 1; i <= maxIdx && i <= 6; i++ {
		u.args = append(u.args, argSpec{name: cmpOr(named[i], "input")})
	}
	if len(u.args) == 0 {
		if m := srcUsageRE.FindStringSubmatch(src); m != nil {
			u.args = parseSpec(m[1])
		}
	}
	return u
}

// textUsage finds how the instructions call a script: the arguments after
// its name in code (a fenced block or inline code), such as "analyze.py
// <input.pptx> --out report.md". ok is false when the text never shows it
// with arguments.
func textUsage(code []string, base string) (string, bool) {
	re := regexp.MustCompile(`(?:^|[\s/"'\x60(])` + regexp.QuoteMeta(base) + `((?:[ \t]+[^\s|;&\x60#)]+)+)`)
	best := ""
	for _, c := range code {
		for _, l := range strings.Split(c, "\n") {
			m := re.FindStringSubmatchIndex(l)
			if m == nil {
				continue
			}
			args := strings.TrimSpace(argsTail(l[m[2]:]))
			if strings.HasPrefix(args, "--help") || strings.HasPrefix(args, "-h") && len(args) == 2 {
				continue
			}
			if len(args) > len(best) {
				best = args // the fullest example
			}
		}
	}
	return best, best != ""
}

// argsTail returns the arguments at the start of s up to the end of the
// simple command: a |, ;, &, #, backquote or ) outside quotes and $(...)
// groups, so `f $(ls ~/p | head -1)/x` keeps its command substitution.
func argsTail(s string) string {
	depth := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
		case c == '\\':
			i++
		case c == '\'' || c == '"':
			quote = c
		case c == '$' && i+1 < len(s) && s[i+1] == '(':
			depth++
			i++
		case c == '(' && depth > 0:
			depth++
		case c == ')' && depth > 0:
			depth--
		case depth == 0 && strings.IndexByte("|;&#)\x60", c) >= 0:
			return s[:i]
		}
	}
	if depth > 0 || quote != 0 {
		return "" // cut off mid-group: not a usage to copy
	}
	return s
}

// render writes args as a command-line tail, each value chosen from its
// name and description; unfilled lists the arguments with no value.
func (v *values) render(args []argSpec, kindHint string) (string, []string) {
	var parts, unfilled []string
	for _, a := range args {
		if a.noValue {
			parts = append(parts, a.flag)
			continue
		}
		val := a.choice
		if val == "" {
			ws := words(strings.Trim(a.name, "<>"))
			c := classify(ws, a.flag)
			if (c.kind == kindFile || c.kind == kindPhrase || c.kind == kindSlug) && c.ext == "" {
				// The description or the script's subject says which kind of file.
				if k := kindFromText(a.desc); k != "" {
					c = class{kind: kindFile, ext: k}
				} else if c.kind == kindFile || has(ws, "input", "in", "arg1", "path") {
					c = class{kind: kindFile, ext: kindHint}
				}
			}
			var why string
			val, why = v.valueOf(c, a.name)
			if why != "" {
				unfilled = append(unfilled, a.name+": "+why)
				continue
			}
		}
		if a.flag != "" {
			parts = append(parts, a.flag)
		}
		parts = append(parts, shellQuote(val))
	}
	return strings.Join(parts, " "), unfilled
}

// valueOf fills a classified argument.
func (v *values) valueOf(c class, name string) (string, string) {
	p := placeholder{name: name, style: styleAngle}
	switch c.kind {
	case kindFile:
		f, ok := v.fixture(c.ext)
		if !ok {
			return "", "no fixture file of kind " + cmpOr(c.ext, v.defaultKind)
		}
		return f, ""
	}
	// Reuse the placeholder filler on a name that classifies the same.
	return v.value(p, fillSite{})
}

var extMentionRE = regexp.MustCompile(`(?i)\.(pptx|ppt|docx|doc|xlsx|xls|csv|tsv|pdf|png|jpe?g|svg|gif|webp|zip|ipynb|json|ya?ml|xml|txt|md|html?)\b`)

// documentKinds are what skills are about; the others (json, md, ...) are
// also what skills are made of, so they count only when nothing else does.
var documentKinds = map[string]bool{"pptx": true, "docx": true, "xlsx": true, "csv": true, "pdf": true, "png": true, "jpg": true, "svg": true, "zip": true, "ipynb": true}

// kindFromExts returns the fixture kind whose extension text names most,
// document kinds first, or "".
func kindFromExts(text string) string {
	counts := map[string]int{}
	for _, m := range extMentionRE.FindAllStringSubmatch(text, -1) {
		if k := kindOfExt(m[1]); k != "" {
			counts[k]++
		}
	}
	best, n, doc := "", 0, false
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d := documentKinds[k]
		if d && !doc || d == doc && counts[k] > n {
			best, n, doc = k, counts[k], d
		}
	}
	return best
}

// kindFromText returns the fixture kind a text is most about (".pptx",
// "PowerPoint", "spreadsheet"), or "".
func kindFromText(text string) string {
	counts := map[string]int{}
	for _, w := range words(text) {
		if k := extKinds[w]; k != "" && w != "key" && w != "text" && w != "log" {
			counts[k] += 2
		} else if k := wordKinds[w]; k != "" {
			counts[k]++
		}
	}
	best, n := "", 0
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if counts[k] > n {
			best, n = k, counts[k]
		}
	}
	return best
}
