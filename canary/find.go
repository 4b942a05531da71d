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
	maxDepth        = 3         // nested decodings (e.g. base64 → gzip → tar)
	maxInflate      = 32 << 20  // bytes inflated from one compressed stream
	maxDecodeBudget = 64 << 20  // bytes decoded or inflated per Find call
	minDecodeRun    = 32        // shortest base64/hex run worth decoding
	minWrap         = 40        // shortest line width of wrapped base64/hex (PEM: 64, MIME: 76, xxd -p: 60)
	maxStreams      = 512       // compressed-stream openings tried per Find call (each allocates a window)
	maxGuesses      = 256       // headerless openings (raw deflate, keyed decryption) per Find call
	maxDicts        = 256 << 20 // dictionary memory xz/zstd streams may claim per Find call
	maxDict         = 64 << 20  // largest xz/lzma dictionary or zstd window opened (xz -9)

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
	// guesses is how many headerless openings (raw deflate, ciphertext
	// tried with a key) are left: apart from streams, so that junk cannot
	// use up the openings real magics need.
	guesses int
	// dicts is the dictionary memory xz and zstd streams may still claim.
	dicts int
	// Readers reused from one stream to the next (each holds a window
	// that costs more to allocate and clear than most streams to read).
	flate io.ReadCloser
	zlib  io.ReadCloser
	gzip  *gzip.Reader
	keys  *keyCache
	// bufs are scratch buffers per depth for the regions decoded or
	// inflated there: a region is searched (at the next depth) before
	// the next is decoded.
	bufs [maxDepth][]byte
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
	f := &finder{s: s, hits: map[hitKey]int{}, budget: maxDecodeBudget, streams: maxStreams,
		guesses: maxGuesses, dicts: maxDicts}
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
	rec := func(tok int, enc Encoding, i int) {
		off := base + i
		if nested {
			off = base
		}
		f.record(tok, enc.wrap(outer), off)
	}
	if textDecoded(outer) && !hasTextRun(data, MinNeedle) {
		// Binary through and through (a decoded archive, an image,
		// ciphertext): no text encoding can hide in it, and plain needles
		// in it were already seen through the outer encoding's own
		// patterns. What remains: forms that are binary themselves
		// (UTF-16, XOR), ciphertext, compressed streams.
		f.scan(data, rec, scanBinary)
		if depth < maxDepth {
			f.blobs(data, outer, base, depth, true)
			f.inflateAll(data, outer, base, depth)
		}
		return
	}
	f.scan(data, rec, scanAll)
	runs := allRuns(data)
	joined := make([][]byte, len(runs)) // each run's text, joined once
	for k, r := range runs {
		joined[k] = r.join(data)
		if len(r.parts) > 1 {
			f.scan(joined[k], func(tok int, enc Encoding, i int) {
				off := base + r.orig(i)
				if nested {
					off = base
				}
				f.record(tok, enc.wrap(outer), off)
			}, scanJoined)
		}
		f.interleaved(joined[k], func(i int) int { return base + r.orig(i) }, outer, depth)
	}
	if depth >= maxDepth {
		return
	}
	for k, r := range runs {
		if r.n < minDecodeRun || f.budget <= 0 {
			continue
		}
		r.decodings(joined[k], f.scratch(depth), func(d decoding) bool {
			if f.budget <= 0 {
				return false
			}
			f.budget -= len(d.b)
			f.find(d.b, d.enc.wrap(outer), base+r.orig(d.at), depth+1)
			return true
		})
	}
	f.numbers(data, outer, base, depth)
	f.uuencoded(data, outer, base, depth)
	f.blobs(data, outer, base, depth, textDecoded(outer))
	f.inflateAll(data, outer, base, depth)
}

// interleaved scans either half of a run's joined text j, every other
// character: the token's characters with a filler between each
// (zip(token, noise)). The halves are scanned for every form of the
// needles (a base64 token interleaved is found), not decoded further.
// orig maps an offset in j to one in the input.
func (f *finder) interleaved(j []byte, orig func(int) int, outer Encoding, depth int) {
	if len(j) < 2*MinNeedle {
		return
	}
	buf := f.scratch(depth)
	for half := range 2 {
		d := grow((*buf)[:0], (len(j)-half+1)/2)
		for k := range d {
			d[k] = j[half+2*k]
		}
		*buf = d[:0]
		f.scan(d, func(tok int, enc Encoding, i int) {
			off := orig(half + 2*i)
			if outer != Plain {
				off = orig(0)
			}
			f.record(tok, enc.wrap(Interleave).wrap(outer), off)
		}, scanAll)
	}
}

// Scan modes: which patterns count.
type scanMode int

const (
	scanAll    scanMode = iota
	scanJoined          // line-breakable encodings only, in a joined run
	scanBinary          // binary forms only (UTF-16, XOR), in a region without text
)

// scan runs the prefilter over data and calls hit for every pattern found,
// in order of offset.
func (f *finder) scan(data []byte, hit func(tok int, enc Encoding, i int), mode scanMode) {
	s := f.s
	stride, filter, diffFilter := s.stride, s.filter, s.diffFilter
	xor := mode != scanJoined
	var found []match
	// The loop does the probes only; the rare candidates are checked
	// apart, so that the loop keeps its values in registers.
	last := len(data) - window
	for i := 0; i <= last; i += stride {
		k := binary.LittleEndian.Uint64(data[i:])
		if w, m := hashKey(k); filter[w]&m == m {
			found = s.keyHits(found, data, i, k, mode)
		}
		if !xor || i == last {
			continue
		}
		// Single-byte XOR: the differences of neighbouring bytes do not
		// depend on the key. A zero difference (a run of one byte) is
		// skipped: it would match every run of zeros.
		d := k ^ binary.LittleEndian.Uint64(data[i+1:])
		if d == 0 {
			continue
		}
		if w, m := hashDiff(d); diffFilter[w]&m == m {
			found = s.diffHits(found, data, i, d)
		}
	}
	slices.SortStableFunc(found, func(a, b match) int { return cmp.Compare(a.at, b.at) })
	for _, m := range found {
		hit(m.tok, m.enc, m.at)
	}
}

// A match is a pattern found by scan.
type match struct {
	tok int
	enc Encoding
	at  int
}

// keyHits appends the patterns indexed by key k that data holds around i.
func (s *Set) keyHits(found []match, data []byte, i int, k uint64, mode scanMode) []match {
	for _, e := range s.byKey[k] {
		at := i - int(e.off)
		if at < 0 {
			continue
		}
		p := &s.pats[e.pat]
		if mode == scanJoined && !p.joined || mode == scanBinary && !p.bin {
			continue
		}
		if bytes.HasPrefix(data[at:], p.s) && p.edge.ok(data, at, at+len(p.s)) && p.b85.ok(data, at, at+len(p.s)) {
			found = append(found, match{p.tok, p.enc, at})
		}
	}
	return found
}

// diffHits appends the needles XORed with one byte that data holds around
// i, where the differences of neighbouring bytes are d.
func (s *Set) diffHits(found []match, data []byte, i int, d uint64) []match {
	for _, e := range s.byDiff[d] {
		at := i - int(e.off)
		n := &s.needles[e.pat]
		if at < 0 || at+len(n.b) > len(data) {
			continue
		}
		if key := data[at] ^ n.b[0]; key != 0 && xorEqual(data[at:at+len(n.b)], n.b, key) {
			found = append(found, match{n.tok, XOR, at})
		}
	}
	return found
}

// xorEqual reports whether b is n with every byte XORed with key.
func xorEqual(b, n []byte, key byte) bool {
	for i := range n {
		if b[i]^n[i] != key {
			return false
		}
	}
	return true
}

// inflateAll finds compressed streams (gzip, zlib, zip, bzip2, xz, lzma,
// zstd) and openssl's salted ciphertext by their magic in data and searches
// what they decode to.
func (f *finder) inflateAll(data []byte, outer Encoding, base, depth int) {
	// One cursor per magic, each at its next candidate, or, when not
	// exact, at the point its search resumes from. A search looks one
	// block further only, and the cursor furthest behind is the one moved
	// on: all search the same block of data in turn while it is in the
	// cache, rather than each the whole of data.
	type cursor struct {
		at    int
		exact bool
	}
	var magics [len(streamMagics)]cursor
	passwords := f.s.hasPasswords()
	seek := func(k, from int) {
		magics[k] = cursor{len(data), true}
		if streamMagics[k].kind == kindSalted && !passwords {
			return // no password to try
		}
		m := streamMagics[k]
		for from+m.back < len(data) {
			// Look for the magic's rarest part, then check the rest.
			lo := from + m.back
			hi := min(len(data), lo+seekBlock)
			j := bytes.Index(data[lo:hi], m.find)
			if j < 0 {
				if hi < len(data) {
					// find may straddle hi: resume just before it.
					magics[k] = cursor{hi - len(m.find) + 1 - m.back, false}
				}
				return
			}
			at := from + j
			if bytes.HasPrefix(data[at:], m.magic) {
				magics[k].at = at
				return
			}
			from = at + 1
		}
	}
	for k := range streamMagics {
		seek(k, 0)
	}
	for f.budget > 0 {
		k := 0
		for j := range magics {
			if magics[j].at < magics[k].at {
				k = j
			}
		}
		if !magics[k].exact {
			seek(k, magics[k].at)
			continue
		}
		i := magics[k].at
		if i+4 > len(data) {
			return
		}
		seek(k, i+1)
		if f.streams <= 0 {
			return
		}
		at := base + i
		if outer != Plain {
			at = base // i counts in decoded bytes, not in the caller's input
		}
		switch kind := streamMagics[k].kind; kind {
		case kindSalted:
			f.streams--
			f.decryptSalted(data[i:], outer, at, depth)
		case kindA85, kindBtoa:
			f.frame85(data, i, kind == kindBtoa, outer, base, depth)
		default:
			r, enc := f.openStream(data[i:], kind)
			if r == nil {
				continue
			}
			f.streams--
			f.inflate(r, enc, outer, at, depth)
		}
	}
}

// seekBlock is how far one search for a stream magic looks (within L1).
const seekBlock = 16 << 10

// inflate reads what r decompresses to (within the caps) and searches it.
func (f *finder) inflate(r io.Reader, enc, outer Encoding, at, depth int) {
	limit := min(maxInflate, f.budget)
	var out []byte
	if d, ok := r.(*decoded); ok {
		out = d.b[:min(len(d.b), limit)]
	} else {
		// A truncated stream still yields its prefix.
		buf := f.scratch(depth)
		out = readAll((*buf)[:0], io.LimitReader(r, int64(limit)))
		if cap(out) > cap(*buf) {
			*buf = out[:0]
		}
	}
	if c, ok := r.(io.Closer); ok && r != f.flate && r != f.zlib && r != io.Reader(f.gzip) {
		c.Close()
	}
	if len(out) == 0 {
		return
	}
	f.budget -= len(out)
	switch {
	case enc == Gzip && isTar(out):
		enc = TarGz
	case enc == Bzip2 && isTar(out):
		enc = TarBz2
	}
	f.find(out, enc.wrap(outer), at, depth+1)
}

// scratch returns the scratch buffer of depth (a new one past the last
// depth decoded from).
func (f *finder) scratch(depth int) *[]byte {
	if depth < len(f.bufs) {
		return &f.bufs[depth]
	}
	return new([]byte)
}

// readAll is io.ReadAll appending to buf; it returns what was read before
// an error.
func readAll(buf []byte, r io.Reader) []byte {
	if cap(buf) < 512 {
		buf = make([]byte, 0, 512)
	}
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			return buf
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // let append grow it
		}
	}
}

// Stream kinds.
const (
	kindGzip = iota
	kindZlib
	kindZip
	kindBzip2
	kindXz
	kindZstd
	kindSalted
	kindA85  // Adobe's <~ ~> frame
	kindBtoa // btoa's xbtoa Begin frame
)

// A magic is how a stream of a kind starts; find is the part of it looked
// for (its rarest bytes in text), back how far into magic find starts.
type magic struct {
	kind        int
	magic, find []byte
	back        int
}

func newMagic(kind int, m string, back int) magic {
	return magic{kind: kind, magic: []byte(m), find: []byte(m[back:]), back: back}
}

// streamMagics are the magics inflateAll looks for, one cursor each. A
// zlib stream is looked for by its second byte, one of four: its first,
// 'x', is common in text, and a search that stops at every one of them
// costs more than the rest of the scan.
var streamMagics = [...]magic{
	newMagic(kindGzip, "\x1f\x8b\x08", 0),
	newMagic(kindZlib, "\x78\x01", 1),
	newMagic(kindZlib, "\x78\x5e", 1),
	newMagic(kindZlib, "\x78\x9c", 1),
	newMagic(kindZlib, "\x78\xda", 1),
	newMagic(kindZip, "PK\x03\x04", 2),
	// bzip2: "BZh", the block size digit, then the block magic "1AY&SY":
	// '&' is rare in text and outside base64, 'B' is not.
	{kind: kindBzip2, magic: []byte("BZh"), find: []byte("&SY"), back: 7},
	newMagic(kindXz, "\xfd7zXZ\x00", 0),
	newMagic(kindZstd, "\x28\xb5\x2f\xfd", 1),
	newMagic(kindSalted, "Salted__", 0),
	newMagic(kindA85, "<~", 1),
	newMagic(kindBtoa, btoaBegin, 0),
}

// openStream returns a reader of what the stream of kind k at the start of
// b decompresses to, or nil.
func (f *finder) openStream(b []byte, k int) (io.Reader, Encoding) {
	switch k {
	case kindGzip:
		if f.gzip == nil {
			f.gzip = new(gzip.Reader)
		}
		if err := f.gzip.Reset(bytes.NewReader(b)); err != nil {
			return nil, ""
		}
		f.gzip.Multistream(false)
		return f.gzip, Gzip
	case kindZlib:
		if len(b) < 2 || (uint16(b[0])<<8|uint16(b[1]))%31 != 0 || (b[1] != 0x01 && b[1] != 0x5e && b[1] != 0x9c && b[1] != 0xda) {
			return nil, ""
		}
		if f.zlib == nil {
			zr, err := zlib.NewReader(bytes.NewReader(b))
			if err != nil {
				return nil, ""
			}
			f.zlib = zr
		} else if err := f.zlib.(zlib.Resetter).Reset(bytes.NewReader(b), nil); err != nil {
			return nil, ""
		}
		return f.zlib, Zlib
	case kindZip:
		// A zip local file header; stored entries are plain text already.
		if len(b) < 30 || binary.LittleEndian.Uint16(b[8:]) != 8 {
			return nil, ""
		}
		off := 30 + int(binary.LittleEndian.Uint16(b[26:])) + int(binary.LittleEndian.Uint16(b[28:]))
		if off >= len(b) {
			return nil, ""
		}
		return f.rawFlate(b[off:]), Zip
	case kindBzip2:
		if len(b) < 10 || b[3] < '1' || b[3] > '9' || string(b[4:10]) != "1AY&SY" {
			return nil, ""
		}
		return bzip2.NewReader(bytes.NewReader(b)), Bzip2
	case kindXz:
		return f.openXz(b)
	case kindZstd:
		return f.openZstd(b)
	}
	return nil, ""
}

// decoded is a stream read in full when it was opened (xz): inflate takes
// its bytes as they are.
type decoded struct{ b []byte }

func (d *decoded) Read(p []byte) (int, error) {
	if len(d.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, d.b)
	d.b = d.b[n:]
	return n, nil
}

// rawFlate returns the finder's raw-deflate reader reset to b.
func (f *finder) rawFlate(b []byte) io.Reader {
	if f.flate == nil {
		f.flate = flate.NewReader(bytes.NewReader(b))
	} else {
		f.flate.(flate.Resetter).Reset(bytes.NewReader(b), nil)
	}
	return f.flate
}

// blobStarts returns where an opaque blob may start in data: its start
// (decoded regions, and data whose first bytes are binary) and after each
// blank line (an HTTP message's or a multipart part's headers) followed by
// binary bytes.
func blobStarts(data []byte, decoded bool) []int {
	var out []int
	if decoded || binaryHead(data) {
		out = append(out, 0)
	}
	for i, n := 0, 0; n < 16; n++ {
		j := bytes.Index(data[i:], blankLine)
		if j < 0 {
			break
		}
		i += j + 4
		if binaryHead(data[i:]) {
			out = append(out, i)
		}
	}
	return out
}

var blankLine = []byte("\r\n\r\n")

// binaryHead reports whether the first 32 bytes of b hold a byte that text
// does not: compressed and encrypted data almost surely do (an IV or nonce
// sent first may be text).
func binaryHead(b []byte) bool {
	if len(b) < 16 {
		return false
	}
	for _, c := range b[:min(len(b), 32)] {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c >= 0x7f {
			return true
		}
	}
	return false
}

// blobs tries what has no magic at the starts of opaque blobs in data: raw
// deflate, and decryption with the keys the trace showed.
func (f *finder) blobs(data []byte, outer Encoding, base, depth int, decoded bool) {
	for _, i := range blobStarts(data, decoded) {
		at := base + i
		if outer != Plain {
			at = base
		}
		b := data[i:]
		// Raw deflate: a fixed or dynamic Huffman block (stored blocks
		// hold plain text, already seen).
		if len(b) >= 16 && (b[0]>>1)&3 != 0 && (b[0]>>1)&3 != 3 && f.guesses > 0 && f.budget > 0 {
			f.guesses--
			f.inflate(f.rawFlate(b), Deflate, outer, at, depth)
		}
		if in := innermost(outer); in != OpenSSL && in != AES {
			f.decryptBlob(b, outer, at, depth) // not again on what a key gave
		}
	}
}

// textDecoded reports whether the innermost step of outer decoded a text
// encoding, whose own patterns cover plain needles in what it decoded to,
// or decrypted (where, without a run of text, no needle can be).
func textDecoded(outer Encoding) bool {
	s := string(outer)
	if i := strings.LastIndexByte(s, '+'); i >= 0 {
		s = s[i+1:]
	}
	switch Encoding(s) {
	case Base64, Base64URL, Hex, Ascii85, OpenSSL, AES:
		return true
	}
	return false
}

// innermost is the last step of an encoding chain.
func innermost(e Encoding) Encoding {
	s := string(e)
	if i := strings.LastIndexByte(s, '+'); i >= 0 {
		s = s[i+1:]
	}
	return Encoding(s)
}

// hasTextRun reports whether data has a run of at least n printable ASCII
// characters.
func hasTextRun(data []byte, n int) bool {
	// A run of n holds data[i] for some i in every n-th position: test
	// those first, and look around the ones that are text.
	for i := n - 1; i < len(data); i += n {
		if !isText[data[i]] {
			continue
		}
		s, e := i, i+1
		for s > 0 && isText[data[s-1]] && i-s < n {
			s--
		}
		for e < len(data) && isText[data[e]] && e-s < n {
			e++
		}
		if e-s >= n {
			return true
		}
	}
	return false
}

// isText is the bytes of text for hasTextRun: printable ASCII and
// line breaks and tabs.
var isText = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = true
	}
	t['\n'], t['\r'], t['\t'] = true, true, true
	return t
}()

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

// Character classes for base64RunsShort.
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

// base64RunsShort returns the runs of base64 (or hex) text in data that are
// worth a second look: those of at least minDecodeRun characters, and those
// broken into lines. A run continues across a line break ("\n", "\r\n", a
// JSON-escaped "\n") when the lines before it are at least
// minWrap characters long and all of the same length, as encoders that wrap
// lines produce. It also appends to short (when not nil) where a
// short-wrapped run (see shortRuns) may be: probes that landed on a line
// break or on a line narrower than minWrap next to a break.
func base64RunsShort(data []byte, short *[]int) []run {
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
			if short != nil && (data[p] == '\n' || data[p] == '\r') {
				*short = append(*short, p)
			}
			p += stride
			continue
		}
		s, e := p, p+1
		for s > 0 && isAlpha(s-1) {
			s--
		}
		e = alphaEnd(data, e)
		first := e - s
		if first < minDecodeRun {
			// A word (most probes): too short to be decoded or to be
			// the first line of a wrapped run; perhaps a line of a
			// short-wrapped one, unless a space follows it (prose;
			// shortRuns would drop it).
			if short != nil && first >= minShortWrap &&
				(breakAt(data, e) || breakBefore(data, s) && (e == n || data[e] != ' ')) && twoKinds(data[s:e]) {
				*short = append(*short, p)
			}
			p = e + stride
			continue
		}
		buf = append(buf[:0], [2]int{s, e})
		cur := run{parts: buf}
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
		}
		buf = cur.parts[:0] // reuse the scratch array, grown or not
		if short != nil && first >= minShortWrap && first < minWrap && (breakAt(data, e) || breakBefore(data, s)) &&
			twoKinds(data[s:e]) {
			*short = append(*short, p)
		}
		if len(cur.parts) > 1 || cur.n >= minDecodeRun {
			// Which alphabet: only for the runs kept (most words are not).
			var flags uint8
			for _, pt := range cur.parts {
				flags |= clsOf(data[pt[0]:pt[1]])
			}
			cur.url, cur.std, cur.nonHex = flags&clsURL != 0, flags&clsStd != 0, flags&clsNonHex != 0
			cur.parts = slices.Clone(cur.parts)
			runs = append(runs, cur)
		}
		p = end + stride
	}
	return runs
}

// alphaEnd returns where the run of base64 alphabet at data[i:] ends:
// eight bytes per step through the long lines of an encoding.
func alphaEnd(data []byte, i int) int {
	for ; i+8 <= len(data); i += 8 {
		b := data[i : i+8 : i+8]
		if cls[b[0]]&cls[b[1]]&cls[b[2]]&cls[b[3]]&cls[b[4]]&cls[b[5]]&cls[b[6]]&cls[b[7]]&clsAlpha == 0 {
			break
		}
	}
	for i < len(data) && cls[data[i]]&clsAlpha != 0 {
		i++
	}
	return i
}

// clsOf is the union of the classes of b's characters.
func clsOf(b []byte) uint8 {
	var f uint8
	for ; len(b) >= 8; b = b[8:] {
		f |= cls[b[0]] | cls[b[1]] | cls[b[2]] | cls[b[3]] | cls[b[4]] | cls[b[5]] | cls[b[6]] | cls[b[7]]
	}
	for _, c := range b {
		f |= cls[c]
	}
	return f
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

// join returns the run's text without its line breaks: the caller must
// not write to it (a run of one part is data's own bytes).
func (r run) join(data []byte) []byte {
	if len(r.parts) == 1 {
		return data[r.parts[0][0]:r.parts[0][1]:r.parts[0][1]]
	}
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
var streamAnchors = [...][]byte{[]byte("H4sI"), []byte("UEsDB"), []byte("QlpoO"),
	[]byte("eJw"), []byte("eJx"), []byte("eJy"), []byte("eJz"), []byte("eNq"), []byte("eNr"), []byte("eNs"), []byte("eNt")}

// decodings decodes the run, whose joined text is j, as hex (when it is
// all hex digits, or "0x" and hex digits) or base64 (the alphabet its
// characters say), and again from any stream anchor inside it, and calls
// yield with each until it returns false. The decoded bytes are in *buf,
// reused: they are valid until yield returns.
func (r run) decodings(j []byte, buf *[]byte, yield func(decoding) bool) {
	try := func(at int, isHex, url, std bool) bool {
		d, enc := decodeText((*buf)[:0], j[at:], isHex, url, std)
		if cap(d) > cap(*buf) {
			*buf = d[:0]
		}
		return len(d) == 0 || yield(decoding{d, enc, at})
	}
	if !try(0, !r.nonHex && !r.url && !r.std, r.url, r.std) {
		return
	}
	if len(j) > 2 && j[0] == '0' && j[1] == 'x' && isHexText(j[2:]) {
		if !try(2, true, false, false) {
			return
		}
	}
	for _, i := range anchorsIn(j) {
		if i <= 0 || i%4 == 0 && r.url != r.std {
			continue // absent, or already decoded at this alignment
		}
		if !try(i, false, bytes.ContainsAny(j[i:], "-_"), bytes.ContainsAny(j[i:], "+/")) {
			return
		}
	}
}

// anchorsIn returns where each of streamAnchors first occurs in j, -1
// where it does not: one search per prefix the anchors share (five), not
// one per anchor.
func anchorsIn(j []byte) [len(streamAnchors)]int {
	var first [len(streamAnchors)]int
	for k := range first {
		first[k] = -1
	}
	for _, g := range anchorGroups {
		left := len(g.anchors)
		for i := 0; left > 0; i++ {
			n := bytes.Index(j[i:], g.prefix)
			if n < 0 {
				break
			}
			i += n
			for _, k := range g.anchors {
				if first[k] < 0 && bytes.HasPrefix(j[i:], streamAnchors[k]) {
					first[k] = i
					left--
				}
			}
		}
	}
	return first
}

// An anchorGroup is the streamAnchors that start with prefix.
type anchorGroup struct {
	prefix  []byte
	anchors []int // indexes in streamAnchors
}

// anchorGroups groups streamAnchors by their first two bytes.
var anchorGroups = func() []anchorGroup {
	var out []anchorGroup
	for k, a := range streamAnchors {
		g := slices.IndexFunc(out, func(g anchorGroup) bool { return bytes.Equal(g.prefix, a[:2]) })
		if g < 0 {
			g = len(out)
			out = append(out, anchorGroup{prefix: a[:2]})
		}
		out[g].anchors = append(out[g].anchors, k)
	}
	return out
}()

func isHexText(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// decodeText decodes j as hex or as base64 in the alphabet that url and std
// (which characters it holds) select, into dst's array when it is large
// enough; nil when it does not decode.
func decodeText(dst, j []byte, isHex, url, std bool) ([]byte, Encoding) {
	if isHex {
		if len(j)%2 == 1 {
			j = j[:len(j)-1]
		}
		out := grow(dst, len(j)/2)
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
	out := grow(dst, enc.DecodedLen(len(j)))
	n, err := enc.Decode(out, j)
	if err != nil && n == 0 {
		return nil, ""
	}
	return out[:n], typ
}

// grow returns a slice of n bytes, dst's array when it holds them.
func grow(dst []byte, n int) []byte {
	if cap(dst) >= n {
		return dst[:n]
	}
	return make([]byte, n)
}
