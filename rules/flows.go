package rules

import (
	"fmt"
	"net"
	"path"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Flows (docs/report.md, "Flows"): when the bytes that left are opaque and
// no twin traces ran, or they were inconclusive, a person still wants the
// chain: which process read which planted secret, and which process sent
// what where, linked by the syscall log. A read and a send are linked when
// one process did both, when one is the other's ancestor or descendant,
// when both are children of one shell (a pipeline, a command substitution),
// or when the reader's process tree wrote a file that the sender's tree
// read later. It is a file-level taint: pipes are linked by ancestry only,
// and what a process did with the bytes in memory is not seen.

// A FlowProc is one process of a flow.
type FlowProc struct {
	PID  int      `json:"pid"`
	Argv []string `json:"argv,omitempty"`
}

// A Flow links reads of planted secrets to a process that sent data out.
type Flow struct {
	// Sources are the planted files read (as planted, "~/.aws/credentials").
	Sources []string `json:"sources"`
	Reader  FlowProc `json:"reader"`
	// Via says how the read reached the sender: "same process", "parent",
	// "child", "same shell" (children of one shell: a pipeline, a script), or "file PATH" (written
	// by the reader's tree, read by the sender's).
	Via    string   `json:"via"`
	Sender FlowProc `json:"sender"`
	// Dest is where the sender connected or sent: the name the jail gave
	// the address, else the address and port.
	Dest string `json:"dest"`
	// ToolCallID is the call the send belongs to; Seqs the events: the
	// reads, the file hand-off, the send.
	ToolCallID string  `json:"tool_call_id,omitempty"`
	Seqs       []int64 `json:"seqs"`
}

// MaxFlows caps the flows a report lists.
const MaxFlows = 20

type procInfo struct {
	ppid int
	argv []string
}

type secretRead struct {
	pid    int
	source string
	seq    int64
}

type fileIO struct {
	pid  int
	path string
	seq  int64
}

// Flows links the reads of planted files in events to the processes that
// then sent data out.
func Flows(events []trace.Event, set *canary.Set, home string) []Flow {
	procs := map[int]*procInfo{}
	proc := func(pid int) *procInfo {
		p := procs[pid]
		if p == nil {
			p = &procInfo{}
			procs[pid] = p
		}
		return p
	}
	planted := plantedFiles(set, home)
	names := jailNames(events)
	var reads []secretRead
	var writes, opens []fileIO
	var out []Flow
	seen := map[string]bool{}
	for i := range events {
		e := &events[i]
		switch d := e.Data.(type) {
		case *trace.Process:
			if e.Type == trace.TypeClone && d.ChildPID > 0 {
				proc(d.ChildPID).ppid = e.PID
				if pa := procs[e.PID]; pa != nil && proc(d.ChildPID).argv == nil {
					proc(d.ChildPID).argv = pa.argv
				}
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
			if src, ok := planted[p]; ok && !d.Write {
				reads = append(reads, secretRead{pid: e.PID, source: src, seq: e.Seq})
				continue
			}
			if d.Write || strings.Contains(d.Flags, "O_WRONLY") || strings.Contains(d.Flags, "O_RDWR") || strings.Contains(d.Flags, "O_CREAT") {
				writes = append(writes, fileIO{pid: e.PID, path: p, seq: e.Seq})
			} else {
				opens = append(opens, fileIO{pid: e.PID, path: p, seq: e.Seq})
			}
		case *trace.Net:
			if (e.Type != trace.TypeConnect && e.Type != trace.TypeSendto) || d.Errno != "" && d.Errno != "EINPROGRESS" ||
				(d.Family != "inet" && d.Family != "inet6") || e.PID == 0 {
				continue
			}
			ip := net.ParseIP(d.Addr)
			if ip == nil || ip.IsLoopback() || ip.IsUnspecified() {
				continue
			}
			dest := destOf(d.Addr, d.Port, names)
			if d.Port == 53 {
				continue // the resolver: DNS is linked by the names it carried, not here
			}
			for _, f := range linkReads(e, reads, writes, opens, procs) {
				f.Dest = dest
				key := strings.Join(f.Sources, ",") + "|" + f.Via + "|" + dest
				if seen[key] {
					continue
				}
				seen[key] = true
				f.Sender = FlowProc{PID: e.PID, Argv: capArgv(procArgv(procs, e.PID))}
				f.ToolCallID = e.ToolCallID
				f.Seqs = append(f.Seqs, e.Seq)
				out = append(out, f)
				if len(out) >= MaxFlows {
					return out
				}
			}
		}
	}
	return out
}

// linkReads returns the flows from the reads before send to its process.
func linkReads(send *trace.Event, reads []secretRead, writes, opens []fileIO, procs map[int]*procInfo) []Flow {
	byVia := map[string]*Flow{}
	var order []string
	add := func(r secretRead, via string, extra ...int64) {
		k := via + "|" + fmt.Sprint(r.pid)
		f := byVia[k]
		if f == nil {
			f = &Flow{Reader: FlowProc{PID: r.pid, Argv: capArgv(procArgv(procs, r.pid))}, Via: via}
			byVia[k] = f
			order = append(order, k)
		}
		if !slices.Contains(f.Sources, r.source) {
			f.Sources = append(f.Sources, r.source)
		}
		f.Seqs = append(f.Seqs, r.seq)
		f.Seqs = append(f.Seqs, extra...)
	}
	s := send.PID
	for _, r := range reads {
		if r.seq > send.Seq {
			break
		}
		switch {
		case r.pid == s:
			add(r, "same process")
		case ancestor(procs, r.pid, s):
			add(r, "parent")
		case ancestor(procs, s, r.pid):
			add(r, "child")
		case siblings(procs, r.pid, s):
			add(r, "same shell")
		default:
			// A file the reader's tree wrote after the read and the
			// sender's tree opened before the send.
			for _, w := range writes {
				if w.seq < r.seq || w.seq > send.Seq || !related(procs, r.pid, w.pid) {
					continue
				}
				i := slices.IndexFunc(opens, func(o fileIO) bool {
					return o.path == w.path && o.seq > w.seq && o.seq < send.Seq && related(procs, o.pid, s)
				})
				if i >= 0 {
					add(r, "file "+w.path, w.seq, opens[i].seq)
					break
				}
			}
		}
	}
	var out []Flow
	for _, k := range order {
		f := byVia[k]
		slices.Sort(f.Seqs)
		f.Seqs = slices.Compact(f.Seqs)
		out = append(out, *f)
	}
	return out
}

// ancestor reports whether a is an ancestor of b.
func ancestor(procs map[int]*procInfo, a, b int) bool {
	for i, p := 0, procs[b]; p != nil && i < 64; i++ {
		if p.ppid == a {
			return true
		}
		p = procs[p.ppid]
	}
	return false
}

// siblings reports whether a and b have a common parent or grandparent
// (a pipeline, or a pipeline in a subshell).
func siblings(procs map[int]*procInfo, a, b int) bool {
	pa, pb := procs[a], procs[b]
	if pa == nil || pb == nil || pa.ppid == 0 {
		return false
	}
	if pa.ppid == pb.ppid {
		return true
	}
	if ga, gb := procs[pa.ppid], procs[pb.ppid]; ga != nil && ga.ppid == pb.ppid || gb != nil && gb.ppid == pa.ppid {
		return true
	}
	return false
}

// related reports whether a and b are one process, or one is the other's
// ancestor, or they are siblings.
func related(procs map[int]*procInfo, a, b int) bool {
	return a == b || ancestor(procs, a, b) || ancestor(procs, b, a) || siblings(procs, a, b)
}

func procArgv(procs map[int]*procInfo, pid int) []string {
	if p := procs[pid]; p != nil {
		return p.argv
	}
	return nil
}

func capArgv(a []string) []string {
	if len(a) > 8 {
		a = append(slices.Clone(a[:8]), "…")
	}
	out := make([]string, len(a))
	for i, s := range a {
		out[i] = capString(s, 120)
	}
	return out
}

// plantedFiles maps each planted file's absolute path in the sandbox to
// its location as planted ("~/.aws/credentials").
func plantedFiles(set *canary.Set, home string) map[string]string {
	m := map[string]string{}
	if set == nil || home == "" {
		return m
	}
	for _, t := range set.Tokens() {
		rel, ok := strings.CutPrefix(t.Location, "~/")
		if !ok {
			continue
		}
		m[path.Join(home, rel)] = t.Location
	}
	return m
}
