package rules

import (
	"fmt"
	"slices"
	"strings"
)

// A ruleDef is a rule and its matcher. A matcher that reads other rules'
// findings names them in Rule.After (data, not registration order): they
// run first (evalOrder), and reading any other rule's findings panics
// (ctx.found), so an undeclared dependency fails every test.
type ruleDef struct {
	Rule
	match func(c *ctx)
}

var (
	registry  []*ruleDef
	evalOrder []*ruleDef // registry sorted by dependencies, then id
)

func def(r Rule, m func(c *ctx, r *Rule)) *Rule {
	d := &ruleDef{Rule: r}
	d.match = func(c *ctx) { m(c, &d.Rule) }
	registry = append(registry, d)
	return &d.Rule
}

// Catalog returns every rule, sorted by id.
func Catalog() []Rule {
	out := make([]Rule, 0, len(registry))
	for _, d := range registry {
		out = append(out, d.Rule)
	}
	slices.SortFunc(out, func(a, b Rule) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return out
}

// Lookup returns the rule with the given id.
func Lookup(id string) (Rule, bool) {
	for _, d := range registry {
		if d.ID == id {
			return d.Rule, true
		}
	}
	return Rule{}, false
}

func init() {
	// Families, in evaluation order: the base observations first, then the
	// rules that combine them.
	credRules()
	macRules()
	execRules()
	shellRules()
	persistRules()
	probeRules()
	reconRules()
	netRules()
	privRules()
	destroyRules()
	selfRules()
	remoteRules()
	hiddenRules()
	policyRules()
	budgetRules()
	agentRules()
	resourceRules()
	tracerRules()
	evadeRules()
	exfilRules() // builds on credential and environment findings
	pkgRules()
	// The ids must be unique.
	seen := map[string]bool{}
	for _, d := range registry {
		if seen[d.ID] {
			panic(fmt.Sprintf("rules: duplicate rule id %s", d.ID))
		}
		seen[d.ID] = true
	}
	applyNotes()
	evalOrder = orderByDeps(registry)
}

// orderByDeps sorts rules so that each runs after the rules it reads
// (Rule.After), ties broken by id; a dependency cycle or an unknown id is a
// bug and panics.
func orderByDeps(defs []*ruleDef) []*ruleDef {
	byID := map[string]*ruleDef{}
	for _, d := range defs {
		byID[d.ID] = d
	}
	sorted := slices.Clone(defs)
	slices.SortFunc(sorted, func(a, b *ruleDef) int { return strings.Compare(a.ID, b.ID) })
	var out []*ruleDef
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(d *ruleDef)
	visit = func(d *ruleDef) {
		switch state[d.ID] {
		case 1:
			panic(fmt.Sprintf("rules: dependency cycle through %s", d.ID))
		case 2:
			return
		}
		state[d.ID] = 1
		for _, id := range d.After {
			dep := byID[id]
			if dep == nil {
				panic(fmt.Sprintf("rules: %s runs after unknown rule %s", d.ID, id))
			}
			visit(dep)
		}
		state[d.ID] = 2
		out = append(out, d)
	}
	for _, d := range sorted {
		visit(d)
	}
	return out
}
