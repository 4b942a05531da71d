package rules

import (
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// This file reads command text the way a shell does (mvdan.cc/sh's
// parser), so that quoting (c''url, "c"url, $'\x63url'), variables
// (d=curl; $d ...), wrappers (sudo, env, nohup, timeout...), tee in a
// pipeline, eval and sh -c strings, command and process substitution and
// here-strings do not hide what a command runs. It is used where command
// text matters; the process tree (execs, forks, exits) is the other half
// of the evidence and needs no parsing.

// Limits of the analysis: command text is untrusted.
const (
	maxShellText  = 256 << 10 // bytes of script parsed per analysis (nested scripts included)
	maxShellDepth = 4         // eval / sh -c / decoded payloads nested
	maxDecoded    = 64 << 10  // bytes kept of a decoded payload
)

// A codeRun is bytes that did not come from a file on disk executed by an
// interpreter: fetched from the network, or decoded from a literal.
type codeRun struct {
	// How says how the bytes reached the interpreter: "pipe",
	// "command substitution", "process substitution", "eval",
	// "here-string", "remote module" or "decoded".
	How     string
	Fetcher string // the network client ("curl", "wget", ...), "" for decoded
	Interp  string // the interpreter ("sh", "python3", "eval", "source", ...)
	URLs    []string
	// Decoded is the payload a decoder produced, when the rule could
	// decode it; Inner is what that payload does.
	Decoded string
	Inner   *shellFacts
}

// A download is a file a network client saved.
type download struct {
	Path    string
	URL     string
	Fetcher string
}

// A fileRun is a file handed to an interpreter, sourced or executed.
type fileRun struct {
	Path string
	How  string // "sh", "python3", "source", "exec", "stdin"...
}

// A devTCP is a use of bash's /dev/tcp or /dev/udp.
type devTCP struct {
	Target string // "/dev/tcp/host/port"
	Host   string
	Cmd    string // the command whose input or output it is ("" for exec)
	// Shell is true when a shell or an exec'd descriptor loop is bound to
	// it: a reverse shell rather than a one-off send or port check.
	Shell bool
}

// shellFacts is what a script does, as far as its text says.
type shellFacts struct {
	Runs      []codeRun
	Downloads []download
	FileRuns  []fileRun
	Chmods    []string // paths made executable
	Removes   []shCmd  // rm commands, for the destruction rules
	// CronLines are the lines echoed or printed into crontab - (variables
	// resolved), for the persistence rules.
	CronLines []string
	DevTCP    []devTCP
	// Commands lists the program names the script runs (after wrappers),
	// in order, "" for a name that is not literal.
	Commands []string
	// Assigned lists the variables the script sets; Unset the variables it
	// uses without setting them (the environment's usual ones left out).
	Assigned, Unset []string

	parseErr bool // the text did not parse whole
	readLoop bool // a loop executes each line it reads
	fdShell  bool // an interpreter reads its program from a numbered descriptor
	// netShell: a netcat/socat binds a program to a connection, or a shell
	// in a pipeline reads from or writes to one.
	netShell bool
}

func fdNumber(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 2
}

func (f *shellFacts) merge(o *shellFacts) {
	if o == nil {
		return
	}
	f.Runs = append(f.Runs, o.Runs...)
	f.Downloads = append(f.Downloads, o.Downloads...)
	f.FileRuns = append(f.FileRuns, o.FileRuns...)
	f.Chmods = append(f.Chmods, o.Chmods...)
	f.Removes = append(f.Removes, o.Removes...)
	f.CronLines = append(f.CronLines, o.CronLines...)
	f.DevTCP = append(f.DevTCP, o.DevTCP...)
	f.Commands = append(f.Commands, o.Commands...)
	f.Assigned = append(f.Assigned, o.Assigned...)
	f.Unset = append(f.Unset, o.Unset...)
	f.readLoop = f.readLoop || o.readLoop
	f.fdShell = f.fdShell || o.fdShell
	f.netShell = f.netShell || o.netShell
}

// analyzeShell reads a script. It never fails: text that does not parse
// gives what the parser recovered (often nothing).
func analyzeShell(script string) *shellFacts {
	budget := maxShellText
	a := &shAnalyzer{vars: map[string]string{}, assigned: map[string]bool{}, budget: &budget}
	f := a.analyze(script, 0)
	for n := range a.assigned {
		f.Assigned = append(f.Assigned, n)
	}
	seen := map[string]bool{}
	for _, n := range a.refs {
		if !a.assigned[n] && !envVar(n) && !seen[n] {
			seen[n] = true
			f.Unset = append(f.Unset, n)
		}
	}
	slices.Sort(f.Assigned)
	return f
}

// envVar reports variables a shell or the environment provides.
func envVar(n string) bool {
	if n == "" || n[0] >= '0' && n[0] <= '9' || strings.ContainsAny(n, "@*#?$!-_") && len(n) == 1 {
		return true
	}
	switch n {
	case "HOME", "PATH", "USER", "LOGNAME", "PWD", "OLDPWD", "SHELL", "LANG", "LC_ALL", "TERM", "RANDOM", "SECONDS",
		"LINENO", "IFS", "HOSTNAME", "UID", "EUID", "PPID", "TMPDIR", "EDITOR", "VISUAL", "PAGER", "CI", "OSTYPE",
		"MACHTYPE", "HOSTTYPE", "SHLVL", "REPLY", "OPTARG", "OPTIND", "PIPESTATUS", "FUNCNAME", "BASHPID", "COLUMNS", "LINES":
		return true
	}
	return strings.HasPrefix(n, "BASH") || strings.HasPrefix(n, "XDG_") || strings.HasPrefix(n, "LC_")
}

type shAnalyzer struct {
	vars     map[string]string
	assigned map[string]bool // every variable set, literal or not
	refs     []string        // variables used that no literal assignment resolved
	budget   *int
}

func (a *shAnalyzer) analyze(script string, depth int) *shellFacts {
	facts := &shellFacts{}
	if depth > maxShellDepth || *a.budget <= 0 || strings.TrimSpace(script) == "" {
		return facts
	}
	if len(script) > *a.budget {
		script = script[:*a.budget]
	}
	*a.budget -= len(script)
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "")
	if err != nil {
		// read what can be read of broken text
		facts.parseErr = true
		f, _ = syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.RecoverErrors(3)).Parse(strings.NewReader(script), "")
	}
	if f == nil {
		return facts
	}
	// Variables first: d=curl; $d ... resolves whatever the order of use.
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			for _, as := range n.Assigns {
				if as.Name != nil {
					a.assigned[as.Name.Value] = true
				}
			}
			if len(n.Args) == 0 {
				a.assign(n.Assigns)
			} else if name := n.Args[0].Lit(); name == "read" || name == "mapfile" || name == "readarray" {
				for _, w := range n.Args[1:] {
					if l := w.Lit(); l != "" && !strings.HasPrefix(l, "-") {
						a.assigned[l] = true
					}
				}
			}
		case *syntax.DeclClause:
			for _, as := range n.Args {
				if as.Name != nil {
					a.assigned[as.Name.Value] = true
				}
			}
			a.assign(n.Args)
		case *syntax.WordIter:
			if n.Name != nil {
				a.assigned[n.Name.Value] = true
			}
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause:
			syntax.Walk(n, func(m syntax.Node) bool {
				if l, ok := m.(*syntax.Lit); ok && l.Value != "" {
					a.assigned[l.Value] = true // (( i++ )): names in arithmetic count as set
				}
				return true
			})
		}
		return true
	})
	inPipe := map[*syntax.Stmt]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.BinaryCmd:
			if (n.Op == syntax.Pipe || n.Op == syntax.PipeAll) && !inPipe[n.X] {
				stages := flattenPipe(n)
				for _, s := range stages {
					inPipe[s] = true
				}
				a.pipeline(stages, facts, depth)
			}
		case *syntax.WhileClause:
			if _, ok := a.stdinExecutor(&syntax.Stmt{Cmd: n}); ok {
				facts.readLoop = true
			}
		case *syntax.Stmt:
			a.stmt(n, facts, depth)
		}
		return true
	})
	// exec 5<>/dev/tcp/h/p is a reverse shell when the descriptor feeds a
	// loop that runs what it reads or a shell.
	for i := range facts.DevTCP {
		if d := &facts.DevTCP[i]; d.Cmd == "exec" && (facts.readLoop || facts.fdShell) && !isLoopback(d.Host) {
			d.Shell = true
		}
	}
	return facts
}

func (a *shAnalyzer) assign(as []*syntax.Assign) {
	for _, as := range as {
		if as.Name == nil || as.Value == nil || as.Array != nil || as.Index != nil {
			continue
		}
		w := a.word(as.Value)
		if w.known {
			if as.Append {
				a.vars[as.Name.Value] += w.text
			} else {
				a.vars[as.Name.Value] = w.text
			}
		}
	}
}

// flattenPipe returns the stages of a | b | c in order.
func flattenPipe(b *syntax.BinaryCmd) []*syntax.Stmt {
	var out []*syntax.Stmt
	var walk func(s *syntax.Stmt)
	walk = func(s *syntax.Stmt) {
		if bc, ok := s.Cmd.(*syntax.BinaryCmd); ok && (bc.Op == syntax.Pipe || bc.Op == syntax.PipeAll) && len(s.Redirs) == 0 {
			walk(bc.X)
			walk(bc.Y)
			return
		}
		out = append(out, s)
	}
	walk(b.X)
	walk(b.Y)
	return out
}

// A shWord is a word as far as it can be resolved without running
// anything: quotes removed, known variables substituted. Unknown parts are
// left out and known is false.
type shWord struct {
	text   string
	known  bool
	substs []*syntax.CmdSubst
	procs  []*syntax.ProcSubst
}

func (a *shAnalyzer) word(w *syntax.Word) shWord {
	out := shWord{known: true}
	if w == nil {
		return out
	}
	var b strings.Builder
	var parts func(ps []syntax.WordPart, quoted bool)
	parts = func(ps []syntax.WordPart, quoted bool) {
		for _, p := range ps {
			switch p := p.(type) {
			case *syntax.Lit:
				b.WriteString(unescape(p.Value, quoted))
			case *syntax.SglQuoted:
				if p.Dollar {
					b.WriteString(ansiC(p.Value))
				} else {
					b.WriteString(p.Value)
				}
			case *syntax.DblQuoted:
				parts(p.Parts, true)
			case *syntax.ParamExp:
				v, ok := "", false
				if p.Param != nil && p.Exp == nil && p.Repl == nil && p.Slice == nil && !p.Length && !p.Excl && p.Index == nil {
					v, ok = a.vars[p.Param.Value]
					if !ok && p.Param.Value == "HOME" {
						v, ok = "~", true
					}
				}
				if ok {
					b.WriteString(v)
				} else {
					out.known = false
					if p.Param != nil {
						a.refs = append(a.refs, p.Param.Value)
					}
				}
			case *syntax.CmdSubst:
				out.known = false
				out.substs = append(out.substs, p)
			case *syntax.ProcSubst:
				out.known = false
				out.procs = append(out.procs, p)
			default:
				out.known = false
			}
		}
	}
	parts(w.Parts, false)
	out.text = b.String()
	return out
}

// unescape removes the backslashes the shell removes: any outside quotes,
// and those before $ ` " \ and newline inside double quotes.
func unescape(s string, quoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			n := s[i+1]
			if !quoted || strings.IndexByte("$`\"\\\n", n) >= 0 {
				if n != '\n' {
					b.WriteByte(n)
				}
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ansiC decodes the escapes of a $'...' string.
func ansiC(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte(7)
		case 'e', 'E':
			b.WriteByte(27)
		case 'x':
			j := i + 1
			for j < len(s) && j < i+3 && isHex(s[j]) {
				j++
			}
			if v, err := strconv.ParseUint(s[i+1:j], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i = j - 1
			} else {
				b.WriteString(`\x`)
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 16)
			b.WriteByte(byte(v))
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// A shCmd is a simple command with its wrappers (sudo, env, nohup,
// timeout...) taken off: Name is the program's base name ("" when not
// literal) and Args what follows it.
type shCmd struct {
	Name string
	Path string // the program word as written (after wrappers)
	Args []shWord
}

func (c shCmd) argText() []string {
	out := make([]string, len(c.Args))
	for i, a := range c.Args {
		out[i] = a.text
	}
	return out
}

func (a *shAnalyzer) call(ce *syntax.CallExpr) shCmd {
	ws := make([]shWord, len(ce.Args))
	for i, w := range ce.Args {
		ws[i] = a.word(w)
	}
	return unwrapWords(ws)
}

// unwrapWords strips command wrappers from a resolved argv.
func unwrapWords(ws []shWord) shCmd {
	for len(ws) > 0 {
		if !ws[0].known {
			return shCmd{Args: ws[1:]}
		}
		name := path.Base(ws[0].text)
		rest := ws[1:]
		skip := wrapperSkip(name, texts(rest))
		if skip < 0 {
			return shCmd{Name: name, Path: ws[0].text, Args: rest}
		}
		ws = rest[min(skip, len(rest)):]
	}
	return shCmd{}
}

func texts(ws []shWord) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.text
	}
	return out
}

// wrapperSkip returns how many arguments of wrapper name come before the
// command it runs, or -1 when name runs no command of its argv.
func wrapperSkip(name string, args []string) int {
	withArg := ""
	switch name {
	case "sudo", "doas":
		withArg = "ugpCDhrtUR"
	case "env":
		i := 0
		for i < len(args) {
			a := args[i]
			switch {
			case a == "-u" || a == "--unset" || a == "-C" || a == "--chdir":
				i += 2
			case a == "-S" || a == "--split-string":
				return i + 1 // env -S "cmd args": the string is the command
			case strings.HasPrefix(a, "-"):
				i++
			case strings.Contains(a, "="):
				i++
			default:
				return i
			}
		}
		return i
	case "nohup", "time", "builtin", "chronic", "unbuffer", "caffeinate", "torsocks", "proxychains", "proxychains4", "setsid", "exec", "command", "nice", "ionice", "stdbuf", "then", "do", "else":
		withArg = map[string]string{"exec": "a", "nice": "n", "ionice": "cnp", "stdbuf": "ioe"}[name]
		if name == "command" && len(args) > 0 && (args[0] == "-v" || args[0] == "-V") {
			return -1 // a lookup, not a run
		}
	case "timeout":
		i := 0
		for i < len(args) && strings.HasPrefix(args[i], "-") {
			if args[i] == "-s" || args[i] == "-k" || args[i] == "--signal" || args[i] == "--kill-after" {
				i++
			}
			i++
		}
		return i + 1 // the duration
	case "busybox":
		return 0
	default:
		return -1
	}
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "-" {
		if args[i] == "--" {
			return i + 1
		}
		if len(args[i]) == 2 && strings.ContainsRune(withArg, rune(args[i][1])) {
			i++
		}
		i++
	}
	return i
}

// stageCmd returns the simple command of a pipeline stage, if it is one.
func (a *shAnalyzer) stageCmd(s *syntax.Stmt) (shCmd, *syntax.CallExpr, bool) {
	ce, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) == 0 {
		return shCmd{}, nil, false
	}
	return a.call(ce), ce, true
}

// netCommands returns the network clients writing to stdout anywhere in
// node (substitutions included).
func (a *shAnalyzer) netCommands(n syntax.Node) []shCmd {
	var out []shCmd
	syntax.Walk(n, func(n syntax.Node) bool {
		if ce, ok := n.(*syntax.CallExpr); ok && len(ce.Args) > 0 {
			if c := a.call(ce); netSource(c) {
				out = append(out, c)
			}
		}
		return true
	})
	return out
}

// stdinExecutor reports whether a pipeline stage executes what it reads:
// an interpreter reading its program from stdin, source /dev/stdin, or a
// read loop that evals each line.
func (a *shAnalyzer) stdinExecutor(s *syntax.Stmt) (string, bool) {
	if c, _, ok := a.stageCmd(s); ok {
		args := c.argText()
		if isInterpreter(c.Name) {
			if in, _, _ := interpInput(c.Name, args); in {
				return c.Name, true
			}
		}
		if (c.Name == "source" || c.Name == ".") && len(args) > 0 && (args[0] == "/dev/stdin" || args[0] == "-") {
			return c.Name, true
		}
		if c.Name == "xargs" {
			// xargs sh -c / xargs -I{} bash -c '{}': lines become code
			for i, x := range args {
				if isInterpreter(x) {
					if _, code, _ := interpInput(x, args[i+1:]); code >= 0 {
						return "xargs " + x, true
					}
				}
			}
		}
		return "", false
	}
	if w, ok := s.Cmd.(*syntax.WhileClause); ok {
		evals := false
		syntax.Walk(w, func(n syntax.Node) bool {
			if ce, ok := n.(*syntax.CallExpr); ok && len(ce.Args) > 0 {
				c := a.call(ce)
				if c.Name == "eval" || c.Name == "" && len(ce.Args) > 0 && isParamOnly(ce.Args[0]) {
					evals = true
				}
				if isInterpreter(c.Name) {
					if _, code, _ := interpInput(c.Name, c.argText()); code >= 0 {
						evals = true
					}
				}
			}
			return true
		})
		if evals {
			return "read loop", true
		}
	}
	return "", false
}

func isParamOnly(w *syntax.Word) bool {
	if len(w.Parts) != 1 {
		return false
	}
	switch p := w.Parts[0].(type) {
	case *syntax.ParamExp:
		return true
	case *syntax.DblQuoted:
		return len(p.Parts) == 1 && isParamOnly(&syntax.Word{Parts: p.Parts})
	}
	return false
}

func (a *shAnalyzer) pipeline(stages []*syntax.Stmt, facts *shellFacts, depth int) {
	for j := 1; j < len(stages); j++ {
		if c, _, ok := a.stageCmd(stages[j]); ok && c.Name == "crontab" && (len(c.Args) == 0 || c.Args[len(c.Args)-1].text == "-") {
			for _, s := range stages[:j] {
				syntax.Walk(s, func(n syntax.Node) bool {
					if ce, ok := n.(*syntax.CallExpr); ok && len(ce.Args) > 0 {
						if e := a.call(ce); e.Name == "echo" || e.Name == "printf" {
							facts.CronLines = append(facts.CronLines, strings.Join(e.argText(), " "))
						}
					}
					return true
				})
			}
		}
	}
	for j := 0; j < len(stages); j++ {
		interp, ok := a.stdinExecutor(stages[j])
		if !ok {
			continue
		}
		// A shell whose output goes to a network client, or whose input
		// comes from a two-way one (nc, socat): a reverse shell.
		if shells[interpName(interp)] {
			for k, s := range stages {
				if c, _, ok := a.stageCmd(s); ok && (k > j && netSource(c) || k < j && twoWay[c.Name]) {
					facts.netShell = true
				}
			}
		}
		if j == 0 {
			continue
		}
		// A network client earlier in the pipe: fetched code runs.
		var nets []shCmd
		for _, s := range stages[:j] {
			nets = append(nets, a.netCommands(s)...)
		}
		if len(nets) > 0 {
			r := codeRun{How: "pipe", Fetcher: nets[0].Name, Interp: interp}
			for _, n := range nets {
				r.URLs = append(r.URLs, fetchURLs(n)...)
			}
			facts.Runs = append(facts.Runs, r)
			continue
		}
		// A decoder earlier in the pipe: a decoded payload runs.
		if r, ok := a.decodedRun(stages[:j], depth); ok {
			r.Interp = interp
			facts.Runs = append(facts.Runs, r)
		}
	}
}

// decodedRun looks for a decoder in stages (the part of a pipeline before
// an interpreter) and decodes the literal fed to it.
func (a *shAnalyzer) decodedRun(stages []*syntax.Stmt, depth int) (codeRun, bool) {
	first := -1
	var kinds []string
	for i, s := range stages {
		c, _, ok := a.stageCmd(s)
		if !ok {
			continue
		}
		if k := decoderKind(c); k != "" {
			if first < 0 {
				first = i
			}
			kinds = append(kinds, k)
		}
	}
	if first < 0 {
		return codeRun{}, false
	}
	r := codeRun{How: "decoded"}
	payload, ok := a.literalInput(stages, first)
	if !ok {
		return r, true
	}
	for _, k := range kinds {
		if payload, ok = decode(k, payload); !ok {
			return r, true
		}
	}
	r.Decoded = payload
	r.Inner = a.analyze(payload, depth+1)
	return r, true
}

// literalInput returns the literal text that reaches stage i of a pipeline
// on its stdin: a here-string or here-document of the stage itself, or the
// output of an echo/printf/cat <<EOF stage before it.
func (a *shAnalyzer) literalInput(stages []*syntax.Stmt, i int) (string, bool) {
	if s, ok := a.hereInput(stages[i]); ok {
		return s, true
	}
	if c, _, ok := a.stageCmd(stages[i]); ok {
		// base64 -d FILE: input is a file we cannot read
		for _, x := range c.Args[1:] {
			if !strings.HasPrefix(x.text, "-") {
				return "", false
			}
		}
	}
	for k := i - 1; k >= 0; k-- {
		c, _, ok := a.stageCmd(stages[k])
		if !ok {
			return "", false
		}
		switch c.Name {
		case "echo", "printf":
			var parts []string
			args := c.Args
			for len(args) > 0 && strings.HasPrefix(args[0].text, "-") && c.Name == "echo" {
				args = args[1:]
			}
			if c.Name == "printf" && len(args) > 1 {
				args = args[1:] // printf '%s' BLOB
			}
			for _, w := range args {
				if !w.known {
					return "", false
				}
				parts = append(parts, w.text)
			}
			return strings.Join(parts, " "), true
		case "cat":
			return a.hereInput(stages[k])
		}
		if decoderKind(c) == "" && !passThrough[c.Name] {
			return "", false
		}
	}
	return "", false
}

func (a *shAnalyzer) hereInput(s *syntax.Stmt) (string, bool) {
	for _, r := range s.Redirs {
		switch r.Op {
		case syntax.WordHdoc:
			if w := a.word(r.Word); w.known {
				return w.text, true
			}
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc != nil {
				if w := a.word(r.Hdoc); w.known {
					return w.text, true
				}
			}
		}
	}
	return "", false
}

// substRun checks a word that becomes code (eval's argument, sh -c's
// script, python -c's program, a here-string fed to an interpreter) for
// command or process substitutions producing network or decoded bytes.
func (a *shAnalyzer) substRun(w shWord, how, interp string, depth int) (codeRun, bool) {
	for _, cs := range w.substs {
		if nets := a.netCommands(cs); len(nets) > 0 {
			r := codeRun{How: how, Fetcher: nets[0].Name, Interp: interp}
			for _, n := range nets {
				r.URLs = append(r.URLs, fetchURLs(n)...)
			}
			return r, true
		}
		if r, ok := a.substDecoded(cs.Stmts, depth); ok {
			r.Interp = interp
			return r, true
		}
	}
	for _, ps := range w.procs {
		if nets := a.netCommands(ps); len(nets) > 0 {
			r := codeRun{How: "process substitution", Fetcher: nets[0].Name, Interp: interp}
			for _, n := range nets {
				r.URLs = append(r.URLs, fetchURLs(n)...)
			}
			return r, true
		}
		if r, ok := a.substDecoded(ps.Stmts, depth); ok {
			r.Interp = interp
			return r, true
		}
	}
	return codeRun{}, false
}

// substDecoded reads $(echo BLOB | base64 -d) and the like.
func (a *shAnalyzer) substDecoded(stmts []*syntax.Stmt, depth int) (codeRun, bool) {
	if len(stmts) != 1 {
		return codeRun{}, false
	}
	s := stmts[0]
	stages := []*syntax.Stmt{s}
	if bc, ok := s.Cmd.(*syntax.BinaryCmd); ok && (bc.Op == syntax.Pipe || bc.Op == syntax.PipeAll) {
		stages = flattenPipe(bc)
	}
	return a.decodedRun(stages, depth)
}

// stmt looks at one statement: the command it runs and its redirections.
func (a *shAnalyzer) stmt(s *syntax.Stmt, facts *shellFacts, depth int) {
	ce, isCall := s.Cmd.(*syntax.CallExpr)
	var c shCmd
	if isCall && len(ce.Args) > 0 {
		c = a.call(ce)
		facts.Commands = append(facts.Commands, c.Name)
		a.command(c, facts, depth)
	}
	isExec := isCall && len(ce.Args) > 0 && c.Name == "" && len(c.Args) == 0 && a.word(ce.Args[0]).text == "exec"
	for _, r := range s.Redirs {
		w := a.word(r.Word)
		if m := reDevTCPPath.FindStringSubmatch(w.text); m != nil {
			d := devTCP{Target: m[0], Host: m[2], Cmd: c.Name, Shell: isInterpreter(c.Name) && !isLoopback(m[2])}
			if isExec {
				d.Cmd = "exec"
			}
			facts.DevTCP = append(facts.DevTCP, d)
		}
		if (r.Op == syntax.DplIn || r.Op == syntax.RdrIn) && isInterpreter(c.Name) && fdNumber(w.text) {
			if in, _, _ := interpInput(c.Name, c.argText()); in {
				facts.fdShell = true // sh <&196: a shell reading a descriptor opened elsewhere
			}
		}
		switch r.Op {
		case syntax.RdrIn:
			if isInterpreter(c.Name) {
				if in, _, _ := interpInput(c.Name, c.argText()); in {
					if run, ok := a.substRun(w, "process substitution", c.Name, depth); ok {
						facts.Runs = append(facts.Runs, run)
					} else if w.known && w.text != "" {
						facts.FileRuns = append(facts.FileRuns, fileRun{Path: w.text, How: c.Name + " <"})
					}
				}
			}
		case syntax.WordHdoc:
			if isInterpreter(c.Name) || c.Name == "source" || c.Name == "." {
				if in, _, _ := interpInput(c.Name, c.argText()); in || c.Name == "source" || c.Name == "." {
					if run, ok := a.substRun(w, "here-string", c.Name, depth); ok {
						facts.Runs = append(facts.Runs, run)
					}
				}
			}
		case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.RdrClob:
			if netSource(c) && w.known && w.text != "" && !strings.HasPrefix(w.text, "/dev/") && (r.N == nil || r.N.Value == "1") {
				us := fetchURLs(c)
				facts.Downloads = append(facts.Downloads, download{Path: w.text, URL: first(us), Fetcher: c.Name})
			}
		}
	}
}

var reDevTCPPath = regexp.MustCompile(`^/dev/(tcp|udp)/([^/\s]+)/(\d+)`)

func first(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return xs[0]
}

func (a *shAnalyzer) command(c shCmd, facts *shellFacts, depth int) {
	args := c.argText()
	switch {
	case c.Name == "eval":
		var b strings.Builder
		for i, w := range c.Args {
			if run, ok := a.substRun(w, "eval", "eval", depth); ok {
				facts.Runs = append(facts.Runs, run)
				return
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w.text)
		}
		facts.merge(a.analyze(b.String(), depth+1))
	case c.Name == "source" || c.Name == ".":
		if len(c.Args) == 0 {
			return
		}
		if run, ok := a.substRun(c.Args[0], "process substitution", c.Name, depth); ok {
			facts.Runs = append(facts.Runs, run)
		} else if c.Args[0].known && args[0] != "/dev/stdin" && args[0] != "-" {
			facts.FileRuns = append(facts.FileRuns, fileRun{Path: args[0], How: c.Name})
		}
	case isInterpreter(c.Name):
		_, code, script := interpInput(c.Name, args)
		if code >= 0 && code < len(c.Args) {
			w := c.Args[code]
			if run, ok := a.substRun(w, "command substitution", c.Name, depth); ok {
				facts.Runs = append(facts.Runs, run)
			} else if shells[c.Name] {
				facts.merge(a.analyze(w.text, depth+1))
			} else if reInlineDownload.MatchString(w.text) {
				// PowerShell iex(iwr ...), Python exec(urlopen(...)): the
				// program fetches code and runs it itself
				facts.Runs = append(facts.Runs, codeRun{How: "inline code", Interp: interpName(c.Name),
					URLs: reURL.FindAllString(w.text, 4)})
			}
		}
		if script >= 0 && script < len(c.Args) {
			w := c.Args[script]
			if run, ok := a.substRun(w, "process substitution", c.Name, depth); ok {
				facts.Runs = append(facts.Runs, run)
			} else if strings.Contains(w.text, "://") && (c.Name == "deno" || c.Name == "bun") {
				facts.Runs = append(facts.Runs, codeRun{How: "remote module", Fetcher: c.Name, Interp: c.Name, URLs: []string{w.text}})
			} else if w.known && w.text != "" {
				facts.FileRuns = append(facts.FileRuns, fileRun{Path: w.text, How: interpName(c.Name)})
			}
		}
	case c.Name == "curl" || c.Name == "wget":
		var out string
		var urls []string
		if c.Name == "curl" {
			out, urls = curlOutput(args)
		} else {
			out, urls = wgetOutput(args)
		}
		if out != "-" && out != "" && out != "/dev/null" {
			facts.Downloads = append(facts.Downloads, download{Path: out, URL: first(urls), Fetcher: c.Name})
		}
	case c.Name == "rm":
		facts.Removes = append(facts.Removes, c)
	case c.Name == "chmod":
		mode := ""
		for _, a := range args {
			if strings.HasPrefix(a, "-") && !strings.Contains(a, "x") {
				continue
			}
			if mode == "" {
				mode = a
				if !execMode(mode) {
					return
				}
				continue
			}
			facts.Chmods = append(facts.Chmods, a)
		}
	case strings.Contains(c.Path, "/"):
		// a program run by path (./x, /tmp/x, ~/bin/x)
		facts.FileRuns = append(facts.FileRuns, fileRun{Path: c.Path, How: "exec"})
	}
}

// execMode reports a chmod mode that adds execute permission.
func execMode(m string) bool {
	if strings.Contains(m, "+") {
		_, after, _ := strings.Cut(m, "+")
		return strings.ContainsAny(after, "xX")
	}
	if n, err := strconv.ParseUint(m, 8, 32); err == nil {
		return n&0o111 != 0
	}
	return strings.Contains(m, "=") && strings.ContainsAny(m[strings.Index(m, "="):], "xX")
}

// argvCmd turns an exec's argv into a shCmd (wrappers stripped).
func argvCmd(argv []string) shCmd {
	ws := make([]shWord, len(argv))
	for i, a := range argv {
		ws[i] = shWord{text: a, known: true}
	}
	return unwrapWords(ws)
}
