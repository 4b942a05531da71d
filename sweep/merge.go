package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// MergeOptions tune Merge.
type MergeOptions struct {
	// RunID is the merged run's id.
	RunID string
	// Partial merges shards that do not cover every index of their
	// count (a missing shard is otherwise an error).
	Partial bool
}

// Merge merges the latest finished run of each shard's sweep folder into
// the sweep folder out: one run over the shards' sources with every
// shard's results, their run folders copied under out/runs/, and out's
// outputs written. The shards must come from one plan (same sources, plan
// hash and image) and, unless opt.Partial, cover every index of their
// count exactly once.
func Merge(ctx context.Context, out string, shards []string, opt MergeOptions) (Summary, error) {
	if len(shards) == 0 {
		return Summary{}, errors.New("merge: no shard")
	}
	type shard struct {
		dir string
		run RunInfo
		res []Result
	}
	var got []shard
	for _, dir := range shards {
		st, err := OpenStore(ctx, filepath.Join(dir, DBFile))
		if err != nil {
			return Summary{}, fmt.Errorf("merge: %w", err)
		}
		run, err := st.LatestRun(ctx)
		if err == nil && run == nil {
			err = fmt.Errorf("%s holds no sweep", dir)
		}
		if err == nil && run.Finished.IsZero() {
			err = fmt.Errorf("the sweep in %s is not finished (resume it first)", dir)
		}
		var res []Result
		if err == nil {
			res, err = st.Results(ctx, run.ID)
		}
		st.Close()
		if err != nil {
			return Summary{}, fmt.Errorf("merge: %w", err)
		}
		got = append(got, shard{dir: dir, run: *run, res: res})
	}
	first := got[0].run
	seen := map[int]string{}
	count := 0
	for _, s := range got {
		switch {
		case !slices.Equal(s.run.Sources, first.Sources):
			return Summary{}, fmt.Errorf("merge: %s swept other sources than %s", s.dir, got[0].dir)
		case s.run.PlanHash != first.PlanHash || s.run.Image != first.Image:
			return Summary{}, fmt.Errorf("merge: %s ran with other settings or another image than %s", s.dir, got[0].dir)
		}
		sh, err := ParseShard(s.run.Shard)
		if s.run.Shard == "" {
			sh, err = Shard{Index: 0, Count: 1}, nil
		}
		if err != nil {
			return Summary{}, fmt.Errorf("merge: %s: %w", s.dir, err)
		}
		if count != 0 && sh.Count != count {
			return Summary{}, fmt.Errorf("merge: %s is a shard of %d, others of %d", s.dir, sh.Count, count)
		}
		count = sh.Count
		if prev, dup := seen[sh.Index]; dup {
			return Summary{}, fmt.Errorf("merge: %s and %s are both shard %d/%d", prev, s.dir, sh.Index, count)
		}
		seen[sh.Index] = s.dir
	}
	if len(seen) != count && !opt.Partial {
		return Summary{}, fmt.Errorf("merge: %d of %d shards given", len(seen), count)
	}

	if err := os.MkdirAll(out, 0o755); err != nil {
		return Summary{}, fmt.Errorf("merge: %w", err)
	}
	st, err := OpenStore(ctx, filepath.Join(out, DBFile))
	if err != nil {
		return Summary{}, fmt.Errorf("merge: %w", err)
	}
	defer st.Close()
	run := RunInfo{ID: opt.RunID, Sources: first.Sources, PlanHash: first.PlanHash, Image: first.Image,
		Version: first.Version, Driver: first.Driver, Model: first.Model}
	if run.ID == "" {
		run.ID = "merge-" + first.ID
	}
	for _, s := range got {
		if run.Started.IsZero() || s.run.Started.Before(run.Started) {
			run.Started = s.run.Started
		}
		if s.run.Finished.After(run.Finished) {
			run.Finished = s.run.Finished
		}
	}
	var all []Result
	copied := map[string]bool{}
	for _, s := range got {
		for _, r := range s.res {
			if err := copySource(s.dir, out, r.Skill.Path, copied); err != nil {
				return Summary{}, fmt.Errorf("merge: skill files of %s: %w", r.Skill.ID, err)
			}
			if r.RunDir != "" {
				src := filepath.Join(s.dir, r.RunDir)
				dst := filepath.Join(out, r.RunDir)
				if err := os.RemoveAll(dst); err != nil {
					return Summary{}, fmt.Errorf("merge: %w", err)
				}
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
					return Summary{}, fmt.Errorf("merge: %w", err)
				}
				if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
					return Summary{}, fmt.Errorf("merge: run folder of %s: %w", r.Skill.ID, err)
				}
			}
			all = append(all, r)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Skill.ID < all[j].Skill.ID })
	if err := st.Import(ctx, run, all); err != nil {
		return Summary{}, fmt.Errorf("merge: %w", err)
	}
	sum, _, err := Outputs(ctx, st, run.ID, out, run.Finished)
	return sum, err
}

// Import records a finished run with its results as they are (a merge of
// shards): results already in the store under the same key are replaced.
func (s *Store) Import(ctx context.Context, run RunInfo, res []Result) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer tx.Rollback()
	src, _ := json.Marshal(run.Sources)
	extra, _ := json.Marshal(runExtra{Version: run.Version, Driver: run.Driver, Model: run.Model})
	if _, err := tx.ExecContext(ctx, `INSERT INTO runs (id, started, finished, sources, plan_hash, image, shard, info) VALUES (?,?,?,?,?,?,?,?)`,
		run.ID, run.Started.UnixMilli(), run.Finished.UnixMilli(), string(src), run.PlanHash, run.Image, run.Shard, string(extra)); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	now := time.Now().UnixMilli()
	for i, r := range res {
		sk, _ := json.Marshal(Skill{ID: r.Skill.ID, Name: r.Skill.Name, Path: r.Skill.Path, Source: r.Skill.Source, SHA256: r.Skill.SHA256})
		if _, err := tx.ExecContext(ctx, `INSERT INTO items (run_id, seq, id, key, skill) VALUES (?,?,?,?,?)`,
			run.ID, i, r.Skill.ID, r.Key, string(sk)); err != nil {
			return fmt.Errorf("import %s: %w", r.Skill.ID, err)
		}
		o, _ := json.Marshal(r.Outcome)
		judged := run.ID
		if r.Cached {
			judged = "earlier"
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO results (key, status, attempts, run_dir, verdict, error, outcome, judged_by, done_count, updated)
			VALUES (?,?,?,?,?,?,?,?,?,?)`, r.Key, r.Status, r.Attempts, r.RunDir, r.Verdict, r.Error, string(o), judged, r.DoneCount, now); err != nil {
			return fmt.Errorf("import %s: %w", r.Skill.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return nil
}

// copySource copies the unpacked archive a skill recorded relative to the
// shard's folder (sources/<digest>/...) to the same place under out, once,
// so that the merged folder's relative paths name the skill's files. A
// skill recorded by an absolute path is left where it is.
func copySource(shard, out, path string, copied map[string]bool) error {
	if path == "" || filepath.IsAbs(path) {
		return nil
	}
	parts := strings.SplitN(path, "/", 3)
	if len(parts) < 2 || parts[0] != SourcesDir {
		return nil
	}
	top := parts[0] + "/" + parts[1]
	if copied[top] {
		return nil
	}
	copied[top] = true
	dst := filepath.Join(out, filepath.FromSlash(top))
	if _, err := os.Stat(dst); err == nil {
		return nil // unpacked from the same archive digest: the same files
	}
	src := filepath.Join(shard, filepath.FromSlash(top))
	if _, err := os.Stat(src); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.CopyFS(dst, os.DirFS(src))
}
