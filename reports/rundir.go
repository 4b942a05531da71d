package reports

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/fingerprint"
	"github.com/sandboxctl/sandboxctl/internal/fsutil"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/safetext"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Schema is the JSON Schema of report.json.
//
//go:embed schema/report.schema.json
var Schema []byte

// Names of the files of a run folder.
const (
	FileJSON       = "report.json"
	FileSARIF      = "report.sarif"
	FileText       = "report.txt"
	FileHTML       = "report.html"
	FileEvents     = "events.jsonl"
	FileTranscript = "transcript.jsonl"
	// FileRulesInput holds the canary set (with values) and the marker
	// token, so that Reprocess sees what the run saw. Mode 0600.
	FileRulesInput = "rules-input.json"
)

// MaxReportSize caps how much of report.json Load reads.
const MaxReportSize = 1 << 30

// WriteJSON writes the report as indented JSON. Characters a terminal or
// viewer would obey (DEL, C1 controls, bidi and invisible format
// characters) are written as \u escapes: the same values, nothing raw.
func WriteJSON(w io.Writer, r *Report) error {
	sw := safetext.NewJSONWriter(w)
	enc := json.NewEncoder(sw)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write report json: %w", err)
	}
	if err := sw.Flush(); err != nil {
		return fmt.Errorf("write report json: %w", err)
	}
	return nil
}

// writeEvents writes events.jsonl with the same escaping as WriteJSON.
func writeEvents(w io.Writer, events []trace.Event) error {
	sw := safetext.NewJSONWriter(w)
	if err := trace.WriteJSONL(sw, events); err != nil {
		return err
	}
	return sw.Flush()
}

// WriteRunDir writes the run folder: report.json, report.sarif, report.txt,
// report.html, events.jsonl (the raw timeline; a loaded report keeps the
// folder's own), rules-input.json and, when transcript is not nil,
// transcript.jsonl. It creates dir if needed, writes
// each file through a temporary name, and keeps going after a failure so
// that as much as possible is written; the error joins every failure.
func WriteRunDir(dir string, r *Report, transcript []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write run folder: %w", err)
	}
	var errs []error
	put := func(name string, mode os.FileMode, render func(io.Writer) error) {
		var buf bytes.Buffer
		if err := render(&buf); err != nil {
			errs = append(errs, fmt.Errorf("render %s: %w", name, err))
			return
		}
		if err := writeFile(filepath.Join(dir, name), buf.Bytes(), mode); err != nil {
			errs = append(errs, err)
		}
	}
	put(FileJSON, 0o644, func(w io.Writer) error { return WriteJSON(w, r) })
	put(FileSARIF, 0o644, func(w io.Writer) error { return WriteSARIF(w, r) })
	put(FileText, 0o644, func(w io.Writer) error { return WriteText(w, r, TextOptions{Verbose: true}) })
	put(FileHTML, 0o644, func(w io.Writer) error { return WriteHTML(w, r) })
	// A report from Load has no raw timeline: its events are redacted, and
	// the folder's events.jsonl (the raw record) is left as it is.
	if r.raw != nil {
		put(FileEvents, 0o600, func(w io.Writer) error { return writeEvents(w, r.raw) })
	} else if _, err := os.Stat(filepath.Join(dir, FileEvents)); errors.Is(err, os.ErrNotExist) {
		put(FileEvents, 0o600, func(w io.Writer) error { return writeEvents(w, r.Events) })
	}
	if r.secrets != nil {
		put(FileRulesInput, 0o600, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(r.secrets)
		})
	}
	if transcript != nil {
		// JSON lines holding what the tools printed: escaped like the rest.
		put(FileTranscript, 0o600, func(w io.Writer) error { _, err := w.Write(safetext.JSON(transcript)); return err })
	}
	return errors.Join(errs...)
}

func writeFile(path string, b []byte, mode os.FileMode) error {
	return fsutil.WriteAtomic(path, mode, func(w io.Writer) error { _, err := w.Write(b); return err })
}

// Load reads a run folder's report.json, and rules-input.json when present.
// The folder is untrusted: sizes are capped.
func Load(dir string) (*Report, error) {
	b, err := readCapped(filepath.Join(dir, FileJSON), MaxReportSize)
	if err != nil {
		return nil, fmt.Errorf("load report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("load report %s: %w", filepath.Join(dir, FileJSON), err)
	}
	if r.SchemaVersion == "" {
		return nil, fmt.Errorf("load report %s: no schema_version: not a sandboxctl report", filepath.Join(dir, FileJSON))
	}
	sb, err := readCapped(filepath.Join(dir, FileRulesInput), 64<<20)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("load report: %w", err)
	default:
		s := &Secrets{Canaries: canary.NewSet()}
		if err := json.Unmarshal(sb, s); err != nil {
			return nil, fmt.Errorf("load report %s: %w", filepath.Join(dir, FileRulesInput), err)
		}
		r.secrets = s
	}
	if r.Incidents == nil {
		// a report written before incidents (schema 1.0)
		r.Incidents = Incidents(&r)
		r.Summary.IncidentCount = len(r.Incidents)
		r.Narrative = Narrative(&r, r.Incidents)
	}
	return &r, nil
}

func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("read %s: over %d bytes", path, limit)
	}
	return b, nil
}

// ReprocessOptions tune Reprocess.
type ReprocessOptions struct {
	Options
	// Canaries replaces the stored canary set when not nil.
	Canaries *canary.Set
	// Limits bound the events file (untrusted).
	Limits trace.Limits
}

// Reprocess reruns the rules on a run folder's stored events (events.jsonl)
// without running anything, and returns the rebuilt report. With the same
// rules, it gives the same findings as the run.
func Reprocess(dir string, opt ReprocessOptions) (*Report, error) {
	r, err := Load(dir)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, FileEvents))
	if err != nil {
		return nil, fmt.Errorf("reprocess: %w", err)
	}
	defer f.Close()
	events, err := trace.ReadJSONL(f, opt.Limits)
	if err != nil {
		return nil, fmt.Errorf("reprocess %s: %w", dir, err)
	}
	m := r.Meta()
	if opt.Canaries != nil {
		m.Canaries = opt.Canaries
	}
	in := m.Input(events)
	in.Extra = opt.Extra
	if r.Fingerprint != nil {
		// The anomalies were decided against the store when the trace
		// ran: they are kept as they were.
		in.Extra = fingerprint.Chain(opt.Extra, fingerprint.Recorded(r.Fingerprint.Anomalies))
	}
	out, err := reprocessPasses(dir, Build(m, rules.Evaluate(in), opt.Options), r, opt)
	if err == nil {
		out, err = reprocessTwins(dir, out, r, opt)
	}
	if out != nil {
		out.Fingerprint = r.Fingerprint
	}
	return out, err
}

// Meta recovers the meta data a report was built from (the canary set and
// marker token only when the report was loaded with its rules-input.json).
func (r *Report) Meta() Meta {
	m := Meta{TraceID: r.TraceID, Version: r.Generator.Version, Skill: skillFromInfo(r.Skill), Driver: r.Driver,
		Prompt: r.Prompt, StartedAt: r.StartedAt, Duration: time.Duration(r.DurationMS) * time.Millisecond,
		Status: r.Status, Error: r.Error, Sandbox: r.Sandbox, SkillDir: r.Analysis.SkillDir, Home: r.Analysis.Home,
		MarkerPath: r.Analysis.MarkerPath, AllowedTools: r.Analysis.AllowedTools, Repos: r.Analysis.Repos,
		Buckets: r.Analysis.Buckets}
	if r.secrets != nil {
		m.Canaries, m.MarkerToken = r.secrets.Canaries, r.secrets.MarkerToken
	}
	return m
}
