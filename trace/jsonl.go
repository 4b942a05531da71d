package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Limits bound what ReadJSONL accepts: events.jsonl files are untrusted
// (they may come from a run folder someone else wrote).
type Limits struct {
	MaxLine   int // bytes per line; 0: DefaultMaxLine
	MaxEvents int // events per file; 0: DefaultMaxEvents
}

// Default limits of ReadJSONL.
const (
	DefaultMaxLine   = 4 << 20
	DefaultMaxEvents = 2_000_000
)

// ErrTooLarge is returned when an events file passes a Limit.
var ErrTooLarge = errors.New("events file over limit")

// WriteJSONL writes one event per line.
func WriteJSONL(w io.Writer, events []Event) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range events {
		if err := enc.Encode(&events[i]); err != nil {
			return fmt.Errorf("write event %d: %w", events[i].Seq, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write events: %w", err)
	}
	return nil
}

// ReadJSONL reads events written by WriteJSONL. Blank lines are skipped. A
// line that does not decode is an error naming its line number; so is a
// line or an event count over the limits (wrapping ErrTooLarge).
func ReadJSONL(r io.Reader, lim Limits) ([]Event, error) {
	if lim.MaxLine <= 0 {
		lim.MaxLine = DefaultMaxLine
	}
	if lim.MaxEvents <= 0 {
		lim.MaxEvents = DefaultMaxEvents
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, min(64<<10, lim.MaxLine)), lim.MaxLine)
	var out []Event
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if len(out) >= lim.MaxEvents {
			return out, fmt.Errorf("read events line %d: more than %d events: %w", line, lim.MaxEvents, ErrTooLarge)
		}
		var e Event
		if err := json.Unmarshal(b, &e); err != nil {
			return out, fmt.Errorf("read events line %d: %w", line, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return out, fmt.Errorf("read events line %d: line over %d bytes: %w", line+1, lim.MaxLine, ErrTooLarge)
		}
		return out, fmt.Errorf("read events: %w", err)
	}
	return out, nil
}
