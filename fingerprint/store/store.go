// Package store keeps skills' fingerprints in an embedded SQLite database
// (modernc.org/sqlite, no cgo): one row per key and version, and one row
// per recorded run. Every change is one immediate transaction in WAL mode
// with full syncs, so concurrent traces (processes or goroutines) queue on
// the database's lock, and a process killed in the middle of a write
// leaves the last committed state.
//
// The schema is versioned (PRAGMA user_version): a store of an earlier
// layout is migrated when it is opened (migrate.go).
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/fingerprint"
	"github.com/sandboxctl/sandboxctl/internal/sqlitedb"
	"github.com/sandboxctl/sandboxctl/rules"
)

// schemaVersion is the layout this package writes: 2 keys a skill by its
// name and registry identity; 1 (user_version 0) keyed it by the absolute
// path it was traced from (column source).
const schemaVersion = 2

const schema = `
CREATE TABLE IF NOT EXISTS fingerprints (
	skill        TEXT NOT NULL,
	identity     TEXT NOT NULL,
	driver       TEXT NOT NULL,
	cell         TEXT NOT NULL,
	version      TEXT NOT NULL,
	state        TEXT NOT NULL,
	invocations  INTEGER NOT NULL,
	clean_streak INTEGER NOT NULL,
	absorbed     INTEGER NOT NULL,
	first_seen   INTEGER NOT NULL,
	last_seen    INTEGER NOT NULL,
	accepted_at  INTEGER NOT NULL DEFAULT 0,
	capabilities TEXT NOT NULL,
	cap_hash     TEXT NOT NULL,
	PRIMARY KEY (skill, identity, driver, cell, version)
);
CREATE TABLE IF NOT EXISTS runs (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	trace_id     TEXT NOT NULL,
	skill        TEXT NOT NULL,
	identity     TEXT NOT NULL,
	driver       TEXT NOT NULL,
	cell         TEXT NOT NULL,
	version      TEXT NOT NULL,
	at           INTEGER NOT NULL,
	max_severity TEXT NOT NULL,
	absorbed     INTEGER NOT NULL,
	anomalies    TEXT NOT NULL,
	capabilities TEXT NOT NULL,
	cap_hash     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_key2 ON runs (skill, identity, driver, cell, version, id);
`

// A Store is a fingerprint database. It is safe for concurrent use, and
// several processes may share one database file on a local disk.
type Store struct {
	db   *sql.DB
	path string
}

// Open opens (creating it and its folder when missing) the database at
// path, migrating a store of an earlier layout.
func Open(ctx context.Context, path string) (*Store, error) {
	// The schema is applied by migrate, once the layout is known: the
	// statements of this one fail on an earlier one.
	db, abs, err := sqlitedb.Open(ctx, path, 0o755, "SELECT 1")
	if err != nil {
		return nil, fmt.Errorf("open fingerprint store %s: %w", path, err)
	}
	s := &Store{db: db, path: abs}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open fingerprint store %s: %w", path, err)
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Path is the database file.
func (s *Store) Path() string { return s.path }

const fpCols = `skill, identity, driver, cell, version, state, invocations, clean_streak, absorbed, first_seen, last_seen, accepted_at, capabilities, cap_hash`

type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

func scanFingerprints(ctx context.Context, q querier, where string, args ...any) ([]fingerprint.Fingerprint, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+fpCols+` FROM fingerprints `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []fingerprint.Fingerprint
	for rows.Next() {
		var f fingerprint.Fingerprint
		var first, last, acc int64
		var caps string
		if err := rows.Scan(&f.Skill, &f.Identity, &f.Driver, &f.Cell, &f.Version, &f.State, &f.Invocations,
			&f.CleanStreak, &f.Absorbed, &first, &last, &acc, &caps, &f.Hash); err != nil {
			return nil, err
		}
		f.FirstSeen, f.LastSeen = time.Unix(0, first).UTC(), time.Unix(0, last).UTC()
		if acc != 0 {
			f.AcceptedAt = time.Unix(0, acc).UTC()
		}
		if err := json.Unmarshal([]byte(caps), &f.Capabilities); err != nil {
			return nil, fmt.Errorf("fingerprint %s %s: %w", f.Skill, f.Version, err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

func one(fs []fingerprint.Fingerprint, err error) (*fingerprint.Fingerprint, error) {
	if err != nil || len(fs) == 0 {
		return nil, err
	}
	return &fs[0], nil
}

// current and previous read a key's fingerprint of version and the last
// stable one of its other versions.
func current(ctx context.Context, q querier, k fingerprint.Key, version string) (cur, prev *fingerprint.Fingerprint, err error) {
	cur, err = one(scanFingerprints(ctx, q, `WHERE skill=? AND identity=? AND driver=? AND cell=? AND version=?`,
		k.Skill, k.Identity, k.Driver, k.Cell, version))
	if err != nil {
		return nil, nil, err
	}
	prev, err = one(scanFingerprints(ctx, q, `WHERE skill=? AND identity=? AND driver=? AND cell=? AND version<>? AND state=?
		ORDER BY first_seen DESC LIMIT 1`, k.Skill, k.Identity, k.Driver, k.Cell, version, fingerprint.Stable))
	return cur, prev, err
}

// Check returns the baseline a trace of key and version is compared with
// while it runs.
func (s *Store) Check(ctx context.Context, k fingerprint.Key, version string) (fingerprint.Check, error) {
	cur, prev, err := current(ctx, s.db, k, version)
	if err != nil {
		return fingerprint.Check{}, fmt.Errorf("read fingerprint of %s: %w", k.Skill, err)
	}
	return fingerprint.Check{Current: cur, Previous: prev}, nil
}

// Record adds run r of key and version under rule, in one transaction:
// the fingerprint as it is now (another trace may have recorded since
// Check) is updated by fingerprint.Observe and the run is kept.
func (s *Store) Record(ctx context.Context, k fingerprint.Key, version string, r fingerprint.Run, rule fingerprint.Rule) (fingerprint.Result, error) {
	var res fingerprint.Result
	err := s.tx(ctx, func(tx *sql.Tx) error {
		cur, prev, err := current(ctx, tx, k, version)
		if err != nil {
			return err
		}
		nf, rr := fingerprint.Observe(cur, prev, k, version, r, rule)
		res = rr
		if err := put(ctx, tx, nf); err != nil {
			return err
		}
		caps := r.Profile.Capabilities()
		cb, _ := json.Marshal(caps)
		ab, _ := json.Marshal(rr.Anomalies)
		_, err = tx.ExecContext(ctx, `INSERT INTO runs (trace_id, skill, identity, driver, cell, version, at, max_severity,
			absorbed, anomalies, capabilities, cap_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
			r.TraceID, k.Skill, k.Identity, k.Driver, k.Cell, version, r.At.UnixNano(), string(r.MaxSeverity),
			rr.Absorbed, string(ab), string(cb), rr.Hash)
		return err
	})
	if err != nil {
		return res, fmt.Errorf("record run of %s: %w", k.Skill, err)
	}
	return res, nil
}

func put(ctx context.Context, tx *sql.Tx, f fingerprint.Fingerprint) error {
	cb, err := json.Marshal(f.Capabilities)
	if err != nil {
		return err
	}
	var acc int64
	if !f.AcceptedAt.IsZero() {
		acc = f.AcceptedAt.UnixNano()
	}
	_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO fingerprints (`+fpCols+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		f.Skill, f.Identity, f.Driver, f.Cell, f.Version, f.State, f.Invocations, f.CleanStreak, f.Absorbed,
		f.FirstSeen.UnixNano(), f.LastSeen.UnixNano(), acc, string(cb), f.Hash)
	return err
}

func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

// List returns every fingerprint, by skill, key and first seen.
func (s *Store) List(ctx context.Context) ([]fingerprint.Fingerprint, error) {
	fs, err := scanFingerprints(ctx, s.db, `ORDER BY skill, identity, driver, cell, first_seen`)
	if err != nil {
		return nil, fmt.Errorf("list fingerprints: %w", err)
	}
	return fs, nil
}

// Fingerprints returns the fingerprints of the skill named name (every
// key and version), by key and first seen.
func (s *Store) Fingerprints(ctx context.Context, name string) ([]fingerprint.Fingerprint, error) {
	fs, err := scanFingerprints(ctx, s.db, `WHERE skill=? ORDER BY identity, driver, cell, first_seen`, name)
	if err != nil {
		return nil, fmt.Errorf("read fingerprints of %s: %w", name, err)
	}
	return fs, nil
}

// RunInfo is one recorded run.
type RunInfo struct {
	TraceID     string                `json:"trace_id"`
	Version     string                `json:"version"`
	At          time.Time             `json:"at"`
	MaxSeverity string                `json:"max_severity"`
	Absorbed    bool                  `json:"absorbed"`
	Hash        string                `json:"capability_hash"`
	Anomalies   []fingerprint.Anomaly `json:"anomalies"`
	// Capabilities are the run's own (not the baseline's).
	Capabilities fingerprint.Capabilities `json:"capabilities"`
}

// Runs returns the last limit runs of key (every version), newest first.
func (s *Store) Runs(ctx context.Context, k fingerprint.Key, limit int) ([]RunInfo, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT trace_id, version, at, max_severity, absorbed, cap_hash, anomalies, capabilities
		FROM runs WHERE skill=? AND identity=? AND driver=? AND cell=? ORDER BY id DESC LIMIT ?`,
		k.Skill, k.Identity, k.Driver, k.Cell, limit)
	if err != nil {
		return nil, fmt.Errorf("read runs of %s: %w", k.Skill, err)
	}
	defer rows.Close()
	out := []RunInfo{}
	for rows.Next() {
		var r RunInfo
		var at int64
		var an, caps string
		if err := rows.Scan(&r.TraceID, &r.Version, &at, &r.MaxSeverity, &r.Absorbed, &r.Hash, &an, &caps); err != nil {
			return nil, fmt.Errorf("read runs of %s: %w", k.Skill, err)
		}
		r.At = time.Unix(0, at).UTC()
		if err := errors.Join(json.Unmarshal([]byte(an), &r.Anomalies), json.Unmarshal([]byte(caps), &r.Capabilities)); err != nil {
			return nil, fmt.Errorf("read runs of %s: %w", k.Skill, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Accept approves the baseline of the skill named name: for each of its
// keys, the fingerprint of version (a prefix of the content hash; "" the
// key's newest version) takes in the capabilities of its latest run and
// becomes stable. It returns the fingerprints accepted.
func (s *Store) Accept(ctx context.Context, name, version string, at time.Time) ([]fingerprint.Fingerprint, error) {
	var out []fingerprint.Fingerprint
	err := s.tx(ctx, func(tx *sql.Tx) error {
		all, err := scanFingerprints(ctx, tx, `WHERE skill=? ORDER BY identity, driver, cell, first_seen`, name)
		if err != nil {
			return err
		}
		pick := map[fingerprint.Key]fingerprint.Fingerprint{}
		var keys []fingerprint.Key
		for _, f := range all {
			if version != "" && !strings.HasPrefix(f.Version, version) {
				continue
			}
			if _, ok := pick[f.Key]; !ok {
				keys = append(keys, f.Key)
			}
			pick[f.Key] = f // the newest (first_seen order) wins
		}
		for _, k := range keys {
			f := pick[k]
			var caps string
			err := tx.QueryRowContext(ctx, `SELECT capabilities FROM runs WHERE skill=? AND identity=? AND driver=? AND cell=?
				AND version=? ORDER BY id DESC LIMIT 1`, k.Skill, k.Identity, k.Driver, k.Cell, f.Version).Scan(&caps)
			var c fingerprint.Capabilities
			if err == nil {
				err = json.Unmarshal([]byte(caps), &c)
			}
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			nf := fingerprint.Accept(f, c, at)
			if err := put(ctx, tx, nf); err != nil {
				return err
			}
			out = append(out, nf)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("accept fingerprint of %s: %w", name, err)
	}
	return out, nil
}

// Reset forgets the skill named name: its fingerprints and runs. It
// returns how many fingerprints were removed.
func (s *Store) Reset(ctx context.Context, name string) (int, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, `DELETE FROM fingerprints WHERE skill=?`, name)
		if err != nil {
			return err
		}
		n, _ = r.RowsAffected()
		_, err = tx.ExecContext(ctx, `DELETE FROM runs WHERE skill=?`, name)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("reset fingerprint of %s: %w", name, err)
	}
	return int(n), nil
}

// Evict removes the fingerprints last seen before t, and their runs. It
// returns how many fingerprints were removed.
func (s *Store) Evict(ctx context.Context, t time.Time) (int, error) {
	var n int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE EXISTS (SELECT 1 FROM fingerprints f WHERE f.skill=runs.skill
			AND f.identity=runs.identity AND f.driver=runs.driver AND f.cell=runs.cell AND f.version=runs.version AND f.last_seen<?)`, t.UnixNano())
		if err != nil {
			return err
		}
		r, err := tx.ExecContext(ctx, `DELETE FROM fingerprints WHERE last_seen<?`, t.UnixNano())
		if err != nil {
			return err
		}
		n, _ = r.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("evict fingerprints: %w", err)
	}
	return int(n), nil
}

// Consistent checks the database: SQLite's integrity check, and that each
// fingerprint's invocation count is the number of its runs. It returns
// what is wrong, nil when nothing is.
func (s *Store) Consistent(ctx context.Context) error {
	var ok string
	if err := s.db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&ok); err != nil {
		return fmt.Errorf("check fingerprint store: %w", err)
	}
	if ok != "ok" {
		return fmt.Errorf("check fingerprint store: integrity: %s", ok)
	}
	var bad int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM fingerprints f WHERE invocations <> (SELECT count(*) FROM runs r
		WHERE r.skill=f.skill AND r.identity=f.identity AND r.driver=f.driver AND r.cell=f.cell AND r.version=f.version)`).Scan(&bad)
	if err != nil {
		return fmt.Errorf("check fingerprint store: %w", err)
	}
	if bad > 0 {
		return fmt.Errorf("check fingerprint store: %d fingerprints whose invocation count is not their number of runs", bad)
	}
	return nil
}

// MaxSeverity is the worst severity of fs ("" for none).
func MaxSeverity(fs []rules.Finding) rules.Severity {
	var w rules.Severity
	for _, f := range fs {
		if f.Severity.Rank() > w.Rank() {
			w = f.Severity
		}
	}
	return w
}
