package rules

import (
	"slices"
	"testing"
)

// TestEvalOrder: the order rules run in comes from their dependencies, not
// from the order they were registered in.
func TestEvalOrder(t *testing.T) {
	ids := func(ds []*ruleDef) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.ID)
		}
		return out
	}
	rev := slices.Clone(registry)
	slices.Reverse(rev)
	if a, b := ids(orderByDeps(registry)), ids(orderByDeps(rev)); !slices.Equal(a, b) {
		t.Errorf("order depends on registration:\n%v\n%v", a, b)
	}
	pos := map[string]int{}
	for i, d := range evalOrder {
		pos[d.ID] = i
	}
	for _, d := range evalOrder {
		for _, dep := range d.After {
			if pos[dep] >= pos[d.ID] {
				t.Errorf("%s runs before %s, which it reads", dep, d.ID)
			}
		}
	}
	if len(evalOrder) != len(registry) {
		t.Errorf("evalOrder has %d rules, registry %d", len(evalOrder), len(registry))
	}
}

func TestOrderByDepsRejectsCycles(t *testing.T) {
	a := &ruleDef{Rule: Rule{ID: "SBX-A-001", After: []string{"SBX-B-001"}}}
	b := &ruleDef{Rule: Rule{ID: "SBX-B-001", After: []string{"SBX-A-001"}}}
	defer func() {
		if recover() == nil {
			t.Errorf("a dependency cycle did not panic")
		}
	}()
	orderByDeps([]*ruleDef{a, b})
}

// TestFoundNeedsDeclaration: reading another rule's findings without
// declaring it panics.
func TestFoundNeedsDeclaration(t *testing.T) {
	c := &ctx{byRule: map[string][]*Finding{}, current: &ruleDef{Rule: Rule{ID: "SBX-X-001"}}}
	defer func() {
		if recover() == nil {
			t.Errorf("undeclared read did not panic")
		}
	}()
	c.found("SBX-CRED-001")
}

func TestRuleNotes(t *testing.T) {
	for _, r := range Catalog() {
		if len(r.Needs) == 0 {
			t.Errorf("%s: no evidence named in rules/notes.go", r.ID)
		}
	}
	for id := range ruleNotes {
		if _, ok := Lookup(id); !ok {
			t.Errorf("rules/notes.go names unknown rule %s", id)
		}
	}
}
