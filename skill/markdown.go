package skill

import "strings"

// A Block is a code block of a markdown file: fenced, or indented by four
// spaces (CommonMark's indented code block).
type Block struct {
	Lang  string   // first word of the info string, lowercased ("" if none)
	Info  string   // the whole info string
	Line  int      // 1-based line of the first content line
	Lines []string // content lines, the fence's (or the code's) indentation removed
	// Indented is a block with no fence: four spaces (or a tab) more than
	// the text it is in.
	Indented bool
}

// Start is the 1-based line where b begins: its opening fence, or its
// first line when it has none.
func (b Block) Start() int {
	if b.Indented {
		return b.Line
	}
	return b.Line - 1
}

// End is the 1-based line where b ends: its closing fence (one past the
// text's end when the fence is not closed), or its last line.
func (b Block) End() int {
	if b.Indented {
		return b.Line + len(b.Lines) - 1
	}
	return b.Line + len(b.Lines)
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

// CodeBlocks returns the code blocks of markdown text, fenced and indented,
// in order. firstLine is the line number of text's first line. An unclosed
// fence runs to the end of the text.
//
// An indented block is read as CommonMark reads one, to the extent a skill
// needs: lines indented four columns more than the list item they are in
// (a tab counts four), after a blank line, a heading or a fence (never a
// paragraph's continuation), running across blank lines while the next
// text is as indented. The content of a list item (two to five columns in)
// is not code.
func CodeBlocks(text string, firstLine int) []Block {
	var out []Block
	var cur *Block
	var f fence
	var ind *Block      // the indented block being read
	var lists []int     // content columns of the list items the text is in
	breakBefore := true // the previous line ends a paragraph (blank, heading, fence, start)
	blanks := 0         // blank lines since the last line of ind
	codeCol := 0        // the column ind's lines start at
	endIndented := func() {
		if ind != nil {
			out = append(out, *ind)
			ind = nil
		}
	}
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSuffix(raw, "\r")
		n := firstLine + i
		if cur != nil {
			if f.closes(line) {
				out = append(out, *cur)
				cur = nil
				breakBefore = true
				continue
			}
			cur.Lines = append(cur.Lines, dedent(line, f.indent))
			continue
		}
		if strings.TrimSpace(line) == "" {
			if ind != nil {
				blanks++
			}
			breakBefore = true
			continue
		}
		col := columns(line)
		if ind != nil {
			if col >= codeCol {
				for ; blanks > 0; blanks-- {
					ind.Lines = append(ind.Lines, "")
				}
				ind.Lines = append(ind.Lines, dedentColumns(line, codeCol))
				continue
			}
			endIndented()
		}
		blanks = 0
		// A line less indented than a list item's content, after a blank
		// line or as an item of its own, leaves that item (a line right
		// after the item's text continues it).
		for len(lists) > 0 && col < lists[len(lists)-1] && (breakBefore || listItem(line) > 0) {
			lists = lists[:len(lists)-1]
		}
		nf, isFence := openFence(line) // at any indentation: fences in list items are indented
		base := 0
		if len(lists) > 0 {
			base = lists[len(lists)-1]
		}
		if !isFence && breakBefore && col >= base+4 {
			codeCol = base + 4
			ind = &Block{Line: n, Lines: []string{dedentColumns(line, codeCol)}, Indented: true}
			continue
		}
		if isFence {
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
		if w := listItem(line); w > 0 {
			lists = append(lists, col+w)
		}
		breakBefore = strings.HasPrefix(strings.TrimSpace(line), "#")
	}
	if cur != nil {
		out = append(out, *cur)
	}
	endIndented()
	return out
}

// columns is the indentation of line in columns, a tab to the next stop of
// four.
func columns(line string) int {
	c, _ := indentation(line, -1)
	return c
}

// dedentColumns removes n columns of indentation from line.
func dedentColumns(line string, n int) string {
	_, i := indentation(line, n)
	return line[i:]
}

// indentation walks line's leading spaces and tabs (a tab to the next stop
// of four) until max columns (max < 0: all of them) and returns the columns
// walked and the byte offset after them.
func indentation(line string, max int) (cols, offset int) {
	for i, r := range line {
		if max >= 0 && cols >= max || r != ' ' && r != '\t' {
			return cols, i
		}
		if r == ' ' {
			cols++
		} else {
			cols += 4 - cols%4
		}
	}
	return cols, len(line)
}

// listItem returns the width of line's list marker and the spaces after
// it (the columns from the marker to the item's content), or 0 when line
// starts no list item: "- ", "* ", "+ ", "1. ", "2) ".
func listItem(line string) int {
	t := strings.TrimLeft(line, " \t")
	i := 0
	switch {
	case t == "":
		return 0
	case t[0] == '-' || t[0] == '*' || t[0] == '+':
		i = 1
	default:
		for i < len(t) && i < 9 && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		if i == 0 || i >= len(t) || t[i] != '.' && t[i] != ')' {
			return 0
		}
		i++
	}
	sp := 0
	for i+sp < len(t) && t[i+sp] == ' ' {
		sp++
	}
	switch {
	case i+sp == len(t):
		return i + 1 // an empty item
	case sp == 0:
		return 0
	case sp > 4:
		return i + 1 // content that is itself indented code
	}
	return i + sp
}

// dedent removes up to n leading spaces or tabs.
func dedent(s string, n int) string {
	i := 0
	for i < n && i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return s[i:]
}
