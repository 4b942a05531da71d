// Package capbuf is the one capped buffer of sandboxctl: it keeps the first
// bytes written to it up to a cap, counts every byte, and is safe for
// concurrent use, so a reader may quote what a process wrote while the
// process still writes (an exec's stderr in an error message).
//
// It is a leaf: it imports nothing of sandboxctl, never blocks a writer and
// never fails a write (what is over the cap is counted and dropped, so a
// process writing more than the cap is never stopped by a short write).
package capbuf

import "sync"

// A Buffer keeps the first Max bytes written to it. The zero value keeps
// nothing and counts; use New.
type Buffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int64
}

// New returns a Buffer that keeps the first max bytes.
func New(max int) *Buffer { return &Buffer{max: max} }

// Write keeps what fits under the cap and reports all of p written.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	if room := b.max - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// String returns what was kept so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// Snapshot returns a copy of what was kept and the count of every byte
// written, cap or not.
func (b *Buffer) Snapshot() (kept []byte, total int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf...), b.total
}
