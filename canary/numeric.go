package canary

// Byte values written as numbers: String.fromCharCode(115,107,...), a
// Python list [115, 107, ...], `printf '%d '` output, HTML character
// references (&#115;&#107;), octal escapes (\163\153). A list of at least
// MinNeedle numbers, each a byte, joined by one separator throughout, is
// decoded and searched like any decoded region.

// numClass marks the bytes a list of numbers is made of: digits and the
// separators seen between them.
var numClass = func() (c [256]bool) {
	for _, b := range []byte("0123456789 ,;.:&#\\-_|/\t[]()") {
		c[b] = true
	}
	return
}()

// maxNumSep is the longest separator between two numbers (";&#" between
// HTML references, ", 0" and the like).
const maxNumSep = 3

// numbers decodes every list of byte values in data (see above) and
// searches what it decodes to.
func (f *finder) numbers(data []byte, outer Encoding, base, depth int) {
	// A list of MinNeedle numbers spans at least 2*MinNeedle-1 bytes of
	// numClass, so probing every stride-th byte lands in each one.
	const stride = MinNeedle
	n := len(data)
	for p := stride - 1; p < n && f.budget > 0; {
		if !numClass[data[p]] || !digitNear(data, p) {
			p += stride
			continue
		}
		s, e := p, p+1
		for s > 0 && numClass[data[s-1]] {
			s--
		}
		for e < n && numClass[data[e]] {
			e++
		}
		if e-s >= 2*MinNeedle-1 {
			f.numberLists(data[s:e], outer, base+s, depth)
		}
		p = e + stride
	}
}

// numberLists finds the lists in span, a stretch of numClass bytes at
// offset base of the input.
func (f *finder) numberLists(span []byte, outer Encoding, base, depth int) {
	type num struct{ start, end int } // the digits' extent in span
	var nums []num
	for i := 0; i < len(span); {
		if !isDigit(span[i]) {
			i++
			continue
		}
		j := i
		for j < len(span) && isDigit(span[j]) {
			j++
		}
		nums = append(nums, num{i, j})
		i = j
	}
	// Split nums into maximal sequences joined by one separator, each
	// number a byte value; decode those long enough.
	for a := 0; a < len(nums) && f.budget > 0; {
		b := a + 1
		var sep []byte
		if b < len(nums) {
			sep = span[nums[a].end:nums[b].start]
		}
		octal := string(sep) == `\`
		ok := func(k int) bool {
			_, valid := byteValue(span[nums[k].start:nums[k].end], octal)
			return valid
		}
		if !ok(a) || len(sep) == 0 || len(sep) > maxNumSep {
			a++
			continue
		}
		for b < len(nums) && string(span[nums[b-1].end:nums[b].start]) == string(sep) && ok(b) {
			b++
		}
		if b-a >= MinNeedle {
			out := make([]byte, 0, b-a)
			for k := a; k < b; k++ {
				v, _ := byteValue(span[nums[k].start:nums[k].end], octal)
				out = append(out, v)
			}
			f.budget -= len(out)
			at := base + nums[a].start
			if outer != Plain {
				at = base
			}
			enc := Decimal
			f.find(out, enc.wrap(outer), at, depth+1)
		}
		a = b
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digitNear reports whether a digit is within maxNumSep bytes of data[p]:
// inside a list of numbers one always is, in prose (a space between
// words) seldom.
func digitNear(data []byte, p int) bool {
	for i := max(0, p-maxNumSep); i <= min(len(data)-1, p+maxNumSep); i++ {
		if isDigit(data[i]) {
			return true
		}
	}
	return false
}

// byteValue parses digits as a decimal (or octal) number of at most three
// digits and reports whether it is a byte value.
func byteValue(digits []byte, octal bool) (byte, bool) {
	if len(digits) == 0 || len(digits) > 3 {
		return 0, false
	}
	radix := 10
	if octal {
		radix = 8
	}
	v := 0
	for _, c := range digits {
		d := int(c - '0')
		if d >= radix {
			return 0, false
		}
		v = v*radix + d
	}
	return byte(v), v <= 255
}
