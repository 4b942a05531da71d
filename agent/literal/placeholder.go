package literal

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Placeholders are the parts of a documented command the user is meant to
// replace: "<input.pptx>", "YOUR_API_KEY", "{{PROJECT_NAME}}",
// "/path/to/file.pdf", "path-to-skill", "[FILE]", "$ARGUMENTS", "{baseDir}",
// and generic input names such as "document.pdf". findPlaceholders finds them
// in a command; fill (values.go) chooses what goes in their place.

// A placeholder is one occurrence in a text.
type placeholder struct {
	start, end int    // byte offsets in the text
	raw        string // as written
	name       string // the name inside its delimiters ("input.pptx" for "<input.pptx>")
	style      string // see the style constants
	ctx        string // the assignment or flag it is the value of ("OPENAI_API_KEY", "--cluster-name"), if any
}

const (
	styleAngle    = "angle"     // <name>
	styleMustache = "mustache"  // {{name}}
	styleYour     = "your"      // YOUR_API_KEY, your-key-here
	stylePathTo   = "path-to"   // /path/to/file.pdf, path-to-skill
	styleBracket  = "bracket"   // [FILE]
	styleArgs     = "arguments" // $ARGUMENTS
	styleSkillDir = "skill dir" // {baseDir}, {skillDir}
	styleGeneric  = "generic"   // document.pdf, example.pptx: a stock name for the user's own file
	styleOptional = "optional"  // [--flag X], [options]: an optional part of a synopsis, dropped
)

var (
	// <name>: not a redirection (no space before ">"), not a heredoc
	// ("<<EOF>"), not a type parameter ("List<String>"), not markup.
	angleRE    = regexp.MustCompile(`<([A-Za-z](?:[^<>\n"'=;&]{0,60}?[A-Za-z0-9_.)\]*])?)>`)
	mustacheRE = regexp.MustCompile(`\{\{\s*([A-Za-z_][\w.-]*)\s*\}\}`)
	yourRE     = regexp.MustCompile(`(?i)[A-Za-z0-9_.-]*\byour[_-][A-Za-z0-9_.-]*[A-Za-z0-9]|\b(?:xxx+|XXX+)\b`)
	pathToRE   = regexp.MustCompile(`(?:\B/|\b)(?:path/to/|path-to-)[\w.\-/*]*`)
	bracketRE  = regexp.MustCompile(`\[([A-Z][A-Z0-9_]{1,30}|[Yy]our[\w -]{1,30})\]`)
	argsRE     = regexp.MustCompile(`\$\{?ARGUMENTS\}?`)
	skillDirRE = regexp.MustCompile(`\$?\{(?:baseDir|base_dir|skillDir|skill_dir|SKILL_DIR|skillPath|skill_path)\}`)
	// A stock file name: input.pdf, example.pptx, my_data.csv, your-file.docx.
	genericRE  = regexp.MustCompile(`(?:^|[\s"'=(])((?:input|example|sample|document|doc|file|presentation|deck|slides|spreadsheet|workbook|data|dataset|image|img|photo|picture|pic|my[_-]?\w*|your[_-]?\w*)\.([A-Za-z0-9]{2,5}))(?:$|[\s"')])`)
	optionalRE = regexp.MustCompile(`(?:^|\s)(\[(?:--?[A-Za-z][^\[\]\n]*|<[^\[\]\n]*>[^\[\]\n]*|(?i:options?|flags?|args?|arguments?|opts?)(?:\s*\.\.\.)?|[A-Za-z][\w.|-]*(?: ?\.\.\.)?)\])(?:\s*\.\.\.)?`)
	// An upper-case metavariable standing alone as an argument: INPUT, OUTPUT_DIR.
	metavarRE = regexp.MustCompile(`(?:^|[ \t])([A-Z][A-Z0-9_]{2,30})(?:$|[ \t])`)
	flagRE    = regexp.MustCompile(`(--?[A-Za-z][\w-]*)[= ]\s*["']?$`)
	assignRE  = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)=["']?$`)
	keyRE     = regexp.MustCompile(`["']?([A-Za-z_][\w-]*)["']?\s*:\s*["']?$`)
	closingRE = regexp.MustCompile(`</\s*([A-Za-z][\w:-]*)`)
)

// markup lists HTML elements that are written without a closing tag; any
// other tag name is markup only when the text closes it (</title>).
var markup = map[string]bool{}

func init() {
	for _, t := range strings.Fields(`html head body div span p a b i u em strong br hr img script style link meta input source wbr
		table tr td th ul ol li h1 h2 h3 h4 h5 h6 svg g rect circle`) {
		markup[t] = true
	}
}

// findPlaceholders lists the placeholders of text, in order, without overlaps.
func findPlaceholders(text string) []placeholder {
	closed := map[string]bool{}
	for _, m := range closingRE.FindAllStringSubmatch(text, -1) {
		closed[strings.ToLower(m[1])] = true
	}
	var out []placeholder
	add := func(start, end, ns, ne int, style string) {
		out = append(out, placeholder{start: start, end: end, raw: text[start:end], name: text[ns:ne], style: style})
	}
	for _, m := range angleRE.FindAllStringSubmatchIndex(text, -1) {
		if m[0] > 0 {
			c := rune(text[m[0]-1])
			if c == '<' || c == '\\' || c == '$' || unicode.IsLetter(c) || unicode.IsDigit(c) {
				continue
			}
		}
		name := text[m[2]:m[3]]
		first := strings.ToLower(strings.FieldsFunc(name, func(r rune) bool { return r == ' ' || r == '/' })[0])
		if closed[first] || markup[first] && !strings.ContainsAny(name, "-_.") {
			continue
		}
		if strings.HasPrefix(name, "http") || strings.Contains(name, "@") && strings.Contains(name, ".") && !strings.Contains(name, " ") {
			continue // <https://...> autolinks and <me@host> addresses are values already
		}
		add(m[0], m[1], m[2], m[3], styleAngle)
	}
	for _, m := range mustacheRE.FindAllStringSubmatchIndex(text, -1) {
		name := text[m[2]:m[3]]
		if m[0] > 0 && text[m[0]-1] == '$' || strings.Contains(name, ".") && !strings.Contains(name, "_") && strings.ToLower(name) == name {
			continue // ${{ github.sha }}, Go templates ({{.Repository}}), Jinja attributes
		}
		add(m[0], m[1], m[2], m[3], styleMustache)
	}
	for _, m := range yourRE.FindAllStringIndex(text, -1) {
		add(m[0], m[1], m[0], m[1], styleYour)
	}
	for _, m := range pathToRE.FindAllStringIndex(text, -1) {
		add(m[0], m[1], m[0], m[1], stylePathTo)
	}
	for _, m := range bracketRE.FindAllStringSubmatchIndex(text, -1) {
		if aloneOnLine(text, m[0], m[1]) {
			continue // [DEFAULT]: an INI section header
		}
		name := text[m[2]:m[3]]
		if k := classify(words(name), ""); k.kind == "" || k.kind == kindPhrase || k.kind == kindSlug {
			continue // [DOWN], [INSTALLED], [TRUNCATED]: labels in output, not values
		}
		add(m[0], m[1], m[2], m[3], styleBracket)
	}
	for _, m := range argsRE.FindAllStringIndex(text, -1) {
		add(m[0], m[1], m[0], m[1], styleArgs)
	}
	for _, m := range skillDirRE.FindAllStringIndex(text, -1) {
		add(m[0], m[1], m[0], m[1], styleSkillDir)
	}
	for _, m := range genericRE.FindAllStringSubmatchIndex(text, -1) {
		if kindOfExt(strings.ToLower(text[m[4]:m[5]])) == "" {
			continue
		}
		if before := strings.TrimRight(text[:m[2]], " \"'="); outputFlag(before) {
			continue // -o data.csv, > data.csv: a file the command writes
		}
		add(m[2], m[3], m[2], m[3], styleGeneric)
	}
	for _, m := range optionalRE.FindAllStringSubmatchIndex(text, -1) {
		if m[1] < len(text) && text[m[1]] != ' ' && text[m[1]] != '\t' && text[m[1]] != '\n' {
			continue // [abc]* is a glob, a[0] an index
		}
		if aloneOnLine(text, m[2], m[3]) {
			continue // [Service], [default]: a section of a file the step writes, not a synopsis
		}
		add(m[2], m[1], m[2], m[3], styleOptional)
	}
	for _, m := range metavarRE.FindAllStringSubmatchIndex(text, -1) {
		switch classify(words(text[m[2]:m[3]]), "").kind {
		case kindFile, kindDir, kindOutFile, kindOutDir, kindURL, kindRepo, kindRepoURL, kindEmail:
			if before := strings.TrimRight(text[:m[2]], " \t"); strings.HasSuffix(before, "=") || strings.HasSuffix(before, "export") || strings.HasSuffix(before, "unset") {
				continue
			}
			add(m[2], m[3], m[2], m[3], styleAngle)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].start != out[j].start {
			return out[i].start < out[j].start
		}
		return out[i].end > out[j].end
	})
	var kept []placeholder
	end := -1
	for _, p := range out {
		if p.start < end {
			continue // inside a longer one ([--out <dir>] holds <dir>)
		}
		p.ctx = assignedTo(text[:p.start])
		kept = append(kept, p)
		end = p.end
	}
	return kept
}

// aloneOnLine reports whether text[start:end] is all its line holds but
// blanks: a section header of an INI, TOML or systemd unit file that a
// heredoc writes, never a part of a command's synopsis.
func aloneOnLine(text string, start, end int) bool {
	ls := strings.LastIndexByte(text[:start], '\n') + 1
	le := len(text)
	if i := strings.IndexByte(text[end:], '\n'); i >= 0 {
		le = end + i
	}
	return strings.TrimSpace(text[ls:start]) == "" && strings.TrimSpace(text[end:le]) == ""
}

// assignedTo returns the variable, flag or key that the text ending at a
// placeholder assigns it to.
func assignedTo(before string) string {
	line := before[strings.LastIndexByte(before, '\n')+1:]
	for _, re := range []*regexp.Regexp{assignRE, flagRE, keyRE} {
		if m := re.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	return ""
}

// outputFlag reports whether before ends with an option or redirection
// that names an output file.
func outputFlag(before string) bool {
	f := strings.Fields(before)
	if len(f) == 0 {
		return false
	}
	last := f[len(f)-1]
	if strings.HasSuffix(last, ">") || strings.HasSuffix(last, ">>") {
		return true
	}
	switch strings.TrimLeft(strings.SplitN(last, "=", 2)[0], "-") {
	case "o", "out", "output", "outfile", "output-file", "dest", "destination", "target", "save", "save-to", "w", "write":
		return true
	}
	return false
}

// words splits a placeholder name into lower-case words: "outputDir" →
// [output dir], "YOUR_API_KEY" → [your api key], "path/to/file.pdf" →
// [path to file pdf].
func words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if i > 0 && (unicode.IsUpper(r) && unicode.IsLower(rs[i-1]) || unicode.IsDigit(r) != unicode.IsDigit(rs[i-1])) {
				flush()
			}
			cur = append(cur, r)
		default:
			flush()
		}
	}
	flush()
	return out
}

// skipped reports whether a placeholder of a shell command is in a
// comment or in a usage message the command prints: text, not a value.
func skipped(text string, p placeholder) bool {
	lineStart := strings.LastIndexByte(text[:p.start], '\n') + 1
	prefix := text[lineStart:p.start]
	if strings.Contains(strings.ToLower(prefix), "usage:") {
		return true
	}
	return quotingAt(prefix).comment
}

// shellQuoting says where the end of a shell line prefix is.
type shellQuoting struct {
	single  bool // inside '...'
	double  bool // inside "..."
	comment bool // after a # that began a comment
}

// quotingAt reads prefix, a shell line up to a placeholder, and says
// whether the placeholder is inside single or double quotes or in a
// comment. It reads the quoting only: a backslash outside single quotes
// escapes the next byte, and a # outside quotes begins a comment at the
// start of the line or after a space or tab. The text is a documented
// command with its placeholders still in (<input.pptx>, [--flag]) and is
// often cut inside $( or a for loop, so a shell parser (mvdan.cc/sh, which
// rules/shell.go uses) rejects much of it.
func quotingAt(prefix string) shellQuoting {
	var q shellQuoting
	for i := 0; i < len(prefix); i++ {
		switch c := prefix[i]; {
		case c == '\\' && !q.single:
			i++
		case c == '\'' && !q.double:
			q.single = !q.single
		case c == '"' && !q.single:
			q.double = !q.double
		case c == '#' && !q.single && !q.double && (i == 0 || prefix[i-1] == ' ' || prefix[i-1] == '\t'):
			q.comment = true
		}
	}
	return q
}
