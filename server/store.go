package server

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/sqlitedb"
	"github.com/sandboxctl/sandboxctl/sweep"
)

// Trace statuses.
const (
	StatusQueued      = "queued"      // waiting for a worker
	StatusRunning     = "running"     // tracing
	StatusDone        = "done"        // judged: a verdict
	StatusFailed      = "failed"      // the trace could not observe: no verdict
	StatusCanceled    = "canceled"    // DELETE before it finished
	StatusInterrupted = "interrupted" // the server stopped while it ran, or could not resume it
)

// DBFile is the state database's name in the data folder.
const DBFile = "serve.db"

const schema = `
CREATE TABLE IF NOT EXISTS traces (
	seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	id          TEXT NOT NULL UNIQUE,
	key         TEXT NOT NULL,
	owner       TEXT NOT NULL DEFAULT '',
	status      TEXT NOT NULL,
	skill_name  TEXT NOT NULL DEFAULT '',
	skill_sha   TEXT NOT NULL DEFAULT '',
	skill_path  TEXT NOT NULL DEFAULT '',
	options     TEXT NOT NULL DEFAULT '{}',
	needs_key   INTEGER NOT NULL DEFAULT 0,
	cached_from TEXT NOT NULL DEFAULT '',
	run_dir     TEXT NOT NULL DEFAULT '',
	verdict     TEXT NOT NULL DEFAULT '',
	error       TEXT NOT NULL DEFAULT '',
	outcome     TEXT NOT NULL DEFAULT '{}',
	created     INTEGER NOT NULL,
	started     INTEGER NOT NULL DEFAULT 0,
	finished    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS traces_key ON traces(key, status);
CREATE INDEX IF NOT EXISTS traces_status ON traces(status, seq);
`

// A Record is one trace as stored. It holds no secret.
type Record struct {
	Seq        int64
	ID         string
	Key        string
	Owner      string // the token's name ("" without tokens)
	Status     string
	SkillName  string
	SkillSHA   string
	SkillPath  string // the unpacked skill, inside the data folder
	Options    Options
	NeedsKey   bool // the trace needs a provider key held in memory
	CachedFrom string
	RunDir     string // relative to the data folder
	Verdict    string
	Error      string
	Outcome    sweep.Outcome
	Created    time.Time
	Started    time.Time
	Finished   time.Time
}

// Store is the server's state database.
type Store struct {
	db *sql.DB
}

// OpenStore opens (creating it when missing) the database at path.
func OpenStore(ctx context.Context, path string) (*Store, error) {
	db, _, err := sqlitedb.Open(ctx, path, 0o700, schema)
	if err != nil {
		return nil, fmt.Errorf("open serve state %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

const cols = `seq, id, key, owner, status, skill_name, skill_sha, skill_path, options, needs_key, cached_from, run_dir, verdict, error, outcome, created, started, finished`

func scanRecord(row interface{ Scan(...any) error }) (*Record, error) {
	var r Record
	var opts, outcome string
	var needs int
	var created, started, finished int64
	if err := row.Scan(&r.Seq, &r.ID, &r.Key, &r.Owner, &r.Status, &r.SkillName, &r.SkillSHA, &r.SkillPath, &opts, &needs,
		&r.CachedFrom, &r.RunDir, &r.Verdict, &r.Error, &outcome, &created, &started, &finished); err != nil {
		return nil, err
	}
	r.NeedsKey = needs != 0
	if err := json.Unmarshal([]byte(opts), &r.Options); err != nil {
		return nil, fmt.Errorf("trace %s: options: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(outcome), &r.Outcome); err != nil {
		return nil, fmt.Errorf("trace %s: outcome: %w", r.ID, err)
	}
	r.Created = time.UnixMilli(created).UTC()
	if started > 0 {
		r.Started = time.UnixMilli(started).UTC()
	}
	if finished > 0 {
		r.Finished = time.UnixMilli(finished).UTC()
	}
	return &r, nil
}

// Insert records a new trace.
func (s *Store) Insert(ctx context.Context, r *Record) error {
	opts, err := json.Marshal(r.Options)
	if err != nil {
		return fmt.Errorf("record trace %s: %w", r.ID, err)
	}
	outcome, err := json.Marshal(r.Outcome)
	if err != nil {
		return fmt.Errorf("record trace %s: %w", r.ID, err)
	}
	needs := 0
	if r.NeedsKey {
		needs = 1
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO traces (id, key, owner, status, skill_name, skill_sha, skill_path, options, needs_key, cached_from, run_dir, verdict, error, outcome, created, started, finished)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		r.ID, r.Key, r.Owner, r.Status, r.SkillName, r.SkillSHA, r.SkillPath, string(opts), needs, r.CachedFrom, r.RunDir,
		r.Verdict, r.Error, string(outcome), r.Created.UnixMilli(), ms(r.Started), ms(r.Finished))
	if err != nil {
		return fmt.Errorf("record trace %s: %w", r.ID, err)
	}
	r.Seq, _ = res.LastInsertId()
	return nil
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// ErrNotFound is returned for a trace id the database does not hold.
var ErrNotFound = errors.New("no such trace")

// Get returns the trace id.
func (s *Store) Get(ctx context.Context, id string) (*Record, error) {
	r, err := scanRecord(s.db.QueryRowContext(ctx, `SELECT `+cols+` FROM traces WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("trace %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", id, err)
	}
	return r, nil
}

// Judged returns the earliest trace judged under key (done), or nil.
func (s *Store) Judged(ctx context.Context, key string) (*Record, error) {
	r, err := scanRecord(s.db.QueryRowContext(ctx, `SELECT `+cols+` FROM traces WHERE key = ? AND status = ? AND cached_from = '' ORDER BY seq LIMIT 1`, key, StatusDone))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cached result: %w", err)
	}
	return r, nil
}

// ListOptions filter List.
type ListOptions struct {
	Owner   string // the caller's token name ("" without tokens)
	Any     bool   // every owner's traces
	Verdict string
	Status  string
	Limit   int
	Before  int64 // seq of the last trace of the previous page (0: from the newest)
}

// List returns traces newest first.
func (s *Store) List(ctx context.Context, o ListOptions) ([]*Record, error) {
	q := `SELECT ` + cols + ` FROM traces WHERE 1=1`
	var args []any
	if !o.Any {
		q += ` AND owner = ?`
		args = append(args, o.Owner)
	}
	if o.Verdict != "" {
		q += ` AND verdict = ?`
		args = append(args, o.Verdict)
	}
	if o.Status != "" {
		q += ` AND status = ?`
		args = append(args, o.Status)
	}
	if o.Before > 0 {
		q += ` AND seq < ?`
		args = append(args, o.Before)
	}
	q += ` ORDER BY seq DESC LIMIT ?`
	args = append(args, o.Limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list traces: %w", err)
	}
	defer rows.Close()
	var out []*Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("list traces: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list traces: %w", err)
	}
	return out, nil
}

// ClaimNext moves the oldest queued trace to running and returns it (nil
// when none is queued).
func (s *Store) ClaimNext(ctx context.Context, now time.Time) (*Record, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("claim trace: %w", err)
	}
	defer tx.Rollback()
	r, err := scanRecord(tx.QueryRowContext(ctx, `SELECT `+cols+` FROM traces WHERE status = ? ORDER BY seq LIMIT 1`, StatusQueued))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim trace: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE traces SET status = ?, started = ? WHERE id = ?`, StatusRunning, now.UnixMilli(), r.ID); err != nil {
		return nil, fmt.Errorf("claim trace %s: %w", r.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("claim trace %s: %w", r.ID, err)
	}
	r.Status, r.Started = StatusRunning, now.UTC()
	return r, nil
}

// Finish records the end of a running trace: its status, outcome and
// error. A trace no longer running (canceled meanwhile, or marked
// interrupted by another process) keeps its status.
func (s *Store) Finish(ctx context.Context, id, status, runDir string, o sweep.Outcome, now time.Time) error {
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("finish trace %s: %w", id, err)
	}
	_, err = s.db.ExecContext(ctx, `UPDATE traces SET status = ?, run_dir = ?, verdict = ?, error = ?, outcome = ?, finished = ? WHERE id = ? AND status = ?`,
		status, runDir, o.Verdict, o.Error, string(b), now.UnixMilli(), id, StatusRunning)
	if err != nil {
		return fmt.Errorf("finish trace %s: %w", id, err)
	}
	return nil
}

// Cancel marks a queued or running trace canceled and reports whether it
// was one.
func (s *Store) Cancel(ctx context.Context, id, why string, now time.Time) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE traces SET status = ?, error = ?, finished = ? WHERE id = ? AND status IN (?, ?)`,
		StatusCanceled, why, now.UnixMilli(), id, StatusQueued, StatusRunning)
	if err != nil {
		return false, fmt.Errorf("cancel trace %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// Recover runs at start: traces left running by a process that stopped
// are marked interrupted, and so are queued traces that needed a key
// (held in memory only, it is gone). It returns the ids marked.
func (s *Store) Recover(ctx context.Context, now time.Time) ([]string, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("recover traces: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT id, status FROM traces WHERE status = ? OR (status = ? AND needs_key = 1)`, StatusRunning, StatusQueued)
	if err != nil {
		return nil, fmt.Errorf("recover traces: %w", err)
	}
	type st struct{ id, status string }
	var found []st
	for rows.Next() {
		var x st
		if err := rows.Scan(&x.id, &x.status); err != nil {
			rows.Close()
			return nil, fmt.Errorf("recover traces: %w", err)
		}
		found = append(found, x)
	}
	rows.Close()
	var ids []string
	for _, x := range found {
		why := "the server stopped while this trace ran; submit it again"
		if x.status == StatusQueued {
			why = "the server restarted before this trace ran, and its provider key was held in memory only; submit it again"
		}
		if _, err := tx.ExecContext(ctx, `UPDATE traces SET status = ?, error = ?, finished = ? WHERE id = ?`, StatusInterrupted, why, now.UnixMilli(), x.id); err != nil {
			return nil, fmt.Errorf("recover trace %s: %w", x.id, err)
		}
		ids = append(ids, x.id)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("recover traces: %w", err)
	}
	return ids, nil
}

// Interrupt marks a running trace interrupted (the server is stopping).
func (s *Store) Interrupt(ctx context.Context, id string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE traces SET status = ?, error = ?, finished = ? WHERE id = ? AND status = ?`,
		StatusInterrupted, "the server stopped while this trace ran; submit it again", now.UnixMilli(), id, StatusRunning)
	if err != nil {
		return fmt.Errorf("interrupt trace %s: %w", id, err)
	}
	return nil
}

// Counts are the traces by status and, for done traces, by verdict.
type Counts struct {
	ByStatus  map[string]int
	ByVerdict map[string]int
}

// Count counts traces by status and verdict: the owner's, or all.
func (s *Store) Count(ctx context.Context, owner string, all bool) (Counts, error) {
	c := Counts{ByStatus: map[string]int{}, ByVerdict: map[string]int{}}
	q := `SELECT status, verdict, COUNT(*) FROM traces`
	var args []any
	if !all {
		q += ` WHERE owner = ?`
		args = append(args, owner)
	}
	q += ` GROUP BY status, verdict`
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return c, fmt.Errorf("count traces: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var st, v string
		var n int
		if err := rows.Scan(&st, &v, &n); err != nil {
			return c, fmt.Errorf("count traces: %w", err)
		}
		c.ByStatus[st] += n
		if st == StatusDone && v != "" {
			c.ByVerdict[v] += n
		}
	}
	return c, rows.Err()
}

// InFlight counts an owner's queued and running traces.
func (s *Store) InFlight(ctx context.Context, owner string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM traces WHERE owner = ? AND status IN (?, ?)`, owner, StatusQueued, StatusRunning).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count traces in flight: %w", err)
	}
	return n, nil
}

// Queued counts the queued traces.
func (s *Store) Queued(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM traces WHERE status = ?`, StatusQueued).Scan(&n); err != nil {
		return 0, fmt.Errorf("count queued traces: %w", err)
	}
	return n, nil
}
