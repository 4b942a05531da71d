package sweep

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/sqlitedb"
)

// Item statuses in the state database.
const (
	StatusPending = "pending" // queued, or back in the queue
	StatusRunning = "running" // leased by a worker
	StatusDone    = "done"    // judged: a verdict
	StatusFailed  = "failed"  // every attempt failed to observe: no verdict
	StatusRefused = "refused" // the loader refused the skill: never traced
)

// DBFile is the state database's name in a sweep folder.
const DBFile = "sweep.db"

// SourcesDir is the folder of a sweep folder that archives are unpacked
// into, one folder per archive digest.
const SourcesDir = "sources"

const schema = `
CREATE TABLE IF NOT EXISTS runs (
	id        TEXT PRIMARY KEY,
	started   INTEGER NOT NULL,
	finished  INTEGER NOT NULL DEFAULT 0,
	sources   TEXT NOT NULL,
	plan_hash TEXT NOT NULL,
	image     TEXT NOT NULL,
	shard     TEXT NOT NULL DEFAULT '',
	info      TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS items (
	run_id TEXT NOT NULL,
	seq    INTEGER NOT NULL,
	id     TEXT NOT NULL,
	key    TEXT NOT NULL,
	skill  TEXT NOT NULL,
	PRIMARY KEY (run_id, id)
);
CREATE INDEX IF NOT EXISTS items_key ON items(key);
CREATE TABLE IF NOT EXISTS results (
	key         TEXT PRIMARY KEY,
	status      TEXT NOT NULL,
	attempts    INTEGER NOT NULL DEFAULT 0,
	lease_owner TEXT NOT NULL DEFAULT '',
	lease_until INTEGER NOT NULL DEFAULT 0,
	not_before  INTEGER NOT NULL DEFAULT 0,
	trace_id    TEXT NOT NULL DEFAULT '',
	run_dir     TEXT NOT NULL DEFAULT '',
	verdict     TEXT NOT NULL DEFAULT '',
	error       TEXT NOT NULL DEFAULT '',
	outcome     TEXT NOT NULL DEFAULT '{}',
	judged_by   TEXT NOT NULL DEFAULT '',
	done_count  INTEGER NOT NULL DEFAULT 0,
	updated     INTEGER NOT NULL DEFAULT 0
);
`

// A Store is a sweep's state database. It is safe for concurrent use, and
// several processes may share one database file on a local disk (SQLite's
// locking; not on a network file system).
type Store struct {
	db   *sql.DB
	path string
}

// OpenStore opens (creating it and its folder when missing) the state database at path.
func OpenStore(ctx context.Context, path string) (*Store, error) {
	db, abs, err := sqlitedb.Open(ctx, path, 0o755, schema)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	return &Store{db: db, path: abs}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Dir is the sweep folder: the database's folder.
func (s *Store) Dir() string { return filepath.Dir(s.path) }

// storedSkill is sk as recorded: a skill inside the sweep folder (unpacked
// from an archive under sources/) by its path relative to the folder, so
// that the folder can be moved, or merged from another machine; any other
// skill by its absolute path.
func (s *Store) storedSkill(sk Skill) Skill {
	sk.Path = relToDir(s.Dir(), sk.Path)
	return sk
}

// relToDir is path relative to dir, with slashes, when path is inside
// dir; path itself otherwise.
func relToDir(dir, path string) string {
	if !filepath.IsAbs(path) {
		return path
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil || !filepath.IsLocal(rel) {
		return path
	}
	return filepath.ToSlash(rel)
}

// HostPath is a recorded skill path on this host: a path relative to the
// sweep folder (a skill unpacked under its sources/) joined to dir, an
// absolute path as it is.
func HostPath(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, filepath.FromSlash(path))
}

// RunInfo describes one sweep run in the database.
type RunInfo struct {
	ID       string    `json:"id"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Sources  []string  `json:"sources"`
	PlanHash string    `json:"plan_hash"`
	Image    string    `json:"image"`
	Shard    string    `json:"shard,omitempty"`
	// Version is the sandboxctl version, Driver and Model the plan's.
	Version string `json:"version,omitempty"`
	Driver  string `json:"driver,omitempty"`
	Model   string `json:"model,omitempty"`
}

type runExtra struct {
	Version string `json:"version,omitempty"`
	Driver  string `json:"driver,omitempty"`
	Model   string `json:"model,omitempty"`
}

// An Item is a skill of a run with its result key.
type Item struct {
	Skill
	Key string `json:"key"`
}

// BeginOptions tune Begin.
type BeginOptions struct {
	// Force queues every skill again, even those judged under the same
	// key.
	Force bool
}

// Begin records a new run with its items and queues every item without a
// result under its key (every item with Force). Items judged before
// (done) are kept: the run reuses their results. Failed items are queued
// again with their attempts reset: a new run tries them anew. It returns
// how many items were queued.
func (s *Store) Begin(ctx context.Context, run RunInfo, items []Item, opt BeginOptions) (int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("begin sweep: %w", err)
	}
	defer tx.Rollback()
	src, _ := json.Marshal(run.Sources)
	extra, _ := json.Marshal(runExtra{Version: run.Version, Driver: run.Driver, Model: run.Model})
	if _, err := tx.ExecContext(ctx, `INSERT INTO runs (id, started, sources, plan_hash, image, shard, info) VALUES (?,?,?,?,?,?,?)`,
		run.ID, run.Started.UnixMilli(), string(src), run.PlanHash, run.Image, run.Shard, string(extra)); err != nil {
		return 0, fmt.Errorf("begin sweep: %w", err)
	}
	queued := 0
	now := time.Now().UnixMilli()
	keys := map[string]bool{}
	for i, it := range items {
		sk, _ := json.Marshal(s.storedSkill(it.Skill))
		if _, err := tx.ExecContext(ctx, `INSERT INTO items (run_id, seq, id, key, skill) VALUES (?,?,?,?,?)`,
			run.ID, i, it.ID, it.Key, string(sk)); err != nil {
			return 0, fmt.Errorf("begin sweep: item %s: %w", it.ID, err)
		}
		if keys[it.Key] {
			continue // the same content twice: one result
		}
		keys[it.Key] = true
		var status string
		err := tx.QueryRowContext(ctx, `SELECT status FROM results WHERE key = ?`, it.Key).Scan(&status)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			st := StatusPending
			outcome := "{}"
			errText := ""
			if it.Refused != "" {
				st, errText = StatusRefused, it.Refused
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO results (key, status, error, outcome, judged_by, updated) VALUES (?,?,?,?,?,?)`,
				it.Key, st, errText, outcome, run.ID, now); err != nil {
				return 0, fmt.Errorf("begin sweep: item %s: %w", it.ID, err)
			}
			if st == StatusPending {
				queued++
			}
		case err != nil:
			return 0, fmt.Errorf("begin sweep: item %s: %w", it.ID, err)
		case it.Refused != "":
		case status == StatusFailed || (opt.Force && status == StatusDone) || status == StatusPending:
			if _, err := tx.ExecContext(ctx, `UPDATE results SET status=?, attempts=0, not_before=0, lease_owner='', error='', judged_by=?, updated=? WHERE key=?`,
				StatusPending, run.ID, now, it.Key); err != nil {
				return 0, fmt.Errorf("begin sweep: item %s: %w", it.ID, err)
			}
			queued++
		case status == StatusRunning:
			// Leased by a sweep that may still run: Claim takes it over
			// when the lease ends.
			queued++
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("begin sweep: %w", err)
	}
	return queued, nil
}

// LatestRun is the most recent run (by start), or nil when there is none.
func (s *Store) LatestRun(ctx context.Context) (*RunInfo, error) {
	runs, err := s.Runs(ctx)
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	return &runs[len(runs)-1], nil
}

// Runs lists the runs, oldest first.
func (s *Store) Runs(ctx context.Context) ([]RunInfo, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, started, finished, sources, plan_hash, image, shard, info FROM runs ORDER BY started, id`)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []RunInfo
	for rows.Next() {
		var r RunInfo
		var started, finished int64
		var src, info string
		if err := rows.Scan(&r.ID, &started, &finished, &src, &r.PlanHash, &r.Image, &r.Shard, &info); err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		r.Started = time.UnixMilli(started).UTC()
		if finished > 0 {
			r.Finished = time.UnixMilli(finished).UTC()
		}
		json.Unmarshal([]byte(src), &r.Sources)
		var x runExtra
		json.Unmarshal([]byte(info), &x)
		r.Version, r.Driver, r.Model = x.Version, x.Driver, x.Model
		out = append(out, r)
	}
	return out, rows.Err()
}

// Previous is the latest finished run before run over the same sources and
// shard, or nil: what the diff compares against.
func (s *Store) Previous(ctx context.Context, run RunInfo) (*RunInfo, error) {
	runs, err := s.Runs(ctx)
	if err != nil {
		return nil, err
	}
	var prev *RunInfo
	for i, r := range runs {
		if r.ID != run.ID && !r.Finished.IsZero() && r.Started.Before(run.Started) &&
			r.Shard == run.Shard && slices.Equal(r.Sources, run.Sources) {
			prev = &runs[i]
		}
	}
	return prev, nil
}

// MarkFinished records that a run has no work left.
func (s *Store) MarkFinished(ctx context.Context, runID string, at time.Time) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET finished=? WHERE id=?`, at.UnixMilli(), runID); err != nil {
		return fmt.Errorf("finish sweep: %w", err)
	}
	return nil
}

// A Lease is a claimed item: the worker holding it traces the skill.
type Lease struct {
	Item
	Owner   string
	TraceID string
	Attempt int // 1 for the first attempt
	// Stale is the trace id of an earlier attempt whose lease was taken
	// over (its process died): what it left behind is to be cleaned up.
	Stale string
}

// ClaimOptions tune Claim.
type ClaimOptions struct {
	Owner       string
	TTL         time.Duration
	MaxAttempts int
	Now         time.Time
	// Dead reports whether a lease owner is known to be gone (a process
	// of this host that no longer runs), so its lease is taken over at
	// once instead of when it expires. nil: leases end only by expiry.
	Dead func(owner string) bool
	// TraceID names the trace of an attempt.
	TraceID func(it Item, attempt int) string
}

// Claim leases the next item of the run that needs a trace: a queued item
// whose backoff is over, or a running one whose lease expired or whose
// owner is dead. An item whose attempts are used up is marked failed
// instead. It returns nil and how long until an item may be ready (0 when
// nothing is left to do) when none is.
func (s *Store) Claim(ctx context.Context, runID string, opt ClaimOptions) (*Lease, time.Duration, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("claim: %w", err)
	}
	defer tx.Rollback()
	now := opt.Now.UnixMilli()
	rows, err := tx.QueryContext(ctx, `
		SELECT i.id, i.key, i.skill, r.status, r.attempts, r.lease_owner, r.lease_until, r.not_before, r.trace_id, r.error
		FROM items i JOIN results r ON r.key = i.key
		WHERE i.run_id = ? AND r.status IN (?, ?)
		ORDER BY i.seq`, runID, StatusPending, StatusRunning)
	if err != nil {
		return nil, 0, fmt.Errorf("claim: %w", err)
	}
	type cand struct {
		it                   Item
		status, owner, trace string
		errText              string
		attempts             int
		until, notBefore     int64
	}
	var cands []cand
	seen := map[string]bool{}
	for rows.Next() {
		var c cand
		var sk string
		if err := rows.Scan(&c.it.ID, &c.it.Key, &sk, &c.status, &c.attempts, &c.owner, &c.until, &c.notBefore, &c.trace, &c.errText); err != nil {
			rows.Close()
			return nil, 0, fmt.Errorf("claim: %w", err)
		}
		if seen[c.it.Key] {
			continue // the same content twice in the run: traced once
		}
		seen[c.it.Key] = true
		json.Unmarshal([]byte(sk), &c.it.Skill)
		c.it.Path = HostPath(s.Dir(), c.it.Path)
		cands = append(cands, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("claim: %w", err)
	}
	var wait int64 = -1
	soonest := func(t int64) {
		if d := t - now; d > 0 && (wait < 0 || d < wait) {
			wait = d
		}
	}
	for _, c := range cands {
		stale := ""
		switch c.status {
		case StatusPending:
			if c.notBefore > now {
				soonest(c.notBefore)
				continue
			}
		case StatusRunning:
			if c.owner == opt.Owner {
				soonest(c.until)
				continue
			}
			if c.until > now && (opt.Dead == nil || !opt.Dead(c.owner)) {
				soonest(c.until)
				continue
			}
			stale = c.trace
		}
		if c.attempts >= opt.MaxAttempts {
			reason := fmt.Sprintf("gave up after %d attempts", c.attempts)
			if c.errText != "" {
				reason += ": " + c.errText
			} else if c.status == StatusRunning {
				reason += ": the sweep stopped during every attempt (a skill that crashes the sweep or its host)"
			}
			if _, err := tx.ExecContext(ctx, `UPDATE results SET status=?, lease_owner='', error=?, updated=? WHERE key=?`,
				StatusFailed, reason, now, c.it.Key); err != nil {
				return nil, 0, fmt.Errorf("claim: %w", err)
			}
			if stale != "" {
				// Nothing will retry it, but its leftovers still go.
				l := &Lease{Item: c.it, Stale: stale}
				if err := tx.Commit(); err != nil {
					return nil, 0, fmt.Errorf("claim: %w", err)
				}
				return l, 0, nil
			}
			continue
		}
		l := &Lease{Item: c.it, Owner: opt.Owner, Attempt: c.attempts + 1, Stale: stale}
		l.TraceID = opt.TraceID(c.it, l.Attempt)
		if _, err := tx.ExecContext(ctx, `UPDATE results SET status=?, attempts=?, lease_owner=?, lease_until=?, trace_id=?, updated=? WHERE key=?`,
			StatusRunning, l.Attempt, opt.Owner, now+opt.TTL.Milliseconds(), l.TraceID, now, c.it.Key); err != nil {
			return nil, 0, fmt.Errorf("claim: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return nil, 0, fmt.Errorf("claim: %w", err)
		}
		return l, 0, nil
	}
	if err := tx.Commit(); err != nil {
		return nil, 0, fmt.Errorf("claim: %w", err)
	}
	if wait < 0 {
		// Nothing ready: either nothing is left, or only our own leases.
		for _, c := range cands {
			if c.status == StatusRunning || c.status == StatusPending {
				return nil, time.Second, nil
			}
		}
		return nil, 0, nil
	}
	return nil, time.Duration(wait) * time.Millisecond, nil
}

// ErrLeaseLost is returned when a worker's lease was taken over: its
// outcome is not recorded (another worker owns the item).
var ErrLeaseLost = errors.New("lease lost")

// Renew extends the lease of key held by owner.
func (s *Store) Renew(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) error {
	res, err := s.db.ExecContext(ctx, `UPDATE results SET lease_until=? WHERE key=? AND status=? AND lease_owner=?`,
		now.Add(ttl).UnixMilli(), key, StatusRunning, owner)
	if err != nil {
		return fmt.Errorf("renew lease: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrLeaseLost
	}
	return nil
}

// Outcome is what a trace of an item produced, as stored.
type Outcome struct {
	Verdict     string   `json:"verdict,omitempty"`
	TraceStatus string   `json:"trace_status,omitempty"`
	RunDir      string   `json:"run_dir,omitempty"` // relative to the sweep folder
	TraceID     string   `json:"trace_id,omitempty"`
	Rules       []string `json:"rules,omitempty"`
	Deciding    []string `json:"deciding,omitempty"`
	// Cause says why an inconclusive verdict is so (rules.Causes).
	Cause       string          `json:"cause,omitempty"`
	Incidents   []IncidentBrief `json:"incidents,omitempty"`
	SeverityMax string          `json:"severity_max,omitempty"`
	ToolCalls   int             `json:"tool_calls,omitempty"`
	DurationMS  int64           `json:"duration_ms,omitempty"`
	Error       string          `json:"error,omitempty"`
	FinishedAt  time.Time       `json:"finished_at,omitzero"`
	// Generator and image of the trace, for exports.
	Version string `json:"version,omitempty"`
	Image   string `json:"image,omitempty"`
}

// IncidentBrief is one incident of a report, in short.
type IncidentBrief struct {
	Kind       string   `json:"kind"`
	Title      string   `json:"title"`
	Severity   string   `json:"severity"`
	Confidence string   `json:"confidence"`
	RuleIDs    []string `json:"rule_ids"`
}

// Finish records the outcome of a leased item: done with a verdict, or
// failed. It returns ErrLeaseLost when owner no longer holds the lease.
func (s *Store) Finish(ctx context.Context, l *Lease, runID, status string, o Outcome, now time.Time) error {
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("finish %s: %w", l.ID, err)
	}
	res, err := s.db.ExecContext(ctx, `
		UPDATE results SET status=?, lease_owner='', run_dir=?, verdict=?, error=?, outcome=?, judged_by=?,
			done_count=done_count+1, updated=?
		WHERE key=? AND status=? AND lease_owner=?`,
		status, o.RunDir, o.Verdict, o.Error, string(b), runID, now.UnixMilli(), l.Key, StatusRunning, l.Owner)
	if err != nil {
		return fmt.Errorf("finish %s: %w", l.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrLeaseLost
	}
	return nil
}

// Retry puts a leased item back in the queue after an infrastructure
// failure, not before notBefore.
func (s *Store) Retry(ctx context.Context, l *Lease, why string, notBefore time.Time) error {
	res, err := s.db.ExecContext(ctx, `UPDATE results SET status=?, lease_owner='', not_before=?, error=?, updated=? WHERE key=? AND status=? AND lease_owner=?`,
		StatusPending, notBefore.UnixMilli(), why, time.Now().UnixMilli(), l.Key, StatusRunning, l.Owner)
	if err != nil {
		return fmt.Errorf("retry %s: %w", l.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrLeaseLost
	}
	return nil
}

// Release gives a lease back without counting the attempt (the sweep was
// interrupted, not the trace).
func (s *Store) Release(ctx context.Context, l *Lease) error {
	_, err := s.db.ExecContext(ctx, `UPDATE results SET status=?, lease_owner='', attempts=MAX(attempts-1, 0), updated=? WHERE key=? AND status=? AND lease_owner=?`,
		StatusPending, time.Now().UnixMilli(), l.Key, StatusRunning, l.Owner)
	if err != nil {
		return fmt.Errorf("release %s: %w", l.ID, err)
	}
	return nil
}

// A Result is one skill of a sweep: a line of results.jsonl.
type Result struct {
	Skill  ResultSkill `json:"skill"`
	Key    string      `json:"key"`
	Status string      `json:"status"`
	Outcome
	Attempts int `json:"attempts"`
	// DoneCount is how many times the skill's result was recorded under
	// its key: 1 for a skill judged once (kill -9 and resume included).
	DoneCount int `json:"done_count"`
	// Cached is set when an earlier run judged the skill under the same
	// key: this run reused the result.
	Cached bool `json:"cached"`
}

// ResultSkill identifies the skill of a result.
type ResultSkill struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Path is the skill as traced: relative to the sweep folder (with
	// slashes) for a skill inside it, unpacked from an archive under
	// sources/; absolute for any other. HostPath resolves it.
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Source string `json:"source"`
}

// Results lists the run's items with their results, in the run's order.
func (s *Store) Results(ctx context.Context, runID string) ([]Result, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT i.key, i.skill, r.status, r.attempts, r.error, r.outcome, r.judged_by, r.done_count
		FROM items i JOIN results r ON r.key = i.key
		WHERE i.run_id = ? ORDER BY i.seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	defer rows.Close()
	var out []Result
	for rows.Next() {
		var r Result
		var sk, outcome, judgedBy, errText string
		if err := rows.Scan(&r.Key, &sk, &r.Status, &r.Attempts, &errText, &outcome, &judgedBy, &r.DoneCount); err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
		var k Skill
		json.Unmarshal([]byte(sk), &k)
		r.Skill = ResultSkill{ID: k.ID, Name: k.Name, Path: k.Path, SHA256: k.SHA256, Source: k.Source}
		json.Unmarshal([]byte(outcome), &r.Outcome)
		if r.Error == "" || r.Status != StatusDone {
			r.Error = errText
		}
		r.Cached = r.Status == StatusDone && judgedBy != runID
		out = append(out, r)
	}
	return out, rows.Err()
}

// leaseOwnerHost is the host part of an owner id ("host:pid:nonce").
func leaseOwnerHost(owner string) (host string, pid string, ok bool) {
	parts := strings.Split(owner, ":")
	if len(parts) != 3 {
		return "", "", false
	}
	return parts[0], parts[1], true
}
