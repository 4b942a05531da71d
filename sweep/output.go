package sweep

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/fsutil"
	"github.com/sandboxctl/sandboxctl/rules"
)

// Names of a sweep folder's files.
const (
	FileResults = "results.jsonl"
	FileSummary = "summary.json"
	FileDiff    = "diff.json"
	FileIndex   = "index.html"
)

// SchemaVersion is the version of summary.json and results.jsonl.
const SchemaVersion = "1.0"

// Summary is summary.json: a sweep's counts and its diff against the
// previous sweep of the same sources.
type Summary struct {
	SchemaVersion string  `json:"schema_version"`
	Run           RunInfo `json:"run"`
	// Complete is set when every skill has a result (done, failed or
	// refused): nothing is left to run.
	Complete   bool           `json:"complete"`
	DurationMS int64          `json:"duration_ms"`
	Total      int            `json:"total"`
	Done       int            `json:"done"`
	Failed     int            `json:"failed"`
	Refused    int            `json:"refused"`
	Pending    int            `json:"pending"`
	Cached     int            `json:"cached"`
	Traced     int            `json:"traced"`
	ByVerdict  map[string]int `json:"by_verdict"`
	Diff       *Diff          `json:"diff,omitempty"`
}

// Diff compares a sweep with the previous sweep of the same sources.
type Diff struct {
	Previous        string      `json:"previous"`
	PreviousStarted time.Time   `json:"previous_started"`
	NewMalicious    []DiffEntry `json:"new_malicious"`
	ChangedVerdicts []DiffEntry `json:"changed_verdicts"`
	ContentChanged  []DiffEntry `json:"content_changed"`
	Added           []string    `json:"added"`
	Removed         []string    `json:"removed"`
}

// DiffEntry is one skill that differs between two sweeps.
type DiffEntry struct {
	ID        string `json:"id"`
	Before    string `json:"before,omitempty"` // verdict, or status when not done
	After     string `json:"after,omitempty"`
	BeforeSHA string `json:"before_sha256,omitempty"`
	AfterSHA  string `json:"after_sha256,omitempty"`
}

// Summarize counts a run's results.
func Summarize(run RunInfo, res []Result, now time.Time) Summary {
	s := Summary{SchemaVersion: SchemaVersion, Run: run, Total: len(res), ByVerdict: map[string]int{}}
	for _, r := range res {
		switch r.Status {
		case StatusDone:
			s.Done++
			s.ByVerdict[r.Verdict]++
			if r.Cached {
				s.Cached++
			} else {
				s.Traced++
			}
		case StatusFailed:
			s.Failed++
		case StatusRefused:
			s.Refused++
		default:
			s.Pending++
		}
	}
	s.Complete = s.Pending == 0
	end := now
	if !run.Finished.IsZero() {
		end = run.Finished
	}
	s.DurationMS = end.Sub(run.Started).Milliseconds()
	return s
}

// verdictOf is what a result shows in a diff: its verdict, else its
// status.
func verdictOf(r Result) string {
	if r.Status == StatusDone {
		return r.Verdict
	}
	return r.Status
}

// Compare diffs cur against prev, matching skills by ID.
func Compare(prevRun RunInfo, prev, cur []Result) *Diff {
	d := &Diff{Previous: prevRun.ID, PreviousStarted: prevRun.Started,
		NewMalicious: []DiffEntry{}, ChangedVerdicts: []DiffEntry{}, ContentChanged: []DiffEntry{}, Added: []string{}, Removed: []string{}}
	before := map[string]Result{}
	for _, r := range prev {
		before[r.Skill.ID] = r
	}
	seen := map[string]bool{}
	for _, r := range cur {
		seen[r.Skill.ID] = true
		b, ok := before[r.Skill.ID]
		e := DiffEntry{ID: r.Skill.ID, After: verdictOf(r), AfterSHA: r.Skill.SHA256}
		if !ok {
			d.Added = append(d.Added, r.Skill.ID)
			if r.Verdict == string(rules.Malicious) && r.Status == StatusDone {
				d.NewMalicious = append(d.NewMalicious, e)
			}
			continue
		}
		e.Before, e.BeforeSHA = verdictOf(b), b.Skill.SHA256
		if e.BeforeSHA != e.AfterSHA {
			d.ContentChanged = append(d.ContentChanged, e)
		}
		if e.Before != e.After {
			d.ChangedVerdicts = append(d.ChangedVerdicts, e)
			if e.After == string(rules.Malicious) {
				d.NewMalicious = append(d.NewMalicious, e)
			}
		}
	}
	for _, r := range prev {
		if !seen[r.Skill.ID] {
			d.Removed = append(d.Removed, r.Skill.ID)
		}
	}
	return d
}

// Outputs reads a run's results from the store and writes the sweep
// folder's results.jsonl, summary.json, diff.json (when a previous sweep
// of the same sources exists) and index.html, each atomically. When no
// item is left to run, the run is marked finished first.
func Outputs(ctx context.Context, st *Store, runID, dir string, now time.Time) (Summary, []Result, error) {
	res, err := st.Results(ctx, runID)
	if err != nil {
		return Summary{}, nil, err
	}
	runs, err := st.Runs(ctx)
	if err != nil {
		return Summary{}, nil, err
	}
	var run RunInfo
	for _, r := range runs {
		if r.ID == runID {
			run = r
		}
	}
	if run.ID == "" {
		return Summary{}, nil, fmt.Errorf("outputs: no run %s", runID)
	}
	sum := Summarize(run, res, now)
	if sum.Complete && run.Finished.IsZero() {
		if err := st.MarkFinished(ctx, runID, now); err != nil {
			return Summary{}, nil, err
		}
		run.Finished = now.UTC()
		sum = Summarize(run, res, now)
	}
	prev, err := st.Previous(ctx, run)
	if err != nil {
		return Summary{}, nil, err
	}
	if prev != nil {
		pres, err := st.Results(ctx, prev.ID)
		if err != nil {
			return Summary{}, nil, err
		}
		sum.Diff = Compare(*prev, pres, res)
	}
	if err := writeAtomic(filepath.Join(dir, FileResults), func(w io.Writer) error { return WriteResults(w, res) }); err != nil {
		return sum, res, err
	}
	if err := writeAtomic(filepath.Join(dir, FileSummary), func(w io.Writer) error { return writeJSON(w, sum) }); err != nil {
		return sum, res, err
	}
	if sum.Diff != nil {
		if err := writeAtomic(filepath.Join(dir, FileDiff), func(w io.Writer) error { return writeJSON(w, sum.Diff) }); err != nil {
			return sum, res, err
		}
	}
	if err := writeAtomic(filepath.Join(dir, FileIndex), func(w io.Writer) error { return WriteIndex(w, sum, res) }); err != nil {
		return sum, res, err
	}
	return sum, res, nil
}

// WriteResults writes one JSON line per result.
func WriteResults(w io.Writer, res []Result) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, r := range res {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadResults reads results.jsonl (untrusted: lines are capped).
func ReadResults(r io.Reader) ([]Result, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var out []Result
	n := 0
	for sc.Scan() {
		n++
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var res Result
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
			return nil, fmt.Errorf("results line %d: %w", n, err)
		}
		out = append(out, res)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	return out, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeAtomic writes path whole or not at all.
func writeAtomic(path string, write func(io.Writer) error) error {
	return fsutil.WriteAtomic(path, 0o644, write)
}

//go:embed index.html.tmpl
var indexTmpl string

var indexTemplate = template.Must(template.New("index").Funcs(template.FuncMap{
	"seconds": func(ms int64) string { return fmt.Sprintf("%.1f", float64(ms)/1000) },
	"join":    strings.Join,
	"report": func(r Result) string {
		if r.RunDir == "" {
			return ""
		}
		return filepath.ToSlash(filepath.Join(r.RunDir, "report.html"))
	},
	"rank": func(v string) int {
		return slices.Index([]string{"malicious", "suspicious", "inconclusive", "clean", "failed", "refused", "pending"}, v)
	},
	"verdict": verdictOf,
	"verdicts": func(m map[string]int) []string {
		ks := make([]string, 0, len(m))
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	},
}).Parse(indexTmpl))

// WriteIndex writes the sweep's HTML index page: one self-contained file
// (no external asset), with a table sortable by any column and a link to
// each run folder's report.html. Every string from a skill is escaped.
func WriteIndex(w io.Writer, sum Summary, res []Result) error {
	return indexTemplate.Execute(w, struct {
		Summary Summary
		Results []Result
	}{sum, res})
}
