package netcapture

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Spool policy: what a skill sends past what one event holds (a large
// body, headers over the per-event budget, a raw flow past its first
// bytes) is written whole to a file of its own in the jail, within a
// per-file cap and a per-trace disk budget, so the host can scan every
// byte for planted tokens. Bytes past a cap are counted, never silently
// lost: a spool file that was cut says so, and the log's end record
// carries the totals. Writes never fail the sink: a disk error counts the
// bytes as dropped.

// Default spool caps.
const (
	DefaultSpoolBudget  = 256 << 20
	DefaultSpoolFileCap = 32 << 20
)

// SpoolStats accounts for a spool.
type SpoolStats struct {
	Dir     string `json:"dir,omitempty"`
	Budget  int64  `json:"budget"`
	FileCap int64  `json:"file_cap"`
	Files   int64  `json:"files"`
	Bytes   int64  `json:"bytes"` // kept
	// DroppedBytes were not kept (a file's cap, the budget, or a disk
	// error), in TruncatedFiles files.
	DroppedBytes   int64  `json:"dropped_bytes,omitempty"`
	TruncatedFiles int64  `json:"truncated_files,omitempty"`
	Error          string `json:"error,omitempty"`
}

// A Spool keeps payloads as files in one folder. A Spool with no folder
// keeps nothing and counts every byte offered as dropped. It is safe for
// concurrent use.
type Spool struct {
	dir string
	mu  sync.Mutex
	st  SpoolStats
	n   int64
}

// NewSpool returns a spool writing to dir (created 0700; "" keeps
// nothing), within budget bytes in all and fileCap per file (0: the
// defaults).
func NewSpool(dir string, budget, fileCap int64) (*Spool, error) {
	if budget <= 0 {
		budget = DefaultSpoolBudget
	}
	if fileCap <= 0 {
		fileCap = DefaultSpoolFileCap
	}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
	}
	return &Spool{dir: dir, st: SpoolStats{Dir: dir, Budget: budget, FileCap: fileCap}}, nil
}

// Stats returns the spool's accounting so far.
func (s *Spool) Stats() SpoolStats {
	if s == nil {
		return SpoolStats{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// Create starts a spool file named after a new number and ext ("http",
// "tcp", "ws"). It never fails: without a folder, or on a disk error, the
// file keeps nothing and counts what it is given.
func (s *Spool) Create(ext string) *SpoolFile {
	f := &SpoolFile{s: s}
	if s == nil {
		return f
	}
	s.mu.Lock()
	s.n++
	f.name = fmt.Sprintf("%06d.%s", s.n, ext)
	dir := s.dir
	s.mu.Unlock()
	if dir == "" {
		return f
	}
	fh, err := os.OpenFile(filepath.Join(dir, f.name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		s.fail(err)
		return f
	}
	f.f = fh
	s.mu.Lock()
	s.st.Files++
	s.mu.Unlock()
	return f
}

func (s *Spool) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.Error == "" {
		s.st.Error = err.Error()
	}
}

// reserve grants up to n bytes of the budget to a file holding have.
func (s *Spool) reserve(have, n int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n = min(n, s.st.FileCap-have, s.st.Budget-s.st.Bytes)
	n = max(n, 0)
	s.st.Bytes += n
	return n
}

func (s *Spool) account(dropped int64, truncated bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.DroppedBytes += dropped
	if truncated {
		s.st.TruncatedFiles++
	}
}

// A SpoolFile is one payload being spooled. It is not safe for concurrent
// use.
type SpoolFile struct {
	s       *Spool
	f       *os.File
	name    string
	kept    int64
	dropped int64
	closed  bool
}

// Write keeps what fits in p and counts the rest; it never returns an
// error, so a sink can tee into it.
func (f *SpoolFile) Write(p []byte) (int, error) {
	if f.closed || len(p) == 0 {
		return len(p), nil
	}
	if f.f == nil {
		f.dropped += int64(len(p))
		return len(p), nil
	}
	n := f.s.reserve(f.kept, int64(len(p)))
	if n > 0 {
		w, err := f.f.Write(p[:n])
		f.kept += int64(w)
		if err != nil {
			f.s.fail(err)
			f.f.Close()
			f.f = nil
			f.s.mu.Lock()
			f.s.st.Bytes -= n - int64(w)
			f.s.mu.Unlock()
			n = int64(w)
		}
	}
	f.dropped += int64(len(p)) - n
	return len(p), nil
}

// Close ends the file and returns its name in the spool ("" when it kept
// nothing) and whether bytes were dropped.
func (f *SpoolFile) Close() (name string, truncated bool) {
	if f.closed {
		return f.result()
	}
	f.closed = true
	if f.f != nil {
		if err := f.f.Close(); err != nil {
			f.s.fail(err)
		}
		f.f = nil
	}
	if f.s != nil {
		f.s.account(f.dropped, f.dropped > 0)
	}
	return f.result()
}

func (f *SpoolFile) result() (string, bool) {
	if f.kept == 0 {
		return "", f.dropped > 0
	}
	return f.name, f.dropped > 0
}

// Size returns the bytes written so far, kept or not.
func (f *SpoolFile) Size() int64 { return f.kept + f.dropped }
