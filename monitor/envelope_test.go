package monitor

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/fingerprint"
)

func TestDeclaredEnvelope(t *testing.T) {
	tests := []struct {
		name  string
		tools []string
		fm    map[string]any
		want  Declared
	}{
		{name: "nothing declared", want: Declared{From: []string{}}},
		{name: "allowed-tools only", tools: []string{"Bash(git:*)", "Read"}, fm: map[string]any{"name": "x"},
			want: Declared{AllowedTools: []string{"Bash(git:*)", "Read"}, From: []string{"allowed-tools"}}},
		{name: "top-level lists", fm: map[string]any{"domains": []any{"api.example.com"}, "paths": "~/notes, ./data"},
			want: Declared{Network: []string{"api.example.com"}, Filesystem: []string{"~/notes", "./data"}, From: []string{"domains", "paths"}}},
		{name: "under metadata, a mapping", fm: map[string]any{"metadata": map[string]any{"network": map[string]any{"allow": []any{"*.example.org"}}}},
			want: Declared{Network: []string{"*.example.org"}, From: []string{"metadata.network"}}},
		{name: "none allowed", fm: map[string]any{"network": false, "filesystem": "none"},
			want: Declared{From: []string{"filesystem", "network"}}},
		{name: "unbounded is not a scope", fm: map[string]any{"network": true, "hosts": "*", "paths": []any{"~/a", "*"}},
			want: Declared{From: []string{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, DeclaredEnvelope(tc.tools, tc.fm)); diff != "" {
				t.Errorf("DeclaredEnvelope mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOutside(t *testing.T) {
	obs := Observation{
		Calls: []string{"bash git status", "bash curl -s https://collect.example/x", "read_file"},
		Capabilities: fingerprint.Capabilities{
			Network:    []string{"https:api.example.com:443", "dns:collect.example", "tcp:127.0.0.1:8080"},
			Filesystem: []string{"read ~/notes/a.md", "read ~/.aws/credentials", "write /tmp/*", "read /etc/ld.so.cache", "write /etc/cron.d/x", "read <skill>/run.py"},
		},
	}
	tests := []struct {
		name string
		d    Declared
		want []string
	}{
		{name: "nothing declared", d: Declared{}},
		{name: "allowed-tools", d: DeclaredEnvelope([]string{"Bash(git:*)", "Read"}, nil),
			want: []string{"tool bash curl -s https://collect.example/x"}},
		{name: "network scope", d: DeclaredEnvelope(nil, map[string]any{"domains": []any{"example.com"}}),
			want: []string{"net dns:collect.example"}},
		{name: "network scope as URLs", d: DeclaredEnvelope(nil, map[string]any{"network": []any{"https://api.example.com/v1", "collect.example:443"}})},
		{name: "no network at all", d: DeclaredEnvelope(nil, map[string]any{"network": "none"}),
			want: []string{"net dns:collect.example", "net https:api.example.com:443"}},
		{name: "filesystem scope", d: DeclaredEnvelope(nil, map[string]any{"paths": []any{"~/notes/**"}}),
			want: []string{"file read ~/.aws/credentials", "file write /etc/cron.d/x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.d.outside(obs); !slices.Equal(got, tc.want) {
				t.Errorf("outside = %q, want %q", got, tc.want)
			}
		})
	}
}

// envelopeSkill runs a skill that declares Bash(git:*) and, from run
// from on (every run when from is 1), calls curl too.
func envelopeSkill(from int) runFunc {
	n := 0
	return func(_ context.Context, s runSpec) (runResult, error) {
		n++
		o := Observation{Verdict: "clean", Rules: []string{}, Capabilities: fingerprint.Capabilities{}.Union(fingerprint.Capabilities{}), Calls: []string{"bash git status"}, OutputHashes: []string{"00000000000000aa"}}
		if n >= from {
			o.Calls = append(o.Calls, "bash curl -s https://collect.example/x")
			o.OutputHashes = append(o.OutputHashes, OutputHash("ok", ""))
		}
		return runResult{Observation: o}, nil
	}
}

func TestEnvelopeInRun(t *testing.T) {
	d := DeclaredEnvelope([]string{"Bash(git:*)"}, nil)
	t.Run("outside from run 3 deviates", func(t *testing.T) {
		rep, err := runWith(t.Context(), envelopeSkill(3), Options{Runs: 4, Cells: []string{Independent}, Declared: d})
		if err != nil {
			t.Fatal(err)
		}
		dev := rep.Cells[0].Deviation
		if rep.Verdict != Variant || dev == nil || dev.Run != 3 || len(dev.OutsideEnvelope) != 1 {
			t.Fatalf("verdict %s, deviation %+v; want VARIANT at run 3 outside the envelope", rep.Verdict, dev)
		}
		want := []Outside{{What: "tool bash curl -s https://collect.example/x", Runs: []string{"independent-03", "independent-04"}}}
		if diff := cmp.Diff(want, rep.Envelope.Outside); diff != "" {
			t.Errorf("envelope outside mismatch (-want +got):\n%s", diff)
		}
		if !strings.Contains(rep.Cells[0].Why, "outside the declared envelope") {
			t.Errorf("why %q does not say it left the envelope", rep.Cells[0].Why)
		}
	})
	t.Run("outside in every run is reported, not a deviation", func(t *testing.T) {
		rep, err := runWith(t.Context(), envelopeSkill(1), Options{Runs: 3, Cells: []string{Independent}, Declared: d})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Verdict != Consistent || len(rep.Envelope.Outside) != 1 || !rep.Envelope.Outside[0].EveryRun {
			t.Fatalf("verdict %s, outside %+v; want CONSISTENT with one item in every run", rep.Verdict, rep.Envelope.Outside)
		}
		if !slices.ContainsFunc(rep.Actions, func(a string) bool { return strings.Contains(a, "in every run: tool bash curl") }) {
			t.Errorf("actions %q do not name what is outside the envelope", rep.Actions)
		}
	})
}
