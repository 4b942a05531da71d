// Package sqlitedb opens the embedded SQLite databases sandboxctl keeps its
// state in (a sweep's queue, the server's traces, the fingerprint store)
// the one way they share: modernc.org/sqlite (pure Go), WAL, full syncs,
// immediate transactions, a busy timeout for other processes, one
// connection per process, and a retry of the open itself while another
// process is creating the same file.
//
// It never touches the network, and reads and writes nothing but the
// database it is given.
package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"modernc.org/sqlite"
)

// OpenRetry bounds the retries of Open on a database another process holds
// while creating it.
const OpenRetry = 30 * time.Second

// Open opens (creating it, and its folder with dirMode, when missing) the
// database at path and runs schema on it (statements that must be idempotent: CREATE ...
// IF NOT EXISTS). It returns the database and path made absolute.
//
// Two processes creating a database at once race on switching it to WAL,
// which SQLite answers with SQLITE_BUSY at once rather than through the
// busy timeout: Open retries for up to OpenRetry, or until ctx ends.
func Open(ctx context.Context, path string, dirMode os.FileMode, schema string) (*sql.DB, string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(filepath.Dir(abs), dirMode); err != nil {
		return nil, "", err
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(30000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate")
	dsn := "file:" + abs + "?" + q.Encode()
	deadline := time.Now().Add(OpenRetry)
	for {
		db, err := open(ctx, dsn, schema)
		if err == nil {
			return db, abs, nil
		}
		if !Busy(err) || time.Now().After(deadline) {
			return nil, "", err
		}
		select {
		case <-ctx.Done():
			return nil, "", errors.Join(err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func open(ctx context.Context, dsn, schema string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	// One connection: this process's accesses queue here, other
	// processes wait on SQLite's lock (busy_timeout).
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("schema: %w", err)
	}
	return db, nil
}

// Busy reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED
// (extended codes included).
func Busy(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	const sqliteBusy, sqliteLocked = 5, 6
	c := e.Code() & 0xff
	return c == sqliteBusy || c == sqliteLocked
}
