package monitor

// The risk tier says how closely a skill should be watched once
// installed, from what its runs did over the whole monitor (every cell and
// confirmation run). Three classes of access count:
//
//   - network: any network target (a DNS query included);
//   - filesystem: a read of a home secret (a planted credential or a
//     credential store: fingerprint's home_secret class) or a write (any
//     change: write, delete, rename, chmod, mkdir, link) outside the temp
//     folders;
//   - environment: a variable read beyond the ordinary ones (HOME, PATH,
//     USER, LANG, ...), the whole environment, or a planted value seen.
//
// All three make the tier high, any two medium, one or none low. Each
// tier has a policy: how many runs per cell a monitor should make, and how
// much of the skill's use to trace once it is installed.

import (
	"fmt"
	"slices"
	"strings"
)

// Tiers.
const (
	TierAuto   = "auto" // computed from what the runs did
	TierHigh   = "high"
	TierMedium = "medium"
	TierLow    = "low"
)

// TierPolicy is a tier's monitoring policy.
type TierPolicy struct {
	RecommendedRuns int    `json:"recommended_runs"`
	Sampling        string `json:"sampling"`
}

var tierPolicies = map[string]TierPolicy{
	TierHigh:   {RecommendedRuns: 20, Sampling: "100% of invocations"},
	TierMedium: {RecommendedRuns: 10, Sampling: "5% of invocations, raised to 100% after any drift"},
	TierLow:    {RecommendedRuns: 5, Sampling: "1% of invocations"},
}

// Policy is the policy of tier (high, medium or low).
func Policy(tier string) (TierPolicy, bool) {
	p, ok := tierPolicies[tier]
	return p, ok
}

// ParseTier checks a tier asked for: auto, high, medium or low ("" is auto).
func ParseTier(s string) (string, error) {
	switch s = strings.ToLower(strings.TrimSpace(s)); s {
	case "":
		return TierAuto, nil
	case TierAuto, TierHigh, TierMedium, TierLow:
		return s, nil
	}
	return "", fmt.Errorf("unknown tier %q (want auto, high, medium or low)", s)
}

// ordinaryEnv are the variables any shell reads: not environment access.
var ordinaryEnv = map[string]bool{"HOME": true, "PATH": true, "PWD": true, "OLDPWD": true, "USER": true, "LOGNAME": true,
	"SHELL": true, "TERM": true, "LANG": true, "LANGUAGE": true, "TMPDIR": true, "HOSTNAME": true, "TZ": true,
	"COLUMNS": true, "LINES": true, "SHLVL": true, "EDITOR": true, "PAGER": true, "DISPLAY": true, "UID": true}

// access is what o did in each class of the tier, by capability key.
func access(o Observation) (network, filesystem, environment []string) {
	network = slices.Clone(o.Capabilities.Network)
	filesystem = slices.Clone(o.Secrets)
	for _, k := range o.Capabilities.Filesystem {
		op, p, _ := strings.Cut(k, " ")
		if op == "read" {
			continue
		}
		if !slices.ContainsFunc(tempDirs, func(t string) bool { return p == t || strings.HasPrefix(p, t+"/") }) {
			filesystem = append(filesystem, k)
		}
	}
	for _, k := range o.Capabilities.Environment {
		if !ordinaryEnv[k] && !strings.HasPrefix(k, "LC_") {
			environment = append(environment, k)
		}
	}
	return network, filesystem, environment
}

// observedTier is the tier of what the runs did, and why.
func (r *Report) observedTier() (tier, why string) {
	var classes [3][]string
	each := func(o Observation) {
		n, f, e := access(o)
		classes[0], classes[1], classes[2] = append(classes[0], n...), append(classes[1], f...), append(classes[2], e...)
	}
	for _, c := range r.Cells {
		for _, o := range c.Observations {
			each(o)
		}
		if c.Confirmation != nil {
			for _, o := range c.Confirmation.Observations {
				each(o)
			}
		}
	}
	var seen []string
	for i, name := range []string{"network", "filesystem", "environment"} {
		ks := classes[i]
		slices.Sort(ks)
		ks = slices.Compact(ks)
		if len(ks) > 0 {
			seen = append(seen, fmt.Sprintf("%s (%s)", name, capList(ks, 2)))
		}
	}
	switch len(seen) {
	case 3:
		tier = TierHigh
	case 2:
		tier = TierMedium
	default:
		tier = TierLow
	}
	if len(seen) == 0 {
		return tier, "no network, filesystem or environment access in any run"
	}
	return tier, fmt.Sprintf("%d of 3 access classes over all runs: %s", len(seen), strings.Join(seen, "; "))
}

// setTier sets the report's tier (asked for, or observed), its policy,
// and an action when the monitor ran fewer runs than the tier recommends.
func (r *Report) setTier() {
	obs, why := r.observedTier()
	asked, _ := ParseTier(r.tierAsked)
	if asked == TierAuto {
		r.Tier, r.TierReason = obs, why
	} else {
		r.Tier, r.TierReason = asked, fmt.Sprintf("asked for; observed %s: %s", obs, why)
	}
	p := tierPolicies[r.Tier]
	r.RecommendedRuns, r.Sampling = p.RecommendedRuns, p.Sampling
	if r.Runs > 0 && r.Runs < p.RecommendedRuns {
		r.Actions = append(r.Actions, fmt.Sprintf("the %s tier recommends %d runs per cell, this monitor made %d: run it again with --runs %d",
			r.Tier, p.RecommendedRuns, r.Runs, p.RecommendedRuns))
	}
}
