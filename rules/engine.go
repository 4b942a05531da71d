package rules

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/toolspec"
	"github.com/sandboxctl/sandboxctl/trace"
)

// MaxEvidence caps the evidence kept per finding; the rest is counted in
// Finding.More.
const MaxEvidence = 20

// Evaluate runs every rule over the input and returns the findings, sorted
// by (severity, rule, location), and the verdict. It is pure and
// deterministic: the same input always gives the same result. Events are
// expected numbered (Seq 1..n, as trace.Merge leaves them); events with Seq 0
// are numbered after the highest Seq.
func Evaluate(in Input) Result {
	events := slices.Clone(in.Events)
	var maxSeq int64
	for _, e := range events {
		maxSeq = max(maxSeq, e.Seq)
	}
	for i := range events {
		if events[i].Seq == 0 {
			maxSeq++
			events[i].Seq = maxSeq
		}
	}
	// Hits already in the timeline (a reprocessed run, or hits a live
	// monitor recorded) are not added twice.
	have := map[string]bool{}
	for _, e := range events {
		if h, ok := e.Data.(*trace.CanaryHit); ok {
			have[hitKey(h)] = true
		}
	}
	for _, e := range ScanCanaries(in.Canaries, events) {
		h := e.Data.(*trace.CanaryHit)
		if have[hitKey(h)] {
			continue
		}
		have[hitKey(h)] = true
		maxSeq++
		e.Seq = maxSeq
		events = append(events, e)
	}
	c := newCtx(in, events)
	for _, r := range evalOrder {
		c.current = r
		r.match(c)
	}
	c.current = nil
	fs := c.result()
	if in.Extra != nil {
		fs = append(fs, in.Extra(in, events, slices.Clone(fs))...)
		SortFindings(fs)
	}
	cov := c.coverage()
	facts := c.traceFacts(cov)
	v, reasons := Decide(fs, facts)
	return Result{Events: events, Findings: fs, Verdict: v, Reasons: reasons, Cause: Cause(v, facts), Exercised: c.exercised, Coverage: cov,
		Flows: Flows(events, in.Canaries, in.Home)}
}

func hitKey(h *trace.CanaryHit) string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%d", h.TokenID, h.Encoding, h.Channel, h.EventSeq)
}

// FailsAt reports whether any finding is at or above the severity failOn:
// the CLI's --fail-on turns this into exit code 1.
func FailsAt(fs []Finding, failOn Severity) bool {
	for _, f := range fs {
		if f.Severity.Rank() >= failOn.Rank() && failOn.Rank() > 0 {
			return true
		}
	}
	return false
}

// ExitCode is the CLI exit code for a result: 1 when a finding is at or
// above failOn, else 0 (2 and 3, usage and failure, are the CLI's own).
func ExitCode(r Result, failOn Severity) int {
	if FailsAt(r.Findings, failOn) {
		return 1
	}
	return 0
}

// SortFindings orders findings by severity (worst first), rule id, skill
// file, skill line, tool call id, first evidence seq, then message.
func SortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(b.Severity.Rank(), a.Severity.Rank()),
			cmp.Compare(a.RuleID, b.RuleID),
			cmp.Compare(a.SkillFile, b.SkillFile),
			cmp.Compare(a.SkillLine, b.SkillLine),
			cmp.Compare(a.ToolCallID, b.ToolCallID),
			cmp.Compare(firstSeq(a), firstSeq(b)),
			cmp.Compare(a.Message, b.Message),
		)
	})
}

func firstSeq(f Finding) int64 {
	if len(f.Evidence) == 0 {
		return 0
	}
	return f.Evidence[0].Seq
}

// ctx is what matchers see: the timeline and indexes over it.
type ctx struct {
	in        Input
	events    []trace.Event
	bySeq     map[int64]*trace.Event
	calls     map[string]*trace.ToolCall
	tree      *trace.ProcessTree
	home      string
	exercised bool

	cmds    []cmdRef
	files   []fileOp
	hits    []*trace.Event
	findMap map[string]*Finding
	order   []string
	byRule  map[string][]*Finding
	windows trace.CallWindows
	// aliases maps a name a file was given during the trace (a hard or
	// symbolic link, a hard link found by its identity at the end) to the
	// path it stands for; madeHere holds the paths the trace created,
	// wrote, linked or renamed into place.
	aliases  map[string]string
	madeHere map[string]bool
	red      *strings.Replacer
	compiled map[*string][]compiledPath
	paths    map[*Finding][]string      // files listed in a finding's message
	shCache  map[string]*shellFacts     // command text read by the shell parser
	deploys  map[*trace.Event]deployHit // projectDeploy's answer for each canary hit event
	current  *ruleDef                   // the rule whose matcher runs
	// words of the skill (namedBySkill): in its text outside URLs and
	// host names, and in its name and description
	skillWords     map[string]int
	skillHead      map[string]bool
	missing        map[string]string   // per tool call, a program never found (missingCommand)
	stubs          map[string][]string // per tool call, the vendor CLI stubs it ran (vendorStubs)
	standInsByCall map[string][]standIn
	codeWrites     []codeWrite         // files of code the trace wrote (standIns) // per tool call, the command lines of missing programs (standIns)
	callText       map[string][]string // per tool call, its arguments and exec argv (writtenText)
	heads          map[string][]string // per path, the heads of the file-system diff
	whole          map[string]bool     // per path, whether a head is the whole file (writtenText)
	httpByCall     map[string][]*trace.HTTPExchange
	firstWrite     map[string]int64 // per path, the first event that wrote it (madeBefore)
	addrs          jailAddrs        // the addresses the jail gave names (httpDest)
}

// found returns the findings of rule id so far. The running rule must
// declare id in its After, or found panics: dependencies are data.
func (c *ctx) found(id string) []*Finding {
	if c.current != nil && c.current.ID != id && !slices.Contains(c.current.After, id) {
		panic(fmt.Sprintf("rules: %s reads the findings of %s without declaring it in After", c.current.ID, id))
	}
	return c.byRule[id]
}

// A cmdRef is one command line: an exec's argv, a shell's -c script, or a
// bash tool call's command.
type cmdRef struct {
	ev   *trace.Event
	argv []string // nil for tool-call commands
	text string
	fail bool // the exec failed, or the process exited non-zero
}

// Operations of fileOp.
const (
	opRead   = "read"
	opList   = "list"
	opWrite  = "write"
	opUnlink = "unlink"
	opRename = "rename"
	opChmod  = "chmod"
	opMkdir  = "mkdir"
)

// A fileOp is one file-system action on a resolved path.
type fileOp struct {
	ev      *trace.Event
	op      string
	path    string // the file acted on: the kernel's name for it, through aliases
	named   string // the name the process used, when it differs from path
	newPath string
	mode    string
	failed  bool
	// proc is the base name of the file the acting process executed (the
	// execve path, never argv[0]), or "" when unknown, when the trace
	// itself made that file or when it is not a system program: only
	// programs the system installed can be "a tool reading its own
	// configuration".
	proc string
}

func newCtx(in Input, events []trace.Event) *ctx {
	c := &ctx{in: in, events: events, bySeq: map[int64]*trace.Event{}, calls: map[string]*trace.ToolCall{},
		home: strings.TrimSuffix(in.Home, "/"), findMap: map[string]*Finding{}, byRule: map[string][]*Finding{},
		compiled: map[*string][]compiledPath{}, shCache: map[string]*shellFacts{}}
	if c.home == "" {
		c.home = "/home/user"
	}
	// A timeline stored before the jail's events were attributed to the
	// process that connected (trace.AttributeNetwork) gets it here; it
	// only fills empty fields.
	trace.AttributeNetwork(events)
	c.tree = trace.BuildTree(events)
	c.windows = trace.NewCallWindows(events)
	c.nameFiles(events)
	for i := range events {
		e := &events[i]
		c.bySeq[e.Seq] = e
		switch d := e.Data.(type) {
		case *trace.ToolCall:
			c.exercised = true
			if d.ID != "" {
				c.calls[d.ID] = d
			}
			if cmd := toolCommand(d); cmd != "" {
				c.cmds = append(c.cmds, cmdRef{ev: e, text: cmd, fail: d.ExitCode != 0 || d.IsError})
			}
			c.toolFileOps(e, d)
		case *trace.Exec:
			if len(d.Argv) == 0 {
				break
			}
			failed := d.Errno != ""
			if p := c.tree.Procs[e.PID]; p != nil && p.Exited && p.ExitCode != 0 {
				failed = true
			}
			c.cmds = append(c.cmds, cmdRef{ev: e, argv: d.Argv, text: strings.Join(d.Argv, " "), fail: failed})
			if s := shellScript(d.Argv); s != "" {
				c.cmds = append(c.cmds, cmdRef{ev: e, argv: d.Argv, text: s, fail: failed})
			}
		case *trace.File:
			c.syscallFileOp(e, d)
		case *trace.FSChange:
			op := opWrite
			if d.Kind == "deleted" {
				op = opUnlink
			}
			c.files = append(c.files, fileOp{ev: e, op: op, path: d.Path})
		case *trace.CanaryHit:
			c.hits = append(c.hits, e)
		}
	}
	return c
}

// procName is the base name of the file pid executed, "" when unknown or
// made by the trace (argv[0] is the caller's to choose: exec -a aws cat).
func (c *ctx) procName(pid int) string {
	p := c.tree.Procs[pid]
	if p == nil || p.Path == "" {
		return ""
	}
	if !systemProgram(p.Path) && !c.madeHere[p.Path] {
		// a program the skill bundles (bin/ssh, bin/aws) or keeps in the
		// home: the skill's code, whatever its name
		return ""
	}
	if c.madeHere[p.Path] {
		// A program the trace made claims no owner's exemption, but the
		// console scripts of a virtual environment it made (venv/bin/pip)
		// are run by that environment's Python: judged as python3 is.
		bin := path.Dir(p.Path)
		if path.Base(bin) == "bin" && c.madeHere[path.Join(path.Dir(bin), "pyvenv.cfg")] {
			return "python3"
		}
		return ""
	}
	return path.Base(p.Path)
}

// nameFiles fills c.aliases and c.madeHere from the whole timeline, before
// file operations are derived: a link may be made in one call and read
// through in another, and hard links are only known for sure at the end.
func (c *ctx) nameFiles(events []trace.Event) {
	c.aliases, c.madeHere = map[string]string{}, map[string]bool{}
	canon := func(p string) string {
		for range 8 { // links of links, without looping
			a, ok := c.aliases[p]
			if !ok || a == p {
				break
			}
			p = a
		}
		return p
	}
	for i := range events {
		e := &events[i]
		switch d := e.Data.(type) {
		case *trace.File:
			if d.Errno != "" {
				continue
			}
			switch e.Type {
			case trace.TypeLink:
				c.madeHere[d.NewPath] = true
				if d.Path != "" && d.NewPath != "" && d.Path != d.NewPath {
					c.aliases[d.NewPath] = canon(d.Path)
				}
			case trace.TypeRename:
				c.madeHere[d.NewPath] = true
			case trace.TypeWrite:
				c.madeHere[d.Path] = true
			case trace.TypeOpen:
				if d.Write {
					c.madeHere[d.Path] = true
					if d.Resolved != "" {
						c.madeHere[d.Resolved] = true
					}
				}
			}
		case *trace.Inode:
			if d.Phase == trace.InodeEnd {
				for _, a := range d.Aliases {
					c.aliases[a] = d.Path
				}
			}
		}
	}
	for k := range c.aliases {
		c.aliases[k] = canon(k)
	}
}

func (c *ctx) syscallFileOp(e *trace.Event, d *trace.File) {
	op := ""
	switch e.Type {
	case trace.TypeOpen:
		switch {
		case d.Write || hasAny(d.Flags, "O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"):
			op = opWrite
		case strings.Contains(d.Flags, "O_DIRECTORY"):
			op = opList
		default:
			op = opRead
		}
	case trace.TypeRead:
		op = opRead
	case trace.TypeWrite:
		op = opWrite
	case trace.TypeUnlink:
		op = opUnlink
	case trace.TypeRename:
		op = opRename
	case trace.TypeChmod:
		op = opChmod
	case trace.TypeMkdir:
		op = opMkdir
	default:
		return
	}
	p := d.Path
	if d.Resolved != "" {
		p = d.Resolved // what the kernel opened, whatever it was called
	}
	if a, ok := c.aliases[p]; ok {
		p = a
	}
	named := ""
	if p != d.Path {
		named = d.Path
	}
	c.files = append(c.files, fileOp{ev: e, op: op, path: p, named: named, newPath: d.NewPath, mode: d.Mode,
		failed: d.Errno != "", proc: c.procName(e.PID)})
}

// toolArgs decodes the arguments every file tool shares.
type toolArgs struct {
	Command string `json:"command"`
	Path    string `json:"path"`
	Pattern string `json:"pattern"`
	URL     string `json:"url"`
	Content string `json:"content"`
}

func decodeArgs(d *trace.ToolCall) toolArgs {
	var a toolArgs
	_ = json.Unmarshal(d.Arguments, &a)
	return a
}

// toolCommand returns the shell command of a bash tool call.
func toolCommand(d *trace.ToolCall) string {
	if d.Tool != toolspec.Bash {
		return ""
	}
	return decodeArgs(d).Command
}

func (c *ctx) toolFileOps(e *trace.Event, d *trace.ToolCall) {
	a := decodeArgs(d)
	if a.Path == "" {
		return
	}
	p := c.resolve(a.Path)
	failed := d.IsError || d.ExitCode != 0
	switch d.Tool {
	case toolspec.ReadFile:
		c.files = append(c.files, fileOp{ev: e, op: opRead, path: p, failed: failed, proc: toolspec.ReadFile})
	case toolspec.WriteFile, toolspec.EditFile:
		c.files = append(c.files, fileOp{ev: e, op: opWrite, path: p, failed: failed, proc: d.Tool})
	case toolspec.ListDirectory, toolspec.SearchFiles:
		c.files = append(c.files, fileOp{ev: e, op: opList, path: p, failed: failed, proc: d.Tool})
	}
}

// resolve makes a tool-call path absolute: "~" is the home, a relative path
// is taken from the home (the tools' working directory).
func (c *ctx) resolve(p string) string {
	switch {
	case p == "~":
		return c.home
	case strings.HasPrefix(p, "~/"):
		return c.home + p[1:]
	case strings.HasPrefix(p, "$HOME/"):
		return c.home + p[5:]
	case !strings.HasPrefix(p, "/"):
		return path.Join(c.home, p)
	}
	return path.Clean(p)
}

// shellScript returns the script of "sh -c SCRIPT" style argv.
func shellScript(argv []string) string {
	if len(argv) < 3 || !isShell(argv[0]) {
		return ""
	}
	for i := 1; i < len(argv)-1; i++ {
		a := argv[i]
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
			return argv[i+1]
		}
	}
	return ""
}

func isShell(p string) bool {
	switch path.Base(p) {
	case "sh", "bash", "dash", "zsh", "ksh", "ash", "busybox", "fish":
		return true
	}
	return false
}

func hasAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// hit records evidence for a finding of rule r. Findings with the same rule
// and key merge their evidence. The first message wins.
// commandMatch is the matcher of a rule that fires on every command (tool
// call text or exec argv) matching re: the finding says prefix and the
// command, grouped under key, or per tool call when key is "".
func commandMatch(re *regexp.Regexp, key, prefix string) func(*ctx, *Rule) {
	return func(c *ctx, r *Rule) {
		for _, cm := range c.cmds {
			if re.MatchString(cm.text) {
				k := key
				if k == "" {
					k = cm.ev.ToolCallID
				}
				c.hit(r, k, prefix+short(cm.text), cm.ev)
			}
		}
	}
}

func (c *ctx) hit(r *Rule, key string, msg string, evs ...*trace.Event) *Finding {
	k := r.ID + "\x00" + key
	f := c.findMap[k]
	if f == nil {
		f = &Finding{RuleID: r.ID, Title: r.Title, Severity: r.Severity, Confidence: r.Confidence,
			Technique: r.Technique, Harm: r.Harm, Message: c.redact(msg)}
		c.findMap[k] = f
		c.order = append(c.order, k)
		c.byRule[r.ID] = append(c.byRule[r.ID], f)
	}
	for _, e := range evs {
		if e == nil {
			continue
		}
		if slices.ContainsFunc(f.Evidence, func(x Evidence) bool { return x.Seq == e.Seq }) {
			continue
		}
		if len(f.Evidence) >= MaxEvidence {
			f.More++
			continue
		}
		f.Evidence = append(f.Evidence, Evidence{Seq: e.Seq, Source: e.Source, Type: e.Type,
			ToolCallID: e.ToolCallID, Summary: c.redact(Summarize(*e))})
		if f.ToolCallID == "" && e.ToolCallID != "" {
			f.ToolCallID = e.ToolCallID
		}
		if f.ToolCallID == "" {
			if tc, ok := e.Data.(*trace.ToolCall); ok {
				f.ToolCallID = tc.ID
			}
		}
	}
	if f.ToolCallID == "" {
		// Jail events carry no call id: attribute them by time to the
		// call that was running.
		for _, e := range evs {
			if e != nil {
				if id := c.callAt(e.Time); id != "" {
					f.ToolCallID = id
					break
				}
			}
		}
	}
	if f.SkillFile == "" && f.ToolCallID != "" {
		if tc := c.calls[f.ToolCallID]; tc != nil && tc.SkillFile != "" {
			f.SkillFile, f.SkillLine = tc.SkillFile, tc.SkillLine
		}
	}
	return f
}

// callAt returns the id of the tool call running at t, or ""
// (trace.CallWindows).
func (c *ctx) callAt(t time.Time) string { return c.windows.At(t) }

func (c *ctx) result() []Finding {
	out := make([]Finding, 0, len(c.order))
	for _, k := range c.order {
		f := *c.findMap[k]
		slices.SortFunc(f.Evidence, func(a, b Evidence) int { return cmp.Compare(a.Seq, b.Seq) })
		if f.Evidence == nil {
			f.Evidence = []Evidence{}
		}
		out = append(out, f)
	}
	SortFindings(out)
	return out
}

func (c *ctx) redact(s string) string {
	if c.in.Canaries == nil {
		return s
	}
	if c.red == nil {
		var pairs []string
		for _, t := range c.in.Canaries.Tokens() {
			for _, n := range append([]string{t.Value}, t.Needles...) {
				if len(n) >= canary.MinNeedle {
					pairs = append(pairs, n, "[canary:"+t.ID+"]")
				}
			}
		}
		c.red = strings.NewReplacer(pairs...)
	}
	return c.red.Replace(s)
}

// Summarize describes an event in one short line (for evidence and
// renderers). It never includes a payload body.
func Summarize(e trace.Event) string {
	var s string
	switch d := e.Data.(type) {
	case *trace.ToolCall:
		a := decodeArgs(d)
		arg := cmp.Or(a.Command, a.Path, a.URL, a.Pattern)
		s = fmt.Sprintf("tool %s %s", d.Tool, oneLine(arg))
	case *trace.Exec:
		s = "exec " + oneLine(strings.Join(d.Argv, " "))
		if d.Errno != "" {
			s += " (" + d.Errno + ")"
		}
	case *trace.File:
		s = string(e.Type) + " " + d.Path
		if d.NewPath != "" {
			s += " -> " + d.NewPath
		}
		if d.Mode != "" {
			s += " mode " + d.Mode
		}
		if d.Errno != "" {
			s += " (" + d.Errno + ")"
		}
	case *trace.Net:
		s = fmt.Sprintf("%s %s %s", e.Type, d.Family, d.Addr)
		if d.Port != 0 {
			s += fmt.Sprintf(":%d", d.Port)
		}
		if d.Errno != "" {
			s += " (" + d.Errno + ")"
		}
	case *trace.Process:
		if e.Type == trace.TypeClone {
			s = fmt.Sprintf("clone child %d", d.ChildPID)
		} else {
			s = fmt.Sprintf("exit %d%s", d.ExitCode, d.Signal)
		}
	case *trace.DNSQuery:
		s = fmt.Sprintf("dns %s %s", d.QType, d.Name)
	case *trace.HTTPExchange:
		s = fmt.Sprintf("http %s %s", d.Method, d.URL)
		if d.BodySize > 0 {
			s += fmt.Sprintf(" (%d-byte body)", d.BodySize)
		}
	case *trace.Connection:
		s = fmt.Sprintf("%s %s:%d", d.Proto, d.DstIP, d.DstPort)
		if d.Name != "" {
			s += " (" + d.Name + ")"
		}
		s += fmt.Sprintf(" %d bytes", d.Size)
		if d.Protocol != "" {
			s += " " + d.Protocol
		}
		if d.Refused {
			s += " refused (closed port)"
		}
	case *trace.PackageFetch:
		s = fmt.Sprintf("%s %s %s %s from %s (stub)", d.Ecosystem, d.What, d.Name, d.Version, d.Registry)
	case *trace.GitExchange:
		s = fmt.Sprintf("git %s %s %s status %d", d.Service, d.Phase, d.Repo, d.Status)
		if len(d.Refs) > 0 {
			s += fmt.Sprintf(", %d ref(s), %d objects", len(d.Refs), d.Objects)
		}
	case *trace.Mail:
		s = fmt.Sprintf("mail %s:%d from %s to %s (%d bytes)", d.DstIP, d.DstPort, d.From, strings.Join(d.To, ","), d.Size)
	case *trace.TLSHello:
		s = fmt.Sprintf("tls hello sni=%s %s:%d", d.SNI, d.DstIP, d.DstPort)
	case *trace.CanaryHit:
		s = fmt.Sprintf("canary %s (%s, planted %s) in %s as %s: %s", d.TokenID, d.Kind, d.Location, d.Channel, d.Encoding, d.Where)
	case *trace.FSChange:
		s = fmt.Sprintf("fs %s %s", d.Kind, d.Path)
	case *trace.Resource:
		s = fmt.Sprintf("resources peak memory %d, peak pids %d", d.PeakMemory, d.PeakPIDs)
	case *trace.Notice:
		s = "notice " + d.Message
	case *trace.WSMessage:
		s = fmt.Sprintf("websocket %s %s (%d bytes)", d.Opcode, d.URL, d.Size)
	case *trace.Leftover:
		s = fmt.Sprintf("left running: pid %d %s", d.PID, oneLine(strings.Join(d.Argv, " ")))
		if d.Detached {
			s += " (detached)"
		}
	case *trace.Budget:
		s = "budget " + d.Name + ": " + d.Message
	default:
		s = string(e.Type)
	}
	if e.Count > 1 {
		s += fmt.Sprintf(" (x%d)", e.Count)
	}
	return capString(s, 200)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
