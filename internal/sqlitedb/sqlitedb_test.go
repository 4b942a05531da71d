package sqlitedb

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

const testSchema = `CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v INTEGER NOT NULL);`

// TestOpenAtOnce: processes creating the same database at once all
// succeed (they race on switching it to WAL), and the database is in WAL
// mode with every row.
func TestOpenAtOnce(t *testing.T) {
	if p := os.Getenv("SQLITEDB_HELPER_PATH"); p != "" {
		db, _, err := Open(t.Context(), p, 0o755, testSchema)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.ExecContext(t.Context(), `INSERT INTO t (k, v) VALUES (?, 1)`, os.Getenv("SQLITEDB_HELPER_KEY")); err != nil {
			t.Fatal(err)
		}
		return
	}
	path := filepath.Join(t.TempDir(), "sub", "state.db")
	const n = 6
	var wg sync.WaitGroup
	outs := make([][]byte, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestOpenAtOnce$")
			cmd.Env = append(os.Environ(), "SQLITEDB_HELPER_PATH="+path, "SQLITEDB_HELPER_KEY="+string(rune('a'+i)))
			outs[i], errs[i] = cmd.CombinedOutput()
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("opener %d: %v\n%s", i, err, outs[i])
		}
	}
	db, abs, err := Open(t.Context(), path, 0o755, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if abs != path {
		t.Errorf("path %q, want %q", abs, path)
	}
	var mode string
	var rows int
	db.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
	db.QueryRow(`SELECT count(*) FROM t`).Scan(&rows)
	if mode != "wal" || rows != n {
		t.Errorf("journal mode %q, %d rows; want wal, %d", mode, rows, n)
	}
}

func TestBusy(t *testing.T) {
	if Busy(errors.New("SQLITE_BUSY in a message")) {
		t.Error("a message that only names SQLITE_BUSY is not SQLite's error")
	}
	if Busy(nil) {
		t.Error("nil is not busy")
	}
}

func TestOpenBadSchema(t *testing.T) {
	if _, _, err := Open(t.Context(), filepath.Join(t.TempDir(), "x.db"), 0o755, "NOT SQL"); err == nil {
		t.Error("a bad schema opened")
	}
}
