package netcapture

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// Event log policy: the jail's events are evidence the skill must not be
// able to destroy, so they never go through a channel the skill can fill.
// The jail writes them to a file of its own (the skill's container cannot
// reach the jail's file system), within a byte budget the skill cannot
// make the host exceed: an event over the per-event budget is cut (its full
// bytes were spooled by the sink that made it, or the cut is counted), and
// past the log's budget events are counted, not written. The log ends with
// one end record stating how many events were written, their bytes, their
// SHA-256 and everything counted instead of written; the host reads the
// file after the jail stopped and compares (ReadLog). Only the jail's own
// notices (network set up, ready) also go to a status stream, for the
// host to follow live.

// maxPending bounds the encoded events waiting to be written: past it,
// Emit waits for the reader (the orchestrator) to catch up.
const maxPending = 32 << 20

// Default budgets of the event log.
const (
	// DefaultLogBudget is the most bytes of events one jail writes.
	DefaultLogBudget = 64 << 20
	// DefaultMaxEvent is the most bytes of one event line.
	DefaultMaxEvent = 512 << 10
)

// LogOptions configure an EventWriter. The zero value writes every event,
// each cut to DefaultMaxEvent, within DefaultLogBudget.
type LogOptions struct {
	// Budget is the most bytes of event lines written (0: DefaultLogBudget).
	Budget int64
	// MaxEvent is the most bytes of one line (0: DefaultMaxEvent).
	MaxEvent int
	// Status, when set, also receives the line of every jail_notice event,
	// written synchronously (the live stream the host follows for ready).
	Status io.Writer
}

// LogEnd is the end record of an event log: the last line, written as
// {"end": {...}} by EventWriter.Close.
type LogEnd struct {
	// Events and Bytes count the lines written before this one; SHA256 is
	// the hex digest of those bytes, newlines included.
	Events int64  `json:"events"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Budget is the log's byte budget. Dropped events were not written
	// because it was reached; DroppedBytes is their encoded size and
	// DroppedTypes their count by type.
	Budget       int64            `json:"budget"`
	Dropped      int64            `json:"dropped,omitempty"`
	DroppedBytes int64            `json:"dropped_bytes,omitempty"`
	DroppedTypes map[string]int64 `json:"dropped_types,omitempty"`
	// MaxEvent is the per-event budget. Cut events were shortened to it
	// without their full bytes kept elsewhere (CutBytes is what was
	// removed); events a sink summarised with the full bytes spooled are
	// counted in Spool instead.
	MaxEvent int   `json:"max_event"`
	Cut      int64 `json:"cut,omitempty"`
	CutBytes int64 `json:"cut_bytes,omitempty"`
	// Summarised counts requests whose URL or headers were over the
	// event's caps: the event holds them cut, the spool holds them whole.
	Summarised int64 `json:"summarised,omitempty"`
	// Spool accounts for the payload files kept for scanning.
	Spool SpoolStats `json:"spool"`
	// WriteError is the first error writing the log, if any (the host then
	// sees fewer lines than expected, or no end record at all).
	WriteError string `json:"write_error,omitempty"`
}

type logEndLine struct {
	End *LogEnd `json:"end"`
}

// EventWriter writes events as JSON lines, numbering them in Event.Seq from
// 1 with no gap, so a reader that sees a gap knows a line was lost. The
// timeline renumbers events later. Emit only encodes and queues: a
// goroutine that lives while lines are pending writes them in order, so a
// slow reader does not stall the sinks (up to maxPending). Close writes
// the end record. It is safe for concurrent use.
type EventWriter struct {
	mu      sync.Mutex
	cond    *sync.Cond
	w       io.Writer
	opts    LogOptions
	spool   *Spool
	seq     int64
	pending []byte
	writing bool // a drain goroutine is running
	closed  bool
	err     error
	now     func() time.Time

	digest  hash.Hash
	written int64 // bytes queued for writing (within the budget)
	byType  map[trace.Type]int64
	end     LogEnd
}

// overBudget reports whether a line of n bytes of type t is past the
// log's budget. The last quarter of the budget is kept for the types that
// have written less than a sixteenth of it: a flood of one kind (DNS
// queries, UDP datagrams, raw connections) fills three quarters and stops,
// and the request that decides (a plain POST of a secret after the flood)
// is still written. ew.mu is held.
func (ew *EventWriter) overBudget(t trace.Type, n int64) bool {
	b := ew.opts.Budget
	switch {
	case ew.written+n > b:
		return true
	case ew.written+n <= b-b/4:
		return false
	}
	return ew.byType[t]+n > b/16
}

// NewEventLog returns an EventWriter on w with opts; spool (nil: none) is
// the payload spool whose accounting the end record carries.
func NewEventLog(w io.Writer, opts LogOptions, spool *Spool) *EventWriter {
	if opts.Budget <= 0 {
		opts.Budget = DefaultLogBudget
	}
	if opts.MaxEvent <= 0 {
		opts.MaxEvent = DefaultMaxEvent
	}
	ew := &EventWriter{w: w, opts: opts, spool: spool, now: time.Now, digest: sha256.New()}
	ew.end.Budget, ew.end.MaxEvent = opts.Budget, opts.MaxEvent
	ew.cond = sync.NewCond(&ew.mu)
	return ew
}

// Emit queues e as one line with the next sequence number, setting its
// Time when it is zero. An event over the per-event budget is cut to it
// (see fitEvent); past the log's budget, or after Close or a write error,
// the event is counted and dropped.
func (ew *EventWriter) Emit(e trace.Event) {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	for len(ew.pending) > maxPending && ew.err == nil && !ew.closed {
		ew.cond.Wait()
	}
	if e.Time.IsZero() {
		e.Time = ew.now().UTC()
	}
	b, err := json.Marshal(e)
	if err == nil && len(b) >= ew.opts.MaxEvent {
		removed, spooled := fitEvent(&e, ew.opts.MaxEvent)
		if !spooled {
			ew.end.Cut++
			ew.end.CutBytes += removed
		}
		b, err = json.Marshal(e)
		if err == nil && len(b) >= ew.opts.MaxEvent {
			// No known field to cut: keep that it happened.
			b, err = json.Marshal(trace.Event{Time: e.Time, Source: e.Source, Type: trace.TypeJailNotice, Data: &trace.Notice{
				Message: fmt.Sprintf("a %s event of %d bytes was over the %d-byte per-event budget and was not kept", e.Type, len(b), ew.opts.MaxEvent),
				Lost:    1, Incomplete: true}})
		}
	}
	if err != nil {
		// Only an unmarshalable payload can get here; say so in the log
		// rather than leaving a gap.
		b, _ = json.Marshal(trace.Event{Time: e.Time, Source: e.Source, Type: trace.TypeJailNotice,
			Data: &trace.Notice{Message: fmt.Sprintf("encode %s event: %v", e.Type, err), Lost: 1, Incomplete: true}})
	}
	// The sequence number goes in front: every line starts {"seq":N, which
	// also tells event lines from the end record.
	line := appendSeq(ew.seq+1, b)
	if ew.closed || ew.err != nil || ew.overBudget(e.Type, int64(len(line))) {
		ew.end.Dropped++
		ew.end.DroppedBytes += int64(len(line))
		if ew.end.DroppedTypes == nil {
			ew.end.DroppedTypes = map[string]int64{}
		}
		if len(ew.end.DroppedTypes) < 64 {
			ew.end.DroppedTypes[string(e.Type)]++
		}
		return
	}
	if x, ok := e.Data.(*trace.HTTPExchange); ok && x.HeadersTruncated {
		ew.end.Summarised++
	}
	ew.seq++
	ew.written += int64(len(line))
	if ew.byType == nil {
		ew.byType = map[trace.Type]int64{}
	}
	ew.byType[e.Type] += int64(len(line))
	ew.digest.Write(line)
	ew.end.Events, ew.end.Bytes = ew.seq, ew.written
	if e.Type == trace.TypeJailNotice && ew.opts.Status != nil {
		_, _ = ew.opts.Status.Write(line) // live progress only; the log is the record
	}
	ew.queue(line)
}

// appendSeq returns b, the JSON of an event whose seq is 0 (omitted or
// first), with "seq":n in its place.
func appendSeq(n int64, b []byte) []byte {
	const zero = `{"seq":0,`
	out := make([]byte, 0, len(b)+24)
	out = append(out, `{"seq":`...)
	out = fmt.Appendf(out, "%d,", n)
	if len(b) >= len(zero) && string(b[:len(zero)]) == zero {
		out = append(out, b[len(zero):]...)
	} else {
		out = append(out, b[1:]...)
	}
	return append(out, '\n')
}

// queue appends a line for the drain goroutine. ew.mu is held.
func (ew *EventWriter) queue(line []byte) {
	ew.pending = append(ew.pending, line...)
	if !ew.writing {
		ew.writing = true
		go ew.drain()
	}
}

// drain writes pending lines until none are left, then ends.
func (ew *EventWriter) drain() {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	for len(ew.pending) > 0 && ew.err == nil {
		chunk := ew.pending
		ew.pending = nil
		ew.mu.Unlock()
		_, err := ew.w.Write(chunk)
		ew.mu.Lock()
		if err != nil {
			ew.err = fmt.Errorf("write events up to %d: %w", ew.seq, err)
		}
		ew.cond.Broadcast()
	}
	ew.pending = nil
	ew.writing = false
	ew.cond.Broadcast()
}

// Close writes every queued event and then the end record, and returns the
// first write error. Events emitted after Close are counted as dropped
// (they cannot be in the record any more). Close is idempotent.
func (ew *EventWriter) Close() error {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	for ew.writing {
		ew.cond.Wait()
	}
	if ew.closed {
		return ew.err
	}
	ew.closed = true
	ew.cond.Broadcast()
	end := ew.end
	end.SHA256 = hex.EncodeToString(ew.digest.Sum(nil))
	if ew.spool != nil {
		end.Spool = ew.spool.Stats()
	}
	if ew.err != nil {
		end.WriteError = ew.err.Error()
	}
	b, err := json.Marshal(logEndLine{End: &end})
	if err != nil {
		return fmt.Errorf("encode end of event log: %w", err)
	}
	b = append(b, '\n')
	if _, err := ew.w.Write(b); err != nil && ew.err == nil {
		ew.err = fmt.Errorf("write end of event log: %w", err)
	}
	if f, ok := ew.w.(interface{ Sync() error }); ok && ew.err == nil {
		if err := f.Sync(); err != nil {
			ew.err = fmt.Errorf("sync event log: %w", err)
		}
	}
	if ew.opts.Status != nil {
		// Tells the host following the status stream that the log is
		// complete and can be read.
		_, _ = ew.opts.Status.Write(b)
	}
	return ew.err
}
