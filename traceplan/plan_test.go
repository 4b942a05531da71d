package traceplan_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/traceplan"
)

// TestPlanJSON pins a plan's JSON: plans are printed by --dry-run, and
// what of them decides a verdict is hashed into sweep databases
// (sweep.PlanHash), so a field's name or tag must not change. Secrets (the
// API key, the seed, the twins' keys and randomness, restored contents)
// never appear.
func TestPlanJSON(t *testing.T) {
	p := traceplan.Plan{
		TraceID: "golden-trace", SkillPath: "/skills/x", SkillID: "pub/x",
		Driver: traceplan.Driver{Kind: traceplan.DriverLLM, Provider: "openai", Model: "m-1", BaseURL: "https://api.example/v1",
			APIKey: "sk-secret", Transcript: "t.jsonl"},
		Prompt: "do it",
		Limits: traceplan.Limits{Timeout: time.Minute, ToolTimeout: 2 * time.Second, Turns: 3, Tokens: 4, OutputBytes: 5, Memory: 6,
			PIDs: 7, NanoCPUs: 8, HomeSize: 9, TmpSize: 10, Grace: 11, EventBytes: 12, SpoolBytes: 13, TimelineBytes: 14},
		Image: "img:1", User: "ann", Hostname: "box", TimeZone: "Asia/Tokyo", Clock: "+3d",
		Monitoring: traceplan.MonitoringVisible, DNS: traceplan.DNSNone, Seed: []byte("seed"), Keep: true,
		NetworkConfig: "net.yaml", Persona: "macos", Stealth: traceplan.StealthAlways, Unwatched: true, Twins: traceplan.TwinsOff,
		Twin: &traceplan.TwinSpec{Role: "other", Start: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Entropy: []byte{1}, Key: []byte{2},
			Grow: 16},
		Restore: []traceplan.RestoreFile{{Path: "/home/ann/a", Mode: 0o644, Content: []byte("x")}},
	}
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"filled in", p, `{"trace_id":"golden-trace","skill_path":"/skills/x","driver":{"kind":"llm","provider":"openai","model":"m-1",` +
			`"base_url":"https://api.example/v1","transcript":"t.jsonl"},"prompt":"do it","skill_id":"pub/x","limits":{"timeout_ns":60000000000,` +
			`"tool_timeout_ns":2000000000,"turns":3,"tokens":4,"output_bytes":5,"memory_bytes":6,"pids":7,"nano_cpus":8,"home_bytes":9,` +
			`"tmp_bytes":10,"grace_ns":11,"event_bytes":12,"spool_bytes":13,"timeline_bytes":14},"image":"img:1","user":"ann","hostname":"box",` +
			`"time_zone":"Asia/Tokyo","clock":"+3d","monitoring":"visible","dns":"none","keep":true,"network_config":"net.yaml",` +
			`"persona":"macos","stealth":"always","unwatched":true,"twins":"off","twin":{"role":"other",` +
			`"start":"2026-01-02T03:04:05.000000006Z","grow":16},"restore":[{"path":"/home/ann/a","mode":420}]}`},
		{"zero", traceplan.Plan{}, `{"trace_id":"","skill_path":"","driver":{"kind":""},"limits":{"timeout_ns":0,"tool_timeout_ns":0,` +
			`"turns":0,"tokens":0,"output_bytes":0,"memory_bytes":0,"pids":0,"nano_cpus":0,"home_bytes":0,"tmp_bytes":0,"grace_ns":0}}`},
		{"default limits", traceplan.DefaultLimits(), `{"timeout_ns":300000000000,"tool_timeout_ns":120000000000,"turns":50,` +
			`"tokens":200000,"output_bytes":65536,"memory_bytes":2147483648,"pids":512,"nano_cpus":1000000000,"home_bytes":536870912,` +
			`"tmp_bytes":268435456,"grace_ns":8000000000,"event_bytes":67108864,"spool_bytes":268435456,"timeline_bytes":67108864}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("JSON changed:\n got %s\nwant %s", b, tc.want)
			}
		})
	}
}

func TestPlanValidate(t *testing.T) {
	good := traceplan.Plan{TraceID: "abc-123", SkillPath: "x", Driver: traceplan.Driver{Kind: "literal"}, Limits: traceplan.DefaultLimits()}
	tests := []struct {
		name   string
		mutate func(*traceplan.Plan)
		want   string
	}{
		{name: "ok", mutate: func(*traceplan.Plan) {}},
		{name: "no skill", mutate: func(p *traceplan.Plan) { p.SkillPath = "" }, want: "no skill"},
		{name: "bad id", mutate: func(p *traceplan.Plan) { p.TraceID = "A B" }, want: "trace id"},
		{name: "zero timeout", mutate: func(p *traceplan.Plan) { p.Limits.Timeout = 0 }, want: "timeout"},
		{name: "tiny memory", mutate: func(p *traceplan.Plan) { p.Limits.Memory = 1 << 20 }, want: "memory"},
		{name: "llm without model", mutate: func(p *traceplan.Plan) { p.Driver.Kind = "llm" }, want: "--model"},
		{name: "replay without file", mutate: func(p *traceplan.Plan) { p.Driver.Kind = "replay" }, want: "--transcript"},
		{name: "unknown driver", mutate: func(p *traceplan.Plan) { p.Driver.Kind = "magic" }, want: "unknown driver"},
		{name: "negative grace", mutate: func(p *traceplan.Plan) { p.Limits.Grace = -time.Second }, want: "grace"},
		{name: "grace longer than the timeout", mutate: func(p *traceplan.Plan) { p.Limits.Grace = 2 * p.Limits.Timeout }},
		{name: "tiny event budget", mutate: func(p *traceplan.Plan) { p.Limits.EventBytes = 4096 }, want: "budget"},
		{name: "persona macos", mutate: func(p *traceplan.Plan) { p.Persona = "macos" }},
		{name: "persona linux", mutate: func(p *traceplan.Plan) { p.Persona = "linux" }},
		{name: "unknown persona", mutate: func(p *traceplan.Plan) { p.Persona = "windows" }, want: "unknown persona"},
		{name: "time zone", mutate: func(p *traceplan.Plan) { p.TimeZone = "America/Argentina/Buenos_Aires" }},
		{name: "time zone UTC", mutate: func(p *traceplan.Plan) { p.TimeZone = "UTC" }},
		{name: "time zone escaping zoneinfo", mutate: func(p *traceplan.Plan) { p.TimeZone = "../../etc/passwd" }, want: "time zone"},
		{name: "time zone with dots", mutate: func(p *traceplan.Plan) { p.TimeZone = "Asia/.." }, want: "time zone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good
			tt.mutate(&p)
			err := p.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want error containing %q", err, tt.want)
			}
		})
	}
}
