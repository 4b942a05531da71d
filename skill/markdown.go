package skill

import "strings"

// A Block is a fenced code block of a markdown file.
type Block struct {
	Lang  string   // first word of the info string, lowercased ("" if none)
	Info  string   // the whole info string
	Line  int      // 1-based line of the first content line
	Lines []string // content lines, the fence's indentation removed
}

type fence struct {
	open   bool
	char   byte
	n      int
	indent int
}

// openFence reports whether line opens a fenced block (``` or ~~~, three or
// more; any indentation is accepted, since fences in list items are indented).
func openFence(line string) (fence, bool) {
	t := strings.TrimLeft(line, " \t")
	indent := len(line) - len(t)
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return fence{}, false
	}
	c := t[0]
	n := 0
	for n < len(t) && t[n] == c {
		n++
	}
	if n < 3 {
		return fence{}, false
	}
	if c == '`' && strings.Contains(t[n:], "`") {
		return fence{}, false // inline code like ```x```
	}
	return fence{open: true, char: c, n: n, indent: indent}, true
}

func (f fence) closes(line string) bool {
	t := strings.TrimSpace(line)
	if len(t) < f.n {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] != f.char {
			return false
		}
	}
	return true
}

// CodeBlocks returns the fenced code blocks of markdown text, in order.
// firstLine is the line number of text's first line. An unclosed fence runs
// to the end of the text.
func CodeBlocks(text string, firstLine int) []Block {
	var out []Block
	var cur *Block
	var f fence
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSuffix(raw, "\r")
		n := firstLine + i
		if cur == nil {
			nf, ok := openFence(line)
			if !ok {
				continue
			}
			f = nf
			info := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), string(f.char)))
			lang := info
			if j := strings.IndexAny(lang, " \t{,"); j >= 0 {
				lang = lang[:j]
			}
			lang = strings.ToLower(strings.Trim(lang, "{}."))
			cur = &Block{Lang: lang, Info: info, Line: n + 1}
			continue
		}
		if f.closes(line) {
			out = append(out, *cur)
			cur = nil
			continue
		}
		cur.Lines = append(cur.Lines, dedent(line, f.indent))
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}

// dedent removes up to n leading spaces or tabs.
func dedent(s string, n int) string {
	i := 0
	for i < n && i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return s[i:]
}
