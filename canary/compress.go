package canary

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz/lzma"
)

// openXz opens the first block of the xz stream at the start of b. Only
// LZMA2 blocks whose dictionary fits the finder's memory are opened: the
// header is read here, before any allocation, since a hostile header can
// claim a 4 GiB dictionary. Single-threaded xz and Python's lzma write one
// block; multi-threaded xz starts a block every 3 dictionaries (24 MiB at
// the default level), well past what one Find inflates.
func (f *finder) openXz(b []byte) (io.Reader, Encoding) {
	// Stream header (12 bytes), then the first block header: its size byte,
	// flags, optional compressed and uncompressed sizes, the filter chain.
	if len(b) < 12+8 || b[12] == 0 {
		return nil, ""
	}
	hlen := (int(b[12]) + 1) * 4
	if 12+hlen > len(b) || crc32.ChecksumIEEE(b[6:8]) != binary.LittleEndian.Uint32(b[8:12]) ||
		crc32.ChecksumIEEE(b[12:12+hlen-4]) != binary.LittleEndian.Uint32(b[12+hlen-4:]) {
		return nil, "" // the stream flags' and block header's CRC32 must hold, as for xz itself
	}
	h := b[12 : 12+hlen]
	flags := h[1]
	if flags&0x3c != 0 {
		return nil, ""
	}
	p := 2
	for _, present := range []bool{flags&0x40 != 0, flags&0x80 != 0} {
		if present {
			if _, n := uvarint(h[p:]); n <= 0 {
				return nil, ""
			} else {
				p += n
			}
		}
	}
	// Only a lone LZMA2 filter: delta and branch filters before it are
	// rare in exfiltration and would need their own decoding.
	if flags&3 != 0 {
		return nil, ""
	}
	id, n := uvarint(h[p:])
	if n <= 0 || id != 0x21 {
		return nil, ""
	}
	p += n
	size, n := uvarint(h[p:])
	if n <= 0 || size != 1 || p+n >= len(h) {
		return nil, ""
	}
	dict, err := lzma.DecodeDictCap(h[p+n])
	if err != nil || dict > maxDict {
		return nil, ""
	}
	// Most blobs are small: decode with a small dictionary first (a match
	// can reach no further back than what was decoded), and again with the
	// stream's own only when the small one did not do. The chunk headers
	// say how much the block decodes to: a dictionary that holds all of it
	// is as good as the stream's own, and most blobs need only the
	// smallest one.
	body := b[12+hlen:]
	limit := min(maxInflate, f.budget)
	need := lzma2Size(body, limit)
	small := min(dict, xzSmallDict, max(need, lzma.MinDictCap))
	if !f.claimDict(small) {
		return nil, ""
	}
	out, err := readXz(body, small, limit, need)
	if err != nil && dict > small && need > small && int64(len(out)) >= small/2 && f.claimDict(dict) {
		out, _ = readXz(body, dict, limit, need)
	}
	if len(out) == 0 {
		return nil, ""
	}
	return &decoded{out}, Xz
}

// xzSmallDict is the dictionary xz blocks are first decoded with.
const xzSmallDict = 256 << 10

// lzma2Size is how many bytes the LZMA2 chunks at the start of body
// decode to, as their headers say (a truncated chunk counts whole), or
// more than limit when that is more than limit.
func lzma2Size(body []byte, limit int) int64 {
	var n int64
	for p := 0; p < len(body) && n <= int64(limit); {
		c := body[p]
		switch {
		case c == 0: // end of the block's data
			return n
		case c == 1 || c == 2: // uncompressed chunk: its size-1 (16 bits)
			if p+3 > len(body) {
				return n
			}
			size := int(body[p+1])<<8 | int(body[p+2]) + 1
			n += int64(size)
			p += 3 + size
		case c >= 0x80: // LZMA chunk: unpacked size-1 (21 bits), packed size-1, properties
			if p+5 > len(body) {
				return n
			}
			n += int64(int(c&0x1f)<<16 | int(body[p+1])<<8 | int(body[p+2]) + 1)
			p += 5 + (int(body[p+3])<<8 | int(body[p+4]) + 1)
			if c >= 0xc0 {
				p++
			}
		default: // not LZMA2: what the decoder makes of it is bounded anyway
			return int64(limit) + 1
		}
	}
	return n
}

// readXz decodes an LZMA2 block body with a dictionary of dict bytes, up to
// limit bytes (size, what the chunk headers say, is where the output
// buffer starts); what was decoded before an error is returned with it.
func readXz(body []byte, dict int64, limit int, size int64) ([]byte, error) {
	r, err := lzma.Reader2Config{DictCap: max(int(dict), lzma.MinDictCap)}.NewReader2(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	// bytes.Buffer reads into at least 512 free bytes: room for the last
	// read, which finds the end.
	out := bytes.NewBuffer(make([]byte, 0, min(size, int64(limit), xzSmallDict)+bytes.MinRead))
	_, err = io.Copy(out, io.LimitReader(r, int64(limit)))
	if err == nil && out.Len() < limit && !r.EOS() {
		err = io.ErrUnexpectedEOF
	}
	return out.Bytes(), err
}

// openZstd opens the Zstandard frame at the start of b, decoded
// synchronously (no goroutine) with its window capped.
func (f *finder) openZstd(b []byte) (io.Reader, Encoding) {
	if len(b) < 6 {
		return nil, ""
	}
	win := zstdWindow(b[4:])
	if win < 0 || !f.claimDict(win) {
		return nil, ""
	}
	d, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(maxDict), zstd.WithDecoderMaxMemory(maxInflate))
	if err != nil {
		return nil, ""
	}
	return zstdCloser{d}, Zstd
}

// zstdCloser frees the decoder when the stream has been read.
type zstdCloser struct{ *zstd.Decoder }

func (z zstdCloser) Close() error { z.Decoder.Close(); return nil }

// zstdWindow is the window size a zstd frame header (after the magic)
// declares, or -1 when it is malformed.
func zstdWindow(h []byte) int64 {
	fhd := h[0]
	if fhd&0x08 != 0 { // reserved bit
		return -1
	}
	single := fhd&0x20 != 0
	if !single {
		wd := h[1]
		exp := int64(wd>>3) + 10
		base := int64(1) << exp
		return base + base/8*int64(wd&7)
	}
	// Single segment: the window is the content size.
	dictID := []int{0, 1, 2, 4}[fhd&3]
	fcs := []int{1, 2, 4, 8}[fhd>>6]
	p := 1 + dictID
	if p+fcs > len(h) {
		return -1
	}
	var v uint64
	for i := fcs - 1; i >= 0; i-- {
		v = v<<8 | uint64(h[p+i])
	}
	if fcs == 2 {
		v += 256
	}
	if v > 1<<40 {
		return 1 << 40
	}
	return int64(v)
}

// claimDict takes n bytes of dictionary memory from the finder's budget.
func (f *finder) claimDict(n int64) bool {
	if n > maxDict || n > int64(f.dicts) {
		return false
	}
	f.dicts -= int(max(n, lzma.MinDictCap))
	return true
}

// uvarint reads an xz variable-length integer (at most 9 bytes).
func uvarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 9; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if i > 0 && b[i] == 0 {
				return 0, -1
			}
			return v, i + 1
		}
	}
	return 0, -1
}
