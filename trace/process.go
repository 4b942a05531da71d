package trace

import (
	"slices"
	"time"
)

// A Proc is one process as the syscall events describe it.
type Proc struct {
	PID  int
	PPID int
	// Argv and Path are those of the last successful exec (empty when the
	// process never exec'd: a fork of its parent).
	Argv []string
	Path string
	// Execs lists the Seq of every exec event, failed ones included.
	Execs      []int64
	ToolCallID string
	Children   []int
	Start      time.Time
	End        time.Time
	ExitCode   int
	Signal     string
	Exited     bool
}

// A ProcessTree is the process tree rebuilt from clone, exec and exit
// events. Pids are unique inside one trace's namespace only as long as they
// are not reused; a reused pid starts a fresh Proc (the newest wins).
type ProcessTree struct {
	Procs map[int]*Proc
	// Roots are the processes whose parent is unknown, in order of
	// appearance.
	Roots []int
}

// BuildTree rebuilds the process tree from a timeline.
func BuildTree(events []Event) *ProcessTree {
	t := &ProcessTree{Procs: make(map[int]*Proc)}
	get := func(e Event, pid int) *Proc {
		p := t.Procs[pid]
		if p == nil {
			p = &Proc{PID: pid, Start: e.Time, ToolCallID: e.ToolCallID}
			t.Procs[pid] = p
		}
		return p
	}
	for _, e := range events {
		if e.Source != SourceSyscall || e.PID == 0 {
			continue
		}
		p := get(e, e.PID)
		if p.PPID == 0 && e.PPID != 0 {
			p.PPID = e.PPID
		}
		switch d := e.Data.(type) {
		case *Process:
			if e.Type == TypeClone && d.ChildPID > 0 {
				if old := t.Procs[d.ChildPID]; old != nil && old.Exited {
					delete(t.Procs, d.ChildPID) // pid reused
				}
				c := get(e, d.ChildPID)
				c.PPID = e.PID
				c.Start = e.Time
				if c.ToolCallID == "" {
					c.ToolCallID = e.ToolCallID
				}
				c.Argv, c.Path = p.Argv, p.Path // a fork runs its parent's image
				if !slices.Contains(p.Children, c.PID) {
					p.Children = append(p.Children, c.PID)
				}
			}
			if e.Type == TypeExit {
				p.Exited, p.End, p.ExitCode, p.Signal = true, e.Time, d.ExitCode, d.Signal
			}
		case *Exec:
			p.Execs = append(p.Execs, e.Seq)
			if d.Errno == "" {
				p.Argv, p.Path = d.Argv, d.Path
			}
		}
	}
	pids := make([]int, 0, len(t.Procs))
	for pid := range t.Procs {
		pids = append(pids, pid)
	}
	slices.SortFunc(pids, func(a, b int) int {
		if c := t.Procs[a].Start.Compare(t.Procs[b].Start); c != 0 {
			return c
		}
		return a - b
	})
	for _, pid := range pids {
		p := t.Procs[pid]
		if parent := t.Procs[p.PPID]; parent == nil || p.PPID == pid {
			t.Roots = append(t.Roots, pid)
		} else if !slices.Contains(parent.Children, pid) {
			parent.Children = append(parent.Children, pid)
		}
	}
	return t
}

// Ancestors returns pid's parent, grandparent, ... up to a root, guarding
// against cycles.
func (t *ProcessTree) Ancestors(pid int) []int {
	var out []int
	seen := map[int]bool{pid: true}
	for p := t.Procs[pid]; p != nil && p.PPID != 0 && !seen[p.PPID]; p = t.Procs[p.PPID] {
		seen[p.PPID] = true
		out = append(out, p.PPID)
	}
	return out
}
