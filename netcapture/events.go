package netcapture

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// EventWriter writes events as JSON lines, numbering them in Event.Seq from
// 1 with no gap, so a reader that sees a gap knows a line was lost. The
// timeline renumbers events later. It is safe for concurrent use.
type EventWriter struct {
	mu  sync.Mutex
	w   io.Writer
	seq int64
	err error
	now func() time.Time
}

// NewEventWriter returns an EventWriter on w.
func NewEventWriter(w io.Writer) *EventWriter {
	return &EventWriter{w: w, now: time.Now}
}

// Emit writes e as one line with the next sequence number, setting its
// Time when it is zero. A write error is kept (see Err) and later events
// are dropped.
func (ew *EventWriter) Emit(e trace.Event) {
	ew.mu.Lock()
	defer ew.mu.Unlock()
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
	b = append(b, '\n')
	if _, err := ew.w.Write(b); err != nil {
		ew.err = fmt.Errorf("write event %d: %w", e.Seq, err)
	}
}

// Err returns the first write error.
func (ew *EventWriter) Err() error {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	return ew.err
}

// Seq returns the sequence number of the last event written.
func (ew *EventWriter) Seq() int64 {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	return ew.seq
}
