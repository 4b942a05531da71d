package sweep

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/traceplan"
	"github.com/sandboxctl/sandboxctl/tracing"
)

// TestArchivePathsRelative: a skill unpacked from an archive is recorded
// relative to the sweep folder, a skill outside it by its absolute path;
// a moved sweep folder still resumes, exports and merges with its skill
// files found.
func TestArchivePathsRelative(t *testing.T) {
	root := t.TempDir()
	archive := filepath.Join(root, "pack.zip")
	if err := os.WriteFile(archive, zipOf(t, map[string]string{
		"evil-zipped/SKILL.md": skillMD("evil-zipped"),
		"plain/SKILL.md":       skillMD("plain"),
	}), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(root, "loose")
	writeSkill(t, filepath.Join(outside, "evil-loose"), skillMD("evil-loose"))

	var traced []string
	tracer := tracing.Func(func(ctx context.Context, p traceplan.Plan, dir string) (*reports.Report, error) {
		traced = append(traced, p.SkillPath) // Parallel 1: one at a time
		v := rules.Clean
		if strings.Contains(filepath.Base(p.SkillPath), "evil") {
			v = rules.Malicious
		}
		fakeRunDir(t, dir, p.TraceID, p.SkillPath, v)
		return reports.Load(dir)
	})
	plan := strings.Repeat("cd", 32)
	// start discovers and begins a sweep in dir, shard sh, without running it.
	start := func(dir string, sh Shard) (*Store, RunInfo) {
		skills, err := Discover(t.Context(), []string{archive, outside}, DiscoverOptions{ExtractDir: filepath.Join(dir, SourcesDir)})
		if err != nil {
			t.Fatal(err)
		}
		st, err := OpenStore(t.Context(), filepath.Join(dir, DBFile))
		if err != nil {
			t.Fatal(err)
		}
		var items []Item
		for _, s := range skills {
			if sh.Holds(s) {
				items = append(items, Item{Skill: s, Key: ResultKey(s.SHA256, plan, "sha256:img")})
			}
		}
		run := RunInfo{ID: "run-" + filepath.Base(dir), Started: time.Now(), Sources: []string{archive, outside}, PlanHash: plan, Image: "sha256:img", Shard: sh.String()}
		if _, err := st.Begin(t.Context(), run, items, BeginOptions{}); err != nil {
			t.Fatal(err)
		}
		return st, run
	}
	finish := func(st *Store, dir string, run RunInfo) {
		t.Helper()
		if err := Run(t.Context(), Options{Dir: dir, Store: st, RunID: run.ID, Tracer: tracer, Parallel: 1}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Outputs(t.Context(), st, run.ID, dir, time.Now()); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	// move renames a sweep folder, as when it is copied to another machine.
	move := func(from, to string) {
		t.Helper()
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
	}

	// Begun in one place, moved before any trace, resumed in the other.
	st, run := start(filepath.Join(root, "first"), Shard{})
	st.Close()
	moved := filepath.Join(root, "moved")
	move(filepath.Join(root, "first"), moved)
	st, err := OpenStore(t.Context(), filepath.Join(moved, DBFile))
	if err != nil {
		t.Fatal(err)
	}
	finish(st, moved, run)
	for _, p := range traced {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("traced a skill path that is not there: %v", err)
		}
		if strings.Contains(p, string(filepath.Separator)+"first"+string(filepath.Separator)) {
			t.Errorf("traced %s, inside the folder's old place", p)
		}
	}
	if len(traced) != 3 {
		t.Errorf("traced %d skills, want 3", len(traced))
	}
	for _, r := range readResults(t, moved) {
		archived := strings.HasPrefix(r.Skill.Source, archive+"!")
		switch {
		case archived && (filepath.IsAbs(r.Skill.Path) || !strings.HasPrefix(r.Skill.Path, SourcesDir+"/")):
			t.Errorf("%s: unpacked skill recorded as %q, want a path under %s/", r.Skill.ID, r.Skill.Path, SourcesDir)
		case !archived && r.Skill.Path != filepath.Join(outside, "evil-loose"):
			t.Errorf("%s: skill outside the folder recorded as %q, want its absolute path", r.Skill.ID, r.Skill.Path)
		}
	}

	// Exported after a second move: the unpacked skill's files are found.
	again := filepath.Join(root, "again")
	move(moved, again)
	got, err := Export(t.Context(), again, filepath.Join(root, "export"), ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range got {
		ids = append(ids, x.SkillID)
	}
	slices.Sort(ids)
	if want := []string{"loose/evil-loose", "pack/evil-zipped"}; !slices.Equal(ids, want) {
		t.Errorf("exported %v, want %v", ids, want)
	}

	// Shards swept apart, moved, merged: the merged folder holds the
	// unpacked skills its results name, and exports them.
	var shards []string
	for i := range 2 {
		dir := filepath.Join(root, "shard"+string(rune('0'+i)))
		st, run := start(dir, Shard{i, 2})
		finish(st, dir, run)
		to := filepath.Join(root, "elsewhere", filepath.Base(dir))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		move(dir, to)
		shards = append(shards, to)
	}
	merged := filepath.Join(root, "merged")
	if _, err := Merge(t.Context(), merged, shards, MergeOptions{RunID: "m"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range readResults(t, merged) {
		if _, err := os.Stat(HostPath(merged, r.Skill.Path)); err != nil {
			t.Errorf("%s: merged result names %q, not there: %v", r.Skill.ID, r.Skill.Path, err)
		}
	}
	got, err = Export(t.Context(), merged, filepath.Join(root, "export-merged"), ExportOptions{})
	if err != nil || len(got) != 2 {
		t.Errorf("export of the merged folder: %d exported, %v", len(got), err)
	}
}

func TestHostPath(t *testing.T) {
	for _, tc := range []struct{ name, dir, path, want string }{
		{"relative", "/srv/sw", "sources/ab/content/x", "/srv/sw/sources/ab/content/x"},
		{"absolute", "/srv/sw", "/skills/x", "/skills/x"},
		{"empty", "/srv/sw", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HostPath(tc.dir, tc.path); got != tc.want {
				t.Errorf("HostPath(%q, %q) = %q, want %q", tc.dir, tc.path, got, tc.want)
			}
		})
	}
	for _, tc := range []struct{ name, dir, path, want string }{
		{"inside", "/srv/sw", "/srv/sw/sources/ab/x", "sources/ab/x"},
		{"outside", "/srv/sw", "/srv/other/x", "/srv/other/x"},
		{"sibling prefix", "/srv/sw", "/srv/sw2/x", "/srv/sw2/x"},
		{"relative kept", "/srv/sw", "sources/x", "sources/x"},
	} {
		t.Run("rel "+tc.name, func(t *testing.T) {
			if got := relToDir(tc.dir, tc.path); got != tc.want {
				t.Errorf("relToDir(%q, %q) = %q, want %q", tc.dir, tc.path, got, tc.want)
			}
		})
	}
}
