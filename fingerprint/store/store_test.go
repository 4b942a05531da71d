package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/fingerprint"
	"github.com/sandboxctl/sandboxctl/rules"
)

func profile(hosts ...string) fingerprint.Profile {
	p := fingerprint.Profile{}
	for i, h := range hosts {
		p.Network = append(p.Network, fingerprint.Target{Sink: "dns", Protocol: "dns", Name: h, Count: 1, Seqs: []int64{int64(i + 1)}})
	}
	return p
}

var key = fingerprint.Key{Skill: "demo", Identity: "alice/demo", Driver: "literal", Cell: "persona=linux"}

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func record(t *testing.T, s *Store, version string, sev rules.Severity, at time.Time, hosts ...string) fingerprint.Result {
	t.Helper()
	r, err := s.Record(t.Context(), key, version, fingerprint.Run{TraceID: "t", At: at, MaxSeverity: sev, Profile: profile(hosts...)},
		fingerprint.Rule{Threshold: 3, Streak: 2})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRecordLifecycle(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "fp.db"))
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		r := record(t, s, "v1", "", at.Add(time.Duration(i)*time.Hour), "api.test")
		if want := map[bool]string{true: fingerprint.Stable, false: fingerprint.Learning}[i == 2]; r.State != want {
			t.Fatalf("run %d: state %s, want %s", i+1, r.State, want)
		}
	}
	// Stable: a new host is an anomaly, read back through the store.
	r := record(t, s, "v1", rules.Medium, at.Add(4*time.Hour), "api.test", "c2.test")
	if len(r.Anomalies) != 1 || r.Anomalies[0].Type != fingerprint.NewNetworkTarget || r.Absorbed {
		t.Fatalf("anomalies = %+v", r)
	}
	chk, err := s.Check(t.Context(), key, "v1")
	if err != nil || chk.Current == nil || chk.Current.State != fingerprint.Stable || chk.Current.Invocations != 4 {
		t.Fatalf("check = %+v, %v", chk, err)
	}
	// A new version is compared with v1's stable fingerprint.
	chk, err = s.Check(t.Context(), key, "v2")
	if err != nil || chk.Current != nil || chk.Previous == nil || chk.Previous.Version != "v1" {
		t.Fatalf("check v2 = %+v, %v", chk, err)
	}
	r = record(t, s, "v2", "", at.Add(5*time.Hour), "api.test", "c2.test")
	if r.Baseline != "version:v1" || len(r.Anomalies) != 2 {
		t.Fatalf("v2 = %+v", r)
	}
	// accept takes the latest run of the newest version in.
	acc, err := s.Accept(t.Context(), "demo", "", at.Add(6*time.Hour))
	if err != nil || len(acc) != 1 || acc[0].Version != "v2" || acc[0].State != fingerprint.Stable || acc[0].Capabilities.Count() != 2 {
		t.Fatalf("accept = %+v, %v", acc, err)
	}
	if r := record(t, s, "v2", "", at.Add(7*time.Hour), "api.test", "c2.test"); len(r.Anomalies) != 0 || !r.Absorbed {
		t.Fatalf("after accept = %+v", r)
	}
	runs, err := s.Runs(t.Context(), key, 100)
	if err != nil || len(runs) != 6 || runs[0].Version != "v2" {
		t.Fatalf("runs = %d %v", len(runs), err)
	}
	if err := s.Consistent(t.Context()); err != nil {
		t.Fatal(err)
	}
	// evict removes what was not seen since; reset removes the rest.
	if n, err := s.Evict(t.Context(), at.Add(4*time.Hour+time.Minute)); err != nil || n != 1 {
		t.Fatalf("evict = %d, %v", n, err)
	}
	if n, err := s.Reset(t.Context(), "demo"); err != nil || n != 1 {
		t.Fatalf("reset = %d, %v", n, err)
	}
	if all, err := s.List(t.Context()); err != nil || len(all) != 0 {
		t.Fatalf("list after reset = %+v, %v", all, err)
	}
	if runs, _ := s.Runs(t.Context(), key, 100); len(runs) != 0 {
		t.Fatalf("runs left: %d", len(runs))
	}
}

// TestConcurrentWriters records from two handles at once (as two traces
// do): every run is counted once.
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fp.db")
	a, b := open(t, path), open(t, path)
	const n = 25
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for _, s := range []*Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				_, err := s.Record(context.Background(), key, "v1", fingerprint.Run{TraceID: strconv.Itoa(i), At: time.Now(),
					Profile: profile("api.test")}, fingerprint.DefaultRule)
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	fs, err := a.Fingerprints(t.Context(), "demo")
	if err != nil || len(fs) != 1 || fs[0].Invocations != 2*n || fs[0].State != fingerprint.Stable {
		t.Fatalf("fingerprints = %+v, %v", fs, err)
	}
	if err := b.Consistent(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestKilledWriter kills a process writing the store with SIGKILL in the
// middle of its writes: the store opens again, passes its integrity
// check, and counts exactly the runs that were committed.
func TestKilledWriter(t *testing.T) {
	if os.Getenv("FP_STORE_WRITER") != "" {
		writer(os.Getenv("FP_STORE_WRITER"))
		return
	}
	path := filepath.Join(t.TempDir(), "fp.db")
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWriter$")
		cmd.Env = append(os.Environ(), "FP_STORE_WRITER="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait for the writer's first commit, then kill it mid-stream.
		buf := make([]byte, 1)
		if _, err := out.Read(buf); err != nil {
			t.Fatalf("round %d: writer said nothing: %v", round, err)
		}
		time.Sleep(time.Duration(20+round*30) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	s := open(t, path)
	if err := s.Consistent(t.Context()); err != nil {
		t.Fatal(err)
	}
	fs, err := s.Fingerprints(t.Context(), "demo")
	if err != nil || len(fs) != 1 || fs[0].Invocations < 3 {
		t.Fatalf("fingerprints after kills = %+v, %v", fs, err)
	}
	// Still writable.
	record(t, s, "v1", "", time.Now(), "api.test")
	if err := s.Consistent(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// writer records runs until it is killed, printing a byte after the first.
func writer(path string) {
	s, err := Open(context.Background(), path)
	if err != nil {
		panic(err)
	}
	for i := 0; ; i++ {
		hosts := []string{"api.test"}
		for j := range i % 40 {
			hosts = append(hosts, fmt.Sprintf("h%d.test", j)) // rows of varying size
		}
		if _, err := s.Record(context.Background(), key, "v1", fingerprint.Run{TraceID: strconv.Itoa(i), At: time.Now(),
			Profile: profile(hosts...)}, fingerprint.DefaultRule); err != nil {
			panic(err)
		}
		if i == 0 {
			os.Stdout.Write([]byte{'.'})
		}
	}
}

// TestConcurrentCreate opens a new store from several processes at once
// (traces started together): none fails on the database being created.
func TestConcurrentCreate(t *testing.T) {
	if p := os.Getenv("FP_STORE_OPENER"); p != "" {
		// Every opener starts at the same instant.
		at, _ := strconv.ParseInt(os.Getenv("FP_STORE_AT"), 10, 64)
		time.Sleep(time.Until(time.Unix(0, at)))
		s, err := Open(context.Background(), p)
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(1)
		}
		if _, err := s.Record(context.Background(), key, "v1", fingerprint.Run{At: time.Now(), Profile: profile("a.test")}, fingerprint.DefaultRule); err != nil {
			fmt.Println("record:", err)
			os.Exit(1)
		}
		s.Close()
		return
	}
	for round := range 3 {
		path := filepath.Join(t.TempDir(), "fp.db")
		var cmds []*exec.Cmd
		var outs []*strings.Builder
		at := time.Now().Add(500 * time.Millisecond).UnixNano()
		for range 6 {
			cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentCreate$")
			cmd.Env = append(os.Environ(), "FP_STORE_OPENER="+path, "FP_STORE_AT="+strconv.FormatInt(at, 10))
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			cmds, outs = append(cmds, cmd), append(outs, &out)
		}
		for i, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				t.Errorf("round %d: opener %d: %v\n%s", round, i, err, outs[i])
			}
		}
		s := open(t, path)
		if fs, err := s.Fingerprints(t.Context(), "demo"); err != nil || len(fs) != 1 || fs[0].Invocations != 6 {
			t.Errorf("round %d: fingerprints = %+v, %v", round, fs, err)
		}
	}
}
