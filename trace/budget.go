package trace

import (
	"fmt"
	"unicode/utf8"
)

// MaxPath is the most bytes of one path an event keeps. Real paths are
// far shorter (deep node_modules trees stay under a few hundred bytes); a
// skill can make them as long as it likes by nesting directories and
// working relative to them (past the kernel's PATH_MAX, PathMax), and
// since every event carries its whole path, their cost would grow with
// the square of the depth.
const MaxPath = 1024

// PathMax is the kernel's PATH_MAX: no single system call takes a longer
// path, so only nesting makes one.
const PathMax = 4096

// CutPath returns p when it fits in max bytes. Otherwise it keeps p's
// head and tail (the root a rule recognises, and the file name) around a
// note of how many bytes were left out: "/tmp/d/d…[39990 bytes]…d/d/f".
func CutPath(p string, max int) string {
	if len(p) <= max || max <= 0 {
		return p
	}
	note := fmt.Sprintf("…[%d bytes]…", len(p))
	room := max - len(note)
	if room < 2 {
		return note
	}
	head, tail := room*2/3, room-room*2/3
	h, t := p[:head], p[len(p)-tail:]
	for len(h) > 0 {
		if r, n := utf8.DecodeLastRuneInString(h); r != utf8.RuneError || n != 1 {
			break
		}
		h = h[:len(h)-1]
	}
	for len(t) > 0 && !utf8.RuneStart(t[0]) {
		t = t[1:]
	}
	return h + note + t
}

// CapPaths cuts every path e's payload holds (File paths, an Exec's path
// and working directory) to max bytes with CutPath, and returns the length
// of the longest path it cut (0: none). The payload is changed in place.
func CapPaths(e *Event, max int) int {
	longest := 0
	c := func(s *string) {
		if len(*s) > max {
			longest = maxInt(longest, len(*s))
			*s = CutPath(*s, max)
		}
	}
	switch d := e.Data.(type) {
	case *File:
		c(&d.Path)
		c(&d.NewPath)
	case *Exec:
		c(&d.Path)
		c(&d.Cwd)
	case *Net:
		c(&d.Addr) // a unix socket path
	}
	return longest
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// eventOverhead approximates what an event costs besides its strings and
// byte slices (its fields, the payload struct, the JSON punctuation).
const eventOverhead = 192

// Size estimates the bytes an event holds, in memory and as JSON: its
// strings and byte slices plus a fixed overhead. Budgets of the timeline
// are counted with it.
func Size(e Event) int64 {
	n := int64(eventOverhead + len(e.ToolCallID))
	add := func(ss ...string) {
		for _, s := range ss {
			n += int64(len(s))
		}
	}
	switch d := e.Data.(type) {
	case *File:
		add(d.Path, d.NewPath, d.Flags, d.Mode, d.Errno)
	case *Exec:
		add(d.Path, d.Cwd, d.Errno)
		add(d.Argv...)
		n += int64(8 * len(d.Argv))
	case *Net:
		add(d.Family, d.Addr, d.Proto, d.Errno)
	case *ToolCall:
		add(d.ID, d.Tool, d.Stdout, d.Stderr, d.Error, d.SkillFile, d.PlanReason)
		n += int64(len(d.Arguments))
	case *HTTPExchange:
		add(d.Method, d.URL, d.Host, d.Proto, d.SNI, d.Client, d.DstIP, d.Response, d.Spool)
		for k, vs := range d.Headers {
			add(k)
			add(vs...)
		}
		n += int64(len(d.Body)) * 4 / 3
	case *Connection:
		add(d.Proto, d.Client, d.DstIP, d.Name, d.Banner, d.Spool, d.Protocol)
		n += int64(len(d.FirstBytes)) * 4 / 3
	case *DNSQuery:
		add(d.Transport, d.Client, d.Opcode, d.Name, d.QType, d.Rcode, d.Malformed)
		add(d.Questions...)
		add(d.Answers...)
		n += int64(len(d.Raw)) * 4 / 3
	case *FSChange:
		add(d.Path, d.Kind, d.SHA256, d.Copied)
		n += int64(len(d.Head)) * 4 / 3
	case *WSMessage:
		add(d.URL, d.Client, d.DstIP, d.Opcode, d.Spool, d.Malformed)
		n += int64(len(d.Payload)) * 4 / 3
	case *Notice:
		add(d.Message)
	case *Leftover:
		add(d.Exe, d.State, d.CallID)
		add(d.Argv...)
	}
	return n
}
