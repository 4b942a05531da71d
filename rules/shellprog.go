package rules

import (
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"io"
	"path"
	"regexp"
	"strings"
)

// What the shell reader knows about programs: which are interpreters and
// how they get their program (stdin, a code option, a script), which are
// network clients and where they write (curl -o, wget -O-), which decode
// (base64 -d, xxd -r, gunzip), and which only pass bytes along (tee, cat).

// Program classes.
var (
	shells       = set("sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "yash", "fish", "rbash")
	scriptInterp = set("python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "osascript",
		"pwsh", "powershell", "tclsh", "Rscript", "bun", "deno", "jshell", "groovy")
	fetchers = set("curl", "wget", "fetch", "http", "https", "xh", "curlie", "lwp-request", "GET", "aria2c",
		"nc", "ncat", "netcat", "nc.openbsd", "nc.traditional", "socat", "tftp")
	twoWay      = set("nc", "ncat", "netcat", "nc.openbsd", "nc.traditional", "socat", "telnet")
	passThrough = set("tee", "cat", "dd", "head", "tail", "sed", "tr", "awk", "rev", "grep", "cut", "sort", "uniq", "iconv", "dos2unix")
)

func set(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

var reVersioned = regexp.MustCompile(`^(python|perl|ruby|php|lua|node)[0-9.]*$`)

// interpName normalises python3.11 to python3 and the like.
func interpName(name string) string {
	if m := reVersioned.FindStringSubmatch(name); m != nil && name != m[1] {
		if strings.HasPrefix(name, "python3") {
			return "python3"
		}
		return m[1]
	}
	return name
}

func isInterpreter(name string) bool {
	name = interpName(name)
	return shells[name] || scriptInterp[name]
}

// codeOptions are, per interpreter, the options whose argument is code.
var codeOptions = map[string][]string{
	"python": {"-c"}, "python2": {"-c"}, "python3": {"-c"}, "perl": {"-e", "-E"}, "ruby": {"-e"},
	"node": {"-e", "--eval", "-p", "--print"}, "nodejs": {"-e", "--eval", "-p", "--print"}, "php": {"-r"},
	"lua": {"-e"}, "osascript": {"-e"}, "pwsh": {"-c", "-Command", "-command"}, "powershell": {"-c", "-Command", "-command"},
	"bun": {"-e", "--eval"}, "deno": {"eval"}, "Rscript": {"-e"},
}

// optionArgs are options of an interpreter that take a separate argument
// that is not code.
var optionArgs = map[string][]string{
	"python": {"-W", "-X", "-m"}, "python3": {"-W", "-X", "-m"}, "perl": {"-I", "-M"}, "ruby": {"-I", "-r"},
	"node": {"-r", "--require", "--import"}, "sh": {"-o", "+o", "-O", "+O"},
}

// interpInput says how an interpreter given args gets its program: from
// stdin, from a code option (code is its argument index), from a script
// (script is its index) or, for "-m module", from neither.
func interpInput(name string, args []string) (stdin bool, code, script int) {
	name = interpName(name)
	code, script = -1, -1
	if shells[name] {
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "--" || a == "-":
				if i+1 < len(args) && a == "--" {
					return false, -1, i + 1
				}
				return true, -1, -1
			case a == "-o" || a == "+o" || a == "-O" || a == "+O":
				i++
			case strings.HasPrefix(a, "--"):
			case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
				if strings.ContainsRune(a, 'c') {
					// sh -c CODE: the first operand is the code
					for j := i + 1; j < len(args); j++ {
						if !strings.HasPrefix(args[j], "-") {
							return false, j, -1
						}
					}
					return false, -1, -1
				}
				if strings.ContainsRune(a, 's') {
					return true, -1, -1
				}
			default:
				if a == "/dev/stdin" {
					return true, -1, -1
				}
				return false, -1, i
			}
		}
		return true, -1, -1
	}
	if !scriptInterp[name] {
		return false, -1, -1
	}
	if name == "deno" || name == "bun" {
		// deno run URL|FILE, bun run FILE: a script operand
		for i, a := range args {
			if a == "eval" || a == "-e" || a == "--eval" {
				return false, min(i+1, len(args)-1), -1
			}
			if !strings.HasPrefix(a, "-") && a != "run" {
				return false, -1, i
			}
		}
		return false, -1, -1
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		for _, o := range codeOptions[name] {
			if a == o {
				return false, min(i+1, len(args)-1), -1
			}
			if len(o) == 2 && strings.HasPrefix(a, o) && len(a) > 2 && o[0] == '-' && a[1] != '-' {
				return false, i, -1 // -c'code'
			}
		}
		if name == "python" || name == "python3" || name == "python2" {
			if a == "-m" || strings.HasPrefix(a, "-m") && len(a) > 2 {
				return false, -1, -1
			}
		}
		switch {
		case a == "-" || a == "/dev/stdin":
			return true, -1, -1
		case a == "--":
			if i+1 < len(args) {
				return false, -1, i + 1
			}
			return true, -1, -1
		case strings.HasPrefix(a, "-"):
			for _, o := range optionArgs[name] {
				if a == o {
					i++
				}
			}
		default:
			return false, -1, i
		}
	}
	return true, -1, -1
}

// reInlineDownload finds inline programs that fetch code and run it.
var reInlineDownload = regexp.MustCompile(`(?i)\biex\b.*\b(?:iwr|irm|invoke-webrequest|invoke-restmethod|downloadstring)\b|\b(?:iwr|irm|invoke-webrequest|invoke-restmethod)\b.*\|\s*(?:iex|invoke-expression)\b|` +
	`\bexec\s*\(.*\burlopen\b|\burlopen\b.*\bexec\s*\(|\b(?:exec|eval)\s*\(.*\brequests\.get\b|\beval\s*\(.*\burlopen\b|` +
	`\beval\s*\(.*\bfetch\(|new Function\(.*\bfetch\(`)

// reNetCode finds network fetching in inline code of a script interpreter.
var reNetCode = regexp.MustCompile(`\burlopen\b|\burllib\b|\brequests\.(?:get|post)\b|\bhttpx\.|\bhttp\.client\b|\bhttps?\.get\(|\bfetch\(|Net::HTTP|LWP::|HTTP::Tiny|IO::Socket|\bInvoke-WebRequest\b|\biwr\b|\birm\b|\bDownloadString\b|\bWebClient\b|\bfile_get_contents\(\s*["']https?:`)

// netSource reports whether cmd writes network bytes to its stdout.
func netSource(c shCmd) bool {
	args := c.argText()
	switch c.Name {
	case "curl":
		out, _ := curlOutput(args)
		return out == "-"
	case "wget":
		out, _ := wgetOutput(args)
		return out == "-"
	case "fetch", "http", "https", "xh", "curlie", "lwp-request", "GET":
		for _, a := range args {
			if a == "-o" || a == "--download" || a == "-d" || a == "--output" {
				return false
			}
		}
		return true
	case "nc", "ncat", "netcat", "nc.openbsd", "nc.traditional", "socat":
		return true
	case "openssl":
		return len(args) > 0 && args[0] == "s_client"
	}
	if isInterpreter(c.Name) {
		if _, code, _ := interpInput(c.Name, args); code >= 0 && code < len(args) {
			return reNetCode.MatchString(args[code])
		}
	}
	return false
}

// curlOutput returns where curl writes ("-" for stdout, else a file) and
// the URLs it fetches.
func curlOutput(args []string) (string, []string) {
	out, remote := "-", false
	var urls []string
	const withArg = "oHdeuAxXbcFmwTrCKEYyzQUPDt"
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch {
		case a == "--output" || a == "-o":
			out = next()
		case strings.HasPrefix(a, "--output="):
			out = strings.TrimPrefix(a, "--output=")
		case a == "--remote-name" || a == "--remote-name-all" || a == "-O":
			remote = true
		case a == "--url":
			urls = append(urls, next())
		case strings.HasPrefix(a, "--url="):
			urls = append(urls, strings.TrimPrefix(a, "--url="))
		case strings.HasPrefix(a, "--"):
			if curlLongWithArg[a] {
				i++
			}
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				ch := a[j]
				if ch == 'O' {
					remote = true
					continue
				}
				if strings.IndexByte(withArg, ch) >= 0 {
					v := a[j+1:]
					if v == "" {
						v = next()
					}
					if ch == 'o' {
						out = v
					}
					break
				}
			}
		default:
			urls = append(urls, a)
		}
	}
	if remote && out == "-" && len(urls) > 0 {
		out = urlBase(urls[0])
	}
	return out, urls
}

var curlLongWithArg = set("--header", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--user",
	"--user-agent", "--referer", "--proxy", "--request", "--cookie", "--cookie-jar", "--form", "--max-time",
	"--write-out", "--upload-file", "--range", "--continue-at", "--config", "--cert", "--key", "--cacert",
	"--retry", "--retry-delay", "--retry-max-time", "--connect-timeout", "--output-dir", "--resolve",
	"--connect-to", "--interface", "--limit-rate", "--max-filesize", "--proto", "--proto-redir", "--json",
	"--oauth2-bearer", "--variable", "--expand-url", "--ciphers", "--tls-max", "--happy-eyeballs-timeout-ms")

// wgetOutput returns where wget writes ("-" for stdout, else a file) and
// its URLs.
func wgetOutput(args []string) (string, []string) {
	out, prefix := "", ""
	var urls []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-O" || a == "--output-document":
			if i+1 < len(args) {
				i++
				out = args[i]
			}
		case strings.HasPrefix(a, "--output-document="):
			out = strings.TrimPrefix(a, "--output-document=")
		case a == "-P" || a == "--directory-prefix":
			if i+1 < len(args) {
				i++
				prefix = args[i]
			}
		case strings.HasPrefix(a, "--directory-prefix="):
			prefix = strings.TrimPrefix(a, "--directory-prefix=")
		case strings.HasPrefix(a, "--"):
			if wgetLongWithArg[a] {
				i++
			}
		case len(a) > 1 && a[0] == '-':
			if j := strings.IndexByte(a, 'O'); j > 0 {
				v := a[j+1:]
				if v == "" && i+1 < len(args) {
					i++
					v = args[i]
				}
				out = v
			} else if strings.ContainsAny(a[len(a)-1:], "toeaTwUPQ") {
				i++
			}
		default:
			urls = append(urls, a)
		}
	}
	if out == "/dev/stdout" {
		out = "-"
	}
	if out == "" && len(urls) > 0 {
		out = urlBase(urls[0])
		if out == "" {
			out = "index.html"
		}
		if prefix != "" {
			out = path.Join(prefix, out)
		}
	}
	return out, urls
}

var wgetLongWithArg = set("--header", "--post-data", "--post-file", "--user", "--password", "--user-agent",
	"--referer", "--tries", "--timeout", "--output-file", "--append-output", "--method", "--body-data", "--body-file")

func urlBase(u string) string {
	u, _, _ = strings.Cut(u, "?")
	u, _, _ = strings.Cut(u, "#")
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	if !strings.Contains(u, "/") {
		return ""
	}
	b := path.Base(u)
	if b == "/" || b == "." {
		return ""
	}
	return b
}

// fetchURLs returns the URLs (or host:port) a network client names.
func fetchURLs(c shCmd) []string {
	args := c.argText()
	var urls []string
	switch c.Name {
	case "curl":
		_, urls = curlOutput(args)
	case "wget":
		_, urls = wgetOutput(args)
	default:
		for _, a := range args {
			if strings.Contains(a, "://") || (!strings.HasPrefix(a, "-") && strings.Contains(a, ".")) {
				urls = append(urls, a)
			}
		}
		if len(urls) == 0 && (c.Name == "nc" || c.Name == "ncat" || c.Name == "netcat") {
			var ops []string
			for _, a := range args {
				if !strings.HasPrefix(a, "-") {
					ops = append(ops, a)
				}
			}
			if len(ops) >= 2 {
				urls = append(urls, ops[0]+":"+ops[1])
			}
		}
	}
	for _, w := range c.Args {
		for _, u := range reURL.FindAllString(w.text, 4) {
			if !contains(urls, u) && !strings.Contains(strings.Join(urls, " "), u) {
				urls = append(urls, u)
			}
		}
	}
	return urls
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// decoderKind returns the transform a decoding command applies to its
// input ("base64", "hex", "gzip"), or "".
func decoderKind(c shCmd) string {
	args := c.argText()
	has := func(opts ...string) bool {
		for _, a := range args {
			for _, o := range opts {
				if a == o || len(o) == 2 && len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.Contains(a[1:], o[1:]) {
					return true
				}
			}
		}
		return false
	}
	switch c.Name {
	case "base64", "gbase64", "base64url":
		if has("-d", "-D", "--decode") {
			return "base64"
		}
	case "base32":
		if has("-d", "--decode") {
			return "base32"
		}
	case "xxd":
		if has("-r", "--revert") {
			return "hex"
		}
	case "openssl":
		if len(args) > 0 && (args[0] == "base64" || args[0] == "enc") && has("-d") {
			return "base64"
		}
	case "gunzip", "zcat", "gzcat":
		return "gzip"
	case "gzip":
		if has("-d", "--decompress") {
			return "gzip"
		}
	case "uudecode":
		return "uu"
	case "rev":
		return "rev"
	}
	return ""
}

// decode applies a decoder's transform; ok is false when the input does
// not decode.
func decode(kind, in string) (string, bool) {
	clean := strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
			return -1
		}
		return r
	}, in)
	switch kind {
	case "base64":
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(clean); err == nil {
				return capString(string(b), maxDecoded), true
			}
		}
	case "hex":
		clean = strings.TrimPrefix(strings.TrimPrefix(clean, "0x"), "\\x")
		clean = strings.ReplaceAll(clean, `\x`, "")
		if b, err := hex.DecodeString(clean); err == nil {
			return capString(string(b), maxDecoded), true
		}
	case "gzip":
		zr, err := gzip.NewReader(strings.NewReader(in))
		if err != nil {
			return "", false
		}
		b, err := io.ReadAll(io.LimitReader(zr, maxDecoded))
		if err != nil && len(b) == 0 {
			return "", false
		}
		return string(b), true
	case "rev":
		r := []rune(in)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return strings.TrimSpace(string(r)), true
	}
	return "", false
}
