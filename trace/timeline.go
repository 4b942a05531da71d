package trace

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// DefaultCollapseWindow is the window Merge collapses identical events in.
const DefaultCollapseWindow = time.Second

// Merge orders the events of several streams into one timeline and numbers
// it. Events are ordered by time; events with the same time keep the order of
// their stream in the argument list, then their order inside it. Identical
// events (see Collapser) less than DefaultCollapseWindow apart become one
// event with a Count. Seq is assigned 1..n on the result, syscall events
// without a PPID get it from the clone that created their process, and the
// jail's events the process that connected (AttributeNetwork). The input
// slices are not modified (their events are copied).
func Merge(streams ...[]Event) []Event {
	return MergeWindow(DefaultCollapseWindow, streams...)
}

// MergeWindow is Merge with a chosen collapse window; a window of zero or
// less turns collapsing off.
func MergeWindow(window time.Duration, streams ...[]Event) []Event {
	type ref struct {
		s, i int
	}
	n := 0
	for _, s := range streams {
		n += len(s)
	}
	refs := make([]ref, 0, n)
	for si, s := range streams {
		for i := range s {
			refs = append(refs, ref{si, i})
		}
	}
	slices.SortStableFunc(refs, func(a, b ref) int {
		ta, tb := streams[a.s][a.i].Time, streams[b.s][b.i].Time
		if c := ta.Compare(tb); c != 0 {
			return c
		}
		if a.s != b.s {
			return a.s - b.s
		}
		return a.i - b.i
	})
	c := NewCollapser(window)
	for _, r := range refs {
		c.Add(streams[r.s][r.i])
	}
	out := c.Events()
	for i := range out {
		out[i].Seq = int64(i + 1)
	}
	fillPPID(out)
	AttributeNetwork(out)
	return out
}

// fillPPID sets the PPID of syscall events that lack one from the clone
// events before them.
func fillPPID(events []Event) {
	parent := map[int]int{}
	for i := range events {
		e := &events[i]
		if e.Source != SourceSyscall || e.PID == 0 {
			continue
		}
		if e.PPID == 0 {
			e.PPID = parent[e.PID]
		} else if _, ok := parent[e.PID]; !ok {
			parent[e.PID] = e.PPID
		}
		if d, ok := e.Data.(*Process); ok && e.Type == TypeClone && d.ChildPID > 0 {
			parent[d.ChildPID] = e.PID
		}
	}
}

// A Collapser folds identical events that arrive within a window of each
// other into the first of them, counting them. Two events are identical when
// their source, type, tool-call id, pid and payload are equal; time, Seq and
// PPID are not compared. Memory grows with the number of distinct events
// kept, not with the number added: a million identical opens stay one event.
// Events must be added in time order. A Collapser is not safe for concurrent
// use.
type Collapser struct {
	window time.Duration
	out    []Event
	last   map[string]*collapsed
	buf    bytes.Buffer
}

type collapsed struct {
	idx  int
	last time.Time
}

// NewCollapser returns a Collapser with the given window; a window of zero
// or less keeps every event.
func NewCollapser(window time.Duration) *Collapser {
	return &Collapser{window: window, last: make(map[string]*collapsed)}
}

// Add adds one event.
func (c *Collapser) Add(e Event) {
	if c.window <= 0 || !collapsible(e) {
		c.out = append(c.out, e)
		return
	}
	k, ok := c.key(e)
	if !ok {
		c.out = append(c.out, e)
		return
	}
	n := e.Count
	if n < 1 {
		n = 1
	}
	if prev, found := c.last[string(k)]; found && e.Time.Sub(prev.last) <= c.window {
		p := &c.out[prev.idx]
		if p.Count < 1 {
			p.Count = 1
		}
		p.Count += n
		prev.last = e.Time
		return
	}
	c.out = append(c.out, e)
	c.last[string(k)] = &collapsed{idx: len(c.out) - 1, last: e.Time}
}

// Events returns the events kept so far, in the order they were added.
func (c *Collapser) Events() []Event { return c.out }

// collapsible leaves alone the events that stand for one thing each: tool
// calls, canary hits, notices and resource figures.
func collapsible(e Event) bool {
	switch e.Type {
	case TypeToolCall, TypeCanaryHit, TypeJailNotice, TypeResource:
		return false
	}
	return true
}

// key builds the identity of an event. Common syscall payloads get a cheap
// hand-built key; others are keyed by their JSON.
func (c *Collapser) key(e Event) ([]byte, bool) {
	b := &c.buf
	b.Reset()
	b.WriteString(string(e.Source))
	b.WriteByte(0)
	b.WriteString(string(e.Type))
	b.WriteByte(0)
	b.WriteString(e.ToolCallID)
	b.WriteByte(0)
	b.WriteString(strconv.Itoa(e.PID))
	b.WriteByte(0)
	switch d := e.Data.(type) {
	case nil:
	case *File:
		for _, s := range []string{d.Path, d.NewPath, d.Flags, d.Mode, d.Errno} {
			b.WriteString(s)
			b.WriteByte(0)
		}
		b.WriteString(strconv.FormatInt(d.Bytes, 10))
		if d.Write {
			b.WriteByte('w')
		}
	case *Net:
		for _, s := range []string{d.Family, d.Addr, d.Proto, d.Errno} {
			b.WriteString(s)
			b.WriteByte(0)
		}
		b.WriteString(strconv.Itoa(d.Port))
		b.WriteByte(0)
		b.WriteString(strconv.FormatInt(d.Bytes, 10))
	default:
		j, err := json.Marshal(d)
		if err != nil {
			return nil, false
		}
		b.WriteByte('j')
		b.Write(j)
	}
	// Map lookups written as m[string(k)] do not allocate; Add copies the
	// key only when it stores a new one.
	return b.Bytes(), true
}
