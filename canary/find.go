package canary

import (
	"bytes"
	"cmp"
	"compress/bzip2"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"io"
	"slices"
	"strings"
)

// Limits of Find's recursion into compressed and encoded regions. Data given
// to Find is untrusted: these caps bound the work a hostile input can cause.
const (
	maxDepth        = 3        // nested decodings (e.g. base64 → gzip → tar)
	maxInflate      = 32 << 20 // bytes inflated from one compressed stream
	maxDecodeBudget = 64 << 20 // bytes decoded or inflated per Find call
	minDecodeRun    = 32       // shortest base64/hex run worth decoding
	minWrap         = 40       // shortest line width of wrapped base64/hex (PEM: 64, MIME: 76, xxd -p: 60)
	maxStreams      = 512      // compressed-stream openings tried per Find call (each allocates a window)
)

type hitKey struct {
	tok int
	enc Encoding
}

type finder struct {
	s       *Set
	hits    map[hitKey]int
	budget  int
	streams int // openings left
}

// Find reports every token of the set present in data, once per token and
// encoding (at its first sighting), ordered by offset. It looks for each
// needle in plain text, hex, URL-encoding, JSON escapes, reversed, ROT13,
// base64 (both alphabets, every alignment, with or without padding and line
// breaks) and base32, and inside gzip, zlib, zip, bzip2 and tar streams and
// decoded base64/hex runs, up to a small depth (see docs/canary.md). data
// is untrusted; Find never panics on it and bounds its work. Find is safe
// for concurrent use.
func (s *Set) Find(data []byte) []Hit {
	if s == nil || len(s.pats) == 0 {
		return nil
	}
	f := &finder{s: s, hits: map[hitKey]int{}, budget: maxDecodeBudget, streams: maxStreams}
	f.find(data, Plain, 0, 0)
	return f.result()
}

func (f *finder) result() []Hit {
	if len(f.hits) == 0 {
		return nil
	}
	out := make([]Hit, 0, len(f.hits))
	for k, off := range f.hits {
		out = append(out, Hit{Token: f.s.tokens[k.tok], Encoding: k.enc, Offset: off})
	}
	slices.SortFunc(out, func(a, b Hit) int {
		return cmp.Or(cmp.Compare(a.Offset, b.Offset), cmp.Compare(a.Token.ID, b.Token.ID),
			cmp.Compare(a.Encoding, b.Encoding))
	})
	return out
}

func (f *finder) record(tok int, enc Encoding, off int) {
	k := hitKey{tok, enc}
	// The first sighting wins: the direct scan of a region runs before the
	// recursion into it, so a hit keeps its precise offset.
	if _, ok := f.hits[k]; !ok {
		f.hits[k] = off
	}
}

// find scans data, which sits at offset base of the top-level input (for
// nested regions, base is the region's offset) and was reached through
// outer.
func (f *finder) find(data []byte, outer Encoding, base, depth int) {
	nested := outer != Plain
	if textDecoded(outer) && !hasTextRun(data, MinNeedle) {
		// Binary through and through (a decoded archive, an image): no
		// text encoding can hide in it, and plain needles in it were
		// already seen through the outer encoding's own patterns. Only
		// compressed streams remain to look into.
		if depth < maxDepth {
			f.inflateAll(data, outer, base, depth)
		}
		return
	}
	f.scan(data, func(p *pattern, i int) {
		off := base + i
		if nested {
			off = base
		}
		f.record(p.tok, p.enc.wrap(outer), off)
	}, false)
	runs := base64Runs(data)
	for _, r := range runs {
		if len(r.parts) > 1 {
			joined := r.join(data)
			f.scan(joined, func(p *pattern, i int) {
				off := base + r.orig(i)
				if nested {
					off = base
				}
				f.record(p.tok, p.enc.wrap(outer), off)
			}, true)
		}
	}
	if depth >= maxDepth {
		return
	}
	for _, r := range runs {
		if r.n < minDecodeRun || f.budget <= 0 {
			continue
		}
		for _, d := range r.decodings(data) {
			if f.budget <= 0 {
				break
			}
			f.budget -= len(d.b)
			f.find(d.b, d.enc.wrap(outer), base+r.orig(d.at), depth+1)
		}
	}
	f.inflateAll(data, outer, base, depth)
}

// scan runs the prefilter over data and calls hit for every pattern found,
// in order of offset. With joinedOnly only patterns of line-breakable
// encodings count.
func (f *finder) scan(data []byte, hit func(p *pattern, i int), joinedOnly bool) {
	s := f.s
	filter := s.filter
	type match struct {
		p  *pattern
		at int
	}
	var found []match
	for i := 0; i+window <= len(data); i += s.stride {
		k := binary.LittleEndian.Uint64(data[i:])
		h := hashKey(k)
		if filter[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		for _, e := range s.byKey[k] {
			at := i - int(e.off)
			if at < 0 {
				continue
			}
			p := &s.pats[e.pat]
			if joinedOnly && !p.joined {
				continue
			}
			if bytes.HasPrefix(data[at:], p.s) && p.edge.ok(data, at, at+len(p.s)) {
				found = append(found, match{p, at})
			}
		}
	}
	slices.SortStableFunc(found, func(a, b match) int { return cmp.Compare(a.at, b.at) })
	for _, m := range found {
		hit(m.p, m.at)
	}
}

// inflateAll finds gzip and zlib streams in data and searches what they
// inflate to.
func (f *finder) inflateAll(data []byte, outer Encoding, base, depth int) {
	// One cursor per stream kind, each at its next candidate magic.
	magics := []struct {
		magic []byte
		at    int
	}{{magic: []byte{0x1f, 0x8b, 0x08}}, {magic: []byte{0x78}}, {magic: []byte("PK\x03\x04")}, {magic: []byte("BZh")}}
	seek := func(k, from int) {
		if j := bytes.Index(data[from:], magics[k].magic); j >= 0 {
			magics[k].at = from + j
		} else {
			magics[k].at = len(data)
		}
	}
	for k := range magics {
		seek(k, 0)
	}
	for f.budget > 0 {
		k := 0
		for j := range magics {
			if magics[j].at < magics[k].at {
				k = j
			}
		}
		i := magics[k].at
		if i+4 > len(data) {
			return
		}
		seek(k, i+1)
		if f.streams <= 0 {
			return
		}
		r, enc := openStream(data[i:], k)
		if r != nil {
			f.streams--
		}
		if r == nil {
			continue
		}
		limit := min(maxInflate, f.budget)
		out, _ := io.ReadAll(io.LimitReader(r, int64(limit))) // a truncated stream still yields its prefix
		if len(out) == 0 {
			continue
		}
		f.budget -= len(out)
		at := base + i
		if outer != Plain {
			at = base // i counts in decoded bytes, not in the caller's input
		}
		switch {
		case enc == Gzip && isTar(out):
			enc = TarGz
		case enc == Bzip2 && isTar(out):
			enc = TarBz2
		}
		f.find(out, enc.wrap(outer), at, depth+1)
	}
}

// openStream returns a reader of what the stream of kind k (an index of
// inflateAll's magics) at the start of b decompresses to, or nil.
func openStream(b []byte, k int) (io.Reader, Encoding) {
	switch k {
	case 0:
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, ""
		}
		zr.Multistream(false)
		return zr, Gzip
	case 1:
		if (uint16(b[0])<<8|uint16(b[1]))%31 != 0 || (b[1] != 0x01 && b[1] != 0x5e && b[1] != 0x9c && b[1] != 0xda) {
			return nil, ""
		}
		zr, err := zlib.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, ""
		}
		return zr, Zlib
	case 2:
		// A zip local file header; stored entries are plain text already.
		if len(b) < 30 || binary.LittleEndian.Uint16(b[8:]) != 8 {
			return nil, ""
		}
		off := 30 + int(binary.LittleEndian.Uint16(b[26:])) + int(binary.LittleEndian.Uint16(b[28:]))
		if off >= len(b) {
			return nil, ""
		}
		return flate.NewReader(bytes.NewReader(b[off:])), Zip
	case 3:
		if len(b) < 10 || b[3] < '1' || b[3] > '9' || string(b[4:10]) != "1AY&SY" {
			return nil, ""
		}
		return bzip2.NewReader(bytes.NewReader(b)), Bzip2
	}
	return nil, ""
}

// textDecoded reports whether the innermost step of outer decoded a text
// encoding, whose own patterns cover plain needles in what it decoded to.
func textDecoded(outer Encoding) bool {
	s := string(outer)
	if i := strings.LastIndexByte(s, '+'); i >= 0 {
		s = s[i+1:]
	}
	return s == string(Base64) || s == string(Base64URL) || s == string(Hex)
}

// hasTextRun reports whether data has a run of at least n printable ASCII
// characters.
func hasTextRun(data []byte, n int) bool {
	run := 0
	for _, c := range data {
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\r' || c == '\t' {
			run++
			if run >= n {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// isTar reports whether b starts with a POSIX or GNU tar header.
func isTar(b []byte) bool {
	return len(b) >= 263 && bytes.Equal(b[257:262], []byte("ustar"))
}

// A run is a stretch of base64-alphabet text, possibly broken into parts by
// line breaks (real or JSON-escaped) and spaces.
type run struct {
	parts  [][2]int // [start, end) of each part in data
	n      int      // total length
	url    bool     // holds '-' or '_'
	std    bool     // holds '+' or '/'
	nonHex bool
}

// Character classes for base64Runs.
const (
	clsAlpha  = 1 << iota // base64 alphabet (either)
	clsURL                // '-' or '_'
	clsStd                // '+' or '/'
	clsNonHex             // a letter beyond f
	clsPad                // '='
)

var cls [256]uint8

func init() {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_") {
		cls[c] = clsAlpha
		switch {
		case c == '-' || c == '_':
			cls[c] |= clsURL
		case c == '+' || c == '/':
			cls[c] |= clsStd
		case !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)):
			cls[c] |= clsNonHex
		}
	}
	cls['='] = clsPad
}

// base64Runs returns the runs of base64 (or hex) text in data that are worth
// a second look: those of at least minDecodeRun characters, and those broken
// into lines. A run continues across a line break ("\n", "\r\n", a
// JSON-escaped "\n") when the lines before it are at least
// minWrap characters long and all of the same length, as encoders that wrap
// lines produce.
func base64Runs(data []byte) []run {
	// Every run worth keeping has a part of at least minDecodeRun
	// characters (a wrapped run's first line is longer still), so probing
	// every minDecodeRun-th byte finds them all: most text is skipped.
	const stride = minDecodeRun
	isAlpha := func(i int) bool { return cls[data[i]]&clsAlpha != 0 }
	var runs []run
	var buf [][2]int // the parts of the run being looked at
	n := len(data)
	for p := stride - 1; p < n; {
		if !isAlpha(p) {
			p += stride
			continue
		}
		s, e := p, p+1
		for s > 0 && isAlpha(s-1) {
			s--
		}
		for e < n && isAlpha(e) {
			e++
		}
		buf = append(buf[:0], [2]int{s, e})
		cur := run{parts: buf}
		first := e - s
		// Follow the lines of a wrapped run: each line before the next
		// has the first line's length, and only a line break separates
		// them; padding ends the run.
		for first >= minWrap {
			last := cur.parts[len(cur.parts)-1]
			if last[1]-last[0] != first || last[1] < n && data[last[1]] == '=' {
				break
			}
			j := last[1]
			for j < n && j-last[1] <= 8 && !isAlpha(j) {
				j++
			}
			if j >= n || j-last[1] > 8 || !onlyBreaks(data[last[1]:j]) {
				break
			}
			k := j
			for k < n && isAlpha(k) {
				k++
			}
			cur.parts = append(cur.parts, [2]int{j, k})
		}
		end := cur.parts[len(cur.parts)-1][1]
		for _, pt := range cur.parts {
			cur.n += pt[1] - pt[0]
			var flags uint8
			for _, c := range data[pt[0]:pt[1]] {
				flags |= cls[c]
			}
			cur.url = cur.url || flags&clsURL != 0
			cur.std = cur.std || flags&clsStd != 0
			cur.nonHex = cur.nonHex || flags&clsNonHex != 0
		}
		buf = cur.parts[:0] // reuse the scratch array, grown or not
		if len(cur.parts) > 1 || cur.n >= minDecodeRun {
			cur.parts = slices.Clone(cur.parts)
			runs = append(runs, cur)
		}
		p = end + stride
	}
	return runs
}

// onlyBreaks reports whether sep is a line break, possibly escaped, with
// optional surrounding spaces or tabs.
func onlyBreaks(sep []byte) bool {
	if len(sep) == 0 || len(sep) > 8 {
		return false
	}
	brk := false
	for i := 0; i < len(sep); i++ {
		switch c := sep[i]; c {
		case '\n', '\r':
			brk = true
		case ' ', '\t':
		case '\\':
			if i+1 < len(sep) && (sep[i+1] == 'n' || sep[i+1] == 'r') {
				brk = true
				i++
				continue
			}
			return false
		default:
			return false
		}
	}
	return brk
}

func (r run) join(data []byte) []byte {
	out := make([]byte, 0, r.n)
	for _, p := range r.parts {
		out = append(out, data[p[0]:p[1]]...)
	}
	return out
}

// orig maps an offset in r.join to one in data.
func (r run) orig(i int) int {
	for _, p := range r.parts {
		if l := p[1] - p[0]; i < l {
			return p[0] + i
		} else {
			i -= l
		}
	}
	return r.parts[len(r.parts)-1][1]
}

type decoding struct {
	b   []byte
	enc Encoding
	at  int // offset in the joined run where the decoded text starts
}

// Anchors: how a gzip, zip, bzip2 or zlib stream starts in base64. A run
// holding one past its start (a URL path, a "name:" prefix) is decoded
// again from there, so a misaligned prefix does not hide the stream.
var streamAnchors = [][]byte{[]byte("H4sI"), []byte("UEsDB"), []byte("QlpoO"),
	[]byte("eJw"), []byte("eJx"), []byte("eJy"), []byte("eJz"), []byte("eNq"), []byte("eNr"), []byte("eNs"), []byte("eNt")}

// decodings decodes the run as hex (when it is all hex digits, or "0x" and
// hex digits) or base64 (the alphabet its characters say), and again from
// any stream anchor inside it.
func (r run) decodings(data []byte) []decoding {
	j := r.join(data)
	var out []decoding
	if d, enc := decodeText(j, !r.nonHex && !r.url && !r.std, r.url, r.std); len(d) > 0 {
		out = append(out, decoding{d, enc, 0})
	}
	if len(j) > 2 && j[0] == '0' && j[1] == 'x' && isHexText(j[2:]) {
		if d, enc := decodeText(j[2:], true, false, false); len(d) > 0 {
			out = append(out, decoding{d, enc, 2})
		}
	}
	for _, a := range streamAnchors {
		i := bytes.Index(j, a)
		if i <= 0 || i%4 == 0 && r.url != r.std {
			continue // absent, or already decoded at this alignment
		}
		url, std := bytes.ContainsAny(j[i:], "-_"), bytes.ContainsAny(j[i:], "+/")
		if d, enc := decodeText(j[i:], false, url, std); len(d) > 0 {
			out = append(out, decoding{d, enc, i})
		}
	}
	return out
}

func isHexText(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// decodeText decodes j as hex or as base64 in the alphabet that url and std
// (which characters it holds) select; nil when it does not decode.
func decodeText(j []byte, isHex, url, std bool) ([]byte, Encoding) {
	if isHex {
		if len(j)%2 == 1 {
			j = j[:len(j)-1]
		}
		out := make([]byte, len(j)/2)
		if _, err := hex.Decode(out, j); err != nil {
			return nil, ""
		}
		return out, Hex
	}
	if url && std {
		return nil, ""
	}
	enc, typ := base64.RawStdEncoding, Base64
	if url {
		enc, typ = base64.RawURLEncoding, Base64URL
	}
	if len(j)%4 == 1 {
		j = j[:len(j)-1]
	}
	out := make([]byte, enc.DecodedLen(len(j)))
	n, err := enc.Decode(out, j)
	if err != nil && n == 0 {
		return nil, ""
	}
	return out[:n], typ
}
