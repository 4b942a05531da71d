package reports_test

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/trace"
)

// treeSums is every file under root with its digest: what a refused
// reprocess must leave as it was.
func treeSums(t *testing.T, root string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			out[p] = sha256.Sum256(b)
		} else if d.Type()&fs.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			out[p] = sha256.Sum256([]byte("link:" + l))
		}
		return nil
	})
	return out
}

// editJSON rewrites the run folder's report.json through edit.
func editJSON(t *testing.T, dir string, edit func(m map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, reports.FileJSON)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, _ = json.Marshal(m)
	os.WriteFile(p, b, 0o644)
}

// TestReprocessTamperedRunFolders: report --reprocess reads a run folder
// anyone may have edited. Each tampering is refused with an error that
// names what is wrong, writes nothing (the folder and its neighbours are
// as they were), and reads nothing outside the folder.
func TestReprocessTamperedRunFolders(t *testing.T) {
	twoPass := func(m map[string]any, dir string) {
		m["passes"] = []map[string]any{{"name": "watched", "tracer": "strace", "trace_id": "w", "status": "completed", "verdict": "clean", "finding_count": 0},
			{"name": "unwatched", "tracer": "none", "trace_id": "u", "dir": dir, "status": "completed", "verdict": "clean", "finding_count": 0}}
	}
	cases := []struct {
		name   string
		tamper func(t *testing.T, dir, outside string)
		lim    trace.Limits
		want   string
	}{
		{"no report.json", func(t *testing.T, dir, _ string) { os.Remove(filepath.Join(dir, reports.FileJSON)) }, trace.Limits{}, "load report"},
		{"report.json not JSON", func(t *testing.T, dir, _ string) {
			os.WriteFile(filepath.Join(dir, reports.FileJSON), []byte("{\"verdict\": "), 0o644)
		}, trace.Limits{}, "unexpected end of JSON"},
		{"not a sandboxctl report", func(t *testing.T, dir, _ string) {
			os.WriteFile(filepath.Join(dir, reports.FileJSON), []byte(`{"verdict": "clean"}`), 0o644)
		}, trace.Limits{}, "no schema_version"},
		{"rules-input.json corrupt", func(t *testing.T, dir, _ string) {
			os.WriteFile(filepath.Join(dir, reports.FileRulesInput), []byte("[1, 2"), 0o600)
		}, trace.Limits{}, reports.FileRulesInput},
		{"no events", func(t *testing.T, dir, _ string) { os.Remove(filepath.Join(dir, reports.FileEvents)) }, trace.Limits{}, "reprocess"},
		{"an event line not JSON", func(t *testing.T, dir, _ string) {
			f, _ := os.OpenFile(filepath.Join(dir, reports.FileEvents), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("{\"seq\": 99999, \"type\": \n")
			f.Close()
		}, trace.Limits{}, "read events line"},
		{"an event line over the limit", func(t *testing.T, dir, _ string) {
			f, _ := os.OpenFile(filepath.Join(dir, reports.FileEvents), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(`{"seq": 99999, "type": "dns_query", "source": "dns", "data": {"name": "` + strings.Repeat("a", 8<<10) + `"}}` + "\n")
			f.Close()
		}, trace.Limits{MaxLine: 4 << 10}, "line over 4096 bytes"},
		{"more events than the limit", func(t *testing.T, dir, _ string) {}, trace.Limits{MaxEvents: 3}, "more than 3 events"},
		{"unwatched pass folder leaving the run folder", func(t *testing.T, dir, _ string) {
			editJSON(t, dir, func(m map[string]any) { twoPass(m, "../neighbour") })
		}, trace.Limits{}, "unwatched pass folder"},
		{"unwatched pass folder absolute", func(t *testing.T, dir, outside string) {
			editJSON(t, dir, func(m map[string]any) { twoPass(m, outside) })
		}, trace.Limits{}, "unwatched pass folder"},
		{"unwatched pass folder a link outside", func(t *testing.T, dir, outside string) {
			os.Symlink(outside, filepath.Join(dir, "unwatched"))
			editJSON(t, dir, func(m map[string]any) { twoPass(m, "unwatched") })
		}, trace.Limits{}, "is a link"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "run")
			// A neighbour: another run folder, a valid one, that a tampered
			// folder may point at.
			outside := filepath.Join(root, "neighbour")
			r := fixture(t, "canary-exfil")
			if err := reports.WriteRunDir(dir, r, []byte("{}\n")); err != nil {
				t.Fatal(err)
			}
			if err := reports.WriteRunDir(outside, fixture(t, "clean"), nil); err != nil {
				t.Fatal(err)
			}
			c.tamper(t, dir, outside)
			before := treeSums(t, root)
			got, err := reports.Reprocess(dir, reports.ReprocessOptions{Limits: c.lim})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("reprocess: %v (report %v), want an error with %q", err, got != nil, c.want)
			}
			if strings.Contains(err.Error(), "\n") && len(err.Error()) > 2000 {
				t.Errorf("error of %d bytes", len(err.Error()))
			}
			after := treeSums(t, root)
			if len(before) != len(after) {
				t.Fatalf("files changed: %d before, %d after", len(before), len(after))
			}
			for p, s := range before {
				if after[p] != s {
					t.Errorf("%s changed", p)
				}
			}
			if errors.Is(err, os.ErrNotExist) && c.want != "load report" && c.want != "reprocess" {
				t.Errorf("a missing file where the case expects a refusal: %v", err)
			}
		})
	}
}
