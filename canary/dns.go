package canary

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// FindDNS reports tokens in the query names of one trace, given in the order
// they were asked. Beyond what Find sees in each name on its own, it
// reassembles data that a skill split across labels and across queries:
// names are grouped by their last two labels (the domain that receives
// them), the labels left of the group's common suffix are concatenated in
// order, and the result is searched (plain, hex, base32, base64url, ...).
// A second pass drops short decimal labels (sequence numbers) and labels
// repeated at the same position in every name of a group (session ids).
//
// Each token is reported once. A hit's Offset is the index in names of the
// first name its text was seen in; Encoding is the inner encoding alone when
// one name held the token, or prefixed with "dns-labels" when it was
// reassembled from several labels or queries. A token reassembled from
// several queries lists them (indexes in names) in Parts.
func (s *Set) FindDNS(names []string) []Hit {
	if s == nil || len(s.pats) == 0 || len(names) == 0 {
		return nil
	}
	found := map[int]bool{}
	var out []Hit
	add := func(h Hit, tok int) {
		if !found[tok] {
			found[tok] = true
			out = append(out, h)
		}
	}
	tokIndex := map[string]int{}
	for i, t := range s.tokens {
		tokIndex[t.ID] = i
	}
	labels := make([][]string, len(names))
	for i, n := range names {
		n = strings.TrimSuffix(n, ".")
		hits := s.Find([]byte(n))
		if lower := strings.ToLower(n); lower != n {
			hits = append(hits, s.Find([]byte(lower))...)
		}
		for _, h := range hits {
			h.Offset = i
			add(h, tokIndex[h.Token.ID])
		}
		if n != "" {
			labels[i] = strings.Split(n, ".")
		}
	}
	// Group by the last two labels, in order of first appearance.
	var order []string
	groups := map[string][]int{}
	for i, ls := range labels {
		if len(ls) < 2 {
			continue
		}
		key := strings.ToLower(strings.Join(ls[len(ls)-2:], "."))
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], i)
	}
	for _, key := range order {
		idx := groups[key]
		suffix := commonSuffix(labels, idx)
		data := make([][]string, len(idx))
		for j, i := range idx {
			data[j] = labels[i][:len(labels[i])-suffix]
		}
		inOrder := make([]int, len(idx))
		for j := range inOrder {
			inOrder[j] = j
		}
		byCounter := counterOrder(data)
		shared := sharedLabels(data)
		for pass := range 3 {
			order := inOrder
			if pass == 2 {
				if byCounter == nil {
					break
				}
				order = byCounter
			}
			var sb strings.Builder
			var starts []int // offset in sb where each name's data starts
			for _, j := range order {
				starts = append(starts, sb.Len())
				for p, l := range data[j] {
					if pass > 0 && (isCounter(l) || p < len(shared) && shared[p]) {
						continue
					}
					sb.WriteString(l)
				}
			}
			joined := sb.String()
			// spans names the queries a token needed, once one is found.
			spans := func(tok string, lower bool) []int {
				pieces := make([][]byte, len(order))
				for k := range order {
					end := len(joined)
					if k+1 < len(starts) {
						end = starts[k+1]
					}
					pieces[k] = []byte(joined[starts[k]:end])
					if lower {
						pieces[k] = []byte(strings.ToLower(string(pieces[k])))
					}
				}
				for _, h := range s.FindSplit(pieces) {
					if h.Token.ID == tok {
						out := make([]int, len(h.Parts))
						for k, p := range h.Parts {
							out[k] = idx[order[p]]
						}
						slices.Sort(out)
						return out
					}
				}
				return nil
			}
			// Resolvers may randomise the case of names (DNS 0x20): hex
			// and base32 are also looked for in lower case.
			hits := s.Find([]byte(joined))
			nCase := len(hits)
			if lower := strings.ToLower(joined); lower != joined {
				hits = append(hits, s.Find([]byte(lower))...)
			}
			for k, h := range hits {
				first := 0
				for j, st := range starts {
					if st <= h.Offset {
						first = j
					}
				}
				h.Offset = idx[order[first]]
				h.Encoding = h.Encoding.wrap(DNSLabels)
				if tok := tokIndex[h.Token.ID]; !found[tok] {
					h.Parts = spans(h.Token.ID, k >= nCase)
					add(h, tok)
				}
			}
		}
	}
	return out
}

// commonSuffix is how many trailing labels all names of a group share: at
// least 2 (the group key), and for a single name exactly 2.
func commonSuffix(labels [][]string, idx []int) int {
	if len(idx) == 1 {
		return 2
	}
	n := 2
	for {
		var want string
		for j, i := range idx {
			ls := labels[i]
			if len(ls) <= n {
				return n
			}
			l := strings.ToLower(ls[len(ls)-1-n])
			if j == 0 {
				want = l
			} else if l != want {
				return n
			}
		}
		n++
	}
}

// counterOrder returns the names of a group (indexes into data) sorted by
// the sequence number they all carry at one label position, or nil when
// they carry none or are already in order: queries sent in parallel arrive
// shuffled, and exfiltration tools number their chunks.
func counterOrder(data [][]string) []int {
	if len(data) < 2 {
		return nil
	}
	for p := 0; ; p++ {
		all, any := true, false
		for _, ls := range data {
			if p >= len(ls) {
				return nil
			}
			if !isCounter(ls[p]) {
				all = false
				break
			}
			any = true
		}
		if !all || !any {
			continue
		}
		n := make([]int, len(data))
		order := make([]int, len(data))
		for j, ls := range data {
			n[j], _ = strconv.Atoi(ls[p])
			order[j] = j
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(n[a], n[b]) })
		if slices.IsSorted(order) {
			return nil
		}
		return order
	}
}

// isCounter reports whether l looks like a sequence number label.
func isCounter(l string) bool {
	if l == "" || len(l) > 4 {
		return false
	}
	for _, c := range []byte(l) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// sharedLabels reports, for each label position, whether every name of the
// group (of at least two) has the same label there: a session id, not data.
func sharedLabels(data [][]string) []bool {
	if len(data) < 2 {
		return nil
	}
	n := len(data[0])
	for _, ls := range data {
		n = min(n, len(ls))
	}
	out := make([]bool, n)
	for p := range n {
		out[p] = true
		for _, ls := range data[1:] {
			if ls[p] != data[0][p] {
				out[p] = false
				break
			}
		}
	}
	return out
}
