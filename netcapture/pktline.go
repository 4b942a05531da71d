package netcapture

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Git's wire formats, read from untrusted bytes: pkt-lines (a 4-digit hex
// length, the length included, then the payload; "0000" is a flush) and
// packfiles ("PACK", version, object count, then per object a type and
// size varint and a zlib stream). Both parsers are bounded by their input
// and fuzzed.

const (
	pktFlush    = "0000"
	maxPktLines = 4096 // command lines read from one request
)

var errPktShort = errors.New("pkt-line: input ends inside a line")

// readPktLines reads pkt-lines from b up to and including the first flush,
// and returns their payloads and the bytes after the flush. Delimiter and
// response-end packets (0001, 0002) end the section like a flush.
func readPktLines(b []byte) (lines [][]byte, rest []byte, err error) {
	for len(lines) < maxPktLines {
		if len(b) < 4 {
			return lines, b, errPktShort
		}
		n, err := strconv.ParseUint(string(b[:4]), 16, 16)
		if err != nil {
			return lines, b, fmt.Errorf("pkt-line: bad length %q", b[:4])
		}
		switch {
		case n <= 2:
			return lines, b[4:], nil
		case n == 3:
			return lines, b, fmt.Errorf("pkt-line: bad length %q", b[:4])
		case int(n) > len(b):
			return lines, b, errPktShort
		}
		lines = append(lines, b[4:n])
		b = b[n:]
	}
	return lines, b, fmt.Errorf("pkt-line: more than %d lines", maxPktLines)
}

// pkt encodes one pkt-line.
func pkt(s string) string {
	return fmt.Sprintf("%04x%s", len(s)+4, s)
}

// Pack object types.
const (
	objCommit   = 1
	objTree     = 2
	objBlob     = 3
	objTag      = 4
	objOfsDelta = 6
	objRefDelta = 7
)

// packSummary is what walkPack read of a packfile.
type packSummary struct {
	Objects   int    // objects read whole
	Declared  uint32 // objects the header announced
	Content   []byte // every object's data inflated, one after another (capped)
	Truncated bool   // the cap cut Content, or the pack ended early
	Err       error  // why the walk stopped early, if it did
}

// walkPack inflates the objects of a packfile, keeping up to capN bytes of
// their data. Delta objects contribute their delta data (literal inserts
// are readable in it). It never reads past b, and inflates at most
// 2*capN bytes in all, so a pack bomb costs little.
func walkPack(b []byte, capN int) packSummary {
	var s packSummary
	if len(b) < 12 || string(b[:4]) != "PACK" {
		s.Err = errors.New("pack: no PACK header")
		return s
	}
	if v := be32(b[4:]); v != 2 && v != 3 {
		s.Err = fmt.Errorf("pack: version %d", v)
		return s
	}
	s.Declared = be32(b[8:])
	r := bytes.NewReader(b[12:])
	budget := int64(2 * capN)
	for i := uint32(0); i < s.Declared; i++ {
		c, err := r.ReadByte()
		if err != nil {
			s.Truncated, s.Err = true, fmt.Errorf("pack: object %d: %w", i, io.ErrUnexpectedEOF)
			return s
		}
		typ := (c >> 4) & 7
		size := uint64(c & 15)
		shift := uint(4)
		for c&0x80 != 0 {
			if c, err = r.ReadByte(); err != nil || shift > 60 {
				s.Truncated, s.Err = true, fmt.Errorf("pack: object %d: bad size", i)
				return s
			}
			size |= uint64(c&0x7f) << shift
			shift += 7
		}
		switch typ {
		case objCommit, objTree, objBlob, objTag:
		case objOfsDelta:
			for {
				if c, err = r.ReadByte(); err != nil {
					s.Truncated, s.Err = true, fmt.Errorf("pack: object %d: bad delta offset", i)
					return s
				}
				if c&0x80 == 0 {
					break
				}
			}
		case objRefDelta:
			if _, err := r.Seek(20, io.SeekCurrent); err != nil || r.Len() == 0 {
				s.Truncated, s.Err = true, fmt.Errorf("pack: object %d: no delta base", i)
				return s
			}
		default:
			s.Err = fmt.Errorf("pack: object %d: type %d", i, typ)
			return s
		}
		// bytes.Reader is a flate.Reader: zlib reads exactly its stream,
		// so r is left at the next object.
		zr, err := zlib.NewReader(r)
		if err != nil {
			s.Truncated, s.Err = true, fmt.Errorf("pack: object %d: %w", i, err)
			return s
		}
		room := int64(capN - len(s.Content))
		var buf bytes.Buffer
		n, err := io.Copy(&buf, io.LimitReader(zr, min(budget, int64(size)+1)))
		budget -= n
		if room > 0 {
			s.Content = append(s.Content, buf.Bytes()[:min(int64(buf.Len()), room)]...)
			if int64(buf.Len()) > room {
				s.Truncated = true
			}
		} else if n > 0 {
			s.Truncated = true
		}
		if err != nil {
			s.Truncated, s.Err = true, fmt.Errorf("pack: object %d: %w", i, err)
			return s
		}
		if budget <= 0 {
			s.Truncated, s.Err = true, errors.New("pack: inflated size past the budget")
			return s
		}
		// Drain to the stream's end (its checksum) to reach the next object.
		if _, err := io.Copy(io.Discard, io.LimitReader(zr, 1)); err != nil {
			s.Truncated, s.Err = true, fmt.Errorf("pack: object %d: %w", i, err)
			return s
		}
		zr.Close()
		s.Objects++
		if len(s.Content) < capN && typ != objTree {
			s.Content = append(s.Content, '\n')
		}
	}
	return s
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
