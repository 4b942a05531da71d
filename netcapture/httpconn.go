package netcapture

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HTTP/1 connection policy: every byte a client sends on a connection is
// accounted for. Requests are read one after the other on our own loop
// (not net/http's server, which answers a request it cannot parse with a
// bare 400 and drops its bytes): each parsed request is an exchange; the
// bytes of one that does not parse, and everything after it, are recorded
// as a raw flow ("http-trailing"), spooled past their first bytes. A
// request whose body never completes is recorded with Unfinished when the
// client stops or the trace ends. A WebSocket upgrade is answered and its
// frames read, including frames the client sent before our 101; an h2c
// upgrade or an HTTP/2 preface (prior knowledge) is served as HTTP/2.

const (
	maxHeaderBytes = 1 << 20
	httpIdle       = 30 * time.Second
	h2Preface      = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
)

// recReader records the bytes read through it while retain is set, and
// fails reads past limit (the header cap) while a limit is set.
type recReader struct {
	r      io.Reader
	retain bool
	buf    []byte
	limit  int // bytes still allowed; < 0: no limit
}

var errHeaderTooLarge = errors.New("request header over the cap")

func (rr *recReader) Read(p []byte) (int, error) {
	if rr.limit == 0 {
		return 0, errHeaderTooLarge
	}
	if rr.limit > 0 && len(p) > rr.limit {
		p = p[:rr.limit]
	}
	n, err := rr.r.Read(p)
	if rr.limit > 0 {
		rr.limit -= n
	}
	if rr.retain && n > 0 {
		rr.buf = append(rr.buf, p[:n]...)
	}
	return n, err
}

// serveHTTP1 serves HTTP/1 requests on c (read through br) until the
// client closes, stays idle, sends something that is not a request, or
// the session ends. It owns c.
func (ss *session) serveHTTP1(c net.Conn, br *bufio.Reader, m connMeta) {
	if !ss.track(c) {
		c.Close()
		return
	}
	handedOff := false
	defer func() {
		ss.untrack(c)
		if !handedOff {
			c.Close()
		}
	}()
	s := ss.s
	rec := &recReader{r: br, limit: -1}
	hr := bufio.NewReaderSize(rec, 16<<10)
	bw := bufio.NewWriterSize(c, 16<<10)
	first := true
	for {
		idle := httpIdle
		if first {
			idle = firstByteTimeout
		}
		_ = c.SetReadDeadline(time.Now().Add(idle))
		if _, err := hr.Peek(1); err != nil {
			return // closed, idle or the session ended: nothing was sent
		}
		// What is already buffered is the start of this request.
		pending, _ := hr.Peek(hr.Buffered())
		rec.buf = append(rec.buf[:0], pending...)
		rec.retain, rec.limit = true, maxHeaderBytes+len(pending)
		// Only a client that starts with "PRI " is waited for to send the
		// whole HTTP/2 preface: a short HTTP/1.0 request must not stall.
		if first && bytes.HasPrefix(pending, []byte("PRI ")) {
			if b, _ := hr.Peek(len(h2Preface)); string(b) == h2Preface {
				// HTTP/2 with prior knowledge (h2c).
				rec.retain, rec.limit = false, -1
				handedOff = true
				ss.untrack(c)
				ss.serveH2(&metaConn{Conn: c, r: hr}, m)
				return
			}
		}
		_ = c.SetReadDeadline(time.Now().Add(firstByteTimeout))
		req, err := http.ReadRequest(hr)
		if err != nil {
			// Not a request (or a broken one): keep its bytes and the rest
			// of the connection as a raw flow.
			raw := append([]byte(nil), rec.buf...)
			rec.retain, rec.limit, rec.buf = false, -1, nil
			if errors.Is(err, errHeaderTooLarge) {
				ss.writeStatus(c, http.StatusRequestHeaderFieldsTooLarge)
			} else if !first || len(raw) > 0 && looksHTTPBytes(raw) {
				ss.writeStatus(c, http.StatusBadRequest)
			}
			m.protocol = "http-trailing"
			if first {
				m.protocol = "http-malformed"
			}
			ss.catchAllBytes(c, raw, br, m, "")
			return
		}
		rec.retain, rec.limit, rec.buf = false, -1, rec.buf[:0]
		first = false
		_ = c.SetReadDeadline(time.Now().Add(httpReadTimeout))
		req.RemoteAddr = m.client
		ctx := context.WithValue(context.WithValue(ss.ctx, sessKey, ss), metaKey, m)
		req = req.WithContext(ctx)
		switch {
		case req.Method == http.MethodConnect:
			handedOff = true
			ss.untrack(c)
			ss.s.hijackConnect(req, &metaConn{Conn: c, r: hr}, nil)
			return
		case isWebSocket(req):
			handedOff = true
			ss.untrack(c)
			ss.serveWebSocket(&metaConn{Conn: c, r: hr}, hr, req, m)
			return
		case isH2CUpgrade(req):
			handedOff = true
			ss.untrack(c)
			ss.serveH2CUpgrade(&metaConn{Conn: c, r: hr}, req, m)
			return
		}
		if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
			_ = c.SetWriteDeadline(time.Now().Add(handshakeTimeout))
			_, _ = io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
		}
		resp, unfinished := s.exchangeUnfinished(req)
		_ = c.SetWriteDeadline(time.Now().Add(httpReadTimeout))
		if err := writeResponse(bw, req, resp); err != nil || unfinished || req.Close {
			return
		}
	}
}

// writeStatus answers a request the loop could not read.
func (ss *session) writeStatus(c net.Conn, status int) {
	_ = c.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	resp := ss.s.resp.newResponse(status, "text/html", []byte("<html><body><h1>"+strconv.Itoa(status)+" "+http.StatusText(status)+"</h1></body></html>\n"), "")
	resp.Header.Set("Connection", "close")
	bw := bufio.NewWriter(c)
	_ = writeResponse(bw, &http.Request{Method: http.MethodGet, ProtoMajor: 1, ProtoMinor: 1}, resp)
}

// writeResponse writes resp to the request on bw and flushes it.
func writeResponse(bw *bufio.Writer, req *http.Request, resp response) error {
	hr := &http.Response{
		StatusCode: resp.Status, ProtoMajor: 1, ProtoMinor: 1, Header: resp.Header,
		ContentLength: int64(len(resp.Body)), Request: req, Close: req.Close,
	}
	if req.Method != http.MethodHead {
		hr.Body = io.NopCloser(bytes.NewReader(resp.Body))
	}
	if err := hr.Write(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// looksHTTPBytes reports whether b starts with an HTTP method.
func looksHTTPBytes(b []byte) bool {
	for _, m := range httpMethods {
		if bytes.HasPrefix(b, []byte(m)) {
			return true
		}
	}
	return false
}

func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), token) {
				return true
			}
		}
	}
	return false
}

func isWebSocket(req *http.Request) bool {
	return req.Method == http.MethodGet && headerHas(req.Header, "Upgrade", "websocket")
}

func isH2CUpgrade(req *http.Request) bool {
	_, settings := req.Header["Http2-Settings"]
	return headerHas(req.Header, "Upgrade", "h2c") && settings
}

// serveH2CUpgrade answers an "Upgrade: h2c" request with 101 and serves
// the connection as HTTP/2, the request itself as its stream 1.
func (ss *session) serveH2CUpgrade(c *metaConn, req *http.Request, m connMeta) {
	settings, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(req.Header.Get("HTTP2-Settings"), "="))
	if err != nil {
		c.Close()
		return
	}
	// The request's body must be read before switching (RFC 7540 3.2).
	body, _ := io.ReadAll(io.LimitReader(req.Body, maxBodyDrain))
	req.Body = io.NopCloser(bytes.NewReader(body))
	_ = c.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	if _, err := io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"); err != nil {
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	m.protocol = "h2c"
	if !ss.track(c) {
		c.Close()
		return
	}
	defer func() {
		ss.untrack(c)
		c.Close()
	}()
	ss.serveHTTP2Conn(c, m, req, settings)
}

// exchangeUnfinished is exchange, also telling whether the request's body
// was left unread (the connection cannot carry another request then).
func (s *Sink) exchangeUnfinished(req *http.Request) (response, bool) {
	var unfinished bool
	req = req.WithContext(context.WithValue(req.Context(), unfinishedKey, &unfinished))
	resp := s.exchange(req)
	return resp, unfinished
}

type unfinishedKeyT struct{}

var unfinishedKey unfinishedKeyT
