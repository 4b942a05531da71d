package canary_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/zstd"
	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/ulikunitz/xz"
)

var (
	tokAWS = canary.Token{ID: "aws_access_key-1", Kind: canary.AWSAccessKey, Value: "AKIAQSBXCTL7Q2X4ZT3M", Location: "~/.aws/credentials"}
	tokGH  = canary.Token{ID: "github_token-1", Kind: canary.GitHubToken, Value: "ghp_R8xw2Lq0VbZ7c1Yk9TnP3sHd5Fj6Ga4MeU0i", Location: "env:GITHUB_TOKEN"}
	tokKey = canary.Token{ID: "ssh_private_key-1", Kind: canary.SSHPrivateKey, Location: "~/.ssh/id_ed25519",
		Value:   "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\nQmT5x8Wv3kR0LpZa7NcYd2Hs9Ue4Jb1Gq6Fo\n-----END OPENSSH PRIVATE KEY-----\n",
		Needles: []string{"QmT5x8Wv3kR0LpZa7NcYd2Hs9Ue4Jb1Gq6Fo"}}
	tokAmp = canary.Token{ID: "password-2", Kind: canary.Password, Value: "Qm7&vR2<x9Lp>Wz4", Location: "~/.netrc"}
	tokPW  = canary.Token{ID: "password-1", Kind: canary.Password, Value: "~~~v9#Lm2/pQ+x7 Rz=k4", Location: "~/.netrc"}
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func gz(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func tarOf(t testing.TB, name string, body []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	tw.Write(body)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipOf(t testing.TB, name string, body []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(bytes.Repeat(body, 3))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readFile(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wrapLines(s string, n int, sep string) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n])
		b.WriteString(sep)
		s = s[n:]
	}
	b.WriteString(s)
	return b.String()
}

func reverse(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}

func rot13(s string) string { return caesar(s, 13) }

// caesar shifts s's letters by k, as the one-liners do: (c-'a'+k)%26.
func caesar(s string, k rune) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return 'a' + (r-'a'+k)%26
		case r >= 'A' && r <= 'Z':
			return 'A' + (r-'A'+k)%26
		}
		return r
	}, s)
}

// rot47 is tr '!-~' 'P-~!-O'.
func rot47(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '!' && r <= '~' {
			return '!' + (r-'!'+47)%94
		}
		return r
	}, s)
}

// numbersOf writes s's bytes with format (%d, %o) joined by sep.
func numbersOf(s, format, sep string) string {
	parts := make([]string, len(s))
	for i := range len(s) {
		parts[i] = fmt.Sprintf(format, s[i])
	}
	return strings.Join(parts, sep)
}

// uuencode writes s as uuencode(1) does: lines of 45 bytes, each a
// length character and four characters per three bytes.
func uuencode(name, s string) string {
	enc := func(c byte) byte {
		if c == 0 {
			return '`'
		}
		return c + ' '
	}
	var b strings.Builder
	b.WriteString("begin 644 " + name + "\n")
	for i := 0; i < len(s); i += 45 {
		chunk := []byte(s[i:min(i+45, len(s))])
		b.WriteByte(enc(byte(len(chunk))))
		for len(chunk)%3 != 0 {
			chunk = append(chunk, 0)
		}
		for k := 0; k < len(chunk); k += 3 {
			b.Write([]byte{enc(chunk[k] >> 2), enc((chunk[k]<<4 | chunk[k+1]>>4) & 63), enc((chunk[k+1]<<2 | chunk[k+2]>>6) & 63), enc(chunk[k+2] & 63)})
		}
		b.WriteByte('\n')
	}
	b.WriteString("`\nend\n")
	return b.String()
}

// interleave puts one filler character from noise after each of s's.
func interleave(s, noise string) string {
	var b strings.Builder
	for i := range len(s) {
		b.WriteByte(s[i])
		b.WriteByte(noise[i%len(noise)])
	}
	return b.String()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func lowerEscapes(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] == '%' && i+2 < len(b) {
			copy(b[i+1:i+3], strings.ToLower(string(b[i+1:i+3])))
		}
	}
	return string(b)
}

func TestSetFind(t *testing.T) {
	set := canary.NewSet(tokAWS, tokGH, tokKey, tokPW, tokAmp)
	hit := func(tok canary.Token, enc canary.Encoding, off int) []canary.Hit {
		return []canary.Hit{{Token: tok, Encoding: enc, Offset: off}}
	}
	longText := "aws_access_key_id = " + tokAWS.Value + "\naws_secret_access_key = x\n"
	var zl bytes.Buffer
	zw := zlib.NewWriter(&zl)
	zw.Write([]byte(longText))
	zw.Close()
	tests := []struct {
		name string
		data string
		want []canary.Hit
	}{
		{name: "empty"},
		{name: "absent", data: "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"},
		{name: "prefix only", data: tokAWS.Value[:12]},
		{name: "plain", data: "k=" + tokAWS.Value, want: hit(tokAWS, canary.Plain, 2)},
		{name: "plain twice keeps first", data: tokAWS.Value + " " + tokAWS.Value, want: hit(tokAWS, canary.Plain, 0)},
		{name: "needle of key", data: "line: QmT5x8Wv3kR0LpZa7NcYd2Hs9Ue4Jb1Gq6Fo", want: hit(tokKey, canary.Plain, 6)},
		{name: "base64 aligned", data: b64(tokAWS.Value), want: hit(tokAWS, canary.Base64, 0)},
		{name: "base64 align 1", data: b64("x" + tokAWS.Value), want: hit(tokAWS, canary.Base64, 2)},
		{name: "base64 align 2", data: b64("xy" + tokAWS.Value + "z"), want: hit(tokAWS, canary.Base64, 3)},
		{name: "base64 unpadded", data: base64.RawStdEncoding.EncodeToString([]byte("ab" + tokGH.Value)), want: hit(tokGH, canary.Base64, 3)},
		{name: "base64 in json", data: `{"d":"` + b64(longText) + `"}`, want: hit(tokAWS, canary.Base64, 33)},
		{name: "base64 wrapped 76", data: wrapLines(b64(strings.Repeat("-", 50)+longText), 76, "\r\n"),
			want: hit(tokAWS, canary.Base64, 96)},
		{name: "base64 wrapped json escaped", data: `"` + wrapLines(b64(strings.Repeat("-", 50)+longText), 64, `\n`) + `"`,
			want: hit(tokAWS, canary.Base64, 97)},
		{name: "base64url", data: base64.RawURLEncoding.EncodeToString([]byte(tokPW.Value)), want: hit(tokPW, canary.Base64URL, 0)},
		{name: "base64 std with slashes", data: b64(tokPW.Value), want: hit(tokPW, canary.Base64, 0)},
		{name: "hex lower", data: "x=" + hex.EncodeToString([]byte(tokGH.Value)), want: hit(tokGH, canary.Hex, 2)},
		{name: "hex upper", data: strings.ToUpper(hex.EncodeToString([]byte(tokGH.Value))), want: hit(tokGH, canary.Hex, 0)},
		{name: "hex wrapped (xxd -p)", data: wrapLines(hex.EncodeToString([]byte("...."+tokGH.Value)), 60, "\n"), want: hit(tokGH, canary.Hex, 8)},
		{name: "base32", data: base32.StdEncoding.EncodeToString([]byte("abc" + tokAWS.Value)), want: hit(tokAWS, canary.Base32, 5)},
		{name: "url query escape", data: "p=" + url.QueryEscape(tokPW.Value), want: hit(tokPW, canary.URL, 2)},
		{name: "url path escape", data: "/" + url.PathEscape(tokPW.Value), want: hit(tokPW, canary.URL, 1)},
		{name: "url lower-case percent", data: "p=" + lowerEscapes(url.QueryEscape(tokPW.Value)), want: hit(tokPW, canary.URL, 2)},
		{name: "reversed", data: "x=" + reverse(tokGH.Value), want: hit(tokGH, canary.Reversed, 2)},
		{name: "rot13", data: rot13(tokGH.Value) + "\n", want: hit(tokGH, canary.ROT13, 0)},
		{name: "caesar 3", data: "c=" + caesar(tokGH.Value, 3), want: hit(tokGH, canary.Caesar, 2)},
		{name: "caesar 25", data: caesar(tokAWS.Value, 25), want: hit(tokAWS, canary.Caesar, 0)},
		{name: "rot47", data: "x " + rot47(tokPW.Value), want: hit(tokPW, canary.ROT47, 2)},
		{name: "decimal codes", data: "String.fromCharCode(" + numbersOf(tokGH.Value, "%d", ",") + ")",
			want: hit(tokGH, canary.Decimal, 20)},
		{name: "decimal list", data: "[" + numbersOf("k="+tokAWS.Value, "%d", ", ") + "]", want: hit(tokAWS, canary.Decimal, 1)},
		{name: "html references", data: "<p>&#" + numbersOf(tokPW.Value, "%d", ";&#") + ";</p>", want: hit(tokPW, canary.Decimal, 5)},
		{name: "octal escapes", data: `printf '\` + numbersOf(tokGH.Value, "%03o", `\`) + `'`, want: hit(tokGH, canary.Decimal, 9)},
		{name: "decimal of base64", data: numbersOf(b64(tokGH.Value), "%d", " "), want: hit(tokGH, canary.Decimal+"+"+canary.Base64, 0)},
		{name: "decimal too large", data: numbersOf(tokGH.Value, "%d", "0,")},
		{name: "decimal mixed separators", data: numbersOf(tokGH.Value[:20], "%d", ",") + " " + numbersOf(tokGH.Value[20:], "%d", ",")},
		{name: "uuencoded attachment", data: "Content-Type: text/plain\r\n\r\n" + uuencode("creds.txt", longText),
			want: hit(tokAWS, canary.UU, 28)},
		{name: "uuencoded with CRLF lines", data: strings.ReplaceAll(uuencode("c", "x="+tokGH.Value), "\n", "\r\n"), want: hit(tokGH, canary.UU, 0)},
		{name: "begin mid-line is prose", data: "we begin 644 ways\n" + "M" + strings.Repeat("!", 60) + "\n"},
		{name: "interleaved", data: "d=" + interleave(tokGH.Value, "q7Xz0Lp"), want: hit(tokGH, canary.Interleave, 2)},
		{name: "interleaved second half", data: "d=Z" + interleave(tokAWS.Value, "abc"), want: hit(tokAWS, canary.Interleave, 3)},
		{name: "interleaved base64", data: interleave(b64("..."+tokGH.Value), "xyz"), want: hit(tokGH, canary.Interleave+"+"+canary.Base64, 8)},
		{name: "json go escapes", data: `{"p":` + string(must(json.Marshal(tokAmp.Value))) + `}`, want: hit(tokAmp, canary.JSON, 6)},
		{name: "json escaped slash", data: `{"p":"` + strings.ReplaceAll(tokPW.Value, "/", `\/`) + `"}`, want: hit(tokPW, canary.JSON, 6)},
		{name: "url-escaped base64", data: "d=" + url.QueryEscape(b64(tokPW.Value)), want: hit(tokPW, canary.URL+"+"+canary.Base64, 2)},
		{name: "gzip", data: "HDR" + string(gz(t, []byte(longText))), want: hit(tokAWS, canary.Gzip, 3)},
		{name: "zlib", data: zl.String(), want: hit(tokAWS, canary.Zlib, 0)},
		{name: "tar", data: string(tarOf(t, ".aws/credentials", []byte(longText))), want: hit(tokAWS, canary.Plain, 512+20)},
		{name: "tar.gz", data: string(gz(t, tarOf(t, ".aws/credentials", []byte(longText)))), want: hit(tokAWS, canary.TarGz, 0)},
		{name: "base64 of tar.gz", data: "curl -d " + b64(string(gz(t, tarOf(t, "c", []byte(longText))))),
			want: hit(tokAWS, canary.Base64+"+"+canary.TarGz, 8)},
		{name: "base64 of gzip in a URL path", data: "GET /up-load/" + base64.RawURLEncoding.EncodeToString(gz(t, []byte(longText))) + " HTTP/1.1",
			want: hit(tokAWS, canary.Base64URL+"+"+canary.Gzip, 13)},
		{name: "base64 of gzip after a word", data: "payload/" + b64(string(gz(t, []byte(longText)))),
			want: hit(tokAWS, canary.Base64+"+"+canary.Gzip, 0)},
		{name: "0x hex of gzip", data: "x=0x" + hex.EncodeToString(gz(t, []byte(longText))), want: hit(tokAWS, canary.Hex+"+"+canary.Gzip, 4)},
		{name: "gzip of base64", data: string(gz(t, []byte(b64(longText)))), want: hit(tokAWS, canary.Gzip+"+"+canary.Base64, 0)},
		{name: "double base64", data: b64(b64("..." + tokGH.Value)), want: hit(tokGH, canary.Base64+"+"+canary.Base64, 0)},
		{name: "two tokens", data: tokGH.Value + "\n" + hex.EncodeToString([]byte(tokAWS.Value)), want: []canary.Hit{
			{Token: tokGH, Encoding: canary.Plain, Offset: 0},
			{Token: tokAWS, Encoding: canary.Hex, Offset: 41},
		}},
		{name: "zip deflated", data: "PUT /up\r\n\r\n" + string(zipOf(t, ".aws/credentials", []byte(longText))), want: hit(tokAWS, canary.Zip, 11)},
		{name: "bzip2", data: string(readFile(t, "testdata/credentials.bz2")), want: hit(tokAWS, canary.Bzip2, 0)},
		{name: "tar.bz2", data: string(readFile(t, "testdata/home.tar.bz2")), want: hit(tokAWS, canary.TarBz2, 0)},
		{name: "gzip truncated", data: string(gz(t, []byte(longText+strings.Repeat("z", 5000))))[:60]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := set.Find([]byte(tt.data))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Find(%q) mismatch (-want +got):\n%s", tt.data, diff)
			}
		})
	}
}

func TestSetJSON(t *testing.T) {
	set := canary.NewSet(tokAWS, tokKey)
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	var back canary.Set
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(set.Tokens(), back.Tokens()); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if got := back.Find([]byte(tokAWS.Value)); len(got) != 1 {
		t.Errorf("unmarshalled set finds %v, want one hit", got)
	}
	if string(b[:1]) != "[" {
		t.Errorf("Set marshals to %s, want a token list", b)
	}
}

func TestRawNeedles(t *testing.T) {
	raw := []byte{0x76, 0x31, 0x30, 0xde, 0xad, 0xbe, 0xef, 0x00, 0xff, 0x10, 0x20, 0x30, 0x40}
	tok := canary.Token{ID: "browser_password-1", Kind: canary.BrowserPassword, Value: "Zq8!pL2mW#x4Vn7r", RawNeedles: [][]byte{raw}}
	set := canary.NewSet(tok)
	got := set.Find(append([]byte("SQLite format 3\x00"), raw...))
	want := []canary.Hit{{Token: tok, Encoding: canary.Plain, Offset: 16}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("raw needle (-want +got):\n%s", diff)
	}
	got = set.Find([]byte(b64(string(raw))))
	if len(got) != 1 || got[0].Encoding != canary.Base64 {
		t.Errorf("base64 of raw needle: %v", got)
	}
	b, _ := json.Marshal(set)
	var back canary.Set
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(set.Tokens(), back.Tokens()); diff != "" {
		t.Errorf("raw needles JSON round trip (-want +got):\n%s", diff)
	}
}

func TestPlanted(t *testing.T) {
	set := canary.NewSet(tokAWS, tokKey)
	want := []canary.Planted{
		{ID: "aws_access_key-1", Kind: canary.AWSAccessKey, Location: "~/.aws/credentials", Hint: "AKIAQ… (20 chars)"},
		{ID: "ssh_private_key-1", Kind: canary.SSHPrivateKey, Location: "~/.ssh/id_ed25519", Hint: "-----BEGIN O… (112 chars)"},
	}
	if diff := cmp.Diff(want, set.Planted()); diff != "" {
		t.Errorf("Planted (-want +got):\n%s", diff)
	}
}

// TestFindHostile checks that inputs built to make Find work hard finish
// quickly: stream magics everywhere, one huge base64 run, a gzip bomb.
func TestFindHostile(t *testing.T) {
	set := canary.NewSet(tokAWS, tokGH).WithKeys([]canary.Key{{Password: []byte("pw")}, {Raw: []byte("0123456789abcdef")},
		{Cipher: "xor", Raw: []byte("key")}})
	// Under -short each input is an eighth of its size (megabytes, not
	// tens of them): the same shapes, the same absence of hits; the whole
	// sizes, which show that the cost stays bounded, run in `make test`.
	k := 1
	if testing.Short() {
		k = 8
	}
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(bytes.Repeat([]byte{0}, 64<<20/k))
	zw.Close()
	for name, data := range map[string][]byte{
		"zlib magic":     bytes.Repeat([]byte("x\x9c"), 2<<20/k),
		"gzip magic":     bytes.Repeat([]byte("\x1f\x8b\x08\x00"), 1<<20/k),
		"zip magic":      bytes.Repeat([]byte("PK\x03\x04\x14\x00\x00\x00\x08\x00"), 400<<10/k),
		"base64 run":     bytes.Repeat([]byte("QUFB"), 4<<20/k),
		"anchors":        bytes.Repeat([]byte("AH4sIUEsDBeJweNq"), 1<<20/k),
		"gzip bomb":      bomb.Bytes(),
		"wrapped":        []byte(wrapLines(strings.Repeat("A", 8<<20/k), 64, "\n")),
		"short lines":    []byte(wrapLines(strings.Repeat("QUFB", 2<<20/k), 4, "\r\n")),
		"ascii85 frames": bytes.Repeat([]byte("<~!!!!!!!!!!!!"), 1<<20/k),
		"salted":         bytes.Repeat([]byte("Salted__12345678"), 1<<20/k),
		"xz headers":     bytes.Repeat([]byte("\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4\x46\x02\x00\x21\x01\x28"), 1<<19/k),
		"zstd frames":    bytes.Repeat([]byte("\x28\xb5\x2f\xfd\x00\x58\x00\x00"), 1<<20/k),
		"binary":         bytes.Repeat([]byte{0x8a, 0x13, 0xf0, 0x77, 0x00, 0xff, 0x42, 0x99, 0x12, 0x34}, 1<<20/k),
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			if hits := set.Find(data); len(hits) > 0 {
				t.Errorf("hits in noise: %v", hits)
			}
			if d := time.Since(start); d > time.Minute {
				t.Errorf("Find took %v on %d bytes", d, len(data))
			}
		})
	}
}

// TestFindAtEveryOffset checks completeness where the scan strides: each
// encoding of each token is found whatever the length of what precedes it
// and follows it.
func TestFindAtEveryOffset(t *testing.T) {
	toks := []canary.Token{tokAWS, tokGH, tokPW, tokAmp, tokKey}
	set := canary.NewSet(toks...)
	encs := map[canary.Encoding]func(string) string{
		canary.Plain:     func(s string) string { return s },
		canary.Hex:       func(s string) string { return hex.EncodeToString([]byte(s)) },
		canary.Base64:    func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
		canary.Base64URL: func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) },
		canary.Base32:    func(s string) string { return base32.StdEncoding.EncodeToString([]byte(s)) },
		canary.Reversed:  reverse,
	}
	for _, tok := range toks {
		n := tok.Value
		if len(tok.Needles) > 0 {
			n = tok.Needles[0]
		}
		for enc, f := range encs {
			for pre := range 9 {
				for post := range 3 {
					// Shift the byte alignment too for the block encodings.
					for lead := range 3 {
						text := f(strings.Repeat("\x01", lead) + n)
						if enc == canary.Plain || enc == canary.Hex || enc == canary.Reversed {
							if lead > 0 {
								continue
							}
						}
						data := strings.Repeat("#", pre) + text + strings.Repeat("#", post)
						found := false
						for _, h := range set.Find([]byte(data)) {
							found = found || h.Token.ID == tok.ID && h.Encoding == enc
						}
						if !found && !(enc == canary.Base64URL && !strings.ContainsAny(text, "-_")) {
							t.Errorf("%s %s, %d+%d bytes around, lead %d: not found in %q", tok.ID, enc, pre, post, lead, data)
						}
					}
				}
			}
		}
	}
}

// TestFindStreamAtBlockEdge checks that stream magics are found wherever
// they sit relative to the blocks the magic search works through (16 KiB):
// across a block's end and at either side of it.
func TestFindStreamAtBlockEdge(t *testing.T) {
	set := canary.NewSet(tokGH, tokAWS)
	body := []byte("token=" + tokGH.Value + "\n")
	var zl bytes.Buffer
	zw := zlib.NewWriter(&zl)
	zw.Write(body)
	zw.Close()
	var xzb bytes.Buffer
	xw := must(xz.NewWriter(&xzb))
	xw.Write(body)
	xw.Close()
	enc := must(zstd.NewWriter(nil))
	zs := enc.EncodeAll(body, nil)
	enc.Close()
	streams := []struct {
		name string
		b    []byte
		want canary.Encoding
		tok  canary.Token
	}{
		{"gzip", gz(t, body), canary.Gzip, tokGH},
		{"zlib", zl.Bytes(), canary.Zlib, tokGH},
		{"xz", xzb.Bytes(), canary.Xz, tokGH},
		{"zstd", zs, canary.Zstd, tokGH},
		{"bzip2", readFile(t, "testdata/credentials.bz2"), canary.Bzip2, tokAWS},
		{"ascii85", append([]byte("<~"), append(a85Of(body), "~>"...)...), canary.Ascii85, tokGH},
		{"btoa", append([]byte("xbtoa Begin\n"), append(a85Of(body), "\nxbtoa End"...)...), canary.Ascii85, tokGH},
	}
	for _, st := range streams {
		for _, edge := range []int{16 << 10, 32 << 10} {
			for at := edge - 12; at <= edge+2; at++ {
				data := append(bytes.Repeat([]byte("."), at), st.b...)
				data = append(data, bytes.Repeat([]byte("."), 40<<10)...)
				found := false
				for _, h := range set.Find(data) {
					found = found || h.Token.ID == st.tok.ID && h.Encoding == st.want
				}
				if !found {
					t.Errorf("%s at %d: not found", st.name, at)
				}
			}
		}
	}
}

// a85Of is ascii85 without folding ('z') or wrapping.
func a85Of(b []byte) []byte {
	var out []byte
	n := len(b)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	for i := 0; i < len(b); i += 4 {
		v := uint32(b[i])<<24 | uint32(b[i+1])<<16 | uint32(b[i+2])<<8 | uint32(b[i+3])
		var g [5]byte
		for j := 4; j >= 0; j-- {
			g[j] = byte('!' + v%85)
			v /= 85
		}
		out = append(out, g[:]...)
	}
	return out[:len(out)-(len(b)-n)]
}

// TestFindXzFarMatch checks the xz dictionary sizing: the needle at the end
// of the stream is a match 150 KiB back (to a near copy of it), which a
// dictionary smaller than what the chunk headers declare would lose.
func TestFindXzFarMatch(t *testing.T) {
	set := canary.NewSet(tokGH)
	near := tokGH.Value[:len(tokGH.Value)-1] + "#"
	tests := []struct {
		name string
		fill int
	}{
		{"4 KiB back", 4 << 10},
		{"150 KiB back", 150 << 10},
		{"300 KiB back", 300 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body bytes.Buffer
			body.WriteString(near + "\n")
			m := canary.NewMinter(canary.SeededReader([]byte("xz")))
			for body.Len() < tt.fill {
				body.WriteString(base64.StdEncoding.EncodeToString(m.Bytes(300)) + "\n")
			}
			body.WriteString(tokGH.Value + "\n")
			var z bytes.Buffer
			w := must(xz.NewWriter(&z))
			w.Write(body.Bytes())
			w.Close()
			found := false
			for _, h := range set.Find(z.Bytes()) {
				found = found || h.Token.ID == tokGH.ID && h.Encoding == canary.Xz
			}
			if !found {
				t.Errorf("token at the end of an xz stream of %d bytes not found", body.Len())
			}
		})
	}
}
