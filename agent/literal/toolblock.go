package literal

import (
	"strings"

	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/toolspec"
)

// A tool block is a code block written as tool calls, the way agent
// transcripts and many skills show them:
//
//	write_file(".claude/settings.json", '''{"debug": true}''')
//	edit_file(".env", old_string="A=1", new_string="A=2")
//
// The driver makes those calls: the block is the instruction. Only blocks
// made of nothing but calls of known tools (and comments) are read this
// way; arguments are Python-style string literals, positional or by name.

// pseudoTools maps the names skills write to the driver's tools.
var pseudoTools = map[string]string{
	"write_file": toolspec.WriteFile, "create_file": toolspec.WriteFile, "Write": toolspec.WriteFile,
	"edit_file": toolspec.EditFile, "str_replace": toolspec.EditFile, "Edit": toolspec.EditFile,
	"read_file": toolspec.ReadFile, "Read": toolspec.ReadFile,
	"bash": toolspec.Bash, "Bash": toolspec.Bash, "run_command": toolspec.Bash, "execute_command": toolspec.Bash,
	"fetch_url": toolspec.FetchURL, "WebFetch": toolspec.FetchURL,
}

// argNames are the names each tool's arguments go by, in positional order.
var argNames = map[string][][]string{
	toolspec.WriteFile: {{"path", "file_path", "filename", "file"}, {"content", "contents", "text"}},
	toolspec.EditFile:  {{"path", "file_path", "filename", "file"}, {"old", "old_string", "old_str"}, {"new", "new_string", "new_str"}},
	toolspec.ReadFile:  {{"path", "file_path", "filename", "file"}},
	toolspec.Bash:      {{"command", "cmd"}},
	toolspec.FetchURL:  {{"url"}},
}

type pseudoCall struct {
	tool string
	args []string // in argNames order; "" when not given
}

// toolBlock plans the calls of block b if it is a tool block, and reports
// whether it was one.
func (p *planner) toolBlock(file string, b skill.Block) bool {
	if shellLangs[b.Lang] || b.Lang != "" && b.Lang != "python" && b.Lang != "py" && b.Lang != "text" {
		return false
	}
	calls, ok := parseToolCalls(strings.Join(b.Lines, "\n"))
	if !ok || len(calls) == 0 {
		return false
	}
	for _, c := range calls {
		a := c.args
		switch c.tool {
		case toolspec.Bash:
			p.bash(a[0], file, b.Line, agent.ReasonToolBlock)
		case toolspec.FetchURL:
			p.tool(toolspec.FetchURL, "url", a[0], file, b.Line, agent.ReasonToolBlock)
		default:
			dest := p.fileDest(a[0])
			if dest == "" {
				continue
			}
			args := map[string]any{"path": dest}
			switch c.tool {
			case toolspec.WriteFile:
				args["content"] = a[1]
			case toolspec.EditFile:
				args["old"], args["new"] = a[1], a[2]
			}
			p.push(c.tool, args, file, b.Line, agent.ReasonToolBlock, "")
		}
	}
	return true
}

// parseToolCalls reads src as a sequence of calls of pseudoTools. It fails
// on anything else: other code, an unknown name, a missing argument.
func parseToolCalls(src string) ([]pseudoCall, bool) {
	s := &scanner{src: src}
	var calls []pseudoCall
	for {
		s.space()
		if s.eof() {
			return calls, true
		}
		name := s.ident()
		tool, ok := pseudoTools[name]
		if !ok {
			return nil, false
		}
		s.space()
		if !s.eat('(') {
			return nil, false
		}
		names := argNames[tool]
		args := make([]string, len(names))
		set := make([]bool, len(names))
		pos := 0
		for {
			s.space()
			if s.eat(')') {
				break
			}
			slot := -1
			save := s.i
			if key := s.ident(); key != "" {
				s.space()
				if s.eat('=') {
					for i, alts := range names {
						for _, alt := range alts {
							if alt == key {
								slot = i
							}
						}
					}
					if slot < 0 {
						return nil, false
					}
				} else {
					s.i = save
				}
			}
			if slot < 0 {
				if pos >= len(names) {
					return nil, false
				}
				slot, pos = pos, pos+1
			}
			s.space()
			v, ok := s.str()
			if !ok {
				return nil, false
			}
			args[slot], set[slot] = v, true
			s.space()
			if !s.eat(',') {
				s.space()
				if !s.eat(')') {
					return nil, false
				}
				break
			}
		}
		for _, ok := range set {
			if !ok {
				return nil, false
			}
		}
		calls = append(calls, pseudoCall{tool: tool, args: args})
	}
}

// scanner reads Python-style call syntax.
type scanner struct {
	src string
	i   int
}

func (s *scanner) eof() bool { return s.i >= len(s.src) }

// space skips white space and # comments.
func (s *scanner) space() {
	for !s.eof() {
		switch c := s.src[s.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			s.i++
		case c == '#':
			for !s.eof() && s.src[s.i] != '\n' {
				s.i++
			}
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if !s.eof() && s.src[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) ident() string {
	j := s.i
	for j < len(s.src) {
		c := s.src[j]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > s.i && c >= '0' && c <= '9' {
			j++
			continue
		}
		break
	}
	id := s.src[s.i:j]
	s.i = j
	return id
}

// str reads one or more adjacent string literals ('…', "…", ”'…”',
// """…""", with an optional r prefix) and returns their value.
func (s *scanner) str() (string, bool) {
	var out strings.Builder
	n := 0
	for {
		s.space()
		raw := false
		if !s.eof() && (s.src[s.i] == 'r' || s.src[s.i] == 'R') && s.i+1 < len(s.src) && (s.src[s.i+1] == '\'' || s.src[s.i+1] == '"') {
			raw = true
			s.i++
		}
		if s.eof() || s.src[s.i] != '\'' && s.src[s.i] != '"' {
			return out.String(), n > 0
		}
		q := s.src[s.i : s.i+1]
		if strings.HasPrefix(s.src[s.i:], q+q+q) {
			q = q + q + q
		}
		s.i += len(q)
		for {
			if s.eof() || len(q) == 1 && s.src[s.i] == '\n' {
				return "", false
			}
			if strings.HasPrefix(s.src[s.i:], q) {
				s.i += len(q)
				break
			}
			c := s.src[s.i]
			if c == '\\' && !raw && s.i+1 < len(s.src) {
				e := s.src[s.i+1]
				s.i += 2
				switch e {
				case 'n':
					out.WriteByte('\n')
				case 't':
					out.WriteByte('\t')
				case '\\', '\'', '"':
					out.WriteByte(e)
				case '\n': // a line continuation
				default:
					out.WriteByte('\\')
					out.WriteByte(e)
				}
				continue
			}
			out.WriteByte(c)
			s.i++
		}
		n++
	}
}
