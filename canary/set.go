package canary

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MinNeedle is the shortest needle detection looks for: shorter ones would
// match by chance and are ignored. Minted tokens are far longer.
const MinNeedle = 10

// window is the length of the prefix every pattern is indexed by.
const window = 8

// filterBits is log2 of the prefilter's size in bits (128 KiB: stays in
// L2). Each key sets three bits of one word, so a probe is one load and
// the false-positive rate is about the cube of the fill: a false positive
// costs a map lookup, a cache miss or two.
const filterBits = 20

// A Set is the registry of one trace's tokens and the index that finds them.
// It is immutable after NewSet and safe for concurrent use.
type Set struct {
	tokens []Token
	pats   []pattern
	// byKey maps 8 bytes (little-endian) to the patterns that hold them at
	// an offset below stride: every pattern is at least stride+7 bytes
	// long, so probing every stride-th byte of the input meets each
	// occurrence exactly once.
	byKey  map[uint64][]entry
	stride int
	filter []uint64
	// byDiff indexes the needles by the XOR of neighbouring bytes, which a
	// single-byte XOR leaves unchanged: data[i]^data[i+1] = n[j]^n[j+1]
	// whatever the key (see xor.go).
	byDiff     map[uint64][]entry
	diffFilter []uint64 // the prefilter of byDiff: small, it stays in L1
	// needles are the needles long enough to look for, with their token.
	needles []needle
	// keys are the decryption keys given to WithKeys.
	keys []Key
}

type needle struct {
	b   []byte
	tok int
}

type entry struct {
	pat int32
	off int32 // where the 8 indexed bytes sit in the pattern
}

// A pattern is one encoded form of one needle.
type pattern struct {
	s   []byte
	tok int
	enc Encoding
	// joined marks encodings whose text may be broken by line breaks
	// (base64, hex, base32): these are also searched in joined runs.
	joined bool
	// bin marks forms that are binary through and through (UTF-16, XOR
	// with a known key): they are also looked for in decoded regions that
	// hold no text.
	bin bool
	// For base64 and base32 at an alignment the needle's first and last
	// bits share a character with its neighbours: the character before the
	// match must carry preBits needle bits (its low bits) equal to preVal,
	// and the one after it postBits (its high bits) equal to postVal.
	edge *edge
	// b85 checks the needle bytes in the base85 groups around a match.
	b85 *edge85
}

type edge struct {
	dec               *[256]int8 // character values of the alphabet, -1 outside it
	width             uint       // bits per character: 6 or 5
	escaped           bool       // the text is percent-encoded
	preBits, postBits uint
	preVal, postVal   int8
}

// NewSet indexes tokens. Tokens with the same ID are kept once (the first).
func NewSet(tokens ...Token) *Set {
	s := &Set{}
	seen := map[string]bool{}
	for _, t := range tokens {
		if seen[t.ID] {
			continue
		}
		seen[t.ID] = true
		t.Needles = slices.Clone(t.Needles)
		t.RawNeedles = slices.Clone(t.RawNeedles)
		s.tokens = append(s.tokens, t)
	}
	s.index(nil)
	return s
}

// index builds the pattern index of s.tokens, with the forms keys add.
func (s *Set) index(keys []Key) {
	s.byKey, s.byDiff = map[uint64][]entry{}, map[uint64][]entry{}
	s.filter = make([]uint64, 1<<filterBits/64)
	s.diffFilter = make([]uint64, 1<<diffFilterBits/64)
	s.pats, s.needles, s.keys = nil, nil, keys
	dup := map[string]bool{}
	add := func(i int, v variant) {
		key := strconv.Itoa(i) + "\x00" + string(v.s)
		if len(v.s) < window || dup[key] {
			return
		}
		dup[key] = true
		s.pats = append(s.pats, pattern{s: v.s, tok: i, enc: v.enc, edge: v.edge, b85: v.b85, bin: v.bin,
			joined: v.enc == Hex || v.enc == Base64 || v.enc == Base64URL || v.enc == Base32})
	}
	for i, t := range s.tokens {
		for _, n := range t.needles() {
			if len(n) < MinNeedle {
				continue
			}
			s.needles = append(s.needles, needle{n, i})
			for _, v := range variants(n) {
				add(i, v)
			}
			for _, v := range keyedVariants(n, keys) {
				add(i, v)
			}
		}
	}
	s.stride = 1 << 30
	for _, p := range s.pats {
		s.stride = min(s.stride, len(p.s)-window+1)
	}
	// The XOR index needs a whole window of differences (window+1 bytes)
	// at each of the first stride offsets of every needle.
	for _, n := range s.needles {
		s.stride = max(1, min(s.stride, len(n.b)-window))
	}
	for j, p := range s.pats {
		for off := 0; off < s.stride; off++ {
			k := binary.LittleEndian.Uint64(p.s[off:])
			s.byKey[k] = append(s.byKey[k], entry{int32(j), int32(off)})
			w, m := hashKey(k)
			s.filter[w] |= m
		}
	}
	for j, n := range s.needles {
		for off := 0; off < s.stride; off++ {
			d := diffKey(n.b[off:])
			s.byDiff[d] = append(s.byDiff[d], entry{int32(j), int32(off)})
			w, m := hashDiff(d)
			s.diffFilter[w] |= m
		}
	}
}

// hashKey returns the filter word of key k and the three bits it sets
// there (taken from the middle of the product: its low bits depend on k's
// low bits only).
func hashKey(k uint64) (word int, mask uint64) {
	h := k * 0x9E3779B97F4A7C15
	return int(h >> (64 - filterBits + 6)), 1<<(h>>20&63) | 1<<(h>>26&63) | 1<<(h>>32&63)
}

// diffFilterBits is log2 of the difference prefilter's size in bits (16
// KiB: a home has a few hundred needles, a few thousand keys).
const diffFilterBits = 17

// hashDiff returns the difference filter's word for d and the two bits it
// sets there, as hashKey.
func hashDiff(d uint64) (word int, mask uint64) {
	h := d * 0x9E3779B97F4A7C15
	return int(h >> (64 - diffFilterBits + 6)), 1<<(h>>20&63) | 1<<(h>>26&63)
}

// diffKey is the XOR of the 8 bytes at b with the 8 bytes at b[1:]: the
// differences of neighbouring bytes, unchanged by a single-byte XOR.
func diffKey(b []byte) uint64 {
	return binary.LittleEndian.Uint64(b) ^ binary.LittleEndian.Uint64(b[1:])
}

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
	s    []byte
	enc  Encoding
	edge *edge
	b85  *edge85
	bin  bool
}

// variants returns the encoded forms of needle n that are fixed by n alone:
// for base64 and base32 at each alignment, the characters that depend on the
// neighbouring bytes are cut off both ends.
func variants(n []byte) []variant {
	out := []variant{{s: n, enc: Plain}}
	out = append(out, variant{s: []byte(hex.EncodeToString(n)), enc: Hex})
	out = append(out, variant{s: bytes.ToUpper([]byte(hex.EncodeToString(n))), enc: Hex})
	// Cheap obfuscations seen in the wild: rev and tr-based ROT13.
	rev := make([]byte, len(n))
	for i, c := range n {
		rev[len(n)-1-i] = c
	}
	out = append(out, variant{s: rev, enc: Reversed})
	// Letter rotations: ROT13 (tr), and the other Caesar shifts that
	// one-liners write as (c-'a'+k)%26; ROT47 over printable ASCII.
	for k := byte(1); k < 26; k++ {
		if r := rotate(n, k); !bytes.Equal(r, n) {
			enc := Caesar
			if k == 13 {
				enc = ROT13
			}
			out = append(out, variant{s: r, enc: enc})
		}
	}
	if r := rot47(n); !bytes.Equal(r, n) {
		out = append(out, variant{s: r, enc: ROT47})
	}
	if utf8.Valid(n) {
		// JSON string escaping: Go's encoder writes \u0026 for &, < and >,
		// PHP's writes \/ for a slash (AWS secrets hold slashes).
		if js, err := json.Marshal(string(n)); err == nil {
			if e := js[1 : len(js)-1]; !bytes.Equal(e, n) {
				out = append(out, variant{s: e, enc: JSON})
			}
			if bytes.IndexByte(n, '/') >= 0 {
				out = append(out, variant{s: bytes.ReplaceAll(js[1:len(js)-1], []byte("/"), []byte(`\/`)), enc: JSON})
			}
		}
	}
	for _, u := range []string{url.QueryEscape(string(n)), url.PathEscape(string(n))} {
		if u != string(n) {
			out = append(out, variant{s: []byte(u), enc: URL}, variant{s: lowerPercent(u), enc: URL})
		}
	}
	// Every byte escaped: %XX (urlencode-everything one-liners), \xXX
	// (printf, Python and JavaScript string literals), and \uXXXX on every
	// character (JavaScript, JSON, Java).
	for _, digits := range []string{hexUpper, hexLower} {
		out = append(out, variant{s: escapeAll(n, "%", digits), enc: URL},
			variant{s: escapeAll(n, `\x`, digits), enc: CEscape})
	}
	if utf8.Valid(n) {
		u16 := utf16.Encode([]rune(string(n)))
		for _, f := range []string{`\u%04x`, `\u%04X`} {
			var b []byte
			for _, c := range u16 {
				b = fmt.Appendf(b, f, c)
			}
			out = append(out, variant{s: b, enc: JSON})
		}
		// UTF-16 (iconv -t UTF-16, PowerShell, Windows APIs): with or
		// without a byte-order mark, the needle's code units are the same.
		le, be := make([]byte, 2*len(u16)), make([]byte, 2*len(u16))
		for i, c := range u16 {
			binary.LittleEndian.PutUint16(le[2*i:], c)
			binary.BigEndian.PutUint16(be[2*i:], c)
		}
		out = append(out, variant{s: le, enc: UTF16LE, bin: true}, variant{s: be, enc: UTF16BE, bin: true})
	}
	out = append(out, base85Variants(n)...)
	for _, e := range []struct {
		alpha string
		typ   Encoding
	}{{b64StdAlpha, Base64}, {b64URLAlpha, Base64URL}} {
		enc := base64.NewEncoding(e.alpha).WithPadding(base64.NoPadding)
		for k := range 3 {
			v, ed := aligned(enc.EncodeToString, e.alpha, 6, n, k)
			out = append(out, variant{s: v, enc: e.typ, edge: ed})
			if e.typ == Base64 {
				if q := url.QueryEscape(string(v)); q != string(v) {
					esc := *ed
					esc.escaped = true
					out = append(out, variant{s: []byte(q), enc: URL + "+" + Base64, edge: &esc}, variant{s: lowerPercent(q), enc: URL + "+" + Base64, edge: &esc})
				}
			}
		}
	}
	for _, alpha := range []string{b32UpperAlpha, b32LowerAlpha} {
		enc := base32.NewEncoding(alpha).WithPadding(base32.NoPadding)
		for k := range 5 {
			v, ed := aligned(enc.EncodeToString, alpha, 5, n, k)
			out = append(out, variant{s: v, enc: Base32, edge: ed})
		}
	}
	return out
}

const (
	hexUpper = "0123456789ABCDEF"
	hexLower = "0123456789abcdef"
)

// escapeAll writes every byte of n as prefix and two hex digits.
func escapeAll(n []byte, prefix, digits string) []byte {
	b := make([]byte, 0, len(n)*(len(prefix)+2))
	for _, c := range n {
		b = append(append(b, prefix...), digits[c>>4], digits[c&15])
	}
	return b
}

// rotate shifts n's letters by k places, each case in its own alphabet.
func rotate(n []byte, k byte) []byte {
	out := make([]byte, len(n))
	for i, c := range n {
		switch {
		case c >= 'a' && c <= 'z':
			c = 'a' + (c-'a'+k)%26
		case c >= 'A' && c <= 'Z':
			c = 'A' + (c-'A'+k)%26
		}
		out[i] = c
	}
	return out
}

// rot47 rotates n's printable ASCII characters ('!' to '~') by 47.
func rot47(n []byte) []byte {
	out := make([]byte, len(n))
	for i, c := range n {
		if c >= '!' && c <= '~' {
			c = '!' + (c-'!'+47)%94
		}
		out[i] = c
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

const (
	b64StdAlpha   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b64URLAlpha   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	b32UpperAlpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b32LowerAlpha = "abcdefghijklmnopqrstuvwxyz234567"
)

var decTables = map[string]*[256]int8{}

func init() {
	for _, a := range []string{b64StdAlpha, b64URLAlpha, b32UpperAlpha, b32LowerAlpha} {
		var t [256]int8
		for i := range t {
			t[i] = -1
		}
		for i, c := range []byte(a) {
			t[c] = int8(i)
		}
		decTables[a] = &t
	}
}

// aligned encodes n as if preceded by k zero bytes, with an unpadded
// encoder of width-bit characters, and keeps only the characters that n
// alone determines; the edge records the needle bits in the characters cut
// off either end.
func aligned(encode func([]byte) string, alpha string, width uint, n []byte, k int) ([]byte, *edge) {
	buf := make([]byte, k+len(n))
	copy(buf[k:], n)
	s := []byte(encode(buf))
	dec := decTables[alpha]
	ed := &edge{dec: dec, width: width}
	skip := (8*k + int(width) - 1) / int(width) // first character holding no prefix bit
	if skip > 0 {
		ed.preBits = uint(skip)*width - uint(8*k)
		if ed.preBits > 0 {
			ed.preVal = dec[s[skip-1]] & (1<<ed.preBits - 1)
		}
	}
	bits := 8 * len(buf)
	if rem := bits % int(width); rem != 0 {
		ed.postBits = uint(rem)
		ed.postVal = dec[s[len(s)-1]] >> (width - ed.postBits)
		s = s[:len(s)-1]
	}
	return s[skip:], ed
}

// ok checks the characters around a match of pattern p at data[i:j].
func (e *edge) ok(data []byte, i, j int) bool {
	if e == nil {
		return true
	}
	if e.preBits > 0 {
		c, ok := e.charBefore(data, i)
		if !ok || c&(1<<e.preBits-1) != e.preVal {
			return false
		}
	}
	if e.postBits > 0 {
		c, ok := e.charAt(data, j)
		if !ok || c>>(e.width-e.postBits) != e.postVal {
			return false
		}
	}
	return true
}

func (e *edge) charBefore(data []byte, i int) (int8, bool) {
	if e.escaped && i >= 3 && data[i-3] == '%' {
		return e.unescaped(data[i-2 : i])
	}
	if i < 1 {
		return 0, false
	}
	v := e.dec[data[i-1]]
	return v, v >= 0
}

func (e *edge) charAt(data []byte, j int) (int8, bool) {
	if e.escaped && j+3 <= len(data) && data[j] == '%' {
		return e.unescaped(data[j+1 : j+3])
	}
	if j >= len(data) {
		return 0, false
	}
	v := e.dec[data[j]]
	return v, v >= 0
}

func (e *edge) unescaped(h []byte) (int8, bool) {
	var b [1]byte
	if _, err := hex.Decode(b[:], h); err != nil {
		return 0, false
	}
	v := e.dec[b[0]]
	return v, v >= 0
}
