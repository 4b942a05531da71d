package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/sweep"
)

func TestSweepUI(t *testing.T) {
	st := sweep.Stats{Total: 10, Left: 4, Ran: 6, Running: 2, Elapsed: time.Hour, ByVerdict: map[string]int{"malicious": 2, "clean": 4}}
	it := sweep.Item{Skill: sweep.Skill{ID: "mirror/alice/\x1b[31mred"}}
	cases := []struct {
		name string
		tty  bool
		ev   sweep.Event
		want []string
		not  []string
	}{
		{"plain done", false, sweep.Event{Kind: sweep.EventDone, Item: it, Verdict: "malicious", Stats: st},
			[]string{"sandboxctl: [6/10] mirror/alice/\\x1b[31mred: malicious (6/h · ETA 40m0s)\n"}, []string{"\r"}},
		{"plain retry", false, sweep.Event{Kind: sweep.EventRetry, Item: it, Attempt: 1, Err: "engine went away", Stats: st},
			[]string{"attempt 1 failed, will retry: engine went away"}, nil},
		{"plain start says nothing", false, sweep.Event{Kind: sweep.EventStart, Item: it, Stats: st}, nil, []string{"sandboxctl"}},
		{"terminal line", true, sweep.Event{Kind: sweep.EventDone, Item: it, Stats: st},
			[]string{"\r\x1b[K[6/10] malicious 2 · suspicious 0 · clean 4 · inconclusive 0 · failed 0 · running 2 · 6/h · ETA 40m0s"}, []string{"\n"}},
		{"terminal failure stays above the line", true, sweep.Event{Kind: sweep.EventFailed, Item: it, Err: "gave up", Stats: st},
			[]string{"  failed mirror/alice/\\x1b[31mred: gave up\n"}, []string{"\x1b[31m"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			u := newSweepUI(&b, tc.tty)
			u.event(tc.ev)
			got := b.String()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output %q lacks %q", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("output %q holds %q", got, n)
				}
			}
			if tc.want == nil && got != "" {
				t.Errorf("output %q, want none", got)
			}
		})
	}
}

func TestSweepExit(t *testing.T) {
	cases := []struct {
		name string
		sum  sweep.Summary
		want int
	}{
		{"clean", sweep.Summary{Complete: true, ByVerdict: map[string]int{"clean": 3}}, exitClean},
		{"malicious", sweep.Summary{Complete: true, Failed: 1, ByVerdict: map[string]int{"malicious": 1}}, exitFindings},
		{"failed skills", sweep.Summary{Complete: true, Failed: 1, ByVerdict: map[string]int{"clean": 1}}, exitSkillsFailed},
		{"unfinished", sweep.Summary{Complete: false, ByVerdict: map[string]int{"malicious": 1}}, exitFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := sweepExit(tc.sum); got != tc.want {
				t.Errorf("exit %d, want %d", got, tc.want)
			}
		})
	}
}

// TestSweepRefusesDirectoryBomb: the directory bomb a serve upload is
// refused for, given to sweep, is refused with the reason (a usage error,
// before any engine), and nothing of it stays in the sweep folder;
// --max-entries below 1 is a usage error.
func TestSweepRefusesDirectoryBomb(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "nightly.tar.gz")
	if err := os.WriteFile(src, testenv.DirBomb(t, 20_000), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "sw")
	var so, se bytes.Buffer
	code := run(t.Context(), []string{"sweep", "--out", out, src}, env{stdout: &so, stderr: &se, getenv: func(string) string { return "" }})
	if code != exitUsage || !strings.Contains(se.String(), "over 10000 entries (files and folders)") {
		t.Fatalf("exit %d, stderr:\n%s", code, se.String())
	}
	var left []string
	filepath.WalkDir(filepath.Join(out, "sources"), func(p string, d os.DirEntry, err error) error {
		if err == nil && p != filepath.Join(out, "sources") {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Fatalf("the refused archive left %d paths, first %s", len(left), left[0])
	}
	if code := run(t.Context(), []string{"sweep", "--max-entries", "0", "--out", out, src}, env{stdout: &so, stderr: &se, getenv: func(string) string { return "" }}); code != exitUsage {
		t.Fatalf("--max-entries 0: exit %d", code)
	}
}
