package canary

import (
	"bytes"
	"encoding/binary"
)

// A base85 alphabet: 4 bytes (big-endian) become 5 digits.
type alpha85 struct {
	enc   Encoding
	chars string
	dec   [256]int8
	// zero is the character standing for a group of four zero bytes
	// (ascii85's 'z'), 0 when the alphabet has none.
	zero byte
}

func newAlpha85(enc Encoding, chars string, zero byte) *alpha85 {
	a := &alpha85{enc: enc, chars: chars, zero: zero}
	for i := range a.dec {
		a.dec[i] = -1
	}
	for i, c := range []byte(chars) {
		a.dec[c] = int8(i)
	}
	return a
}

var (
	// ascii85: '!' (0) to 'u' (84), as Adobe (<~ ~>), btoa and Python's
	// a85encode write it.
	a85 = func() *alpha85 {
		var b []byte
		for c := byte('!'); c <= 'u'; c++ {
			b = append(b, c)
		}
		return newAlpha85(Ascii85, string(b), 'z')
	}()
	// RFC 1924's alphabet: Python's b85encode, Mercurial and git binary
	// patches.
	b85 = newAlpha85(Base85, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~", 0)
	// ZeroMQ's Z85.
	z85 = newAlpha85(Z85, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#", 0)
)

// encode writes the full groups of b (len(b) a multiple of 4).
func (a *alpha85) encode(b []byte) []byte {
	var out []byte
	for i := 0; i+4 <= len(b); i += 4 {
		v := binary.BigEndian.Uint32(b[i:])
		if v == 0 && a.zero != 0 {
			out = append(out, a.zero)
			continue
		}
		var g [5]byte
		for j := 4; j >= 0; j-- {
			g[j] = a.chars[v%85]
			v /= 85
		}
		out = append(out, g[:]...)
	}
	return out
}

// group decodes the 5 digits of g, padded with the highest digit when
// shorter (the last group of an encoding, which holds len(g)-1 bytes).
func (a *alpha85) group(g []byte) ([4]byte, bool) {
	var out [4]byte
	var v uint64
	for i := range 5 {
		d := int8(84)
		if i < len(g) {
			if d = a.dec[g[i]]; d < 0 {
				return out, false
			}
		}
		v = v*85 + uint64(d)
	}
	if v > 0xffffffff {
		return out, false
	}
	binary.BigEndian.PutUint32(out[:], uint32(v))
	return out, true
}

// edge85 holds the needle bytes that share a group with the bytes around
// it: the pattern is the needle's full groups only, and the groups either
// side are decoded to check the rest.
type edge85 struct {
	a         *alpha85
	pre, post []byte
}

// base85Variants returns, per alphabet and per alignment of the needle in
// the 4-byte groups, the digits of the groups the needle fills.
func base85Variants(n []byte) []variant {
	var out []variant
	for _, a := range []*alpha85{a85, b85, z85} {
		for head := range 4 { // needle bytes in the group before the first full one
			if head >= len(n) {
				break
			}
			body := n[head:]
			full := len(body) / 4 * 4
			if full == 0 {
				continue
			}
			out = append(out, variant{s: a.encode(body[:full]), enc: a.enc,
				b85: &edge85{a: a, pre: n[:head], post: body[full:]}})
		}
	}
	return out
}

// ok checks the groups around a match at data[i:j].
func (e *edge85) ok(data []byte, i, j int) bool {
	if e == nil {
		return true
	}
	if len(e.pre) > 0 {
		var g [4]byte
		switch {
		case e.a.zero != 0 && i >= 1 && data[i-1] == e.a.zero:
		case i >= 5:
			var ok bool
			if g, ok = e.a.group(data[i-5 : i]); !ok {
				return false
			}
		default:
			return false
		}
		if !bytes.Equal(g[4-len(e.pre):], e.pre) {
			return false
		}
	}
	if len(e.post) > 0 {
		// The next group, or the encoding's last, shorter one.
		c := 0
		for j+c < len(data) && c < 5 && e.a.dec[data[j+c]] >= 0 {
			c++
		}
		if c < len(e.post)+1 {
			return false
		}
		g, ok := e.a.group(data[j : j+c])
		if !ok || !bytes.Equal(g[:len(e.post)], e.post) {
			return false
		}
	}
	return true
}

// decodeA85 decodes ascii85 text (whitespace ignored, 'z' for four zero
// bytes, 'y' for four spaces as btoa -y writes) up to the first character
// outside the alphabet.
func decodeA85(text []byte) []byte {
	var out []byte
	var g []byte
	for _, c := range text {
		switch {
		case c == ' ' || c == '\n' || c == '\r' || c == '\t':
			continue
		case c == 'z' && len(g) == 0:
			out = append(out, 0, 0, 0, 0)
			continue
		case c == 'y' && len(g) == 0:
			out = append(out, ' ', ' ', ' ', ' ')
			continue
		case a85.dec[c] < 0:
			return finishA85(out, g)
		}
		g = append(g, c)
		if len(g) == 5 {
			v, ok := a85.group(g)
			if !ok {
				return out
			}
			out = append(out, v[:]...)
			g = g[:0]
		}
	}
	return finishA85(out, g)
}

func finishA85(out, g []byte) []byte {
	if len(g) >= 2 {
		if v, ok := a85.group(g); ok {
			out = append(out, v[:len(g)-1]...)
		}
	}
	return out
}

const btoaBegin = "xbtoa Begin"

// frame85 decodes the ascii85 frame (Adobe's <~ ~>, btoa's xbtoa
// Begin/End) that starts at data[i] and searches it. Inside frames lines may
// be wrapped and groups folded ('z', 'y'), which the patterns do not see.
func (f *finder) frame85(data []byte, i int, btoa bool, outer Encoding, base, depth int) {
	open := "<~"
	if btoa {
		open = btoaBegin
	}
	// The frame ends at its closing "~>" or "xbtoa End": '~' and 'x' are
	// outside the alphabet, where decodeA85 stops anyway.
	start := i + len(open)
	if len(data)-start < MinNeedle || f.streams <= 0 {
		return
	}
	f.streams--
	d := decodeA85(data[start:min(len(data), start+f.budget)])
	if len(d) < MinNeedle {
		return
	}
	f.budget -= len(d)
	at := base + i
	if outer != Plain {
		at = base
	}
	f.find(d, Ascii85.wrap(outer), at, depth+1)
}
