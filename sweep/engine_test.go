package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/traceplan"
	"github.com/sandboxctl/sandboxctl/tracing"
)

// fakeTracer judges a skill by its name: names holding "evil" are
// malicious, others clean; fail[name] infrastructure failures come first.
type fakeTracer struct {
	mu    sync.Mutex
	fail  map[string]int
	calls map[string]int
	block chan struct{} // when set, traces wait on it (or ctx)
	runs  atomic.Int32
}

func (f *fakeTracer) Trace(ctx context.Context, p traceplan.Plan, dir string) (*reports.Report, error) {
	f.runs.Add(1)
	name := filepath.Base(p.SkillPath)
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[name]++
	n := f.calls[name]
	failing := n <= f.fail[name]
	f.mu.Unlock()
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return &reports.Report{Status: reports.StatusCancelled, Verdict: rules.Inconclusive}, ctx.Err()
		}
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		os.WriteFile(filepath.Join(dir, "report.json"), []byte(`{"trace_id":"`+p.TraceID+`"}`), 0o644)
	}
	if failing {
		return &reports.Report{Status: reports.StatusError, Verdict: rules.Inconclusive, Error: "engine went away"},
			errors.New("create sandbox: engine went away")
	}
	rep := &reports.Report{Status: reports.StatusCompleted, Verdict: rules.Clean, TraceID: p.TraceID}
	if strings.Contains(name, "evil") {
		rep.Verdict = rules.Malicious
		rep.Findings = []rules.Finding{{RuleID: "SBX-EXFIL-001", Severity: rules.Critical, Confidence: rules.ConfHigh}}
	}
	return rep, nil
}

func testItems(names ...string) []Item {
	var out []Item
	for _, n := range names {
		sha := fmt.Sprintf("%064x", len(out)+1)
		out = append(out, Item{Skill: Skill{ID: "src/" + n, Name: n, Path: "/skills/" + n, Source: "src", SHA256: sha},
			Key: ResultKey(sha, "plan", "image")})
	}
	return out
}

func begin(t *testing.T, st *Store, id string, items []Item, force bool) int {
	t.Helper()
	n, err := st.Begin(t.Context(), RunInfo{ID: id, Started: time.Now(), Sources: []string{"src"}, PlanHash: "plan", Image: "image"},
		items, BeginOptions{Force: force})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func openTestStore(t *testing.T) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := OpenStore(t.Context(), filepath.Join(dir, DBFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, dir
}

func TestRun(t *testing.T) {
	cases := []struct {
		name       string
		fail       map[string]int
		wantStatus map[string]string
		wantTries  map[string]int
	}{
		{name: "all judged", wantStatus: map[string]string{"a": StatusDone, "evil-b": StatusDone, "c": StatusDone}},
		{name: "infrastructure failure retried", fail: map[string]int{"a": 2},
			wantStatus: map[string]string{"a": StatusDone}, wantTries: map[string]int{"a": 3}},
		{name: "repeated failure gives up", fail: map[string]int{"c": 9},
			wantStatus: map[string]string{"c": StatusFailed, "a": StatusDone}, wantTries: map[string]int{"c": 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, dir := openTestStore(t)
			items := testItems("a", "evil-b", "c", "d", "e")
			if n := begin(t, st, "r1", items, false); n != 5 {
				t.Fatalf("queued %d, want 5", n)
			}
			tr := &fakeTracer{fail: tc.fail}
			var events []Event
			err := Run(t.Context(), Options{Dir: dir, Store: st, RunID: "r1", Tracer: tr, Parallel: 3,
				Backoff: time.Millisecond, Progress: func(e Event) { events = append(events, e) }})
			if err != nil {
				t.Fatal(err)
			}
			res, err := st.Results(t.Context(), "r1")
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				if want, ok := tc.wantStatus[r.Skill.Name]; ok && r.Status != want {
					t.Errorf("%s: status %s, want %s (%s)", r.Skill.Name, r.Status, want, r.Error)
				}
				if want, ok := tc.wantTries[r.Skill.Name]; ok && r.Attempts != want {
					t.Errorf("%s: %d attempts, want %d", r.Skill.Name, r.Attempts, want)
				}
				if r.Status == StatusDone && r.DoneCount != 1 {
					t.Errorf("%s recorded %d times", r.Skill.Name, r.DoneCount)
				}
				if r.Status == StatusDone && r.Skill.Name == "evil-b" && (r.Verdict != "malicious" || len(r.Deciding) != 1) {
					t.Errorf("evil-b: %+v", r.Outcome)
				}
				if r.Status == StatusFailed && !strings.Contains(r.Error, "gave up after 3 attempts: create sandbox: engine went away") {
					t.Errorf("failed reason %q", r.Error)
				}
				if r.Status == StatusDone {
					if _, err := os.Stat(filepath.Join(dir, r.RunDir, "report.json")); err != nil {
						t.Errorf("%s: run folder: %v", r.Skill.Name, err)
					}
				}
			}
			last := events[len(events)-1].Stats
			if last.Left != 0 || last.Running != 0 {
				t.Errorf("final stats %+v", last)
			}
			// A second run of the same items runs nothing.
			// A second run queues only what failed.
			if n := begin(t, st, "r2", items, false); n != countFailed(tc.wantStatus) {
				t.Errorf("second run queued %d, want %d", n, countFailed(tc.wantStatus))
			}
		})
	}
}

func countFailed(status map[string]string) int {
	n := 0
	for _, s := range status {
		if s == StatusFailed {
			n++
		}
	}
	return n
}

// TestRunPlans: each trace gets the sweep's plan with the skill's path,
// its registry identity and the trace id the sweep records for it.
func TestRunPlans(t *testing.T) {
	st, dir := openTestStore(t)
	items := testItems("a", "b")
	begin(t, st, "r1", items, false)
	var mu sync.Mutex
	plans := map[string]traceplan.Plan{}
	tr := tracing.Func(func(ctx context.Context, p traceplan.Plan, dir string) (*reports.Report, error) {
		mu.Lock()
		plans[p.SkillPath] = p
		mu.Unlock()
		return &reports.Report{Status: reports.StatusCompleted, Verdict: rules.Clean, TraceID: p.TraceID}, nil
	})
	tmpl := traceplan.Plan{Driver: traceplan.Driver{Kind: traceplan.DriverLiteral}, Limits: traceplan.DefaultLimits(), Prompt: "go",
		SkillID: "template", TraceID: "template", SkillPath: "/template"}
	if err := Run(t.Context(), Options{Dir: dir, Store: st, RunID: "r1", Tracer: tr, Plan: tmpl, TraceIDPrefix: "nightly"}); err != nil {
		t.Fatal(err)
	}
	res, err := st.Results(t.Context(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		p, ok := plans[r.Skill.Path]
		if !ok {
			t.Fatalf("%s: not traced", r.Skill.ID)
		}
		want := tmpl
		want.SkillPath, want.SkillID, want.TraceID = r.Skill.Path, Identity(r.Skill.ID), r.TraceID
		if diff := cmp.Diff(want, p); diff != "" {
			t.Errorf("%s: plan mismatch (-want +got):\n%s", r.Skill.ID, diff)
		}
		if !strings.HasPrefix(p.TraceID, "nightly-") {
			t.Errorf("%s: trace id %q, want the prefix nightly-", r.Skill.ID, p.TraceID)
		}
	}
}

func TestSecondRunRunsNothing(t *testing.T) {
	st, dir := openTestStore(t)
	items := testItems("a", "b", "evil-c")
	begin(t, st, "r1", items, false)
	tr := &fakeTracer{}
	if err := Run(t.Context(), Options{Dir: dir, Store: st, RunID: "r1", Tracer: tr}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Outputs(t.Context(), st, "r1", dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := begin(t, st, "r2", items, false); n != 0 {
		t.Fatalf("unchanged second sweep queued %d", n)
	}
	if err := Run(t.Context(), Options{Dir: dir, Store: st, RunID: "r2", Tracer: tr}); err != nil {
		t.Fatal(err)
	}
	if got := tr.runs.Load(); got != 3 {
		t.Errorf("%d traces in all, want 3", got)
	}
	sum, res, err := Outputs(t.Context(), st, "r2", dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Cached != 3 || sum.Traced != 0 || !sum.Complete || sum.Diff == nil || sum.Diff.Previous != "r1" {
		t.Errorf("summary %+v", sum)
	}
	for _, r := range res {
		if !r.Cached {
			t.Errorf("%s not reused", r.Skill.ID)
		}
	}
	// --force runs them all again.
	if n := begin(t, st, "r3", items, true); n != 3 {
		t.Fatalf("forced sweep queued %d", n)
	}
}

func TestCancelReleasesAndResumeFinishes(t *testing.T) {
	st, dir := openTestStore(t)
	items := testItems("a", "b", "c", "d")
	begin(t, st, "r1", items, false)
	tr := &fakeTracer{block: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	started := 0
	err := Run(ctx, Options{Dir: dir, Store: st, RunID: "r1", Tracer: tr, Parallel: 2, Progress: func(e Event) {
		if e.Kind == EventStart {
			started++
			if started == 2 {
				cancel()
			}
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want cancelled", err)
	}
	res, _ := st.Results(t.Context(), "r1")
	for _, r := range res {
		if r.Status != StatusPending || r.Attempts != 0 {
			t.Errorf("%s: %s after %d attempts, want pending, 0", r.Skill.Name, r.Status, r.Attempts)
		}
	}
	tr.block = nil
	if err := Run(t.Context(), Options{Dir: dir, Store: st, RunID: "r1", Tracer: tr}); err != nil {
		t.Fatal(err)
	}
	res, _ = st.Results(t.Context(), "r1")
	for _, r := range res {
		if r.Status != StatusDone || r.DoneCount != 1 || r.Attempts != 1 {
			t.Errorf("%s: %s, recorded %d times, %d attempts", r.Skill.Name, r.Status, r.DoneCount, r.Attempts)
		}
	}
}

func TestLeases(t *testing.T) {
	st, _ := openTestStore(t)
	items := testItems("a")
	begin(t, st, "r1", items, false)
	t0 := time.Now()
	tid := func(it Item, n int) string { return fmt.Sprintf("t-%s-%d", it.Name, n) }
	claim := func(owner string, now time.Time, dead func(string) bool, maxAttempts int) (*Lease, time.Duration) {
		t.Helper()
		l, wait, err := st.Claim(t.Context(), "r1", ClaimOptions{Owner: owner, TTL: time.Minute, MaxAttempts: maxAttempts, Now: now, Dead: dead, TraceID: tid})
		if err != nil {
			t.Fatal(err)
		}
		return l, wait
	}
	l, _ := claim("h:1:a", t0, nil, 3)
	if l == nil || l.Attempt != 1 || l.TraceID != "t-a-1" || l.Stale != "" {
		t.Fatalf("first claim %+v", l)
	}
	// Held: another owner waits for the lease to end.
	if l2, wait := claim("h:2:b", t0.Add(time.Second), nil, 3); l2 != nil || wait <= 0 || wait > time.Minute {
		t.Fatalf("claim of a held lease: %+v, wait %v", l2, wait)
	}
	// Renewed, then expired: the lease goes back to the queue.
	if err := st.Renew(t.Context(), l.Key, l.Owner, time.Minute, t0.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if l2, _ := claim("h:2:b", t0.Add(80*time.Second), nil, 3); l2 != nil {
		t.Fatalf("renewed lease taken at 80s")
	}
	l2, _ := claim("h:2:b", t0.Add(91*time.Second), nil, 3)
	if l2 == nil || l2.Attempt != 2 || l2.Stale != "t-a-1" {
		t.Fatalf("expired lease not taken over: %+v", l2)
	}
	// The first owner lost it: its outcome is not recorded.
	if err := st.Finish(t.Context(), l, "r1", StatusDone, Outcome{Verdict: "clean"}, t0); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("finish by the old owner: %v", err)
	}
	// A dead owner's lease is taken over at once.
	l3, _ := claim("h:3:c", t0.Add(92*time.Second), func(o string) bool { return o == "h:2:b" }, 3)
	if l3 == nil || l3.Attempt != 3 || l3.Stale != "t-a-2" {
		t.Fatalf("dead owner's lease not taken: %+v", l3)
	}
	// Attempts used up by dead workers: failed, with the leftovers named.
	l4, _ := claim("h:4:d", t0.Add(93*time.Second), func(o string) bool { return o == "h:3:c" }, 3)
	if l4 == nil || l4.Owner != "" || l4.Stale != "t-a-3" {
		t.Fatalf("exhausted item: %+v", l4)
	}
	res, _ := st.Results(t.Context(), "r1")
	if res[0].Status != StatusFailed || !strings.Contains(res[0].Error, "the sweep stopped during every attempt") {
		t.Errorf("exhausted item: %s %q", res[0].Status, res[0].Error)
	}
	if l5, wait := claim("h:4:d", t0.Add(94*time.Second), nil, 3); l5 != nil || wait != 0 {
		t.Errorf("nothing left, got %+v wait %v", l5, wait)
	}
}

func TestDeadOnHost(t *testing.T) {
	dead := DeadOnHost("h")
	cases := []struct {
		name  string
		owner string
		want  bool
	}{
		{"this process", NewOwner("h", os.Getpid()), false},
		{"other host", NewOwner("x", 1<<30), false},
		{"gone", NewOwner("h", 1<<30), true},
		{"malformed", "nonsense", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := dead(tc.owner); got != tc.want {
				t.Errorf("dead(%q) = %v", tc.owner, got)
			}
		})
	}
}

func TestBudget(t *testing.T) {
	st, dir := openTestStore(t)
	begin(t, st, "r1", testItems("slow"), false)
	tr := &fakeTracer{block: make(chan struct{})}
	err := Run(t.Context(), Options{Dir: dir, Store: st, RunID: "r1", Tracer: tr, Budget: 20 * time.Millisecond,
		MaxAttempts: 2, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := st.Results(t.Context(), "r1")
	if res[0].Status != StatusFailed || !strings.Contains(res[0].Error, "over the per-skill budget") || res[0].Attempts != 2 {
		t.Errorf("%s %d %q", res[0].Status, res[0].Attempts, res[0].Error)
	}
}
