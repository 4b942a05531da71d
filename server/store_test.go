package server

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/sweep"
)

// TestStoreStates walks traces through the store: claim order, a cancel
// that wins over a late finish, recovery after a stop.
func TestStoreStates(t *testing.T) {
	ctx := context.Background()
	st, err := OpenStore(ctx, filepath.Join(t.TempDir(), DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Unix(1_800_000_000, 0)
	for i, id := range []string{"a", "b", "c", "d"} {
		r := &Record{ID: id, Key: "k" + id, Status: StatusQueued, Created: now.Add(time.Duration(i) * time.Second), NeedsKey: id == "d"}
		if err := st.Insert(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	claimed, err := st.ClaimNext(ctx, now)
	if err != nil || claimed == nil || claimed.ID != "a" || claimed.Status != StatusRunning {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	// DELETE while it runs, then the worker's late finish.
	if ok, err := st.Cancel(ctx, "a", "canceled by DELETE", now); !ok || err != nil {
		t.Fatalf("cancel: %v %v", ok, err)
	}
	if err := st.Finish(ctx, "a", StatusDone, "runs/a", sweep.Outcome{Verdict: "clean"}, now); err != nil {
		t.Fatal(err)
	}
	if r, _ := st.Get(ctx, "a"); r.Status != StatusCanceled || r.Verdict != "" {
		t.Fatalf("a late finish overwrote the cancel: %+v", r)
	}
	if ok, _ := st.Cancel(ctx, "a", "again", now); ok {
		t.Fatal("canceled twice")
	}
	b, _ := st.ClaimNext(ctx, now)
	if b.ID != "b" {
		t.Fatalf("claimed %s, want b", b.ID)
	}
	// The process stops: b was running, d needed a key, c waits.
	ids, err := st.Recover(ctx, now)
	if err != nil || len(ids) != 2 {
		t.Fatalf("recover: %v %v", ids, err)
	}
	for id, want := range map[string]string{"a": StatusCanceled, "b": StatusInterrupted, "c": StatusQueued, "d": StatusInterrupted} {
		if r, _ := st.Get(ctx, id); r.Status != want {
			t.Errorf("%s: %s, want %s", id, r.Status, want)
		}
	}
	if q, _ := st.Queued(ctx); q != 1 {
		t.Errorf("queued %d", q)
	}
	if _, err := st.Get(ctx, "nope"); err == nil {
		t.Error("no error for an unknown id")
	}
}
