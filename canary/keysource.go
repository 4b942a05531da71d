package canary

import (
	"encoding/hex"
	"path"
	"strconv"
	"strings"
)

// KeysFromArgv returns the keys a command line shows: the password, key and
// options of `openssl enc` (or `openssl aes-256-cbc`), and the string
// literals and arguments of a python, node, perl, ruby or php one-liner
// whose code XORs or encrypts. argv comes from the trace (untrusted): it is
// only read.
func KeysFromArgv(argv []string) []Key {
	if len(argv) == 0 {
		return nil
	}
	prog := path.Base(argv[0])
	switch {
	case prog == "openssl":
		return opensslKeys(argv[1:])
	case interpreter(prog):
		return oneLinerKeys(argv[1:])
	}
	return nil
}

// KeysFromCommand returns the keys of every simple command in a shell
// command line (a tool call's command): it is split into words the way a
// shell would for plain quoting, then read as KeysFromArgv reads argv.
// Expansions are not performed: a key in a variable is not seen here (the
// exec of the command, with its argv, shows it).
func KeysFromCommand(cmd string) []Key {
	var out []Key
	for _, argv := range shellCommands(cmd) {
		// Skip leading assignments and wrappers (env, sudo, exec, ...).
		for len(argv) > 0 && (strings.Contains(argv[0], "=") && !strings.HasPrefix(argv[0], "-") ||
			wrapper(argv[0])) {
			argv = argv[1:]
		}
		out = append(out, KeysFromArgv(argv)...)
	}
	return out
}

func wrapper(w string) bool {
	switch w {
	case "env", "sudo", "exec", "nohup", "time", "command", "xargs", "timeout", "nice":
		return true
	}
	return false
}

func interpreter(prog string) bool {
	for _, p := range []string{"python", "node", "nodejs", "perl", "ruby", "php", "deno", "bun"} {
		if prog == p || strings.HasPrefix(prog, p) && strings.Trim(prog[len(p):], "0123456789.") == "" {
			return true
		}
	}
	return false
}

// opensslKeys reads the options of `openssl enc` (args after "openssl").
func opensslKeys(args []string) []Key {
	if len(args) == 0 {
		return nil
	}
	var k Key
	switch sub := args[0]; {
	case sub == "enc":
	case validCipher(sub):
		k.Cipher = strings.ToLower(sub)
	default:
		return nil
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		opt := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		val := ""
		if eq := strings.IndexByte(opt, '='); eq >= 0 {
			opt, val = opt[:eq], opt[eq+1:]
		} else if takesValue(opt) && i+1 < len(args) {
			i++
			val = args[i]
		}
		switch opt {
		case "k":
			k.Password = []byte(val)
		case "pass":
			if p, ok := strings.CutPrefix(val, "pass:"); ok {
				k.Password = []byte(p)
			}
		case "K":
			k.Raw, _ = hex.DecodeString(val)
		case "iv":
			k.IV, _ = hex.DecodeString(val)
		case "md":
			k.Digest = strings.ToLower(strings.ReplaceAll(val, "-", ""))
		case "pbkdf2":
			k.PBKDF2 = true
		case "iter":
			k.Iter, _ = strconv.Atoi(val)
			k.PBKDF2 = true
		case "nosalt":
			k.NoSalt = true
		default:
			if validCipher(opt) {
				k.Cipher = strings.ToLower(opt)
			}
		}
	}
	if len(k.Password) == 0 && len(k.Raw) == 0 {
		return nil
	}
	if c, ok := cipherByName(k.Cipher); ok {
		k.Cipher = c.name
	}
	return []Key{k}
}

func validCipher(s string) bool {
	_, ok := cipherByName(s)
	return ok
}

func takesValue(opt string) bool {
	switch opt {
	case "k", "pass", "K", "iv", "md", "iter", "S", "in", "out", "kfile", "engine", "bufsize", "saltlen":
		return true
	}
	return false
}

// oneLinerKeys reads an interpreter's arguments: the inline code (-c, -e,
// -r, --eval, -p), its string literals, and the arguments after it.
func oneLinerKeys(args []string) []Key {
	code := ""
	var rest []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-c", "-e", "-E", "-r", "--eval", "-p", "--print":
			if i+1 < len(args) {
				code = args[i+1]
				rest = args[i+2:]
			}
		default:
			continue
		}
		break
	}
	if code == "" {
		return nil
	}
	low := strings.ToLower(code)
	xor := strings.Contains(code, "^") || strings.Contains(low, "xor")
	crypt := strings.Contains(low, "aes") || strings.Contains(low, "cipher") || strings.Contains(low, "fernet") ||
		strings.Contains(low, "crypt")
	if !xor && !crypt {
		return nil
	}
	cands := append(literals(code), rest...)
	var out []Key
	for _, c := range cands {
		b := []byte(c)
		if len(b) == 0 || len(b) > maxXORKeyLen {
			continue
		}
		if xor && len(b) >= 2 {
			out = append(out, Key{Cipher: "xor", Raw: b})
			if d, err := hex.DecodeString(c); err == nil && len(d) >= 2 {
				out = append(out, Key{Cipher: "xor", Raw: d})
			}
		}
		if crypt && (len(aesKeys(b)) > 0 || fernetKey(b) != nil) {
			out = append(out, Key{Raw: b})
		}
	}
	return out
}

// literals returns the quoted string literals of code (single, double and
// back quotes, with b/r/f prefixes and simple escapes), up to 64 of them.
func literals(code string) []string {
	var out []string
	for i := 0; i < len(code) && len(out) < 64; i++ {
		q := code[i]
		if q != '\'' && q != '"' && q != '`' {
			continue
		}
		var sb strings.Builder
		j := i + 1
		for ; j < len(code) && code[j] != q; j++ {
			c := code[j]
			if c == '\\' && j+1 < len(code) {
				j++
				switch e := code[j]; e {
				case 'n':
					c = '\n'
				case 't':
					c = '\t'
				case 'r':
					c = '\r'
				case '0':
					c = 0
				case 'x':
					if j+2 < len(code) {
						if v, err := strconv.ParseUint(code[j+1:j+3], 16, 8); err == nil {
							c = byte(v)
							j += 2
							break
						}
					}
					c = e
				default:
					c = e
				}
			}
			sb.WriteByte(c)
		}
		if j >= len(code) {
			break
		}
		out = append(out, sb.String())
		i = j
	}
	return out
}

// shellCommands splits a shell command line into simple commands and their
// words: quotes (single, double) and backslashes are honoured, and ;, &, |,
// newlines and parentheses end a command. Nothing is expanded.
func shellCommands(cmd string) [][]string {
	var cmds [][]string
	var words []string
	var w strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	endCmd := func() {
		endWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
			words = nil
		}
	}
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == '\'':
			inWord = true
			j := strings.IndexByte(cmd[i+1:], '\'')
			if j < 0 {
				j = len(cmd) - i - 1
			}
			w.WriteString(cmd[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			for i++; i < len(cmd) && cmd[i] != '"'; i++ {
				if cmd[i] == '\\' && i+1 < len(cmd) && strings.IndexByte("\"\\$`\n", cmd[i+1]) >= 0 {
					i++
				}
				w.WriteByte(cmd[i])
			}
		case c == '\\' && i+1 < len(cmd):
			inWord = true
			i++
			if cmd[i] != '\n' {
				w.WriteByte(cmd[i])
			}
		case c == ' ' || c == '\t':
			endWord()
		case c == ';' || c == '&' || c == '|' || c == '\n' || c == '(' || c == ')':
			endCmd()
		default:
			inWord = true
			w.WriteByte(c)
		}
	}
	endCmd()
	return cmds
}
