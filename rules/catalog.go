package rules

import (
	"fmt"
	"slices"
)

// A ruleDef is a rule and its matcher. Matchers run in registry order, so a
// rule that builds on others' findings comes after them.
type ruleDef struct {
	Rule
	match func(c *ctx)
}

var registry []*ruleDef

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
	tracerRules()
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
}
