package rules

import (
	"slices"
	"strings"
	"testing"
)

func ruleIDs(ds []*ruleDef) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

// TestEvalOrder: the order rules run in comes from their dependencies, not
// from the order they were defined in.
func TestEvalOrder(t *testing.T) {
	rev := slices.Clone(registry)
	slices.Reverse(rev)
	a, err := orderByDeps(registry)
	if err != nil {
		t.Fatal(err)
	}
	b, err := orderByDeps(rev)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ruleIDs(a), ruleIDs(b)) {
		t.Errorf("order depends on registration:\n%v\n%v", ruleIDs(a), ruleIDs(b))
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

// TestFamilyOrderIrrelevant: listing the families in another order gives
// the same catalogue and the same evaluation order.
func TestFamilyOrderIrrelevant(t *testing.T) {
	rev := slices.Clone(families)
	slices.Reverse(rev)
	all, order := buildCatalog(rev)
	if len(all) != len(registry) {
		t.Errorf("families reversed: %d rules, want %d", len(all), len(registry))
	}
	if got, want := ruleIDs(order), ruleIDs(evalOrder); !slices.Equal(got, want) {
		t.Errorf("families reversed: evaluation order differs:\n got %v\nwant %v", got, want)
	}
}

// TestCatalogDependencies: every rule a rule runs after exists, and the
// dependencies have no cycle (the catalogue as defined, checked again here
// so that the failure names the rule instead of a panic at load time).
func TestCatalogDependencies(t *testing.T) {
	ids := map[string]bool{}
	for _, d := range registry {
		ids[d.ID] = true
	}
	for _, d := range registry {
		for _, dep := range d.After {
			if !ids[dep] {
				t.Errorf("%s runs after %s, which is not a rule", d.ID, dep)
			}
			if dep == d.ID {
				t.Errorf("%s runs after itself", d.ID)
			}
		}
	}
	if _, err := orderByDeps(registry); err != nil {
		t.Errorf("orderByDeps(catalogue): %v", err)
	}
}

func TestOrderByDeps(t *testing.T) {
	rule := func(id string, after ...string) *ruleDef { return &ruleDef{Rule: Rule{ID: id, After: after}} }
	tests := []struct {
		name    string
		defs    []*ruleDef
		want    []string
		wantErr string
	}{
		{name: "independent rules by id", defs: []*ruleDef{rule("SBX-B-001"), rule("SBX-A-001")},
			want: []string{"SBX-A-001", "SBX-B-001"}},
		{name: "dependency first", defs: []*ruleDef{rule("SBX-A-001", "SBX-B-001"), rule("SBX-B-001")},
			want: []string{"SBX-B-001", "SBX-A-001"}},
		{name: "chain", defs: []*ruleDef{rule("SBX-A-001", "SBX-B-001"), rule("SBX-B-001", "SBX-C-001"), rule("SBX-C-001")},
			want: []string{"SBX-C-001", "SBX-B-001", "SBX-A-001"}},
		{name: "missing dependency", defs: []*ruleDef{rule("SBX-A-001", "SBX-Z-009")},
			wantErr: "SBX-A-001 runs after unknown rule SBX-Z-009"},
		{name: "cycle", defs: []*ruleDef{rule("SBX-A-001", "SBX-B-001"), rule("SBX-B-001", "SBX-A-001")},
			wantErr: "dependency cycle"},
		{name: "self", defs: []*ruleDef{rule("SBX-A-001", "SBX-A-001")},
			wantErr: "dependency cycle through SBX-A-001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := orderByDeps(tt.defs)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("orderByDeps() err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("orderByDeps() err = %v", err)
			}
			if !slices.Equal(ruleIDs(got), tt.want) {
				t.Errorf("orderByDeps() = %v, want %v", ruleIDs(got), tt.want)
			}
		})
	}
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
