package sweep

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/sandboxctl/sandboxctl/orchestrator"
)

func TestPlanHash(t *testing.T) {
	base := orchestrator.Plan{TraceID: "a-trace", SkillPath: "/x", Driver: orchestrator.Driver{Kind: "literal"}, Limits: orchestrator.DefaultLimits()}
	h0, err := PlanHash(base, "v1")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		change  func(*orchestrator.Plan) string
		changes bool
	}{
		{"trace id and skill do not count", func(p *orchestrator.Plan) string { p.TraceID, p.SkillPath = "other", "/y"; return "v1" }, false},
		{"the API key does not count", func(p *orchestrator.Plan) string { p.Driver.APIKey = "sk-secret"; return "v1" }, false},
		{"model", func(p *orchestrator.Plan) string { p.Driver.Model = "m"; return "v1" }, true},
		{"timeout", func(p *orchestrator.Plan) string { p.Limits.Timeout++; return "v1" }, true},
		{"stealth", func(p *orchestrator.Plan) string { p.Stealth = orchestrator.StealthAlways; return "v1" }, true},
		{"version", func(p *orchestrator.Plan) string { return "v2" }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			v := tc.change(&p)
			h, err := PlanHash(p, v)
			if err != nil {
				t.Fatal(err)
			}
			if (h != h0) != tc.changes {
				t.Errorf("hash changed %v, want %v", h != h0, tc.changes)
			}
		})
	}
	if ResultKey("a", "b", "c") == ResultKey("a", "b", "d") || ResultKey("ab", "", "c") == ResultKey("a", "b", "c") {
		t.Error("result keys collide")
	}
}

func TestShards(t *testing.T) {
	var skills []Skill
	for i := range 1000 {
		skills = append(skills, Skill{ID: fmt.Sprint(i), SHA256: fmt.Sprintf("%x", sha256.Sum256([]byte(fmt.Sprint(i))))})
	}
	skills = append(skills, Skill{ID: "refused"})
	for _, n := range []int{1, 2, 3, 7} {
		count := make([]int, n)
		for _, s := range skills {
			held := 0
			for i := range n {
				if (Shard{Index: i, Count: n}).Holds(s) {
					held++
					count[i]++
				}
			}
			if held != 1 {
				t.Fatalf("%d shards: skill %s held by %d", n, s.ID, held)
			}
		}
		for i, c := range count {
			if n > 1 && (c < len(skills)/n/2 || c > len(skills)/n*2) {
				t.Errorf("%d shards: shard %d holds %d of %d", n, i, c, len(skills))
			}
		}
	}
	for _, bad := range []string{"", "1", "2/2", "-1/2", "a/b", "0/0"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
	if s, err := ParseShard("1/4"); err != nil || s != (Shard{1, 4}) || s.String() != "1/4" {
		t.Errorf("ParseShard(1/4) = %v, %v", s, err)
	}
}
