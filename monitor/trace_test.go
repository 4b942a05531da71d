package monitor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
	"github.com/sandboxctl/sandboxctl/traceplan"
	"github.com/sandboxctl/sandboxctl/tracing"
)

func TestChangedState(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	write("files/home/u/.cache/n", "3")
	write("files/tmp/run.sh", "#!/bin/sh\necho\n")
	ev := func(ch *trace.FSChange) trace.Event {
		return trace.Event{Type: trace.TypeFSChange, Data: ch}
	}
	tests := []struct {
		name    string
		events  []trace.Event
		want    []string // path mode content
		wantErr bool
	}{
		{name: "copied files, modes from content", events: []trace.Event{
			ev(&trace.FSChange{Path: "/home/u/.cache/n", Kind: "added", Copied: "files/home/u/.cache/n"}),
			ev(&trace.FSChange{Path: "/tmp/run.sh", Kind: "modified", Copied: "files/tmp/run.sh"}),
		}, want: []string{"/home/u/.cache/n 420 3", "/tmp/run.sh 493 #!/bin/sh\necho\n"}},
		{name: "not copied, deleted, other events", events: []trace.Event{
			ev(&trace.FSChange{Path: "/home/u/big", Kind: "added"}),
			ev(&trace.FSChange{Path: "/etc/x", Kind: "deleted", Copied: "files/home/u/.cache/n"}),
			{Type: trace.TypeExec, Data: &trace.Exec{Path: "/bin/sh"}},
		}, want: nil},
		{name: "copy missing", events: []trace.Event{
			ev(&trace.FSChange{Path: "/home/u/gone", Kind: "added", Copied: "files/home/u/gone"}),
		}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := changedState(dir, tc.events)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			var got []string
			for _, f := range fs {
				got = append(got, fmt.Sprintf("%s %d %s", f.Path, f.Mode, f.Content))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("state %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDeletedState(t *testing.T) {
	ev := func(typ trace.Type, p, errno string) trace.Event {
		return trace.Event{Type: typ, Data: &trace.File{Path: p, NewPath: p + ".new", Errno: errno}}
	}
	for _, tc := range []struct {
		name    string
		events  []trace.Event
		changed []string
		want    []string
	}{
		{name: "unlink in the home", events: []trace.Event{ev(trace.TypeUnlink, "/home/u/.cache/.x/state", "")}, want: []string{"/home/u/.cache/.x/state"}},
		{name: "rename away in tmp", events: []trace.Event{ev(trace.TypeRename, "/tmp/a", "")}, want: []string{"/tmp/a"}},
		{name: "failed unlink", events: []trace.Event{ev(trace.TypeUnlink, "/home/u/x", "ENOENT")}},
		{name: "outside the carried places", events: []trace.Event{ev(trace.TypeUnlink, "/etc/x", ""), ev(trace.TypeUnlink, "/homeless", "")}},
		{name: "written again", events: []trace.Event{ev(trace.TypeUnlink, "/tmp/a", "")}, changed: []string{"/tmp/a"}},
		{name: "once per path", events: []trace.Event{ev(trace.TypeUnlink, "/tmp/a", ""), ev(trace.TypeUnlink, "/tmp//a", "")}, want: []string{"/tmp/a"}},
		{name: "opens are not deletions", events: []trace.Event{ev(trace.TypeOpen, "/tmp/a", "")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ch []File
			for _, p := range tc.changed {
				ch = append(ch, File{Path: p})
			}
			if got := deletedState(tc.events, ch); !slices.Equal(got, tc.want) {
				t.Errorf("deletedState = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRunTraces: Run traces a copy of the plan per run, with a trace id of
// its own, its condition and its carried state, into Dir/runs/<label>, and
// hands each observation to Observed.
func TestRunTraces(t *testing.T) {
	base := traceplan.Plan{TraceID: "monitor-base", SkillPath: "/skills/x", Driver: traceplan.Driver{Kind: traceplan.DriverLiteral},
		Limits: traceplan.DefaultLimits(), Stealth: traceplan.StealthOff, Twins: traceplan.TwinsOff}
	out := t.TempDir()
	var (
		plans    []traceplan.Plan
		dirs     []string
		observed []Observation
		n        int
	)
	tr := tracing.Func(func(_ context.Context, p traceplan.Plan, dir string) (*reports.Report, error) {
		plans, dirs = append(plans, p), append(dirs, dir)
		count := 1
		for _, r := range p.Restore {
			c, _ := strconv.Atoi(string(r.Content))
			count = c + 1
		}
		f := filepath.Join(dir, "files", "home", "u", "n")
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(f, []byte(strconv.Itoa(count)), 0o644); err != nil {
			return nil, err
		}
		return &reports.Report{TraceID: p.TraceID, Status: reports.StatusCompleted, Verdict: rules.Clean,
			Events: []trace.Event{{Type: trace.TypeFSChange, Data: &trace.FSChange{Path: "/home/u/n", Kind: "added", Copied: "files/home/u/n"}}}}, nil
	})
	o := Options{Runs: 2, Cells: []string{Chained, Independent}, Vary: []Condition{{CondTimeZone, "Asia/Tokyo"}},
		Plan: base, Dir: out,
		TraceID:  func() string { n++; return fmt.Sprintf("monitor-run-%d", n) },
		Observed: func(o Observation) error { observed = append(observed, o); return nil }}
	rep, err := Run(t.Context(), tr, o)
	if err != nil {
		t.Fatal(err)
	}
	labels := []string{"chained-01", "chained-02", "independent-01", "independent-02", "vary-tz-asia-tokyo-01", "vary-tz-asia-tokyo-02"}
	if len(plans) != len(labels) || rep.Verdict != Consistent {
		t.Fatalf("%d traces, verdict %s; want %d, %s", len(plans), rep.Verdict, len(labels), Consistent)
	}
	for i, p := range plans {
		want := base
		want.TraceID = fmt.Sprintf("monitor-run-%d", i+1)
		if i == 1 {
			want.Restore = []traceplan.RestoreFile{{Path: "/home/u/n", Mode: 0o644, Content: []byte("1")}}
		}
		if i >= 4 {
			want.TimeZone = "Asia/Tokyo"
		}
		if diff := cmp.Diff(want, p); diff != "" {
			t.Errorf("%s: plan mismatch (-want +got):\n%s", labels[i], diff)
		}
		if d := filepath.Join(out, "runs", labels[i]); dirs[i] != d {
			t.Errorf("%s: run folder %s, want %s", labels[i], dirs[i], d)
		}
		obs := observed[i]
		if obs.Label != labels[i] || obs.TraceID != want.TraceID || !slices.Equal(obs.Written, []string{"/home/u/n"}) ||
			(i == 1) != (len(obs.Restored) == 1) {
			t.Errorf("%s: observed %+v", labels[i], obs)
		}
	}
	if _, err := Run(t.Context(), tr, Options{Runs: 2, Cells: []string{Independent}, Plan: base}); err == nil {
		t.Error("Run without trace ids: no error")
	}
}
