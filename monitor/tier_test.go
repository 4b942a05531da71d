package monitor

import (
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/fingerprint"
)

func TestTier(t *testing.T) {
	caps := func(fs, net, env []string) fingerprint.Capabilities {
		return fingerprint.Capabilities{Filesystem: fs, Network: net, Environment: env}
	}
	tests := []struct {
		name   string
		asked  string
		runs   int
		obs    []Observation
		tier   string
		reason string // a part of the reason
		action bool   // an action asks for more runs
	}{
		{name: "nothing", runs: 5, obs: []Observation{{Capabilities: caps([]string{"read ~/notes.md", "write /tmp/*"}, nil, []string{"HOME", "PATH", "LC_ALL"})}},
			tier: TierLow, reason: "no network"},
		{name: "network only", runs: 5, obs: []Observation{{Capabilities: caps(nil, []string{"https:api.example:443"}, nil)}},
			tier: TierLow, reason: "1 of 3"},
		{name: "network and a write outside temp", runs: 5, obs: []Observation{
			{Capabilities: caps(nil, []string{"dns:api.example"}, nil)}, {Capabilities: caps([]string{"write ~/.bashrc"}, nil, nil)}},
			tier: TierMedium, reason: "filesystem (write ~/.bashrc)", action: true},
		{name: "all three, a secret read", runs: 20, obs: []Observation{{Capabilities: caps([]string{"read ~/.aws/credentials"}, []string{"https:x.example:443"}, []string{"AWS_SECRET_ACCESS_KEY"}),
			Secrets: []string{"read ~/.aws/credentials"}}}, tier: TierHigh, reason: "environment (AWS_SECRET_ACCESS_KEY)"},
		{name: "asked high over an observed low", asked: TierHigh, runs: 5, obs: []Observation{{}},
			tier: TierHigh, reason: "asked for; observed low", action: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Report{Runs: tc.runs, Cells: []Cell{{Observations: tc.obs}}, tierAsked: tc.asked}
			r.setTier()
			p, _ := Policy(tc.tier)
			if r.Tier != tc.tier || !strings.Contains(r.TierReason, tc.reason) || r.RecommendedRuns != p.RecommendedRuns || r.Sampling != p.Sampling {
				t.Errorf("tier %s (%s), policy %d %q; want %s with %q", r.Tier, r.TierReason, r.RecommendedRuns, r.Sampling, tc.tier, tc.reason)
			}
			if got := len(r.Actions) > 0; got != tc.action {
				t.Errorf("actions %q, want an action for more runs: %v", r.Actions, tc.action)
			}
		})
	}
}

func TestTierPolicies(t *testing.T) {
	for tier, want := range map[string]TierPolicy{
		TierHigh:   {20, "100% of invocations"},
		TierMedium: {10, "5% of invocations, raised to 100% after any drift"},
		TierLow:    {5, "1% of invocations"},
	} {
		if p, ok := Policy(tier); !ok || p != want {
			t.Errorf("Policy(%s) = %+v, %v; want %+v", tier, p, ok, want)
		}
	}
	if _, err := ParseTier("extreme"); err == nil {
		t.Error("ParseTier(extreme) = nil error")
	}
	if err := (Options{Runs: 2, Cells: []string{Chained}, Tier: "extreme"}).Validate(); err == nil || !strings.Contains(err.Error(), "tier") {
		t.Errorf("Validate with tier extreme = %v", err)
	}
}
