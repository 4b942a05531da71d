package netcapture

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// LogCheck is what ReadLog found in an event log, compared with the end
// record the jail wrote.
type LogCheck struct {
	// Lines counts event lines read (end record excluded), Bytes their
	// size and SHA256 their digest, computed the same way as the jail's.
	Lines  int64  `json:"lines"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Unreadable lines did not decode (or were over the reader's line cap);
	// Missing sequence numbers were never seen; AfterEnd lines followed
	// the end record.
	Unreadable int64 `json:"unreadable,omitempty"`
	Missing    int64 `json:"missing,omitempty"`
	AfterEnd   int64 `json:"after_end,omitempty"`
	// End is the jail's end record; nil when the log has none (its tail
	// is lost, or the jail never closed it).
	End *LogEnd `json:"end,omitempty"`
}

// ReadLog reads an event log written by EventWriter, calls fn for each
// event in order, and checks the whole against the end record. Lines over
// maxLine bytes (0: 4×DefaultMaxEvent) count as unreadable. The log is
// untrusted input as far as parsing goes: nothing in it can make ReadLog
// hold more than one line. The error is non-nil only when r fails.
func ReadLog(r io.Reader, maxLine int, fn func(trace.Event)) (LogCheck, error) {
	if maxLine <= 0 {
		maxLine = 4 * DefaultMaxEvent
	}
	var c LogCheck
	h := sha256.New()
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	long := false
	var last int64
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if len(line)+len(chunk) > maxLine {
				long, line = true, line[:0]
			} else if !long {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			if c.End == nil {
				h.Write(chunk)
				c.Bytes += int64(len(chunk))
			}
			continue
		}
		complete := len(chunk) > 0 && chunk[len(chunk)-1] == '\n'
		if len(chunk) > 0 || len(line) > 0 || long {
			if c.End != nil {
				c.AfterEnd++
			} else if end, ok := endRecord(line); ok && !long && complete {
				c.End = end
			} else {
				h.Write(chunk)
				c.Bytes += int64(len(chunk))
				c.Lines++
				var e trace.Event
				switch {
				case long || !complete:
					// A line cut short (the log's tail was lost mid-line)
					// is unreadable too.
					c.Unreadable++
				case json.Unmarshal(line, &e) != nil || e.Seq <= 0:
					c.Unreadable++
				default:
					if e.Seq > last+1 {
						c.Missing += e.Seq - last - 1
					}
					last = max(last, e.Seq)
					fn(e)
				}
			}
			line, long = line[:0], false
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			c.SHA256 = hex.EncodeToString(h.Sum(nil))
			return c, fmt.Errorf("read event log: %w", err)
		}
	}
	c.SHA256 = hex.EncodeToString(h.Sum(nil))
	if c.End != nil && c.End.Events > last {
		c.Missing += c.End.Events - last
	}
	return c, nil
}

// endRecord reports whether line is the end record, and decodes it.
func endRecord(line []byte) (*LogEnd, bool) {
	if !bytes.HasPrefix(line, []byte(`{"end":`)) {
		return nil, false
	}
	var l logEndLine
	if err := json.Unmarshal(line, &l); err != nil || l.End == nil {
		return nil, false
	}
	return l.End, true
}

// Problems says, in words, what of the log is known to be missing or
// changed; nil when the log is whole and nothing was dropped.
func (c LogCheck) Problems() []string {
	var p []string
	if c.End == nil {
		p = append(p, fmt.Sprintf("the jail's event log has no end record: its tail is lost (%d events read)", c.Lines))
	} else {
		if c.End.Events != c.Lines {
			p = append(p, fmt.Sprintf("the jail wrote %d events and %d arrived", c.End.Events, c.Lines))
		}
		if c.End.SHA256 != c.SHA256 || c.End.Bytes != c.Bytes {
			p = append(p, "the event log's digest does not match the jail's end record")
		}
		if c.End.WriteError != "" {
			p = append(p, "the jail could not write its event log: "+c.End.WriteError)
		}
	}
	if c.Unreadable > 0 {
		p = append(p, fmt.Sprintf("%d unreadable event lines", c.Unreadable))
	}
	if c.Missing > 0 {
		p = append(p, fmt.Sprintf("%d events missing from the sequence", c.Missing))
	}
	if c.AfterEnd > 0 {
		p = append(p, fmt.Sprintf("%d lines after the end record", c.AfterEnd))
	}
	return p
}

// Events turns the check into timeline events at time at: a notice marked
// Incomplete for every gap in the evidence, and a budget event for every
// budget of the jail the skill went past (with the notice too when bytes
// were dropped rather than spooled).
func (c LogCheck) Events(at time.Time) []trace.Event {
	var out []trace.Event
	notice := func(msg string, lost int64) {
		out = append(out, trace.Event{Time: at, Source: trace.SourceTCP, Type: trace.TypeJailNotice,
			Data: &trace.Notice{Message: msg, Lost: lost, Incomplete: true}})
	}
	budget := func(b trace.Budget) {
		out = append(out, trace.Event{Time: at, Source: trace.SourceTCP, Type: trace.TypeBudget, Data: &b})
	}
	if p := c.Problems(); len(p) > 0 {
		notice("network evidence incomplete: "+strings.Join(p, "; "), c.Missing+c.Unreadable)
	}
	e := c.End
	if e == nil {
		return out
	}
	if e.Dropped > 0 {
		types := make([]string, 0, len(e.DroppedTypes))
		for t, n := range e.DroppedTypes {
			types = append(types, fmt.Sprintf("%s %d", t, n))
		}
		slices.Sort(types)
		msg := fmt.Sprintf("the jail's event log reached its %d-byte budget: %d events (%d bytes) not kept (%s)",
			e.Budget, e.Dropped, e.DroppedBytes, strings.Join(types, ", "))
		budget(trace.Budget{Name: "jail_events", Limit: e.Budget, Used: e.Bytes + e.DroppedBytes, Dropped: e.DroppedBytes,
			Unit: "bytes", Message: msg})
		notice(msg, e.Dropped)
	}
	if e.Cut > 0 {
		msg := fmt.Sprintf("%d network events were over the %d-byte per-event budget and were cut without their full bytes kept (%d bytes not scanned)",
			e.Cut, e.MaxEvent, e.CutBytes)
		budget(trace.Budget{Name: "event_size", Limit: int64(e.MaxEvent), Used: e.CutBytes, Dropped: e.CutBytes, Unit: "bytes", Message: msg})
		notice(msg, 0)
	}
	if e.Summarised > 0 {
		budget(trace.Budget{Name: "request_head", Limit: maxHeadersInEvent, Used: e.Summarised, Summarised: e.Summarised, Unit: "requests",
			Message: fmt.Sprintf("%d requests had a URL or headers over the event's caps (%d bytes per value, %d in all): the events hold them cut, and they were scanned whole",
				e.Summarised, maxHeaderValue, maxHeadersInEvent)})
	}
	s := e.Spool
	if s.DroppedBytes > 0 {
		msg := fmt.Sprintf("payloads over the jail's caps (%d bytes per request, %d bytes per trace): %d bytes in %d payloads were not kept and not scanned",
			s.FileCap, s.Budget, s.DroppedBytes, s.TruncatedFiles)
		budget(trace.Budget{Name: "spool", Limit: s.Budget, Used: s.Bytes + s.DroppedBytes, Dropped: s.DroppedBytes, Unit: "bytes", Message: msg})
		notice(msg, 0)
	}
	if s.Error != "" {
		notice("the jail could not keep every payload for scanning: "+s.Error, 0)
	}
	return out
}
