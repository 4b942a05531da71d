package strace

import (
	"iter"
	"path"
	"strconv"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

// strace prints arguments as C-like literals: "quoted strings" with
// backslash escapes, [arrays], {structs}, (calls) and, with -y, fd
// annotations such as 3</etc/hosts> or 4<TCP:[1.2.3.4:5->6.7.8.9:10]>.
// topLevel is the one scanner of that syntax; closeParen and splitArgs
// look at what it yields.

// topLevel yields the index of each byte of s that is outside every quoted
// string and bracket, before that byte opens or closes one. A closing
// bracket closes only an open bracket of its own kind on top, so the "->"
// of a socket annotation and the "=>" of clone3 close nothing. Nesting is
// followed 256 deep; brackets deeper than that are not counted.
func topLevel(s string) iter.Seq[int] {
	return func(yield func(int) bool) {
		var stack []byte
		inQuote := false
		for i := 0; i < len(s); i++ {
			c := s[i]
			if inQuote {
				switch c {
				case '\\':
					i++
				case '"':
					inQuote = false
				}
				continue
			}
			if len(stack) == 0 && !yield(i) {
				return
			}
			switch c {
			case '"':
				inQuote = true
			case '(', '[', '{', '<':
				if len(stack) < 256 {
					stack = append(stack, c)
				}
			case ')', ']', '}', '>':
				if len(stack) > 0 && stack[len(stack)-1] == opener(c) {
					stack = stack[:len(stack)-1]
				}
			}
		}
	}
}

// closeParen returns the index in s of the ')' that closes a call whose '('
// came just before s, or -1.
func closeParen(s string) int {
	for i := range topLevel(s) {
		if s[i] == ')' {
			return i
		}
	}
	return -1
}

// splitArgs splits s at its top-level commas and trims each part.
func splitArgs(s string) []string {
	var out []string
	start := 0
	for i := range topLevel(s) {
		if s[i] == ',' {
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if rest := strings.TrimSpace(s[start:]); rest != "" || len(out) > 0 {
		out = append(out, rest)
	}
	return out
}

// opener returns the bracket that the closing bracket c closes.
func opener(c byte) byte {
	switch c {
	case ')':
		return '('
	case ']':
		return '['
	case '}':
		return '{'
	}
	return '<'
}

// unquote decodes a strace string literal at the start of s ("..." with C
// escapes, optionally followed by "..." when strace cut it at -s). It returns
// the value, whether it was cut, and the rest of s after the literal.
func unquote(s string) (val string, cut bool, rest string, ok bool) {
	if len(s) == 0 || s[0] != '"' {
		return "", false, s, false
	}
	val, end := decode(s[1:], true)
	if end < 0 {
		return val, true, "", false
	}
	rest = s[1+end+1:]
	if strings.HasPrefix(rest, "...") {
		cut = true
		rest = rest[3:]
	}
	return val, cut, rest, true
}

// decode decodes the C escapes of s. When quoted, it stops at the first
// '"' that no backslash escapes and returns the text before it and its
// index; otherwise, or when there is no such quote, it returns all of s
// decoded and -1.
func decode(s string, quoted bool) (string, int) {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c == '"' && quoted {
			return b.String(), i
		}
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		n, adv := unescape(s[i:])
		b.WriteByte(n)
		i += adv
	}
	return b.String(), -1
}

// unescape decodes one backslash escape at the start of s (s[0] == '\\'),
// returning the byte and how many bytes of s it used.
func unescape(s string) (byte, int) {
	if len(s) < 2 {
		return '\\', len(s)
	}
	switch c := s[1]; c {
	case 'n':
		return '\n', 2
	case 't':
		return '\t', 2
	case 'r':
		return '\r', 2
	case 'v':
		return '\v', 2
	case 'f':
		return '\f', 2
	case 'a':
		return '\a', 2
	case 'b':
		return '\b', 2
	case 'x':
		v, n := 0, 0
		for n < 2 && 2+n < len(s) && isHex(s[2+n]) {
			v = v*16 + hexVal(s[2+n])
			n++
		}
		if n == 0 {
			return 'x', 2
		}
		return byte(v), 2 + n
	case '0', '1', '2', '3', '4', '5', '6', '7':
		v, n := 0, 0
		for n < 3 && 1+n < len(s) && s[1+n] >= '0' && s[1+n] <= '7' {
			v = v*8 + int(s[1+n]-'0')
			n++
		}
		return byte(v), 1 + n
	default:
		return c, 2
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	default:
		return int(c-'A') + 10
	}
}

// unescapeBare decodes the escapes of an fd annotation (unquoted).
func unescapeBare(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	v, _ := decode(s, false)
	return v
}

// stringArg decodes an argument that should be a string literal; NULL and
// addresses give "".
func stringArg(a string) string {
	v, cut, _, ok := unquote(a)
	if !ok {
		return ""
	}
	if cut {
		return v + "..."
	}
	return v
}

// fdArg splits an fd argument such as `3</usr>`, `AT_FDCWD</tmp>`,
// `4<TCP:[...]>` or plain `3` into the fd and its decoded annotation.
func fdArg(a string) (fd, ann string) {
	i := strings.IndexByte(a, '<')
	if i < 0 || !strings.HasSuffix(a, ">") {
		return a, ""
	}
	return a[:i], annotation(a[i+1 : len(a)-1])
}

// annotation cleans the inside of an fd annotation: a device's nested
// "<char 1:3>" and a " (deleted)" marker are dropped; escapes are decoded.
func annotation(s string) string {
	if j := strings.IndexByte(s, '<'); j > 0 && strings.HasPrefix(s, "/") {
		s = s[:j]
	}
	s = strings.TrimSuffix(s, " (deleted)")
	return unescapeBare(s)
}

// argvArg decodes a string array such as ["ls", "-l", ...].
func argvArg(a string) []string {
	if len(a) < 2 || a[0] != '[' || a[len(a)-1] != ']' {
		return nil
	}
	parts := splitArgs(a[1 : len(a)-1])
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		switch {
		case p == "...":
			out = append(out, "...")
		case strings.HasPrefix(p, `"`):
			out = append(out, stringArg(p))
		}
	}
	return out
}

// resolve makes p absolute against dir when it is relative and dir is known.
func resolve(dir, p string) string {
	if p == "" {
		return ""
	}
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	if dir == "" || !strings.HasPrefix(dir, "/") {
		return p
	}
	return path.Join(dir, p)
}

// structField returns the value text of key=... inside a struct literal,
// up to the next top-level comma or the struct's end.
func structField(s, key string) (string, bool) {
	for _, f := range structFields(s) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// structFields splits a struct literal {a=1, b={...}} into its fields.
func structFields(s string) []string {
	return splitArgs(strings.TrimPrefix(strings.TrimSuffix(s, "}"), "{"))
}

// sockaddr decodes a struct sockaddr as strace prints it.
func sockaddr(s string) (*trace.Net, bool) {
	if !strings.HasPrefix(s, "{") {
		return nil, false
	}
	fam, ok := structField(s, "sa_family")
	if !ok {
		return nil, false
	}
	n := &trace.Net{Family: strings.ToLower(strings.TrimPrefix(fam, "AF_"))}
	switch fam {
	case "AF_INET":
		n.Port = htons(s, "sin_port")
		if v, ok := structField(s, "sin_addr"); ok {
			if in, ok := strings.CutPrefix(v, "inet_addr("); ok {
				n.Addr = stringArg(in)
			}
		}
	case "AF_INET6":
		n.Port = htons(s, "sin6_port")
		for _, f := range structFields(s) {
			if in, ok := strings.CutPrefix(f, "inet_pton(AF_INET6, "); ok {
				n.Addr = stringArg(in)
			}
		}
	case "AF_UNIX", "AF_LOCAL":
		n.Family = "unix"
		if v, ok := structField(s, "sun_path"); ok {
			if abs, ok := strings.CutPrefix(v, "@"); ok {
				n.Addr = "@" + stringArg(abs)
			} else {
				n.Addr = stringArg(v)
			}
		}
	}
	return n, true
}

func htons(s, key string) int {
	v, ok := structField(s, key)
	if !ok {
		return 0
	}
	v = strings.TrimSuffix(strings.TrimPrefix(v, "htons("), ")")
	p, err := strconv.Atoi(v)
	if err != nil || p < 0 || p > 65535 {
		return 0
	}
	return p
}

// protoOf names the transport of a socket fd annotation (-yy), e.g.
// "TCP:[...]" or "UDPv6:[...]".
func protoOf(ann string) string {
	switch {
	case strings.HasPrefix(ann, "TCP"):
		return "tcp"
	case strings.HasPrefix(ann, "UDP"):
		return "udp"
	}
	return ""
}
