package monitor

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/reports"
)

func TestNormaliseOutput(t *testing.T) {
	tests := []struct {
		name string
		a, b string // two runs' outputs
		same bool   // they normalise equal
	}{
		{name: "date and mktemp names in a benign run",
			a:    "started Fri Nov 27 06:19:33 UTC 2026\nwork dir /tmp/tmp.Xa81kQz0Lm\nwrote /tmp/tmp.Xa81kQz0Lm/out.json\n",
			b:    "started Fri Nov 27 06:21:02 UTC 2026\nwork dir /tmp/tmp.p0QvN3sDzz\nwrote /tmp/tmp.p0QvN3sDzz/out.json\n",
			same: true},
		{name: "a changed real value", a: "total: 42 files\n", b: "total: 43 files\n"},
		{name: "a changed host in a timestamped line", a: "2026-11-27T06:19:33Z GET https://api.example.com/v1\n",
			b: "2026-11-27T06:20:01Z GET https://collect.example.net/v1\n"},
		{name: "RFC 3339 with fraction and offset", a: "at 2026-11-27T06:19:33.123456+01:00 ok", b: "at 2026-11-28T07:00:00.9+01:00 ok", same: true},
		{name: "RFC 1123", a: "Date: Fri, 27 Nov 2026 06:19:33 GMT", b: "Date: Sat, 28 Nov 2026 10:01:02 GMT", same: true},
		{name: "ISO date only", a: "report-2026-11-27.csv", b: "report-2026-11-28.csv", same: true},
		{name: "ls -l times", a: "-rw-r--r-- 1 u u 12 Nov 27 06:19 notes.md", b: "-rw-r--r-- 1 u u 12 Nov 27 06:22 notes.md", same: true},
		{name: "ls -l size changed", a: "-rw-r--r-- 1 u u 12 Nov 27 06:19 notes.md", b: "-rw-r--r-- 1 u u 13 Nov 27 06:22 notes.md"},
		{name: "epoch seconds", a: "ts=1795760373", b: "ts=1795760440", same: true},
		{name: "epoch milliseconds", a: `{"t":1795760373123}`, b: `{"t":1795760440001}`, same: true},
		{name: "a small number is not an epoch", a: "port 8080", b: "port 8081"},
		{name: "random temp folder", a: "cache in /tmp/pip-build-a8x9k2q/pkg", b: "cache in /tmp/pip-build-zz01mmq/pkg", same: true},
		{name: "temp file renamed for real", a: "/tmp/report.txt", b: "/tmp/summary.txt"},
		{name: "python tempfile", a: "/tmp/tmpk3j_x9ab/data", b: "/tmp/tmp0qpz_1cc/data", same: true},
		{name: "uuid", a: "request 3f2a9c1e-8b7d-4c6a-9e5f-0a1b2c3d4e5f done", b: "request 7d1e0000-1111-4222-8333-444455556666 done", same: true},
		{name: "long hex id", a: "container 4f9a1c2b3d4e5f60718293a4b5c6d7e8", b: "container 0a1b2c3d4e5f60718293a4b5c6d7e8f9", same: true},
		{name: "pids", a: "pid 4211\nsshd[4211]: ok\n[1] 4212\n/proc/4211/status", b: "pid 977\nsshd[977]: ok\n[1] 980\n/proc/977/status", same: true},
		{name: "durations", a: "Ran 3 tests in 0.004s\nreal\t0m0.012s\ntook 12ms", b: "Ran 3 tests in 0.107s\nreal\t0m1.300s\ntook 340ms", same: true},
		{name: "test count changed", a: "Ran 3 tests in 0.004s", b: "Ran 4 tests in 0.004s"},
		{name: "user and host names stay", a: "u@sbx-host:~$", b: "alice@sbx-host:~$"},
		{name: "a log level after a time is kept", a: "06:19:33 WARN disk", b: "06:19:34 ERROR disk"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			na, nb := NormaliseOutput(tc.a), NormaliseOutput(tc.b)
			if (na == nb) != tc.same {
				t.Errorf("normalised equal = %v, want %v\n a: %q\n b: %q", na == nb, tc.same, na, nb)
			}
			if (OutputHash(tc.a, "") == OutputHash(tc.b, "")) != tc.same {
				t.Errorf("hashes equal = %v, want %v", !tc.same, tc.same)
			}
		})
	}
}

func FuzzNormaliseOutput(f *testing.F) {
	for _, s := range []string{"Fri Nov 27 06:19:33 UTC 2026", "/tmp/tmp.Xa81kQz0Lm/x", "2026-11-27T06:19:33.1Z",
		"pid 12 sshd[9]", "0.5s 1m2.5s 12ms", "1795760373123", "deadbeefcafe0123456789", "tmp.aaaaaa1795760373",
		"/tmp/ab12cd3f1795760373", "\xff\xfe", "[1] 2\n[3]+ 4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := NormaliseOutput(s)
		if again := NormaliseOutput(n); again != n {
			t.Errorf("not idempotent:\n in:  %q\n 1st: %q\n 2nd: %q", s, n, again)
		}
	})
}

func TestObserveCalls(t *testing.T) {
	call := func(tool, cmd, stdout string) reports.ToolCall {
		args, _ := json.Marshal(map[string]string{"command": cmd, "path": "~/x"})
		return reports.ToolCall{Tool: tool, Arguments: args, Result: reports.ToolResult{Stdout: stdout}}
	}
	r := &reports.Report{ToolCalls: []reports.ToolCall{
		call("bash", "date;\n  mktemp", "Fri Nov 27 06:19:33 UTC 2026\n/tmp/tmp.Xa81kQz0Lm\n"),
		call("read_file", "", "hello"),
	}}
	o := Observe(r, "chained-01", "")
	if want := []string{"bash date; mktemp", "read_file"}; !slices.Equal(o.Calls, want) {
		t.Errorf("calls %q, want %q", o.Calls, want)
	}
	if len(o.OutputHashes) != 2 || len(o.OutputHashes[0]) != 16 {
		t.Fatalf("output hashes %q, want 2 of 16 hex digits", o.OutputHashes)
	}
	r.ToolCalls[0].Result.Stdout = "Sat Nov 28 01:00:00 UTC 2026\n/tmp/tmp.0000aaaaZZ\n"
	if o2 := Observe(r, "chained-02", ""); !slices.Equal(o.OutputHashes, o2.OutputHashes) {
		t.Errorf("hashes %q and %q differ for the same output at another time", o.OutputHashes, o2.OutputHashes)
	}
}

func TestOutputVaried(t *testing.T) {
	obs := func(hs ...string) Observation {
		return Observation{Calls: []string{"bash date", "bash ls"}, OutputHashes: hs}
	}
	got := outputVaried([]Observation{obs("a", "x"), obs("a", "y"), obs("b", "x"), obs("a", "x")})
	want := []string{"output of call 1 (bash date): differs in run 3", "output of call 2 (bash ls): differs in run 2"}
	if !slices.Equal(got, want) {
		t.Errorf("outputVaried = %q, want %q", got, want)
	}
	if got := outputVaried([]Observation{obs("a", "x"), obs("a", "x")}); got != nil {
		t.Errorf("outputVaried of equal runs = %q, want none", got)
	}
}

// TestOutputVariesMarginal: a call whose output differs between runs
// makes a cell MARGINAL, never VARIANT.
func TestOutputVariesMarginal(t *testing.T) {
	n := 0
	tr := func(_ context.Context, s runSpec) (runResult, error) {
		n++
		h := "aaaa"
		if n == 2 {
			h = "bbbb"
		}
		return runResult{Observation: Observation{Verdict: "clean", Rules: []string{}, Calls: []string{"bash curl -s https://api.example/quote"},
			OutputHashes: []string{h}}}, nil
	}
	rep, err := runWith(t.Context(), tr, Options{Runs: 3, Cells: []string{Independent}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != Marginal || len(rep.Cells[0].Varied) != 1 || !strings.Contains(rep.Cells[0].Varied[0], "output of call 1") {
		t.Errorf("verdict %s, varied %q; want MARGINAL with call 1's output", rep.Verdict, rep.Cells[0].Varied)
	}
}
