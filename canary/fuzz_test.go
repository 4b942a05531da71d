package canary_test

import (
	"bytes"
	"compress/bzip2"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/canary"
)

// FuzzFind checks that Find never panics and that every hit it reports is
// real: the region at the hit's offset, decoded per the hit's encoding,
// holds one of the token's needles.
func FuzzFind(f *testing.F) {
	set := canary.NewSet(tokAWS, tokGH, tokKey, tokPW, tokAmp)
	long := "aws_access_key_id = " + tokAWS.Value + "\n"
	for _, s := range []string{
		"", tokAWS.Value, b64(tokAWS.Value), b64("x" + tokGH.Value), hex.EncodeToString([]byte(tokPW.Value)),
		url.QueryEscape(tokPW.Value), string(must(json.Marshal(tokAmp.Value))), strings.ReplaceAll(tokPW.Value, "/", `\/`), string(gz(f, []byte(long))), b64(string(gz(f, tarOf(f, "c", []byte(long))))),
		wrapLines(b64("...."+long), 20, "\n"), base32.StdEncoding.EncodeToString([]byte(tokGH.Value)),
		"\x1f\x8b\x08\x00\x00\x00", "x\x9c\x01", strings.Repeat("QUFB", 40),
		string(zipOf(f, "a", []byte(long))), string(readFile(f, "testdata/credentials.bz2")),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		for _, h := range set.Find(data) {
			chain := strings.Split(string(h.Encoding), "+")
			if !present(data, chain, h.Token, h.Offset) {
				t.Errorf("hit %v is not in the data %q", h, data)
			}
		}
	})
}

func needlesOf(tok canary.Token) []string {
	out := []string{tok.Value}
	if len(tok.Needles) > 0 {
		out = tok.Needles
	}
	for _, r := range tok.RawNeedles {
		out = append(out, string(r))
	}
	return out
}

// present is a slow, independent oracle: is a needle of tok in data under
// the encodings of chain (outermost first), starting near at (at < 0:
// anywhere)?
func present(data []byte, chain []string, tok canary.Token, at int) bool {
	if len(chain) == 0 || chain[0] == string(canary.Plain) {
		for _, n := range needlesOf(tok) {
			if at >= 0 && bytes.HasPrefix(data[at:], []byte(n)) || at < 0 && bytes.Contains(data, []byte(n)) {
				return true
			}
		}
		return false
	}
	enc, rest := chain[0], chain[1:]
	starts := func(back int) []int {
		if at >= 0 {
			var out []int
			for s := max(0, at-back); s <= at; s++ {
				out = append(out, s)
			}
			return out
		}
		out := make([]int, len(data))
		for i := range out {
			out[i] = i
		}
		return out
	}
	switch canary.Encoding(enc) {
	case canary.Hex:
		for _, s := range starts(0) {
			r := grab(data[s:], "0123456789abcdefABCDEF")
			if len(r)%2 == 1 {
				r = r[:len(r)-1]
			}
			if d, err := hex.DecodeString(r); err == nil && present(d, rest, tok, -1) {
				return true
			}
		}
	case canary.Base64, canary.Base64URL:
		alpha, e := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", base64.RawStdEncoding
		if enc == string(canary.Base64URL) {
			alpha, e = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", base64.RawURLEncoding
		}
		for _, s := range starts(3) {
			// The needle's first bits may sit in a character whose group
			// started before the data: pad with zero characters to align.
			for pad := range 4 {
				r := strings.Repeat("A", pad) + grab(data[s:], alpha)
				if len(r)%4 == 1 {
					r = r[:len(r)-1]
				}
				d, _ := e.DecodeString(r)
				if present(d, rest, tok, -1) {
					return true
				}
			}
		}
	case canary.Base32:
		for _, s := range starts(8) {
			for pad := range 8 {
				r := strings.Repeat("A", pad) + strings.ToUpper(grab(data[s:], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz234567"))
				for len(r) > 0 {
					if d, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(r); err == nil {
						if present(d, rest, tok, -1) {
							return true
						}
						break
					}
					r = r[:len(r)-1]
				}
			}
		}
	case canary.Reversed, canary.ROT13:
		for _, n := range needlesOf(tok) {
			want := reverse(n)
			if enc == string(canary.ROT13) {
				want = rot13(n)
			}
			if at >= 0 && bytes.HasPrefix(data[at:], []byte(want)) || at < 0 && bytes.Contains(data, []byte(want)) {
				return len(rest) == 0
			}
		}
	case canary.JSON:
		for _, s := range starts(0) {
			for end := len(data); end > s; end-- {
				var str string
				if json.Unmarshal([]byte(`"`+string(data[s:end])+`"`), &str) == nil && present([]byte(str), rest, tok, -1) {
					return true
				}
			}
		}
	case canary.URL:
		for _, s := range starts(0) {
			r := []byte(grab(data[s:], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~%+!*'();:@&=$,/?#[]"))
			for i := 0; i+2 < len(r); i++ { // a lone % would stop the unescaper
				if r[i] == '%' && (!isHex(r[i+1]) || !isHex(r[i+2])) {
					r = r[:i]
					break
				}
			}
			for _, un := range []func(string) (string, error){url.QueryUnescape, url.PathUnescape} {
				for cut := len(r); cut >= 0 && cut >= len(r)-2; cut-- {
					if d, err := un(string(r[:cut])); err == nil && present([]byte(d), rest, tok, -1) {
						return true
					}
				}
			}
		}
	case canary.Gzip, canary.Zlib, canary.TarGz, canary.Zip, canary.Bzip2, canary.TarBz2:
		for _, s := range starts(0) {
			var rd io.Reader
			var err error
			switch canary.Encoding(enc) {
			case canary.Zlib:
				rd, err = zlib.NewReader(bytes.NewReader(data[s:]))
			case canary.Bzip2, canary.TarBz2:
				rd = bzip2.NewReader(bytes.NewReader(data[s:]))
			case canary.Zip:
				h := data[s:]
				if len(h) < 30 || string(h[:4]) != "PK\x03\x04" {
					continue
				}
				off := 30 + (int(h[26]) | int(h[27])<<8) + (int(h[28]) | int(h[29])<<8)
				if off > len(h) {
					continue
				}
				rd = flate.NewReader(bytes.NewReader(h[off:]))
			default:
				var z *gzip.Reader
				z, err = gzip.NewReader(bytes.NewReader(data[s:]))
				if err == nil {
					z.Multistream(false)
				}
				rd = z
			}
			if err != nil {
				continue
			}
			d, _ := io.ReadAll(io.LimitReader(rd, 64<<20))
			if present(d, rest, tok, -1) {
				return true
			}
		}
	}
	return false
}

func isHex(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }

// grab returns the longest prefix of b made of alphabet characters, line
// breaks (real or JSON-escaped), spaces and padding, with the breaks,
// spaces and padding removed.
func grab(b []byte, alphabet string) string {
	var sb strings.Builder
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case strings.IndexByte(alphabet, c) >= 0:
			sb.WriteByte(c)
		case c == '\n' || c == '\r' || c == ' ' || c == '\t' || c == '=':
		case c == '\\' && i+1 < len(b) && (b[i+1] == 'n' || b[i+1] == 'r'):
			i++
		default:
			return sb.String()
		}
	}
	return sb.String()
}

func BenchmarkFind(b *testing.B) { benchFind(b, true) }

// BenchmarkFindText is the same without base64 blobs and binary: the cost
// of the single scanning pass and the run finder alone.
func BenchmarkFindText(b *testing.B) { benchFind(b, false) }

func benchFind(b *testing.B, mixed bool) {
	m := canary.NewMinter(canary.SeededReader([]byte("bench")))
	kinds := []canary.Kind{canary.AWSAccessKey, canary.AWSSecretKey, canary.GitHubToken, canary.OpenAIKey,
		canary.AnthropicKey, canary.SlackToken, canary.StripeKey, canary.NPMToken, canary.HuggingFaceToken,
		canary.DatabaseURL, canary.Password, canary.BrowserCookie, canary.SeedPhrase, canary.SSHPrivateKey}
	var toks []canary.Token
	for i := range 200 {
		toks = append(toks, m.Mint(kinds[i%len(kinds)], "x"))
	}
	set := canary.NewSet(toks...)
	// 10 MiB of mixed traffic: HTTP-ish text, JSON, base64 blobs, binary.
	var buf bytes.Buffer
	words := strings.Fields("GET POST HTTP/1.1 Host: api.example.com Content-Type: application/json the of and to in is " +
		"function return const let var if else for while {\"id\":42,\"name\":\"value\"} 0x7fff 12345 /usr/lib/x86_64-linux-gnu")
	for buf.Len() < 10<<20 {
		k := m.Intn(10)
		if !mixed {
			k = 9
		}
		switch k {
		case 0:
			buf.WriteString(base64.StdEncoding.EncodeToString(m.Bytes(600)) + "\n")
		case 1:
			buf.Write(m.Bytes(512))
		default:
			for range 100 {
				buf.WriteString(words[m.Intn(len(words))])
				buf.WriteByte(" \n"[m.Intn(2)])
			}
		}
	}
	data := buf.Bytes()[:10<<20]
	b.SetBytes(int64(len(data)))
	// On a shared machine wall time overstates the cost: also report
	// throughput per second of this process's CPU time.
	cpu0 := cpuTime()
	n := 0
	for b.Loop() {
		set.Find(data)
		n++
	}
	if d := cpuTime() - cpu0; d > 0 {
		b.ReportMetric(float64(n)*float64(len(data))/1e6/d.Seconds(), "MB/cpu-s")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
