package netcapture

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/sandboxctl/sandboxctl/trace"
)

// Per-event budget policy: an event holds a bounded summary of what the
// skill sent, never an unbounded copy. The sinks cut what can be large to
// the caps below and spool the whole (see Spool), so the summary is for
// people and rules, and the spool is for canary scanning. fitEvent is the
// last resort of the EventWriter for an event still over its budget: it
// cuts harder, and says so in the event.

// Caps of the parts of an HTTP request kept in its event.
const (
	maxURLInEvent     = 8 << 10  // the URL
	maxHeaderValue    = 4 << 10  // one header value
	maxHeadersInEvent = 64 << 10 // all header names and values
	maxHeaderCount    = 256      // header values kept
)

// cutNote replaces what was cut off a string: "…[N bytes]" with the real
// size, so a reader sees that the value went on.
func cutNote(s string, keep int) string {
	if len(s) <= keep {
		return s
	}
	cut := keep
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…[%d bytes]", len(s))
}

// trimHeaders cuts h to the event's caps. It returns the header set to put
// in the event and whether anything was cut (the caller then spools the
// whole request).
func trimHeaders(h http.Header, urlLen int) (http.Header, bool) {
	total, count := urlLen, 0
	cut := false
	for k, vs := range h {
		total += len(k)
		for _, v := range vs {
			total += len(v)
			count++
			if len(v) > maxHeaderValue {
				cut = true
			}
		}
	}
	if !cut && total <= maxHeadersInEvent && count <= maxHeaderCount {
		return h.Clone(), false
	}
	out := http.Header{}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	used, n, omitted := 0, 0, 0
	for _, k := range keys {
		for _, v := range h[k] {
			v = cutNote(v, maxHeaderValue)
			if n >= maxHeaderCount || used+len(k)+len(v) > maxHeadersInEvent {
				omitted++
				continue
			}
			used += len(k) + len(v)
			n++
			out[k] = append(out[k], v)
		}
	}
	if omitted > 0 {
		// A name no client sends (it has a space), so it cannot be taken
		// for a real header.
		out["Omitted headers"] = []string{fmt.Sprintf("%d values over the event's budget", omitted)}
	}
	return out, true
}

// fitEvent cuts e's payload hard so that it fits in max bytes. It returns
// how many bytes it removed and whether the payload's full bytes are
// spooled (then nothing of the evidence is lost, only its summary).
func fitEvent(e *trace.Event, max int) (removed int64, spooled bool) {
	share := max / 4
	cutB := func(b []byte) []byte {
		if len(b) <= share {
			return b
		}
		removed += int64(len(b) - share)
		return b[:share:share]
	}
	cutS := func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		removed += int64(len(s) - n)
		return cutNote(s, n)
	}
	cutL := func(l []string, n int) []string {
		if len(l) <= n {
			return l
		}
		for _, s := range l[n:] {
			removed += int64(len(s))
		}
		return append(l[:n:n], fmt.Sprintf("…[%d more]", len(l)-n))
	}
	switch d := e.Data.(type) {
	case *trace.HTTPExchange:
		c := *d
		c.URL = cutS(c.URL, 2<<10)
		c.Host = cutS(c.Host, 1<<10)
		h := http.Header{}
		for k, vs := range c.Headers {
			for _, v := range vs {
				h[k] = append(h[k], cutS(v, 256))
			}
			h[k] = cutL(h[k], 8)
		}
		c.Headers = h
		c.Body = cutB(c.Body)
		c.HeadersTruncated = true
		c.BodyTruncated = c.BodyTruncated || int64(len(c.Body)) < c.BodySize
		e.Data = &c
		return removed, c.Spool != "" && !c.SpoolTruncated
	case *trace.Connection:
		c := *d
		c.FirstBytes = cutB(c.FirstBytes)
		c.Banner = cutS(c.Banner, 1<<10)
		c.Name = cutS(c.Name, 1<<10)
		c.Truncated = c.Truncated || int64(len(c.FirstBytes)) < c.Size
		e.Data = &c
		return removed, c.Spool != "" && !c.SpoolTruncated
	case *trace.WSMessage:
		c := *d
		c.URL = cutS(c.URL, 2<<10)
		c.Payload = cutB(c.Payload)
		c.Truncated = c.Truncated || int64(len(c.Payload)) < c.Size
		e.Data = &c
		return removed, c.Spool != "" && !c.SpoolTruncated
	case *trace.DNSQuery:
		c := *d
		c.Name = cutS(c.Name, 1<<10)
		c.Questions = cutL(c.Questions, 64)
		c.Answers = cutL(c.Answers, 64)
		c.Raw = cutB(c.Raw)
		e.Data = &c
	case *trace.TLSHello:
		c := *d
		c.SNI = cutS(c.SNI, 1<<10)
		c.ALPN = cutL(c.ALPN, 32)
		c.Versions = cutL(c.Versions, 32)
		c.Error = cutS(c.Error, 1<<10)
		e.Data = &c
	case *trace.Notice:
		c := *d
		c.Message = cutS(c.Message, share)
		e.Data = &c
	}
	return removed, false
}
