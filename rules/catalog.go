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

// registry holds every rule, in the order the families defined them;
// evalOrder is registry sorted by dependencies, then id.
var registry, evalOrder = buildCatalog(families)

// defined collects the rules def defines while buildCatalog runs.
var defined []*ruleDef

// A family adds its rules with def.
type family struct {
	name string
	add  func()
}

// families lists every family of rules. Their order here changes nothing:
// the order rules run in comes from Rule.After, then the id (orderByDeps),
// and TestFamilyOrderIrrelevant checks it.
var families = []family{
	{"credentials", credRules},
	{"credentials", harvestRules},
	{"macos", macRules},
	{"execution", execRules},
	{"shells", shellRules},
	{"persistence", persistRules},
	{"persistence", configExecRule},
	{"persistence", accountRules},
	{"exfiltration", readRules},
	{"probes", probeRules},
	{"probes", sandboxTellRules},
	{"reconnaissance", reconRules},
	{"network", netRules},
	{"exfiltration", gitRules},
	{"privilege", privRules},
	{"destruction", destroyRules},
	{"self-modification", selfRules},
	{"remote", remoteRules},
	{"hidden-text", hiddenRules},
	{"policy", policyRules},
	{"budgets", budgetRules},
	{"agent", agentRules},
	{"resources", resourceRules},
	{"tracer", tracerRules},
	{"evasion", evadeRules},
	{"twins", twinRules},
	{"exfiltration", exfilRules},
	{"exfiltration", deployRules},
	{"packages", pkgRules},
	{"fingerprint", fingerprintRules},
}

// buildCatalog registers the rules of fams, attaches their notes and
// returns them in evaluation order. A duplicate id, a dependency on an
// unknown rule or a dependency cycle is a bug in this package: it panics
// when the package loads, so every test fails.
func buildCatalog(fams []family) (all, order []*ruleDef) {
	defined = nil
	for _, f := range fams {
		f.add()
	}
	all, defined = defined, nil
	seen := map[string]bool{}
	for _, d := range all {
		if seen[d.ID] {
			panic(fmt.Sprintf("rules: duplicate rule id %s", d.ID))
		}
		seen[d.ID] = true
	}
	applyNotes(all)
	order, err := orderByDeps(all)
	if err != nil {
		panic("rules: " + err.Error())
	}
	return all, order
}

// def defines rule r with matcher m; only a family's add function calls it,
// while buildCatalog runs.
func def(r Rule, m func(c *ctx, r *Rule)) *Rule {
	d := &ruleDef{Rule: r}
	d.match = func(c *ctx) { m(c, &d.Rule) }
	defined = append(defined, d)
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

// orderByDeps sorts rules so that each runs after the rules it reads
// (Rule.After), ties broken by id. It fails on a dependency cycle and on a
// dependency on a rule that is not in defs.
func orderByDeps(defs []*ruleDef) ([]*ruleDef, error) {
	byID := map[string]*ruleDef{}
	for _, d := range defs {
		byID[d.ID] = d
	}
	sorted := slices.Clone(defs)
	slices.SortFunc(sorted, func(a, b *ruleDef) int { return strings.Compare(a.ID, b.ID) })
	var out []*ruleDef
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(d *ruleDef) error
	visit = func(d *ruleDef) error {
		switch state[d.ID] {
		case 1:
			return fmt.Errorf("dependency cycle through %s", d.ID)
		case 2:
			return nil
		}
		state[d.ID] = 1
		for _, id := range d.After {
			dep := byID[id]
			if dep == nil {
				return fmt.Errorf("%s runs after unknown rule %s", d.ID, id)
			}
			if err := visit(dep); err != nil {
				return err
			}
		}
		state[d.ID] = 2
		out = append(out, d)
		return nil
	}
	for _, d := range sorted {
		if err := visit(d); err != nil {
			return nil, err
		}
	}
	return out, nil
}
