package canary_test

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"unicode/utf16"

	"compress/bzip2"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
	"io"
	"net/url"
	"strings"
	"testing"

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
		string(readFile(f, "testdata/enc/xor1.bin")), string(readFile(f, "testdata/enc/utf16.txt")),
		string(readFile(f, "testdata/enc/a85-adobe.txt")), string(readFile(f, "testdata/enc/b85.txt")),
		string(readFile(f, "testdata/enc/plain.xz")), string(readFile(f, "testdata/enc/plain.zst")),
		string(readFile(f, "testdata/enc/raw-deflate.b64")), string(readFile(f, "testdata/enc/x-escape.txt")),
		string(readFile(f, "testdata/enc/b64-w4.txt")), string(readFile(f, "testdata/enc/btoa.txt")),
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
	case canary.XOR:
		for _, n := range needlesOf(tok) {
			for _, s := range starts(0) {
				if s+len(n) > len(data) {
					continue
				}
				if k := data[s] ^ n[0]; k != 0 && bytes.Equal(xorBytes(data[s:s+len(n)], k), []byte(n)) {
					return len(rest) == 0
				}
			}
		}
	case canary.UTF16LE, canary.UTF16BE:
		for _, n := range needlesOf(tok) {
			var b []byte
			for _, c := range utf16.Encode([]rune(n)) {
				if enc == string(canary.UTF16LE) {
					b = binary.LittleEndian.AppendUint16(b, c)
				} else {
					b = binary.BigEndian.AppendUint16(b, c)
				}
			}
			if at >= 0 && bytes.HasPrefix(data[at:], b) || at < 0 && bytes.Contains(data, b) {
				return len(rest) == 0
			}
		}
	case canary.CEscape:
		for _, s := range starts(0) {
			var d []byte
			for i := s; i+4 <= len(data) && data[i] == '\\' && data[i+1] == 'x'; i += 4 {
				v, err := strconv.ParseUint(string(data[i+2:i+4]), 16, 8)
				if err != nil {
					break
				}
				d = append(d, byte(v))
			}
			if present(d, rest, tok, -1) {
				return true
			}
		}
	case canary.Ascii85, canary.Base85, canary.Z85:
		alpha := map[string]string{
			string(canary.Base85): "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~",
			string(canary.Z85):    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#",
		}[enc]
		for _, s := range starts(5) {
			b := data[s:]
			for _, frame := range []string{"<~", "xbtoa Begin"} {
				if enc == string(canary.Ascii85) && bytes.HasPrefix(b, []byte(frame)) {
					b = b[len(frame):]
				}
			}
			if present(decode85(b, alpha), rest, tok, -1) {
				return true
			}
		}
	case canary.Xz, canary.Zstd, canary.Deflate:
		for _, s := range starts(0) {
			var d []byte
			switch canary.Encoding(enc) {
			case canary.Xz:
				if r, err := xz.NewReader(bytes.NewReader(data[s:])); err == nil {
					d, _ = io.ReadAll(io.LimitReader(r, 64<<20))
				}
			case canary.Zstd:
				if r, err := zstd.NewReader(bytes.NewReader(data[s:])); err == nil {
					d, _ = io.ReadAll(io.LimitReader(r, 64<<20))
					r.Close()
				}
			default:
				d, _ = io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(data[s:])), 64<<20))
			}
			if present(d, rest, tok, -1) {
				return true
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

// decode85 decodes 5-character groups of alpha ("" for ascii85, with 'z'
// and 'y' and whitespace) from the start of b until a character outside
// it; a last short group is padded with the highest digit.
func decode85(b []byte, alpha string) []byte {
	var out []byte
	var g []int
	flush := func(n int) {
		v := uint64(0)
		for i := range 5 {
			d := 84
			if i < len(g) {
				d = g[i]
			}
			v = v*85 + uint64(d)
		}
		if v > 0xffffffff {
			return
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))[:len(out)+n]
	}
	for _, c := range b {
		d := -1
		if alpha == "" {
			switch {
			case c == ' ' || c == '\n' || c == '\r' || c == '\t':
				continue
			case c == 'z' && len(g) == 0:
				out = append(out, 0, 0, 0, 0)
				continue
			case c == 'y' && len(g) == 0:
				out = append(out, "    "...)
				continue
			case c >= '!' && c <= 'u':
				d = int(c - '!')
			}
		} else {
			d = strings.IndexByte(alpha, c)
		}
		if d < 0 {
			break
		}
		if g = append(g, d); len(g) == 5 {
			flush(4)
			g = g[:0]
		}
	}
	if len(g) >= 2 {
		flush(len(g) - 1)
	}
	return out
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

// FuzzFindKeyed checks that Find with keys (openssl passwords, raw AES
// keys, a XOR key) never panics on any input, Salted__ headers included,
// and that its XOR hits are real.
func FuzzFindKeyed(f *testing.F) {
	set := canary.NewSet(tokAWS, tokGH).WithKeys([]canary.Key{{Password: []byte("hunter2")},
		{Password: []byte("pw"), PBKDF2: true, Iter: 10, Cipher: "aes-128-ctr"}, {Password: []byte("x"), NoSalt: true},
		{Raw: []byte("0123456789abcdef")}, {Cipher: "xor", Raw: []byte("k3y!")}})
	for _, n := range []string{"enc-md5.bin", "enc-sha256.b64", "xorkey.bin", "aesgcm.bin", "enc-nosalt.bin"} {
		f.Add(readFile(f, "testdata/enc/"+n))
	}
	f.Add([]byte("Salted__12345678\x00\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		for _, h := range set.Find(data) {
			if h.Token.ID != tokAWS.ID && h.Token.ID != tokGH.ID {
				t.Errorf("hit of an unknown token: %v", h)
			}
		}
	})
}
