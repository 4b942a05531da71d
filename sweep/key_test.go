package sweep

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/traceplan"
)

func TestPlanHash(t *testing.T) {
	base := traceplan.Plan{TraceID: "a-trace", SkillPath: "/x", Driver: traceplan.Driver{Kind: "literal"}, Limits: traceplan.DefaultLimits()}
	h0, err := PlanHash(base, "v1")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		change  func(*traceplan.Plan) string
		changes bool
	}{
		{"trace id and skill do not count", func(p *traceplan.Plan) string { p.TraceID, p.SkillPath = "other", "/y"; return "v1" }, false},
		{"the API key does not count", func(p *traceplan.Plan) string { p.Driver.APIKey = "sk-secret"; return "v1" }, false},
		{"model", func(p *traceplan.Plan) string { p.Driver.Model = "m"; return "v1" }, true},
		{"timeout", func(p *traceplan.Plan) string { p.Limits.Timeout++; return "v1" }, true},
		{"stealth", func(p *traceplan.Plan) string { p.Stealth = traceplan.StealthAlways; return "v1" }, true},
		{"version", func(p *traceplan.Plan) string { return "v2" }, true},
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
	// The hash of a plan is stored in sweep databases: the same settings
	// must keep their hash.
	if h0 != "da846749a1490deb34b4724a0a404eeb0417482866ed64fdcb1468119ce7ef5b" {
		t.Errorf("plan hash of the default plan changed: %s", h0)
	}
	full := base
	full.Driver = traceplan.Driver{Kind: traceplan.DriverLLM, Provider: "openai", Model: "m-1", BaseURL: "https://api.example/v1", APIKey: "sk-secret", Transcript: "t.jsonl"}
	full.Prompt, full.SkillID, full.Image, full.User, full.Hostname = "do it", "pub/x", "img:1", "ann", "box"
	full.TraceID, full.SkillPath = "golden-trace", "/skills/x"
	full.Limits = traceplan.Limits{Timeout: time.Minute, ToolTimeout: 2 * time.Second, Turns: 3, Tokens: 4, OutputBytes: 5, Memory: 6,
		PIDs: 7, NanoCPUs: 8, HomeSize: 9, TmpSize: 10, Grace: 11, EventBytes: 12, SpoolBytes: 13, TimelineBytes: 14}
	full.TimeZone, full.Clock, full.Monitoring, full.DNS = "Asia/Tokyo", "+3d", traceplan.MonitoringVisible, traceplan.DNSNone
	full.Seed, full.Keep, full.Persona, full.Stealth, full.Unwatched, full.Twins = []byte("seed"), true, "macos", traceplan.StealthAlways, true, traceplan.TwinsOff
	full.Twin = &traceplan.TwinSpec{Role: "other", Start: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Entropy: []byte{1}, Key: []byte{2}, Grow: 16}
	full.Restore = []traceplan.RestoreFile{{Path: "/home/ann/a", Mode: 0o644, Content: []byte("x")}}
	if h, err := PlanHash(full, "v1"); err != nil || h != "278538384955059b8a702e8a40ece82aee3488ef7461f7203bcb7b4a728a0a29" {
		t.Errorf("plan hash of a filled-in plan changed: %s, %v", h, err)
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
