package netcapture

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// maxPending bounds the encoded events waiting to be written: past it,
// Emit waits for the reader (the orchestrator) to catch up.
const maxPending = 32 << 20

// EventWriter writes events as JSON lines, numbering them in Event.Seq from
// 1 with no gap, so a reader that sees a gap knows a line was lost. The
// timeline renumbers events later. Emit only encodes and queues: a
// goroutine that lives while lines are pending writes them in order, so a
// slow reader does not stall the sinks (up to maxPending). Call Flush
// before the end. It is safe for concurrent use.
type EventWriter struct {
	mu      sync.Mutex
	cond    *sync.Cond
	w       io.Writer
	seq     int64
	pending []byte
	writing bool // a drain goroutine is running
	err     error
	now     func() time.Time
}

// NewEventWriter returns an EventWriter on w.
func NewEventWriter(w io.Writer) *EventWriter {
	ew := &EventWriter{w: w, now: time.Now}
	ew.cond = sync.NewCond(&ew.mu)
	return ew
}

// Emit queues e as one line with the next sequence number, setting its
// Time when it is zero. After a write error, events are dropped (see Err).
func (ew *EventWriter) Emit(e trace.Event) {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	for len(ew.pending) > maxPending && ew.err == nil {
		ew.cond.Wait()
	}
	if ew.err != nil {
		return
	}
	ew.seq++
	e.Seq = ew.seq
	if e.Time.IsZero() {
		e.Time = ew.now().UTC()
	}
	b, err := json.Marshal(e)
	if err != nil {
		// Only an unmarshalable payload can get here; say so in the stream
		// rather than leaving a gap.
		b, _ = json.Marshal(trace.Event{Seq: e.Seq, Time: e.Time, Source: e.Source, Type: trace.TypeJailNotice,
			Data: &trace.Notice{Message: fmt.Sprintf("encode %s event: %v", e.Type, err), Lost: 1}})
	}
	ew.pending = append(append(ew.pending, b...), '\n')
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

// Flush waits until every queued event is written, and returns the first
// write error.
func (ew *EventWriter) Flush() error {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	for ew.writing {
		ew.cond.Wait()
	}
	return ew.err
}

// Err returns the first write error.
func (ew *EventWriter) Err() error {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	return ew.err
}

// Seq returns the sequence number of the last event queued.
func (ew *EventWriter) Seq() int64 {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	return ew.seq
}
