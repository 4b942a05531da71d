package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/monitor"
)

func TestMonitorUsage(t *testing.T) {
	dir := t.TempDir()
	sk := filepath.Join(dir, "SKILL.md")
	os.WriteFile(sk, []byte("---\nname: x\ndescription: y\n---\n\n```bash\necho hi\n```\n"), 0o644)
	out := filepath.Join(dir, "out")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no skill", []string{"monitor", "--out", out}, "exactly one skill"},
		{"no out", []string{"monitor", sk}, "--out"},
		{"one run", []string{"monitor", "--runs", "1", "--out", out, sk}, "at least 2 runs"},
		{"unknown cell", []string{"monitor", "--cells", "chained,clock", "--out", out, sk}, "unknown cell"},
		{"no cell", []string{"monitor", "--cells", ",", "--out", out, sk}, "at least one cell"},
		{"format", []string{"monitor", "--format", "sarif", "--out", out, sk}, "text or json"},
		{"model driver", []string{"monitor", "--driver", "llm", "--out", out, sk}, "literal or replay"},
		{"replay without transcript", []string{"monitor", "--driver", "replay", "--out", out, sk}, "--transcript"},
		{"vary name", []string{"monitor", "--vary", "color=red", "--out", out, sk}, "unknown name"},
		{"vary clock", []string{"monitor", "--vary", "clock=+30y", "--out", out, sk}, "20 years"},
		{"vary dns", []string{"monitor", "--vary", "dns=8.8.8.8", "--out", out, sk}, "dns is all"},
		{"vary value", []string{"monitor", "--vary", "tz=../x", "--out", out, sk}, "value"},
		{"vary without independent", []string{"monitor", "--cells", "chained", "--vary", "tz=UTC", "--out", out, sk}, "independent"},
		{"candidates", []string{"monitor", "--candidates", "0", "--out", out, sk}, "--candidates"},
		{"warm", []string{"monitor", "--warm", "-1", "--out", out, sk}, "--warm"},
		{"tier", []string{"monitor", "--tier", "extreme", "--out", out, sk}, "--tier"},
		{"tier with too few runs", []string{"monitor", "--tier", "high", "--runs", "1", "--out", out, sk}, "at least 2 runs"},
		{"missing skill", []string{"monitor", "--out", out, filepath.Join(dir, "none")}, "none"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(t.Context(), c.args, env{stdout: &bytes.Buffer{}, stderr: &stderr, getenv: func(string) string { return "" }})
			if code != exitUsage || !strings.Contains(stderr.String(), c.want) {
				t.Fatalf("exit %d, stderr %q; want %d with %q", code, stderr.String(), exitUsage, c.want)
			}
		})
	}
}

// TestWriteMonitorDir: the report goes to the folder as JSON, text and
// one HTML page.
func TestWriteMonitorDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mon")
	rep := monitor.Report{SchemaVersion: monitor.SchemaVersion, Skill: "<b>x</b>", Runs: 2, Verdict: monitor.Consistent,
		Cells: []monitor.Cell{{Kind: monitor.Independent, Verdict: monitor.Consistent, Observations: []monitor.Observation{{Label: "independent-01"}, {Label: "independent-02"}}}}}
	if err := writeMonitorDir(dir, rep); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"monitor.json", "monitor.txt", "monitor.html"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(b) == 0 {
			t.Errorf("%s: %d bytes, %v", name, len(b), err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "monitor.html")); !bytes.Contains(b, []byte("&lt;b&gt;x&lt;/b&gt;")) {
		t.Error("monitor.html does not show the skill's name escaped")
	}
}

func TestMonitorRuns(t *testing.T) {
	tests := []struct {
		name    string
		tier    string
		runs    int
		runsSet bool
		want    int
	}{
		{name: "auto keeps the default", tier: "auto", runs: 5, want: 5},
		{name: "high without --runs", tier: "high", runs: 5, want: 20},
		{name: "medium without --runs", tier: "medium", runs: 5, want: 10},
		{name: "low without --runs", tier: "low", runs: 5, want: 5},
		{name: "--runs wins", tier: "high", runs: 3, runsSet: true, want: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := monitorRuns(tc.tier, tc.runs, tc.runsSet); got != tc.want {
				t.Errorf("monitorRuns(%s, %d, %v) = %d, want %d", tc.tier, tc.runs, tc.runsSet, got, tc.want)
			}
		})
	}
}
