package evaluation

import (
	"cmp"
	"crypto/sha256"
	"slices"
)

// DefaultSeed is the seed of Sample when none is given: the same corpus and
// the same n give the same skills on every machine and every run.
const DefaultSeed = "sandboxctl-eval-1"

// Sample returns n cases of cases, stratified by corpus, label and group
// (family or category): each stratum gets its share of n in proportion to
// its size (largest remainders), and every stratum at least one case when n
// allows. Within a stratum the order is fixed by a hash of seed and the
// case's id, so the choice depends on nothing but the manifest, n and seed.
// The result keeps the manifests' order. n <= 0 or n >= len(cases) returns
// every case.
func Sample(cases []Case, n int, seed string) []Case {
	if n <= 0 || n >= len(cases) {
		return slices.Clone(cases)
	}
	if seed == "" {
		seed = DefaultSeed
	}
	type stratum struct {
		key   string
		idx   []int // indices into cases, in hash order
		quota int
		rem   float64
	}
	byKey := map[string]*stratum{}
	var strata []*stratum
	for i, c := range cases {
		k := c.Corpus + "\x00" + c.Label + "\x00" + c.Group()
		s := byKey[k]
		if s == nil {
			s = &stratum{key: k}
			byKey[k] = s
			strata = append(strata, s)
		}
		s.idx = append(s.idx, i)
	}
	hash := func(i int) [32]byte { return sha256.Sum256([]byte(seed + "\x00" + cases[i].ID())) }
	for _, s := range strata {
		slices.SortFunc(s.idx, func(a, b int) int {
			ha, hb := hash(a), hash(b)
			return cmp.Or(slices.Compare(ha[:], hb[:]), cmp.Compare(a, b))
		})
	}
	slices.SortFunc(strata, func(a, b *stratum) int { return cmp.Compare(a.key, b.key) })

	// Every stratum first gets one case while n allows (the smallest
	// strata are often the rare labels that matter most), then the rest
	// of n is shared in proportion to the strata's remaining sizes.
	left := n
	if n >= len(strata) {
		for _, s := range strata {
			s.quota = 1
		}
		left -= len(strata)
	}
	rest := 0
	for _, s := range strata {
		rest += len(s.idx) - s.quota
	}
	given := 0
	for _, s := range strata {
		if rest == 0 {
			break
		}
		exact := float64(left) * float64(len(s.idx)-s.quota) / float64(rest)
		whole := int(exact)
		s.quota += whole
		s.rem = exact - float64(whole)
		given += whole
	}
	// Largest remainders take what rounding down left over; ties go to the
	// larger stratum, then to the key order.
	order := slices.Clone(strata)
	slices.SortStableFunc(order, func(a, b *stratum) int {
		return cmp.Or(cmp.Compare(b.rem, a.rem), cmp.Compare(len(b.idx), len(a.idx)))
	})
	for i := 0; given < left && i < len(order)*2; i++ {
		s := order[i%len(order)]
		if s.quota < len(s.idx) {
			s.quota++
			given++
		}
	}

	pick := make([]bool, len(cases))
	for _, s := range strata {
		for _, i := range s.idx[:min(s.quota, len(s.idx))] {
			pick[i] = true
		}
	}
	out := make([]Case, 0, n)
	for i, c := range cases {
		if pick[i] {
			out = append(out, c)
		}
	}
	return out
}
