package evaluation_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sandboxctl/sandboxctl/evaluation"
)

// corpusOf makes a corpus with the given stratum sizes, keyed
// "label/category".
func corpusOf(sizes map[string]int) []evaluation.Case {
	var cases []evaluation.Case
	keys := make([]string, 0, len(sizes))
	for k := range sizes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		var label, cat string
		fmt.Sscanf(k, "%s %s", &label, &cat)
		for i := range sizes[k] {
			cases = append(cases, evaluation.Case{Corpus: "c", Slug: fmt.Sprintf("%s-%s-%d", label, cat, i), Label: label, Category: cat})
		}
	}
	return cases
}

func TestSample(t *testing.T) {
	cases := corpusOf(map[string]int{
		"benign web-api": 30, "benign git": 30, "benign cloud": 20, "benign docs": 2,
		"malicious installer": 8, "malicious other": 4, "dual-use offensive-security": 6,
	})
	count := func(s []evaluation.Case) map[string]int {
		m := map[string]int{}
		for _, c := range s {
			m[c.Label+" "+c.Category]++
		}
		return m
	}
	tests := []struct {
		name string
		n    int
		want map[string]int
	}{
		{name: "every stratum, then proportional", n: 40, want: map[string]int{
			"benign web-api": 11, "benign git": 11, "benign cloud": 8, "benign docs": 1,
			"malicious installer": 4, "malicious other": 2, "dual-use offensive-security": 3,
		}},
		{name: "fewer than the strata", n: 3, want: map[string]int{"benign web-api": 1, "benign git": 1, "benign cloud": 1}},
		{name: "all", n: 0, want: count(cases)},
		{name: "more than all", n: 1000, want: count(cases)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := evaluation.Sample(cases, tt.n, "")
			total := 0
			for _, n := range tt.want {
				total += n
			}
			if total != len(got) {
				t.Fatalf("Sample(%d) gave %d cases, want %d", tt.n, len(got), total)
			}
			gotCounts := count(got)
			for k, n := range tt.want {
				if gotCounts[k] != n {
					t.Errorf("stratum %s: %d cases, want %d (all: %v)", k, gotCounts[k], n, gotCounts)
				}
			}
		})
	}
}

func TestSampleIsFixed(t *testing.T) {
	cases := corpusOf(map[string]int{"benign a": 50, "benign b": 50, "malicious a": 10})
	a := evaluation.Sample(cases, 20, "")
	// The same manifest in another order samples the same skills.
	rev := slices.Clone(cases)
	slices.Reverse(rev)
	b := evaluation.Sample(rev, 20, "")
	ids := func(s []evaluation.Case) []string {
		var out []string
		for _, c := range s {
			out = append(out, c.ID())
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(ids(a), ids(b)) {
		t.Errorf("Sample depends on manifest order:\n%v\n%v", ids(a), ids(b))
	}
	// The sample keeps the manifest's order.
	if !slices.IsSortedFunc(a, func(x, y evaluation.Case) int {
		return slices.IndexFunc(cases, func(c evaluation.Case) bool { return c.ID() == x.ID() }) -
			slices.IndexFunc(cases, func(c evaluation.Case) bool { return c.ID() == y.ID() })
	}) {
		t.Error("Sample does not keep the manifest's order")
	}
	// Another seed picks other skills; the same seed the same ones.
	if c := evaluation.Sample(cases, 20, "other"); slices.Equal(ids(a), ids(c)) {
		t.Error("another seed picked the same skills")
	}
	if c := evaluation.Sample(cases, 20, evaluation.DefaultSeed); !slices.Equal(ids(a), ids(c)) {
		t.Error(`seed "" is not DefaultSeed`)
	}
}
