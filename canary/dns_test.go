package canary_test

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/canary"
)

// chunks splits s into pieces of at most n characters.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// randCase flips the case of every other letter, as DNS 0x20 does.
func randCase(s string) string {
	b := []byte(s)
	for i := range b {
		if i%2 == 0 && b[i] >= 'a' && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

func TestSetFindDNS(t *testing.T) {
	set := canary.NewSet(tokAWS, tokGH, tokPW)
	ghHex := hex.EncodeToString([]byte(tokGH.Value))
	ghB32 := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(tokGH.Value)))
	pwB64 := base64.RawURLEncoding.EncodeToString([]byte(tokPW.Value))
	var perQuery, seqQuery, sessQuery []string
	for i, c := range chunks(ghHex, 30) {
		perQuery = append(perQuery, c+".x.exfil.example.")
		seqQuery = append(seqQuery, string(rune('0'+i))+"."+c+".exfil.example")
		sessQuery = append(sessQuery, "a1b2."+c+".t.exfil.example")
	}
	tests := []struct {
		name  string
		names []string
		want  []canary.Hit
	}{
		{name: "nothing", names: []string{"www.example.com.", "api.github.com"}},
		{name: "hex in one label", names: []string{"example.com", ghHex[:60] + "." + ghHex[60:] + ".d.example"},
			want: []canary.Hit{{Token: tokGH, Encoding: canary.DNSLabels + "+" + canary.Hex, Offset: 1}}},
		{name: "plain label", names: []string{tokAWS.Value + ".attacker.example."},
			want: []canary.Hit{{Token: tokAWS, Encoding: canary.Plain, Offset: 0}}},
		{name: "hex across queries", names: append([]string{"ocsp.example.org"}, perQuery...),
			want: []canary.Hit{{Token: tokGH, Encoding: canary.DNSLabels + "+" + canary.Hex, Offset: 1, Parts: []int{1, 2, 3}}}},
		{name: "hex across queries, interleaved", names: []string{perQuery[0], "www.google.com", perQuery[1], perQuery[2]},
			want: []canary.Hit{{Token: tokGH, Encoding: canary.DNSLabels + "+" + canary.Hex, Offset: 0, Parts: []int{0, 2, 3}}}},
		{name: "sequence numbers", names: seqQuery,
			want: []canary.Hit{{Token: tokGH, Encoding: canary.DNSLabels + "+" + canary.Hex, Offset: 0, Parts: []int{0, 1, 2}}}},
		{name: "sequence numbers, shuffled", names: []string{seqQuery[2], seqQuery[0], "www.example.org", seqQuery[1]},
			want: []canary.Hit{{Token: tokGH, Encoding: canary.DNSLabels + "+" + canary.Hex, Offset: 1, Parts: []int{0, 1, 3}}}},
		{name: "session id label", names: sessQuery,
			want: []canary.Hit{{Token: tokGH, Encoding: canary.DNSLabels + "+" + canary.Hex, Offset: 0, Parts: []int{0, 1, 2}}}},
		{name: "hex with 0x20 case randomisation", names: []string{randCase(ghHex[:50]) + ".r.example", randCase(ghHex[50:]) + ".r.example"},
			want: []canary.Hit{{Token: tokGH, Encoding: canary.DNSLabels + "+" + canary.Hex, Offset: 0, Parts: []int{0, 1}}}},
		{name: "base32 labels", names: []string{strings.Join(chunks(ghB32, 20), ".") + ".b.example"},
			want: []canary.Hit{{Token: tokGH, Encoding: canary.DNSLabels + "+" + canary.Base32, Offset: 0}}},
		{name: "base64url labels", names: []string{pwB64[:10] + ".q.example", pwB64[10:] + ".q.example"},
			want: []canary.Hit{{Token: tokPW, Encoding: canary.DNSLabels + "+" + canary.Base64URL, Offset: 0, Parts: []int{0, 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := set.FindDNS(tt.names)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FindDNS(%q) mismatch (-want +got):\n%s", tt.names, diff)
			}
		})
	}
}

// FuzzFindDNS checks that FindDNS never panics on hostile names and reports
// only tokens of the set, each once.
func FuzzFindDNS(f *testing.F) {
	set := canary.NewSet(tokAWS, tokGH, tokPW)
	ghHex := hex.EncodeToString([]byte(tokGH.Value))
	f.Add(ghHex[:40]+".a.example", ghHex[40:]+".a.example", "x")
	f.Add("...", "", ".")
	f.Add(tokAWS.Value+".example", "a.b.c.d.e", "1.2.3.4.in-addr.arpa")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		seen := map[string]bool{}
		for _, h := range set.FindDNS([]string{a, b, c}) {
			if _, ok := set.Lookup(h.Token.ID); !ok || seen[h.Token.ID] || h.Offset < 0 || h.Offset > 2 {
				t.Errorf("bad hit %v", h)
			}
			seen[h.Token.ID] = true
		}
	})
}

func TestFindDNSManyNames(t *testing.T) {
	set := canary.NewSet(tokAWS, tokGH)
	var names []string
	for i := range 20000 {
		names = append(names, fmt.Sprintf("s1.%04x%04x.beacon.example.", i, i*7))
	}
	start := time.Now()
	if hits := set.FindDNS(names); len(hits) != 0 {
		t.Errorf("hits in noise: %v", hits)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("FindDNS of %d names took %v", len(names), d)
	}
}
