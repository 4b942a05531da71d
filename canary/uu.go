package canary

import "bytes"

// uuencode ("begin 644 name", lines of up to 45 bytes each as 60
// characters after a length character, "`" or " " for zero, "end"): mail
// attachments and shell one-liners (uuencode, Python's binascii.b2a_uu).
// Each block is decoded and searched like any decoded region.

// maxUUBlocks bounds the blocks decoded per region.
const maxUUBlocks = 16

// uuencoded decodes each uuencoded block in data and searches it.
func (f *finder) uuencoded(data []byte, outer Encoding, base, depth int) {
	for i, n := 0, 0; n < maxUUBlocks && f.budget > 0; n++ {
		j := bytes.Index(data[i:], []byte("begin "))
		if j < 0 {
			return
		}
		start := i + j
		i = start + 6
		if start > 0 && data[start-1] != '\n' {
			continue // not at the start of a line
		}
		eol := bytes.IndexByte(data[i:], '\n')
		if eol < 0 {
			return
		}
		head := bytes.TrimRight(data[i:i+eol], "\r")
		if len(head) < 5 || !isOctal(head[:3]) || head[3] != ' ' && !(len(head) > 4 && isOctal(head[:4]) && head[4] == ' ') {
			continue
		}
		out, end := decodeUU(data[i+eol+1:])
		if len(out) < MinNeedle {
			continue
		}
		f.budget -= len(out)
		at := base + start
		if outer != Plain {
			at = base
		}
		f.find(out, UU.wrap(outer), at, depth+1)
		i += eol + 1 + end
	}
}

func isOctal(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '7' {
			return false
		}
	}
	return len(b) > 0
}

// decodeUU decodes the lines of a uuencoded body until "end", a line that
// is not uuencoding, or the end of text; it returns the bytes and how much
// of text it read.
func decodeUU(text []byte) ([]byte, int) {
	var out []byte
	pos := 0
	for pos < len(text) {
		eol := bytes.IndexByte(text[pos:], '\n')
		next := len(text)
		line := text[pos:]
		if eol >= 0 {
			line, next = text[pos:pos+eol], pos+eol+1
		}
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 || bytes.Equal(line, []byte("end")) {
			return out, next
		}
		n := int(line[0]-' ') & 63
		if n == 0 {
			pos = next // the zero-length line before "end"
			continue
		}
		body := line[1:]
		if len(body) < (n+2)/3*4 {
			return out, pos // not uuencoding
		}
		for k := 0; k+4 <= len(body) && n > 0; k += 4 {
			c0, c1, c2, c3 := (body[k]-' ')&63, (body[k+1]-' ')&63, (body[k+2]-' ')&63, (body[k+3]-' ')&63
			for _, b := range []byte{c0<<2 | c1>>4, c1<<4 | c2>>2, c2<<6 | c3} {
				if n > 0 {
					out = append(out, b)
					n--
				}
			}
		}
		pos = next
	}
	return out, pos
}
