package rules

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

// The source of what left (issue 30, item 5). A finding that says secrets
// left names where they came from, and names the one the evidence links to
// the process that sent, never merely the first read of the trace:
//
//   - a planted token recognised leaving names where it was planted (its
//     file, or env:NAME: SBX-EXFIL-001);
//   - otherwise the reads linked to the sending process by the syscall log
//     (flows.go: the same process, an ancestor or descendant, one shell's
//     children, a file one wrote and the other read) or by the tool call
//     (one script, whose variables carry data from process to process),
//     whether a rule
//     flagged them (a credential file, a wallet, a tool printing a
//     credential, the environment dumped) or they opened a planted file;
//     a read by the agent's own file tool is linked to everything after it,
//     since the agent writes the commands that follow;
//   - otherwise, when the sender is known, the environment: every process of
//     the skill holds the planted variables and reads them with no syscall
//     to see. The earlier read is still named, as another process's.
//
// Files that cannot hold the user's secrets are no source: public keys and
// certificates (by name: isPublicKey), and files the trace itself wrote
// before reading them (a key the skill installed from its own folder),
// unless a secret was planted there (family_file.go, SBX-CRED-001).

// A sourceRead is one read that can be the source of data sent later.
type sourceRead struct {
	read  secretRead
	label string
	ev    *trace.Event
	agent bool // the agent's file tool: linked to every later send
}

// sendLinks links reads to the processes that later sent data.
type sendLinks struct {
	reads         []sourceRead
	procs         map[int]*procInfo
	writes, opens []fileIO
}

// newSendLinks indexes the timeline's processes and file opens, and the
// reads of base (the findings of flagged reads) and of planted files.
func (c *ctx) newSendLinks(base []*Finding) *sendLinks {
	l := &sendLinks{procs: map[int]*procInfo{}}
	proc := func(pid int) *procInfo {
		p := l.procs[pid]
		if p == nil {
			p = &procInfo{}
			l.procs[pid] = p
		}
		return p
	}
	planted := plantedFiles(c.in.Canaries, c.home)
	for i := range c.events {
		e := &c.events[i]
		switch d := e.Data.(type) {
		case *trace.Process:
			if e.Type == trace.TypeClone && d.ChildPID > 0 {
				proc(d.ChildPID).ppid = e.PID
			}
		case *trace.Exec:
			if d.Errno == "" && e.PID > 0 {
				proc(e.PID).argv = d.Argv
				if e.PPID > 0 && proc(e.PID).ppid == 0 {
					proc(e.PID).ppid = e.PPID
				}
			}
		case *trace.File:
			if e.Type != trace.TypeOpen || d.Errno != "" || e.PID == 0 || strings.Contains(d.Flags, "O_DIRECTORY") {
				continue
			}
			p := d.Path
			if d.Resolved != "" {
				p = d.Resolved
			}
			switch {
			case d.Write || hasAny(d.Flags, "O_WRONLY", "O_RDWR", "O_CREAT"):
				l.writes = append(l.writes, fileIO{pid: e.PID, path: p, seq: e.Seq})
			default:
				l.opens = append(l.opens, fileIO{pid: e.PID, path: p, seq: e.Seq})
				if loc, ok := planted[p]; ok {
					l.reads = append(l.reads, sourceRead{read: secretRead{pid: e.PID, source: loc, seq: e.Seq}, label: loc, ev: e})
				}
			}
		}
	}
	for _, f := range base {
		for _, ev := range f.Evidence {
			e := c.bySeq[ev.Seq]
			if e == nil {
				continue
			}
			label, agent := c.readLabel(f, e)
			if label == "" {
				continue
			}
			l.reads = append(l.reads, sourceRead{read: secretRead{pid: e.PID, source: label, seq: e.Seq}, label: label, ev: e, agent: agent})
		}
	}
	slices.SortStableFunc(l.reads, func(a, b sourceRead) int { return int(a.read.seq - b.read.seq) })
	return l
}

// readLabel says what a flagged read's event read, as a person names it,
// and whether the agent's file tool did it.
func (c *ctx) readLabel(f *Finding, e *trace.Event) (string, bool) {
	switch d := e.Data.(type) {
	case *trace.File:
		p := d.Path
		if d.Resolved != "" {
			p = d.Resolved
		}
		if f.RuleID == "SBX-ENV-001" {
			return "the environment (" + p + ")", false
		}
		return c.homeRel(p), false
	case *trace.ToolCall:
		if a := decodeArgs(d); a.Path != "" && d.Tool != "bash" {
			return c.homeRel(c.resolve(a.Path)) + " (read by the agent's " + d.Tool + " tool)", true
		}
		if f.RuleID == "SBX-ENV-001" {
			return "the environment (dumped by the agent's command)", true
		}
	case *trace.Exec:
		if f.RuleID == "SBX-ENV-001" {
			return "the environment (dumped by " + short(strings.Join(d.Argv, " ")) + ")", false
		}
		return "the output of " + short(strings.Join(d.Argv, " ")), false
	}
	return "", false
}

// homeRel writes a path under the home with ~.
func (c *ctx) homeRel(p string) string {
	if rel, ok := strings.CutPrefix(p, c.home+"/"); ok {
		return "~/" + rel
	}
	return p
}

// linked returns the reads linked to a send by process e.PID, each once,
// with how it is linked ("same process", "parent", "child", "same shell",
// "file PATH", "same call", "the agent").
func (l *sendLinks) linked(send *trace.Event) (reads []sourceRead, via []string) {
	var plain []secretRead
	byLabel := map[string]sourceRead{}
	for _, r := range l.reads {
		if r.read.seq >= send.Seq {
			break
		}
		if r.agent {
			if _, dup := byLabel[r.label]; !dup {
				byLabel[r.label] = r
				reads, via = append(reads, r), append(via, "the agent")
			}
			continue
		}
		if r.read.pid == 0 || send.PID == 0 {
			continue
		}
		plain = append(plain, r.read)
		if _, ok := byLabel[r.label]; !ok {
			byLabel[r.label] = r
		}
	}
	if send.PID == 0 {
		return reads, via
	}
	have := func(label string) bool {
		return slices.ContainsFunc(reads, func(x sourceRead) bool { return x.label == label })
	}
	for _, f := range linkReads(send, plain, l.writes, l.opens, l.procs) {
		for _, src := range f.Sources {
			if !have(src) {
				reads, via = append(reads, byLabel[src]), append(via, f.Via)
			}
		}
	}
	// One call's processes run one script, which hands data from one
	// process to the next in its variables, out of the syscall log's sight.
	for _, r := range l.reads {
		if r.read.seq < send.Seq && !r.agent && send.ToolCallID != "" && r.ev.ToolCallID == send.ToolCallID && !have(r.label) {
			reads, via = append(reads, r), append(via, "same call")
		}
	}
	return reads, via
}

// plantedEnv lists the planted environment variables, as env:NAME.
func (c *ctx) plantedEnv() []string {
	if c.in.Canaries == nil {
		return nil
	}
	var out []string
	for _, t := range c.in.Canaries.Tokens() {
		if strings.HasPrefix(t.Location, "env:") && !slices.Contains(out, t.Location) {
			out = append(out, t.Location)
		}
	}
	return out
}

// environmentSource says that the environment is the source, naming its
// planted variables.
func (c *ctx) environmentSource() string {
	env := c.plantedEnv()
	switch {
	case len(env) == 0:
		return "the environment every process of the skill holds"
	case len(env) <= 3:
		return "the environment every process of the skill holds (" + strings.Join(env, ", ") + ")"
	}
	return fmt.Sprintf("the environment every process of the skill holds (%d planted variables: %s, …)", len(env), strings.Join(env[:3], ", "))
}

// sender names the process that sent e: "pid 12 (curl)".
func (c *ctx) sender(e *trace.Event) string {
	if e.PID == 0 {
		return ""
	}
	return fmt.Sprintf("pid %d (%s)", e.PID, path.Base(c.progOf(e.PID)))
}

// readThenSent is SBX-EXFIL-004 and -005 once base, the flagged reads, is
// known: every later egress, named with the source the evidence links to
// its sender (above), high confidence when it went to a drop (dropWhy).
func (c *ctx) readThenSent(r *Rule, base []*Finding) {
	first := base[0]
	for _, b := range base {
		if firstSeq(*b) < firstSeq(*first) {
			first = b
		}
	}
	start := firstSeq(*first)
	firstEv := c.bySeq[start]
	links := c.newSendLinks(base)
	netDrops := c.netDrops()
	for _, d := range c.dests() {
		if !d.egress || d.ev.Seq <= start {
			continue
		}
		if d.host != "" && ReputationOf(d.host, "/").Tier == TierVendor {
			continue // a package registry or vendor answering its own client (npm audit)
		}
		host := d.host
		if host == "" {
			host = d.ip
		}
		what := "data sent to " + host
		switch {
		case strings.HasPrefix(d.carried, "DNS names under "):
			what = "data sent in " + d.carried
		case d.carried != "":
			what += " in " + d.carried
		}
		if s := c.sender(d.ev); s != "" {
			what += " by " + s
		}
		conf := ConfMedium
		if why := c.dropWhy(d, netDrops); why != "" {
			conf = ConfHigh
			what += " (" + why + ")"
		}
		reads, via := links.linked(d.ev)
		var msg string
		var evs []*trace.Event
		switch {
		case len(reads) > 0:
			var parts []string
			for i, x := range reads {
				if i == 4 {
					parts = append(parts, fmt.Sprintf("%d more", len(reads)-4))
					break
				}
				parts = append(parts, x.label+" "+viaText(via[i]))
				evs = append(evs, x.ev)
			}
			msg = fmt.Sprintf("read of %s, then %s", strings.Join(parts, "; "), what)
			evs = append(evs, d.ev)
		case d.ev.PID != 0:
			// the send first: its call, not the read's, is where it happened
			msg = fmt.Sprintf("%s, a process no read of a secret reached: the source is %s; the %s before it (%s) was another process's",
				capitalize(what), c.environmentSource(), strings.ToLower(first.Title), first.Message)
			evs = []*trace.Event{d.ev, firstEv}
		default:
			msg = fmt.Sprintf("%s (%s), then %s", first.Title, first.Message, what)
			evs = []*trace.Event{firstEv, d.ev}
		}
		c.hitAs(r, "egress", r.Severity, conf, r.Harm, msg, evs...)
	}
}

func viaText(via string) string {
	switch via {
	case "same process":
		return "by the sender itself"
	case "parent", "child":
		return "by the sender's " + via
	case "same shell":
		return "in the sender's shell"
	case "the agent":
		return "by the agent, which wrote the commands that followed"
	case "same call":
		return "in the sender's tool call"
	}
	if p, ok := strings.CutPrefix(via, "file "); ok {
		return "by another process, handed to the sender in " + p
	}
	return via
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
