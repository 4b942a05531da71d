package skill

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hidden content is what a person reading the rendered skill does not see
// but a model reading its bytes does. It is kept in the skill (the sandbox
// gets the real bytes) and listed in Skill.Hidden for the rules.

const excerptCap = 200

func isTag(r rune) bool { return r >= 0xE0000 && r <= 0xE007F }

func isZeroWidth(r rune) bool {
	switch r {
	case 0x200B, 0x200C, 0x200D, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xFEFF, 0x180E, 0x00AD:
		return true
	}
	return false
}

func isBidi(r rune) bool {
	return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 || r == 0x200E || r == 0x200F || r == 0x061C
}

var (
	dataURIRE = regexp.MustCompile(`data:[a-zA-Z0-9.+/-]*(?:;[a-zA-Z0-9=.+-]+)*(?:;base64)?,[A-Za-z0-9+/=%_.~-]+`)
	base64RE  = regexp.MustCompile(`[A-Za-z0-9+/_-]{200,}={0,2}`)
)

// scanHidden lists the hidden content of one text file, frontmatter
// included. HTML comments are looked for only in markdown, outside fenced
// code blocks; the other kinds everywhere.
func scanHidden(file string, content []byte, markdown bool) []Hidden {
	var out []Hidden
	lines := strings.Split(string(content), "\n")
	var inFence fence
	inComment := false
	var comment strings.Builder
	commentLine := 0
	for i, line := range lines {
		n := i + 1
		if n == 1 {
			line = strings.TrimPrefix(line, "\ufeff") // a leading BOM is not hidden content
		}
		out = append(out, scanRunes(file, n, line)...)
		out = append(out, scanBlobs(file, n, line)...)
		if !markdown {
			continue
		}
		if !inComment {
			if inFence.open {
				if inFence.closes(line) {
					inFence = fence{}
				}
				continue
			}
			if f, ok := openFence(line); ok {
				inFence = f
				continue
			}
		}
		rest := line
		for {
			if !inComment {
				j := strings.Index(rest, "<!--")
				if j < 0 {
					break
				}
				inComment, commentLine = true, n
				comment.Reset()
				rest = rest[j+4:]
			}
			j := strings.Index(rest, "-->")
			if j < 0 {
				comment.WriteString(rest)
				comment.WriteByte('\n')
				break
			}
			comment.WriteString(rest[:j])
			out = append(out, Hidden{File: file, Line: commentLine, Kind: HiddenHTMLComment, Excerpt: capText(strings.TrimSpace(comment.String()))})
			inComment = false
			rest = rest[j+3:]
		}
	}
	if inComment {
		out = append(out, Hidden{File: file, Line: commentLine, Kind: HiddenHTMLComment, Excerpt: capText(strings.TrimSpace(comment.String()))})
	}
	return out
}

// scanRunes flags tag characters (decoded), zero-width and bidi characters.
func scanRunes(file string, n int, line string) []Hidden {
	var out []Hidden
	var tags strings.Builder
	zw, bidi := 0, 0
	flushTags := func() {
		if tags.Len() > 0 {
			out = append(out, Hidden{File: file, Line: n, Kind: HiddenTagChars, Excerpt: capText(tags.String())})
			tags.Reset()
		}
	}
	runes := []rune(line)
	for i, r := range runes {
		switch {
		case r == 0x200D && i > 0 && i+1 < len(runes) && isEmojiPart(runes[i-1]) && isEmojiPart(runes[i+1]):
			flushTags() // a zero-width joiner inside an emoji sequence is visible as one glyph
		case isTag(r) && inFlag(runes, i):
			// a subdivision flag (🏴 + tag letters + cancel tag, England): visible
		case isTag(r):
			a := r - 0xE0000
			if a >= 0x20 && a < 0x7F {
				tags.WriteRune(a)
			} else if a != 0 && a != 0x7F { // U+E0001 language tag, U+E007F cancel: not text
				fmt.Fprintf(&tags, "\\x%02x", a)
			}
		default:
			flushTags()
			if isZeroWidth(r) {
				zw++
			} else if isBidi(r) {
				bidi++
			}
		}
	}
	flushTags()
	if zw > 0 {
		out = append(out, Hidden{File: file, Line: n, Kind: HiddenZeroWidth, Excerpt: capText(fmt.Sprintf("%d zero-width character(s): %s", zw, escapeInvisible(line)))})
	}
	if bidi > 0 {
		out = append(out, Hidden{File: file, Line: n, Kind: HiddenBidi, Excerpt: capText(fmt.Sprintf("%d bidi control(s): %s", bidi, escapeInvisible(line)))})
	}
	return out
}

// isEmojiPart: a pictographic symbol, a variation selector or a skin tone.
func isEmojiPart(r rune) bool {
	return unicode.Is(unicode.So, r) || r == 0xFE0F || r >= 0x1F3FB && r <= 0x1F3FF || r >= 0x1F000 && r <= 0x1FAFF || r >= 0x2600 && r <= 0x27BF
}

// inFlag reports whether the tag character at i belongs to a well-formed
// subdivision flag: U+1F3F4, 2 to 7 tag letters or digits (lowercase), and
// the cancel tag U+E007F. Any other tag run is hidden text.
func inFlag(runes []rune, i int) bool {
	j := i
	for j > 0 && isTag(runes[j-1]) {
		j--
	}
	if j == 0 || runes[j-1] != 0x1F3F4 {
		return false
	}
	k := j
	for k < len(runes) && isTag(runes[k]) && runes[k] != 0xE007F {
		a := runes[k] - 0xE0000
		if !(a >= 'a' && a <= 'z' || a >= '0' && a <= '9') {
			return false
		}
		k++
	}
	n := k - j
	return n >= 2 && n <= 7 && k < len(runes) && runes[k] == 0xE007F
}

// scanBlobs flags data: URIs and long base64 runs (not inside a data: URI).
func scanBlobs(file string, n int, line string) []Hidden {
	var out []Hidden
	rest := line
	for _, loc := range dataURIRE.FindAllStringIndex(line, -1) {
		uri := line[loc[0]:loc[1]]
		ex := uri
		if len(ex) > 80 {
			ex = ex[:80] + "…"
		}
		if i := strings.Index(uri, ";base64,"); i >= 0 {
			if dec := decodePrefix(uri[i+8:]); dec != "" {
				ex += " → " + dec
			}
		}
		out = append(out, Hidden{File: file, Line: n, Kind: HiddenDataURI, Excerpt: capText(ex)})
		rest = rest[:loc[0]] + strings.Repeat(" ", loc[1]-loc[0]) + rest[loc[1]:]
	}
	for _, m := range base64RE.FindAllString(rest, -1) {
		ex := m[:60] + fmt.Sprintf("… (%d chars)", len(m))
		if dec := decodePrefix(m); dec != "" {
			ex += " → " + dec
		}
		out = append(out, Hidden{File: file, Line: n, Kind: HiddenBase64Blob, Excerpt: capText(ex)})
	}
	return out
}

// decodePrefix decodes the start of a base64 string (standard or URL
// alphabet) and returns it if it is printable text, else "".
func decodePrefix(s string) string {
	s = strings.TrimRight(s, "=")
	if len(s) > 160 {
		s = s[:160]
	}
	if len(s)%4 == 1 {
		s = s[:len(s)-1]
	}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err != nil || len(b) == 0 || !utf8.Valid(b) {
			continue
		}
		ok := true
		for _, r := range string(b) {
			if !unicode.IsPrint(r) && r != '\n' && r != '\t' && r != '\r' {
				ok = false
				break
			}
		}
		if ok {
			return capText(string(b))
		}
	}
	return ""
}

// escapeInvisible shows invisible characters as \u{XXXX}.
func escapeInvisible(s string) string {
	var b strings.Builder
	for _, r := range s {
		if isZeroWidth(r) || isBidi(r) || isTag(r) {
			fmt.Fprintf(&b, `\u{%04X}`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func capText(s string) string {
	if utf8.RuneCountInString(s) <= excerptCap {
		return s
	}
	r := []rune(s)
	return string(r[:excerptCap]) + "…"
}
