package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sandboxctl/sandboxctl/fingerprint"
)

// migrate brings the database to schemaVersion in one transaction: a new
// store gets the schema; a store of layout 1 (keyed by the absolute path a
// skill was traced from) is rewritten so that a skill is known by its name
// (layout 1 had no registry identity), its fingerprints of the same name,
// driver, cell and version from different folders merged into one
// (mergeFingerprints) and its runs kept, each under the merged key. A
// store of a later layout is refused: this sandboxctl would misread it.
func (s *Store) migrate(ctx context.Context) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var v int
		if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
			return err
		}
		if v > schemaVersion {
			return fmt.Errorf("the store has layout %d, newer than this sandboxctl's %d: use a newer sandboxctl", v, schemaVersion)
		}
		if v == schemaVersion {
			return nil
		}
		old, err := hasColumn(ctx, tx, "fingerprints", "source")
		if err != nil {
			return err
		}
		if old {
			if err := migrate1to2(ctx, tx); err != nil {
				return fmt.Errorf("migrate from layout 1: %w", err)
			}
		} else if _, err := tx.ExecContext(ctx, schema); err != nil {
			return err
		}
		for _, t := range []string{"fingerprints", "runs"} {
			if ok, err := hasColumn(ctx, tx, t, "identity"); err != nil || !ok {
				return fmt.Errorf("table %s is not a fingerprint store's (%v): not migrated", t, err)
			}
		}
		_, err = tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion))
		return err
	})
}

func hasColumn(ctx context.Context, tx *sql.Tx, table, col string) (bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return false, err
		}
		if n == col {
			return true, nil
		}
	}
	return false, rows.Err()
}

// migrate1to2 rewrites a layout 1 store: every source (a path) becomes the
// identity "" (name only).
func migrate1to2(ctx context.Context, tx *sql.Tx) error {
	for _, q := range []string{
		`ALTER TABLE fingerprints RENAME TO fingerprints_v1`,
		`ALTER TABLE runs RENAME TO runs_v1`,
		`DROP INDEX IF EXISTS runs_key`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT skill, driver, cell, version, state, invocations, clean_streak, absorbed,
		first_seen, last_seen, accepted_at, capabilities FROM fingerprints_v1 ORDER BY skill, driver, cell, version, last_seen`)
	if err != nil {
		return err
	}
	type mkey struct {
		fingerprint.Key
		version string
	}
	merged := map[mkey][]fingerprint.Fingerprint{}
	var order []mkey
	for rows.Next() {
		var f fingerprint.Fingerprint
		var first, last, acc int64
		var caps string
		if err := rows.Scan(&f.Skill, &f.Driver, &f.Cell, &f.Version, &f.State, &f.Invocations, &f.CleanStreak, &f.Absorbed,
			&first, &last, &acc, &caps); err != nil {
			rows.Close()
			return err
		}
		f.FirstSeen, f.LastSeen = time.Unix(0, first).UTC(), time.Unix(0, last).UTC()
		if acc != 0 {
			f.AcceptedAt = time.Unix(0, acc).UTC()
		}
		if err := json.Unmarshal([]byte(caps), &f.Capabilities); err != nil {
			rows.Close()
			return fmt.Errorf("fingerprint %s %s: %w", f.Skill, f.Version, err)
		}
		k := mkey{f.Key, f.Version}
		if merged[k] == nil {
			order = append(order, k)
		}
		merged[k] = append(merged[k], f)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	for _, k := range order {
		if err := put(ctx, tx, mergeFingerprints(merged[k])); err != nil {
			return err
		}
	}
	for _, q := range []string{
		`INSERT INTO runs (trace_id, skill, identity, driver, cell, version, at, max_severity, absorbed, anomalies, capabilities, cap_hash)
			SELECT trace_id, skill, '', driver, cell, version, at, max_severity, absorbed, anomalies, capabilities, cap_hash
			FROM runs_v1 ORDER BY id`,
		`DROP TABLE fingerprints_v1`,
		`DROP TABLE runs_v1`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// mergeFingerprints is one fingerprint of the same skill, key and version
// learnt under several folders (fs, by last seen): the runs add up
// (invocations, absorbed), the dates span them all, the clean streak is
// the latest one's; it is stable when one of them was, with the baseline
// of the stable ones only (capabilities a learning copy absorbed were
// never approved), else learning with the union of all.
func mergeFingerprints(fs []fingerprint.Fingerprint) fingerprint.Fingerprint {
	out := fs[len(fs)-1]
	if len(fs) == 1 {
		out.Hash = out.Capabilities.Hash()
		return out
	}
	out.Invocations, out.Absorbed = 0, 0
	out.State = fingerprint.Learning
	var stable, all fingerprint.Capabilities
	for _, f := range fs {
		out.Invocations += f.Invocations
		out.Absorbed += f.Absorbed
		if f.FirstSeen.Before(out.FirstSeen) {
			out.FirstSeen = f.FirstSeen
		}
		if f.LastSeen.After(out.LastSeen) {
			out.LastSeen = f.LastSeen
		}
		if f.AcceptedAt.After(out.AcceptedAt) {
			out.AcceptedAt = f.AcceptedAt
		}
		all = all.Union(f.Capabilities)
		if f.State == fingerprint.Stable {
			out.State = fingerprint.Stable
			stable = stable.Union(f.Capabilities)
		}
	}
	out.Capabilities = all
	if out.State == fingerprint.Stable {
		out.Capabilities = stable
	}
	out.Hash = out.Capabilities.Hash()
	return out
}
