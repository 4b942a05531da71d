package canary

import "slices"

// maxSplit caps the bytes FindSplit joins: the first parts up to it.
const maxSplit = 16 << 20

// FindSplit reports tokens that only the concatenation of parts holds: a
// token split across several requests, payloads or fields sent to one
// destination, given in the order they were sent. Each hit names the
// smallest run of consecutive parts that still holds the token: Offset is
// the index of its first part and Parts every index of it (at least two);
// its Encoding is prefixed with "split". A token that one part holds on
// its own is not reported (Find on that part sees it).
func (s *Set) FindSplit(parts [][]byte) []Hit {
	if s == nil || len(s.pats) == 0 || len(parts) < 2 {
		return nil
	}
	total := 0
	for i, p := range parts {
		if total += len(p); total > maxSplit {
			parts = parts[:i]
			break
		}
	}
	if len(parts) < 2 {
		return nil
	}
	starts := make([]int, len(parts))
	var joined []byte
	for i, p := range parts {
		starts[i] = len(joined)
		joined = append(joined, p...)
	}
	has := func(a, b, tok int) (Hit, bool) {
		for _, h := range s.Find(slices.Concat(parts[a : b+1]...)) {
			if h.Token.ID == s.tokens[tok].ID {
				return h, true
			}
		}
		return Hit{}, false
	}
	tokIndex := map[string]int{}
	for i, t := range s.tokens {
		tokIndex[t.ID] = i
	}
	var out []Hit
	done := map[int]bool{}
	for _, h := range s.Find(joined) {
		tok := tokIndex[h.Token.ID]
		if done[tok] {
			continue
		}
		done[tok] = true
		a, _ := slices.BinarySearch(starts, h.Offset+1)
		a = max(a-1, 0)
		if _, alone := has(a, a, tok); alone {
			continue
		}
		// The hit's offset may sit past the first part the token needs
		// (a region decoded from an earlier start): widen to the left.
		for a > 0 {
			if _, ok := has(a, len(parts)-1, tok); ok {
				break
			}
			a--
		}
		// Smallest last part that still holds it, then the largest first.
		lo, hi := a, len(parts)-1
		for lo < hi {
			mid := (lo + hi) / 2
			if _, ok := has(a, mid, tok); ok {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		b := lo
		for a < b {
			if _, ok := has(a+1, b, tok); !ok {
				break
			}
			a++
		}
		if a == b {
			continue
		}
		w, ok := has(a, b, tok)
		if !ok {
			continue
		}
		hit := Hit{Token: w.Token, Encoding: w.Encoding.wrap(Split), Offset: a}
		for i := a; i <= b; i++ {
			hit.Parts = append(hit.Parts, i)
		}
		out = append(out, hit)
	}
	return out
}
