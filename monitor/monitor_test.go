package monitor

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/fingerprint"
)

// fakeSkill is a skill as the fake tracer runs it: it keeps a run counter
// in counter (when set), writes noise files, and exfiltrates when active
// says so for the run's count.
type fakeSkill struct {
	// when: the skill exfiltrates under this condition (zero: never)
	when    Condition
	unless  Condition // the skill exfiltrates, except under this condition
	flaky   bool      // under when, only on every other run
	counter string
	noise   []string
	active  func(count int) bool
	cpu     func(count int) float64
	fail    int // the trace number that fails (0: none)
}

func (f *fakeSkill) tracer(traces *[]runSpec) runFunc {
	return func(_ context.Context, s runSpec) (runResult, error) {
		*traces = append(*traces, s)
		if f.fail == len(*traces) {
			return runResult{}, errors.New("engine down")
		}
		count := 1
		for _, r := range s.Restore {
			if r.Path == f.counter {
				n, _ := strconv.Atoi(string(r.Content))
				count = n + 1
			}
		}
		o := Observation{Verdict: "clean", Rules: []string{},
			Capabilities: fingerprint.Capabilities{Filesystem: []string{"read ~/notes.md"}, Processes: []string{"python3 <skill>/run.py"}}}
		var changed []File
		if f.counter != "" {
			o.Capabilities.Filesystem = append(o.Capabilities.Filesystem, "write ~/.cache/counter")
			changed = append(changed, File{Path: f.counter, Content: []byte(strconv.Itoa(count))})
		}
		for _, n := range f.noise {
			changed = append(changed, File{Path: n + strconv.Itoa(len(*traces))})
		}
		trigger := f.when != Condition{} && s.Condition == f.when && (!f.flaky || len(*traces)%2 == 0)
		quiet := f.unless != Condition{} && s.Condition == f.unless
		if f.active != nil && f.active(count) || trigger || f.unless != (Condition{}) && !quiet {
			o.Capabilities.Network = []string{"https:collect.example:443"}
			o.Capabilities.Filesystem = append(o.Capabilities.Filesystem, "read ~/.aws/credentials")
			o.Secrets = []string{"read ~/.aws/credentials"}
			o.Rules = []string{"SBX-EXFIL-001"}
			o.Verdict = "malicious"
		}
		if f.cpu != nil {
			o.Resources.CPUSeconds = f.cpu(count)
		}
		o.Capabilities = o.Capabilities.Union(fingerprint.Capabilities{})
		return runResult{Observation: o, Changed: changed}, nil
	}
}

func TestRun(t *testing.T) {
	const counter = "/home/u/.cache/counter"
	tests := []struct {
		name       string
		skill      fakeSkill
		opts       Options
		verdict    string
		run        int      // activation_run or the deviation's run
		cond       string   // activation_condition
		quiet      string   // quiet_when
		window     string   // in clock_window
		state      []string // activation_state
		traces     int
		labels     []string // labels of the traces past the plan, in order
		wantVaried bool
		wantErr    bool
	}{
		{name: "benign deterministic", skill: fakeSkill{}, opts: Options{Runs: 3, Cells: []string{Chained, Independent}},
			verdict: Consistent, traces: 6},
		{name: "benign with a counter and temp names", skill: fakeSkill{counter: counter, noise: []string{"/tmp/tmp."}},
			opts: Options{Runs: 4, Cells: []string{Chained}}, verdict: Consistent, traces: 4},
		{name: "activates at run 3 on a counter", skill: fakeSkill{counter: counter, noise: []string{"/tmp/log."}, active: func(n int) bool { return n >= 3 }},
			opts: Options{Runs: 4, Cells: []string{Chained}}, verdict: Activation, run: 3, state: []string{counter}, traces: 6,
			labels: []string{"confirm-chained-03", "reset-chained-03-1"}},
		{name: "activates at run 3, and again after a reset", skill: fakeSkill{counter: counter, active: func(n int) bool { return n >= 3 }},
			opts: Options{Runs: 4, Cells: []string{Chained}, Replay: true}, verdict: Activation, run: 3, state: []string{counter}, traces: 9,
			labels: []string{"confirm-chained-03", "reset-chained-03-1", "replay-chained-01", "replay-chained-02", "replay-chained-03"}},
		{name: "a reset that does not bring it back at run 3", skill: fakeSkill{counter: counter, active: func() func(int) bool {
			calls := 0
			return func(n int) bool { calls++; return n >= 3 && calls <= 6 }
		}()}, opts: Options{Runs: 4, Cells: []string{Chained}, Replay: true}, verdict: Variant, run: 3, traces: 9,
			labels: []string{"confirm-chained-03", "reset-chained-03-1", "replay-chained-01", "replay-chained-02", "replay-chained-03"}},
		{name: "activation not seen by independent runs", skill: fakeSkill{counter: counter, active: func(n int) bool { return n == 3 }},
			opts: Options{Runs: 3, Cells: []string{Independent}}, verdict: Consistent, traces: 3},
		{name: "random deviation does not recur", skill: fakeSkill{active: func() func(int) bool {
			calls := 0
			return func(int) bool { calls++; return calls == 2 }
		}()}, opts: Options{Runs: 3, Cells: []string{Chained}}, verdict: Variant, run: 2, traces: 4, labels: []string{"confirm-chained-02"}},
		{name: "deviation not reset by the state", skill: fakeSkill{counter: counter, active: func() func(int) bool {
			calls := 0
			return func(int) bool { calls++; return calls >= 2 }
		}()}, opts: Options{Runs: 2, Cells: []string{Chained}}, verdict: Variant, run: 2, traces: 4,
			labels: []string{"confirm-chained-02", "reset-chained-02-1"}},
		{name: "cpu spike is marginal", skill: fakeSkill{cpu: func() func(int) float64 {
			calls := 0
			return func(int) float64 { calls++; return map[bool]float64{true: 30, false: 0.2}[calls == 2] }
		}()}, opts: Options{Runs: 3, Cells: []string{Independent}}, verdict: Marginal, traces: 3, wantVaried: true},
		{name: "activates only in a time zone", skill: fakeSkill{when: Condition{"tz", "Asia/Tokyo"}},
			opts:    Options{Runs: 2, Cells: []string{Independent}, Vary: []Condition{{"tz", "Europe/Berlin"}, {"tz", "Asia/Tokyo"}, {"user", "root"}}},
			verdict: Activation, cond: "tz=Asia/Tokyo", traces: 8},
		{name: "a condition's deviation that does not repeat", skill: fakeSkill{when: Condition{"hostname", "ci-7"}, flaky: true},
			opts:    Options{Runs: 2, Cells: []string{Independent}, Vary: []Condition{{"hostname", "ci-7"}}},
			verdict: Variant, traces: 4},
		{name: "quiet when monitoring is visible", skill: fakeSkill{unless: Condition{"monitoring", "visible"}},
			opts:    Options{Runs: 2, Cells: []string{Independent}, Vary: []Condition{{"tz", "UTC"}, {"monitoring", "visible"}}},
			verdict: Activation, quiet: "monitoring=visible", traces: 6},
		{name: "less with no names resolving is expected", skill: fakeSkill{unless: Condition{"dns", "none"}},
			opts:    Options{Runs: 2, Cells: []string{Independent}, Vary: []Condition{{"dns", "none"}}},
			verdict: Marginal, traces: 4},
		{name: "activates at one clock value", skill: fakeSkill{when: Condition{"clock", "03:00"}},
			opts:    Options{Runs: 2, Cells: []string{Independent}, Vary: []Condition{{"clock", "00:00"}, {"clock", "03:00"}, {"clock", "08:00"}}},
			verdict: Activation, cond: "clock=03:00", traces: 8, window: "between 00:00 and 08:00 local time"},
		{name: "a failed trace ends the monitor", skill: fakeSkill{fail: 2}, opts: Options{Runs: 3, Cells: []string{Chained}}, traces: 2, wantErr: true, verdict: Consistent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var traces []runSpec
			rep, err := runWith(t.Context(), tc.skill.tracer(&traces), tc.opts)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if rep.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s\n%s", rep.Verdict, tc.verdict, rep.Summary)
			}
			if len(traces) != tc.traces {
				t.Errorf("%d traces, want %d", len(traces), tc.traces)
			}
			if rep.ActivationCondition != tc.cond {
				t.Errorf("activation condition %q, want %q", rep.ActivationCondition, tc.cond)
			}
			if rep.QuietWhen != tc.quiet {
				t.Errorf("quiet when %q, want %q", rep.QuietWhen, tc.quiet)
			}
			if !strings.Contains(rep.ClockWindow, tc.window) || (tc.window == "") != (rep.ClockWindow == "") {
				t.Errorf("clock window %q, want one with %q", rep.ClockWindow, tc.window)
			}
			if tc.verdict == Activation && (rep.ActivationRun != tc.run || !slices.Equal(rep.ActivationState, tc.state)) {
				t.Errorf("activation at run %d by %v, want run %d by %v", rep.ActivationRun, rep.ActivationState, tc.run, tc.state)
			}
			if tc.verdict == Variant && tc.run > 0 && (rep.Cells[0].Deviation == nil || rep.Cells[0].Deviation.Run != tc.run) {
				t.Errorf("deviation %+v, want run %d", rep.Cells[0].Deviation, tc.run)
			}
			var extra []string
			for _, s := range traces[min(len(traces), tc.opts.Runs*(len(tc.opts.Cells)+len(tc.opts.Vary))):] {
				extra = append(extra, s.Label)
			}
			if !slices.Equal(extra, tc.labels) {
				t.Errorf("confirmation traces %v, want %v", extra, tc.labels)
			}
			if tc.wantVaried != (len(rep.Cells) > 0 && len(rep.Cells[0].Varied) > 0) {
				t.Errorf("varied %v", rep.Cells[0].Varied)
			}
		})
	}
}

// TestChainedRestore: a chained run starts from every file the runs
// before it left, the latest content of each; an independent run fresh.
func TestChainedRestore(t *testing.T) {
	var traces []runSpec
	f := fakeSkill{counter: "/home/u/.cache/counter", noise: []string{"/tmp/x."}}
	if _, err := runWith(t.Context(), f.tracer(&traces), Options{Runs: 3, Cells: []string{Chained, Independent}}); err != nil {
		t.Fatal(err)
	}
	want := [][]string{nil, {"/home/u/.cache/counter=1", "/tmp/x.1="}, {"/home/u/.cache/counter=2", "/tmp/x.1=", "/tmp/x.2="}, nil, nil, nil}
	for i, s := range traces {
		var got []string
		for _, r := range s.Restore {
			got = append(got, r.Path+"="+string(r.Content))
		}
		if !slices.Equal(got, want[i]) {
			t.Errorf("trace %d (%s) restored %v, want %v", i+1, s.Label, got, want[i])
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{name: "ok", o: Options{Runs: 2, Cells: []string{Chained}}},
		{name: "one run", o: Options{Runs: 1, Cells: []string{Chained}}, want: "at least 2 runs"},
		{name: "no cell", o: Options{Runs: 3}, want: "at least one cell"},
		{name: "unknown cell", o: Options{Runs: 3, Cells: []string{"clock"}}, want: "unknown cell"},
		{name: "vary without independent", o: Options{Runs: 3, Cells: []string{Chained}, Vary: []Condition{{"tz", "UTC"}}}, want: "independent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestStateApply(t *testing.T) {
	tests := []struct {
		name    string
		have    []string
		changed []string
		deleted []string
		want    []string
	}{
		{name: "new and rewritten", have: []string{"/tmp/a", "/home/u/n"}, changed: []string{"/home/u/n", "/tmp/b"}, want: []string{"/home/u/n", "/tmp/a", "/tmp/b"}},
		{name: "a folder where a file was", have: []string{"/tmp/a", "/tmp/ab"}, changed: []string{"/tmp/a/b"}, want: []string{"/tmp/a/b", "/tmp/ab"}},
		{name: "a file where a folder was", have: []string{"/tmp/a/b", "/tmp/a/c/d"}, changed: []string{"/tmp/a"}, want: []string{"/tmp/a"}},
		{name: "a deleted file goes", have: []string{"/tmp/a", "/home/u/.x/state"}, deleted: []string{"/home/u/.x/state"}, want: []string{"/tmp/a"}},
		{name: "a deleted folder takes its files", have: []string{"/home/u/.x/state", "/home/u/.x/log", "/home/u/.xy"}, deleted: []string{"/home/u/.x"}, want: []string{"/home/u/.xy"}},
		{name: "deleted then written again", have: []string{"/tmp/a"}, deleted: []string{"/tmp/a"}, changed: []string{"/tmp/a"}, want: []string{"/tmp/a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := state{}
			for _, p := range tc.have {
				s[p] = File{Path: p}
			}
			var ch []File
			for _, p := range tc.changed {
				ch = append(ch, File{Path: p})
			}
			s.apply(ch, tc.deleted)
			if got := paths(s.files("")); !slices.Equal(got, tc.want) {
				t.Errorf("state %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseCondition(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "tz=Asia/Tokyo", want: "tz=Asia/Tokyo"},
		{in: " user = root ", want: "user=root"},
		{in: "hostname=ci-runner-7.corp", want: "hostname=ci-runner-7.corp"},
		{in: "tz", err: "NAME=VALUE"},
		{in: "clock=+3d", want: "clock=+3d"},
		{in: "clock=03:00", want: "clock=03:00"},
		{in: "clock=2027-01-01T03:00", want: "clock=2027-01-01T03:00"},
		{in: "clock=$(id)", err: "a clock is"},
		{in: "monitoring=visible", want: "monitoring=visible"},
		{in: "monitoring=maybe", err: "visible or hidden"},
		{in: "dns=none", want: "dns=none"},
		{in: "dns=8.8.8.8", err: "dns is all"},
		{in: "color=red", err: "unknown name"},
		{in: "tz=", err: "value"},
		{in: "tz=../../etc/passwd", err: "value"},
		{in: "user=a b", err: "value"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			c, err := ParseCondition(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseCondition = %v, %v; want error %q", c, err, tc.err)
				}
				return
			}
			if err != nil || c.String() != tc.want {
				t.Fatalf("ParseCondition = %v, %v; want %s", c, err, tc.want)
			}
		})
	}
}

func TestClockWindow(t *testing.T) {
	cell := func(v string, fired bool) Cell {
		c := Cell{Kind: Varied, Condition: "clock=" + v, Verdict: Consistent}
		if fired {
			c.Verdict, c.Deviation = Activation, &Deviation{Run: 1}
		}
		return c
	}
	for _, tc := range []struct {
		name  string
		cells []Cell
		want  string
	}{
		{name: "none fired", cells: []Cell{cell("03:00", false), cell("09:00", false)}, want: ""},
		{name: "all fired", cells: []Cell{cell("03:00", true), cell("09:00", true)}, want: ""},
		{name: "offsets", cells: []Cell{cell("+3d", false), cell("+1y", true)}, want: "only when the clock reads +1y (of +3d, +1y)"},
		{name: "a window", cells: []Cell{cell("09:00", false), cell("02:00", true), cell("03:00", true), cell("00:00", false)},
			want: "only when the clock reads 02:00, 03:00 (of 09:00, 02:00, 03:00, 00:00): the window lies between 00:00 and 09:00 local time"},
		{name: "around midnight", cells: []Cell{cell("23:00", true), cell("12:00", false), cell("22:00", false)},
			want: "only when the clock reads 23:00 (of 23:00, 12:00, 22:00): the window lies between 22:00 and 12:00 local time"},
		{name: "two stretches", cells: []Cell{cell("01:00", true), cell("05:00", false), cell("09:00", true), cell("13:00", false)},
			want: "only when the clock reads 01:00, 09:00 (of 01:00, 05:00, 09:00, 13:00)"},
		{name: "other cells ignored", cells: []Cell{{Kind: Independent, Verdict: Activation}, cell("03:00", true), cell("04:00", false)},
			want: "only when the clock reads 03:00 (of 03:00, 04:00)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := clockWindow(tc.cells); got != tc.want {
				t.Errorf("clockWindow = %q\nwant          %q", got, tc.want)
			}
		})
	}
}
