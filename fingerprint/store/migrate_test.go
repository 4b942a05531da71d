package store

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/fingerprint"
)

// schemaV1 is the layout before identities: a skill keyed by the absolute
// path it was traced from.
const schemaV1 = `
CREATE TABLE fingerprints (
	skill TEXT NOT NULL, source TEXT NOT NULL, driver TEXT NOT NULL, cell TEXT NOT NULL, version TEXT NOT NULL,
	state TEXT NOT NULL, invocations INTEGER NOT NULL, clean_streak INTEGER NOT NULL, absorbed INTEGER NOT NULL,
	first_seen INTEGER NOT NULL, last_seen INTEGER NOT NULL, accepted_at INTEGER NOT NULL DEFAULT 0,
	capabilities TEXT NOT NULL, cap_hash TEXT NOT NULL,
	PRIMARY KEY (skill, source, driver, cell, version));
CREATE TABLE runs (
	id INTEGER PRIMARY KEY AUTOINCREMENT, trace_id TEXT NOT NULL, skill TEXT NOT NULL, source TEXT NOT NULL,
	driver TEXT NOT NULL, cell TEXT NOT NULL, version TEXT NOT NULL, at INTEGER NOT NULL, max_severity TEXT NOT NULL,
	absorbed INTEGER NOT NULL, anomalies TEXT NOT NULL, capabilities TEXT NOT NULL, cap_hash TEXT NOT NULL);
CREATE INDEX runs_key ON runs (skill, source, driver, cell, version, id);
`

// oldStore writes a layout 1 store: the skill demo traced from two
// folders (stable from /srv/a/demo with api.test, learning from
// /tmp/upload-1/demo with api.test and cdn.test), and other from one.
func oldStore(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(schemaV1); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	caps := func(hosts ...string) string {
		var c fingerprint.Capabilities
		for _, h := range hosts {
			c.Network = append(c.Network, "dns:"+h)
		}
		return `{"filesystem":[],"network":["` + strings.Join(c.Network, `","`) + `"],"environment":[],"processes":[],"outputs":[]}`
	}
	rows := []struct {
		skill, source, state string
		n, streak, absorbed  int
		first, last          time.Duration
		caps                 string
	}{
		{"demo", "/srv/a/demo", fingerprint.Stable, 3, 2, 3, 0, 2 * time.Hour, caps("api.test")},
		{"demo", "/tmp/upload-1/demo", fingerprint.Learning, 2, 1, 2, time.Hour, 5 * time.Hour, caps("api.test", "cdn.test")},
		{"other", "/srv/other", fingerprint.Learning, 1, 1, 1, 0, 0, caps("x.test")},
	}
	for _, r := range rows {
		if _, err := db.Exec(`INSERT INTO fingerprints VALUES (?,?,?,?,?,?,?,?,?,?,?,0,?,?)`, r.skill, r.source, "literal", "persona=linux", "v1",
			r.state, r.n, r.streak, r.absorbed, at.Add(r.first).UnixNano(), at.Add(r.last).UnixNano(), r.caps, "h"); err != nil {
			t.Fatal(err)
		}
		for i := range r.n {
			if _, err := db.Exec(`INSERT INTO runs (trace_id, skill, source, driver, cell, version, at, max_severity, absorbed, anomalies, capabilities, cap_hash)
				VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`, "t", r.skill, r.source, "literal", "persona=linux", "v1", at.Add(r.first+time.Duration(i)).UnixNano(), "", 1, "[]", r.caps, "h"); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestMigrateFromPathKeys: a store of layout 1 opens as layout 2: the
// skill traced from two folders has one fingerprint (the runs of both, the
// stable copy's baseline), every run is kept under it, the database is
// consistent, and opening it again changes nothing.
func TestMigrateFromPathKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fp.db")
	oldStore(t, path)
	s := open(t, path)
	if err := s.Consistent(t.Context()); err != nil {
		t.Fatal(err)
	}
	fs, err := s.Fingerprints(t.Context(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 {
		t.Fatalf("demo has %d fingerprints after the migration, want 1: %+v", len(fs), fs)
	}
	f := fs[0]
	if f.Identity != "" || f.Invocations != 5 || f.Absorbed != 5 || f.State != fingerprint.Stable || f.CleanStreak != 1 {
		t.Errorf("merged fingerprint %+v", f)
	}
	if strings.Join(f.Capabilities.Network, ",") != "dns:api.test" || f.Hash != f.Capabilities.Hash() {
		t.Errorf("merged baseline %v (hash %s): want the stable copy's", f.Capabilities.Network, f.Hash)
	}
	if !f.FirstSeen.Equal(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)) || !f.LastSeen.Equal(time.Date(2026, 5, 1, 5, 0, 0, 0, time.UTC)) {
		t.Errorf("dates %v .. %v", f.FirstSeen, f.LastSeen)
	}
	runs, err := s.Runs(t.Context(), f.Key, 100)
	if err != nil || len(runs) != 5 {
		t.Fatalf("runs %d, %v", len(runs), err)
	}
	// A trace of demo from any folder now finds that history.
	chk, err := s.Check(t.Context(), fingerprint.Key{Skill: "demo", Driver: "literal", Cell: "persona=linux"}, "v1")
	if err != nil || chk.Current == nil || chk.Current.Invocations != 5 {
		t.Fatalf("check after the migration: %+v, %v", chk.Current, err)
	}
	s.Close()
	var v int
	db, _ := sql.Open("sqlite", path)
	db.QueryRow(`PRAGMA user_version`).Scan(&v)
	db.Close()
	if v != schemaVersion {
		t.Errorf("user_version %d", v)
	}
	again := open(t, path)
	if all, _ := again.List(t.Context()); len(all) != 2 {
		t.Errorf("reopened: %d fingerprints, want 2", len(all))
	}
}

// TestTamperedStores: a store that is not what this package wrote is
// refused with an error that says what is wrong, and the file is left as
// it was.
func TestTamperedStores(t *testing.T) {
	cases := []struct {
		name string
		make func(t *testing.T, path string)
		// openErr is in Open's error; "" when Open succeeds and use
		// (List, then Consistent) must fail with useErr.
		openErr, useErr string
	}{
		{"not a database", func(t *testing.T, p string) { os.WriteFile(p, []byte("not sqlite at all, just text\n"), 0o644) }, "file is not a database", ""},
		{"a later layout", func(t *testing.T, p string) {
			db, _ := sql.Open("sqlite", p)
			db.Exec(`PRAGMA user_version = 99`)
			db.Close()
		}, "newer than this sandboxctl", ""},
		{"a fingerprints table of another shape", func(t *testing.T, p string) {
			db, _ := sql.Open("sqlite", p)
			db.Exec(`CREATE TABLE fingerprints (skill TEXT, whatever TEXT)`)
			db.Close()
		}, "open fingerprint store", ""},
		{"capabilities not JSON", func(t *testing.T, p string) {
			s, _ := Open(t.Context(), p)
			s.Record(t.Context(), key, "v1", fingerprint.Run{TraceID: "t", At: time.Now(), Profile: profile("a.test")}, fingerprint.DefaultRule)
			s.db.Exec(`UPDATE fingerprints SET capabilities = '{"network": [1, 2'`)
			s.Close()
		}, "", "fingerprint demo v1"},
		{"invocations not its runs", func(t *testing.T, p string) {
			s, _ := Open(t.Context(), p)
			s.Record(t.Context(), key, "v1", fingerprint.Run{TraceID: "t", At: time.Now(), Profile: profile("a.test")}, fingerprint.DefaultRule)
			s.db.Exec(`UPDATE fingerprints SET invocations = 1000`)
			s.Close()
		}, "", "invocation count is not their number of runs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fp.db")
			c.make(t, path)
			before := storeState(path)
			s, err := Open(t.Context(), path)
			if c.openErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.openErr) {
					t.Fatalf("open: %v, want %q", err, c.openErr)
				}
				if after := storeState(path); !bytes.Equal(before, after) {
					t.Fatalf("a refused store was changed: %q, was %q", after, before)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.List(t.Context())
			if err == nil {
				err = s.Consistent(t.Context())
			}
			if err == nil || !strings.Contains(err.Error(), c.useErr) {
				t.Fatalf("use: %v, want %q", err, c.useErr)
			}
		})
	}
}

// storeState is what a refused Open must not change: the file's bytes
// when it is no database, else its layout version and its tables.
func storeState(path string) []byte {
	db, err := sql.Open("sqlite", path)
	if err == nil {
		defer db.Close()
		var v int
		var names sql.NullString
		err = db.QueryRow(`PRAGMA user_version`).Scan(&v)
		if err == nil {
			err = db.QueryRow(`SELECT group_concat(name || ':' || sql) FROM sqlite_master`).Scan(&names)
		}
		if err == nil {
			return []byte(fmt.Sprint(v, names.String))
		}
	}
	b, _ := os.ReadFile(path)
	return b
}
