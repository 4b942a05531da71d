package safetext

import (
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultMax is the cut, in runes, renderers use for one line of untrusted
// text when they have no width of their own.
const DefaultMax = 4096

// Ellipsis ends a cut line.
const Ellipsis = "…"

// Escaped reports whether r is shown as an escape: C0 and C1 control
// characters and DEL, the Unicode format characters (bidi embeddings,
// overrides, isolates and marks, zero-width spaces and joiners, the byte
// order mark, tag characters, the soft hyphen), line and paragraph
// separators, and the other default-ignorable code points (Hangul fillers,
// ...), which draw nothing.
func Escaped(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r < 0xa0:
		return false
	case r == utf8.RuneError:
		return false // shown as itself; invalid bytes are escaped before
	}
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Other_Default_Ignorable_Code_Point) ||
		!unicode.IsPrint(r) && !unicode.IsSpace(r) && !unicode.IsGraphic(r)
}

// Line returns s as one line: every character Escaped reports, newlines
// and tabs included, becomes a visible escape, invalid UTF-8 bytes become
// \xNN, and the result is cut to max runes, ending in "…" when cut (max <=
// 0: no cut).
func Line(s string, max int) string {
	return escape(s, max, false)
}

// Block is Line for text of several lines: newlines and tabs are kept, and
// each line is cut to max runes (max <= 0: no cut).
func Block(s string, max int) string {
	return escape(s, max, true)
}

// Clean reports whether s would come out of Block unchanged, cuts aside:
// no character of it needs escaping.
func Clean(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 || r != '\n' && r != '\t' && Escaped(r) {
			return false
		}
		i += n
	}
	return true
}

func escape(s string, max int, multi bool) string {
	if Clean(s) && !multi && !strings.ContainsAny(s, "\n\t") && (max <= 0 || utf8.RuneCountInString(s) <= max) {
		return s
	}
	b := make([]byte, 0, len(s))
	col := 0     // runes on the current output line
	mark := -1   // where the line is cut if it turns out too long
	cut := false // the current line was cut: skip to its end
	emit := func(t string) {
		if cut {
			return
		}
		n := utf8.RuneCountInString(t)
		if max > 0 && mark < 0 && col+n > max-1 {
			mark = len(b)
		}
		if max > 0 && col+n > max {
			b = append(b[:mark], Ellipsis...)
			cut = true
			return
		}
		b = append(b, t...)
		col += n
	}
	for i := 0; i < len(s); {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			// Printable ASCII, the common case: no escape, one column.
			if !cut && (max <= 0 || col+1 <= max-1) {
				b = append(b, c)
				col++
				i++
				continue
			}
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == utf8.RuneError && n <= 1:
			emit(`\x` + hex2(s[i-1]))
		case multi && r == '\n':
			b = append(b, '\n')
			col, mark, cut = 0, -1, false
		case multi && r == '\t':
			emit("\t")
		case Escaped(r):
			emit(escapeRune(r))
		default:
			emit(string(r))
		}
		if cut && !multi {
			break
		}
	}
	return string(b)
}

// escapeRune is the visible escape of r.
func escapeRune(r rune) string {
	switch r {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case 0x1b:
		return `\x1b`
	}
	switch {
	case r < 0x80:
		return `\x` + hex2(byte(r))
	case r <= 0xffff:
		return `\u` + pad(strconv.FormatInt(int64(r), 16), 4)
	}
	return `\U` + pad(strconv.FormatInt(int64(r), 16), 8)
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}

func pad(s string, n int) string {
	for len(s) < n {
		s = "0" + s
	}
	return s
}

// JSON rewrites encoded JSON so that no character Escaped reports appears
// raw: each becomes its \uXXXX escape (a surrogate pair above U+FFFF) inside
// its string, which decodes to the same value. encoding/json escapes C0
// controls, U+2028 and U+2029 already, but leaves DEL, C1 controls and bidi
// and other format characters raw, which a terminal or viewer showing the
// file then obeys. Since JSON's own syntax is ASCII, such characters can only
// sit inside strings, so the rewrite is safe on any valid JSON.
func JSON(b []byte) []byte {
	i := 0
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if r >= 0x7f && Escaped(r) && !(r == utf8.RuneError && n <= 1) {
			break
		}
		i += n
	}
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+64)
	out = append(out, b[:i]...)
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		i += n
		if r < 0x7f || !Escaped(r) || r == utf8.RuneError && n <= 1 {
			out = append(out, b[i-n:i]...)
			continue
		}
		if r > 0xffff {
			r1, r2 := utf16Pair(r)
			out = append(out, `\u`+pad(strconv.FormatInt(int64(r1), 16), 4)+`\u`+pad(strconv.FormatInt(int64(r2), 16), 4)...)
			continue
		}
		out = append(out, `\u`+pad(strconv.FormatInt(int64(r), 16), 4)...)
	}
	return out
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// A JSONWriter applies JSON to a stream of encoded JSON (events.jsonl, a
// report written as it is encoded). A character split across two writes is
// held back until it is whole; Flush writes what is held back.
type JSONWriter struct {
	w    io.Writer
	hold []byte
}

// NewJSONWriter returns a JSONWriter writing to w.
func NewJSONWriter(w io.Writer) *JSONWriter { return &JSONWriter{w: w} }

// Write rewrites p (see JSON) and writes it. It reports len(p) on success.
func (j *JSONWriter) Write(p []byte) (int, error) {
	buf := p
	if len(j.hold) > 0 {
		buf = append(j.hold, p...)
		j.hold = nil
	}
	// Hold back an incomplete UTF-8 sequence at the end.
	keep := 0
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				keep = len(buf) - i
			}
			break
		}
	}
	if keep > 0 {
		j.hold = append([]byte(nil), buf[len(buf)-keep:]...)
		buf = buf[:len(buf)-keep]
	}
	if _, err := j.w.Write(JSON(buf)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes the bytes held back, if any.
func (j *JSONWriter) Flush() error {
	if len(j.hold) == 0 {
		return nil
	}
	_, err := j.w.Write(j.hold)
	j.hold = nil
	return err
}
