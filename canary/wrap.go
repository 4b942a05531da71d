package canary

import (
	"math/bits"
	"slices"
)

// Short wraps: base64 or hex broken into lines narrower than minWrap
// (`base64 -w 8`, `fold -w 16`, a CRLF every 4 characters). base64RunsShort
// follows lines of minWrap characters and more; these are found apart.
const (
	minShortWrap = 4  // narrowest line width followed
	minShortRun  = 16 // fewest characters a short-wrapped run must hold
)

// shortRuns returns the runs of data made of at least two whole lines of
// base64 alphabet, all of one width w (minShortWrap <= w < minWrap) but the
// last, which may be shorter, separated by line breaks (real or
// JSON-escaped), holding minShortRun characters or more (three lines at
// least when narrower than 11), looked for around the probes given (in
// order). Lines that repeat, or of one kind of character (a list of words),
// are not taken.
func shortRuns(data []byte, probes []int) []run {
	sc := wrapScanner{data: data}
	var runs []run
	var buf [][2]int
	floor := 0 // where the last run ended: lines before it are taken
	for _, p := range probes {
		if p < floor {
			continue
		}
		s, e, w, ok := sc.firstLine(p, floor)
		if !ok {
			continue
		}
		parts, total, e := sc.followLines(buf[:0], s, e, w)
		buf = parts
		// Two lines of a few characters each happen in any list of
		// words: narrow lines must come at least three at a time.
		// Nor does encoded data repeat a line.
		if len(parts) < 2 || total < minShortRun || len(parts) == 2 && w < 11 ||
			string(data[parts[0][0]:parts[0][1]]) == string(data[parts[1][0]:parts[1][1]]) {
			continue
		}
		r, ok := shortRun(data, parts, total)
		if !ok {
			continue
		}
		r.parts = slices.Clone(parts)
		runs = append(runs, r)
		floor = e
	}
	return runs
}

// A wrapScanner reads the lines of base64 alphabet in data for shortRuns.
type wrapScanner struct {
	data []byte
}

// isAlpha reports whether data[i] is of the base64 alphabet.
func (sc wrapScanner) isAlpha(i int) bool { return cls[sc.data[i]]&clsAlpha != 0 }

// escaped reports whether data[i] is the letter of an escaped break
// ("\n" in JSON): not part of a line.
func (sc wrapScanner) escaped(i int) bool {
	data := sc.data
	return i >= 1 && data[i-1] == '\\' && (data[i] == 'n' || data[i] == 'r')
}

// part returns the bounds of the alphabet run around i.
func (sc wrapScanner) part(i int) (int, int) {
	n := len(sc.data)
	s, e := i, i+1
	for s > 0 && sc.isAlpha(s-1) && !sc.escaped(s-1) {
		s--
	}
	for e < n && sc.isAlpha(e) && !sc.escaped(e) {
		e++
	}
	return s, e
}

// prev returns the line before the one starting at s, when only a line
// break (and blanks) separates them.
func (sc wrapScanner) prev(s, floor int) (int, int, bool) {
	data := sc.data
	j, brk := s, false
	for j > floor && s-j <= 8 {
		switch c := data[j-1]; {
		case c == ' ' || c == '\t':
			j--
		case c == '\n' || c == '\r':
			j, brk = j-1, true
		case sc.escaped(j-1) && j-2 >= floor:
			j, brk = j-2, true
		default:
			goto done
		}
	}
done:
	if !brk || j <= floor || !sc.isAlpha(j-1) || sc.escaped(j-1) {
		return 0, 0, false
	}
	ps, pe := sc.part(j - 1)
	return ps, pe, ps >= floor
}

// next returns the line after the one ending at e.
func (sc wrapScanner) next(e int) (int, int, bool) {
	data, n := sc.data, len(sc.data)
	j, brk := e, false
	for j < n && j-e <= 8 {
		switch c := data[j]; {
		case c == ' ' || c == '\t':
			j++
		case c == '\n' || c == '\r':
			j, brk = j+1, true
		case c == '\\' && j+1 < n && sc.escaped(j+1):
			j, brk = j+2, true
		default:
			goto done
		}
	}
done:
	if !brk || j >= n || !sc.isAlpha(j) {
		return 0, 0, false
	}
	_, ne := sc.part(j)
	return j, ne, true
}

// firstLine returns the bounds of the first line, and the width w, of the
// short-wrapped lines probe p may be in, not before floor; ok is false
// when p is not on such a line.
func (sc wrapScanner) firstLine(p, floor int) (s, e, w int, ok bool) {
	data, n := sc.data, len(sc.data)
	if cls[data[p]]&clsAlpha == 0 {
		// A probe on a break: the line before it, or after it.
		switch {
		case p > 0 && cls[data[p-1]]&clsAlpha != 0:
			p--
		case p+1 < n && cls[data[p+1]]&clsAlpha != 0:
			p++
		case p+2 < n && data[p+1] == '\n' && cls[data[p+2]]&clsAlpha != 0:
			p += 2
		default:
			return 0, 0, 0, false
		}
	}
	// Fast path for prose: a word followed by a space is not a
	// line of an encoding.
	e = p + 1
	for e < n && cls[data[e]]&clsAlpha != 0 {
		e++
	}
	if e < n && data[e] == ' ' && !(e+1 < n && (data[e+1] == '\n' || data[e+1] == '\r')) {
		return 0, 0, 0, false
	}
	s, e = sc.part(p)
	if e-s >= minWrap || !breakAt(data, e) && !breakBefore(data, s) || !twoKinds(data[s:e]) {
		return 0, 0, 0, false // the whole line is looked at: not a short wrap
	}
	// The line's width, or the one before it when this is the
	// shorter last line; then back to the first line of that width.
	w = e - s
	if ps, pe, ok := sc.prev(s, floor); ok && pe-ps >= w && pe-ps < minWrap {
		w, s, e = pe-ps, ps, pe
	}
	if w < minShortWrap {
		return 0, 0, 0, false
	}
	for {
		ps, pe, ok := sc.prev(s, floor)
		if !ok || pe-ps != w {
			break
		}
		s, e = ps, pe
	}
	return s, e, w, true
}

// followLines appends to parts the line from s to e and the lines of
// width w after it, up to and including a shorter last line; it returns
// them, the characters they hold and where the last one ends.
func (sc wrapScanner) followLines(parts [][2]int, s, e, w int) ([][2]int, int, int) {
	parts = append(parts, [2]int{s, e})
	total := w
	for {
		ns, ne, ok := sc.next(e)
		if !ok || ne-ns > w {
			break
		}
		parts = append(parts, [2]int{ns, ne})
		total += ne - ns
		e = ne
		if ne-ns < w {
			break // the last, shorter line
		}
	}
	return parts, total, e
}

// shortRun returns the run of total characters made of the lines parts
// of data, or false when they are not encoded data.
func shortRun(data []byte, parts [][2]int, total int) (run, bool) {
	r := run{n: total}
	var kinds uint8
	for _, pt := range parts {
		var flags uint8
		for _, c := range data[pt[0]:pt[1]] {
			flags |= cls[c]
			kinds |= charKind[c]
		}
		r.url = r.url || flags&clsURL != 0
		r.std = r.std || flags&clsStd != 0
		r.nonHex = r.nonHex || flags&clsNonHex != 0
	}
	// Encoded data mixes kinds of characters (base64: cases and
	// digits; hex: digits and letters) of one alphabet; a list of
	// words does not.
	if bits.OnesCount8(kinds) < 2 || r.url && r.std {
		return run{}, false
	}
	return r, true
}

// charKind classes letters and digits for shortRuns: 1 upper case, 2 lower
// case, 4 digit.
var charKind = func() (k [256]uint8) {
	for c := 'A'; c <= 'Z'; c++ {
		k[c], k[c+'a'-'A'] = 1, 2
	}
	for c := '0'; c <= '9'; c++ {
		k[c] = 4
	}
	return k
}()

// twoKinds reports whether line mixes two kinds of character (cases,
// digits): the lines of encoded data do, but for the odd short one, words
// do not. A probe that lands on a line of one kind looks no further; a
// short-wrapped run long enough to be probed twice is met on another line.
func twoKinds(line []byte) bool {
	var k uint8
	for _, c := range line {
		k |= charKind[c]
	}
	return bits.OnesCount8(k) >= 2
}

// breakAt reports whether a line break (real or escaped) starts at data[i];
// breakBefore whether one ends just before data[i].
func breakAt(data []byte, i int) bool {
	return i < len(data) && (data[i] == '\n' || data[i] == '\r' || data[i] == '\\' || data[i] == ' ' && i+1 < len(data) && (data[i+1] == '\n' || data[i+1] == '\r'))
}

func breakBefore(data []byte, i int) bool {
	return i > 0 && (data[i-1] == '\n' || data[i-1] == '\r' || i > 1 && data[i-2] == '\\' && (data[i-1] == 'n' || data[i-1] == 'r'))
}

// allRuns merges base64RunsShort and shortRuns: a one-line run that is a line of
// a short-wrapped run is dropped (the whole is decoded instead). The probes
// of base64RunsShort (one byte in minDecodeRun) are where short runs are looked
// for: a short-wrapped run of minDecodeRun bytes or more is always met, a
// shorter one (a lone password of 16 to 20 characters wrapped at a few
// characters) only when a probe lands in it.
func allRuns(data []byte) []run {
	probes := make([]int, 0, len(data)/256)
	runs := base64RunsShort(data, &probes)
	short := shortRuns(data, probes)
	if len(short) == 0 {
		return runs
	}
	// Both lists are in order and a run does not overlap the next: one
	// sweep drops the lines of short runs and merges the rest in order.
	out := make([]run, 0, len(runs)+len(short))
	j, k := 0, 0 // the short run that may hold r; the next to merge
	for _, r := range runs {
		for j < len(short) && short[j].parts[len(short[j].parts)-1][1] <= r.parts[0][0] {
			j++
		}
		if len(r.parts) == 1 && j < len(short) && short[j].parts[0][0] <= r.parts[0][0] &&
			r.parts[0][1] <= short[j].parts[len(short[j].parts)-1][1] {
			continue
		}
		for k < len(short) && short[k].parts[0][0] < r.parts[0][0] {
			out = append(out, short[k])
			k++
		}
		out = append(out, r)
	}
	return append(out, short[k:]...)
}
