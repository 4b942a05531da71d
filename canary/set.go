package canary

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"net/url"
	"slices"
	"strings"
)

// MinNeedle is the shortest needle detection looks for: shorter ones would
// match by chance and are ignored. Minted tokens are far longer.
const MinNeedle = 10

// window is the length of the prefix every pattern is indexed by.
const window = 8

// filterBits is log2 of the prefilter's size in bits (128 KiB: stays in L2).
const filterBits = 20

// A Set is the registry of one trace's tokens and the index that finds them.
// It is immutable after NewSet and safe for concurrent use.
type Set struct {
	tokens []Token
	pats   []pattern
	// byKey maps the first 8 bytes of a pattern (little-endian) to the
	// patterns that start with them.
	byKey  map[uint64][]int32
	filter []uint64
}

// A pattern is one encoded form of one needle.
type pattern struct {
	s   []byte
	tok int
	enc Encoding
	// joined marks encodings whose text may be broken by line breaks
	// (base64, hex, base32): these are also searched in joined runs.
	joined bool
}

// NewSet indexes tokens. Tokens with the same ID are kept once (the first).
func NewSet(tokens ...Token) *Set {
	s := &Set{byKey: map[uint64][]int32{}, filter: make([]uint64, 1<<filterBits/64)}
	seen := map[string]bool{}
	for _, t := range tokens {
		if seen[t.ID] {
			continue
		}
		seen[t.ID] = true
		t.Needles = slices.Clone(t.Needles)
		s.tokens = append(s.tokens, t)
	}
	for i, t := range s.tokens {
		for _, n := range t.needles() {
			if len(n) < MinNeedle {
				continue
			}
			for _, v := range variants([]byte(n)) {
				s.add(pattern{s: v.s, tok: i, enc: v.enc, joined: v.enc != Plain && v.enc != URL && !strings.HasPrefix(string(v.enc), "url+")})
			}
		}
	}
	return s
}

func (s *Set) add(p pattern) {
	if len(p.s) < window {
		return
	}
	k := binary.LittleEndian.Uint64(p.s)
	for _, j := range s.byKey[k] {
		if q := s.pats[j]; q.tok == p.tok && bytes.Equal(q.s, p.s) {
			return
		}
	}
	s.pats = append(s.pats, p)
	s.byKey[k] = append(s.byKey[k], int32(len(s.pats)-1))
	h := hashKey(k)
	s.filter[h>>6] |= 1 << (h & 63)
}

func hashKey(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> (64 - filterBits) }

// Tokens returns a copy of the set's tokens, in the order given to NewSet.
func (s *Set) Tokens() []Token {
	if s == nil {
		return nil
	}
	out := make([]Token, len(s.tokens))
	for i, t := range s.tokens {
		t.Needles = slices.Clone(t.Needles)
		out[i] = t
	}
	return out
}

// Len is the number of tokens.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.tokens)
}

// Lookup returns the token with the given id.
func (s *Set) Lookup(id string) (Token, bool) {
	if s != nil {
		for _, t := range s.tokens {
			if t.ID == id {
				return t, true
			}
		}
	}
	return Token{}, false
}

type variant struct {
	s   []byte
	enc Encoding
}

var (
	b32Upper = base32.StdEncoding.WithPadding(base32.NoPadding)
	b32Lower = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
)

// variants returns the encoded forms of needle n that are fixed by n alone:
// for base64 and base32 at each alignment, the characters that depend on the
// neighbouring bytes are cut off both ends.
func variants(n []byte) []variant {
	out := []variant{{n, Plain}}
	out = append(out, variant{[]byte(hex.EncodeToString(n)), Hex})
	out = append(out, variant{bytes.ToUpper([]byte(hex.EncodeToString(n))), Hex})
	for _, u := range []string{url.QueryEscape(string(n)), url.PathEscape(string(n))} {
		if u != string(n) {
			out = append(out, variant{[]byte(u), URL}, variant{lowerPercent(u), URL})
		}
	}
	for _, e := range []struct {
		enc *base64.Encoding
		typ Encoding
	}{{base64.RawStdEncoding, Base64}, {base64.RawURLEncoding, Base64URL}} {
		for k := range 3 {
			v := alignedBase64(e.enc, n, k)
			out = append(out, variant{v, e.typ})
			if e.typ == Base64 {
				if q := url.QueryEscape(string(v)); q != string(v) {
					out = append(out, variant{[]byte(q), URL + "+" + Base64}, variant{lowerPercent(q), URL + "+" + Base64})
				}
			}
		}
	}
	for _, e := range []*base32.Encoding{b32Upper, b32Lower} {
		for k := range 5 {
			out = append(out, variant{alignedBase32(e, n, k), Base32})
		}
	}
	return out
}

// lowerPercent rewrites %2F as %2f: some encoders use lower-case hex digits.
func lowerPercent(s string) []byte {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1] = lowerHex(b[i+1])
			b[i+2] = lowerHex(b[i+2])
		}
	}
	return b
}

func lowerHex(c byte) byte {
	if c >= 'A' && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// alignedBase64 encodes n as if preceded by k bytes, and keeps only the
// characters that n alone determines.
func alignedBase64(enc *base64.Encoding, n []byte, k int) []byte {
	buf := make([]byte, k+len(n))
	copy(buf[k:], n)
	s := []byte(enc.EncodeToString(buf))
	s = s[[]int{0, 2, 3}[k]:]
	if (k+len(n))%3 != 0 {
		s = s[:len(s)-1]
	}
	return s
}

// alignedBase32 is alignedBase64 for base32 (5-byte groups of 8 chars).
func alignedBase32(enc *base32.Encoding, n []byte, k int) []byte {
	buf := make([]byte, k+len(n))
	copy(buf[k:], n)
	s := []byte(enc.EncodeToString(buf))
	// Chars wholly after the k prefix bytes: char i covers bits 5i..5i+4.
	skip := (8*k + 4) / 5
	s = s[skip:]
	if (8*(k+len(n)))%5 != 0 {
		s = s[:len(s)-1]
	}
	return s
}
