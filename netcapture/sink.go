package netcapture

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"
	"github.com/sandboxctl/sandboxctl/trace"
)

// TCP sink policy: every accepted connection ends in exactly one of three
// places, decided by its first bytes: a TLS ClientHello is recorded and
// terminated with a leaf from the trace CA (then its plaintext is sorted
// the same way), an HTTP request is answered by the responder, anything
// else is recorded by the catch-all. goproxy handles the explicit-proxy
// side, but never dials: its transport refuses every dial, and a CONNECT
// is always hijacked into this same path (intercepted), never tunnelled.
// Every read has a deadline.

const (
	handshakeTimeout = 10 * time.Second
	firstByteTimeout = 10 * time.Second
	sniffTimeout     = 500 * time.Millisecond
	catchIdle        = 3 * time.Second
	catchMax         = 30 * time.Second
	httpReadTimeout  = 60 * time.Second
	maxBodyDrain     = 64 << 20
	maxOpenConns     = 4096
)

// OrigDstFunc returns where a connection accepted by the transparent
// listener was originally sent. OriginalDst is the real one; tests inject
// their own so that loopback tests need no iptables.
type OrigDstFunc func(net.Conn) (netip.AddrPort, error)

// Sink is the HTTP, HTTPS and raw TCP sink. It is safe for concurrent use;
// one Sink can serve several listeners.
type Sink struct {
	emit    func(trace.Event)
	names   *Names
	cfg     Config
	minter  *certMinter
	resp    *responder
	origDst OrigDstFunc
	proxy   *goproxy.ProxyHttpServer
	now     func() time.Time
	// spool keeps what events hold only in part (Run sets the jail's;
	// otherwise nothing is kept and what is cut is counted).
	spool *Spool
	// dns answers DNS-over-HTTPS queries (Run sets the jail's DNS sink;
	// nil: they get the ordinary responses).
	dns *DNSSink
}

// NewSink returns a sink that reports to emit. names is shared with the DNS
// sink (nil: a private allocator); origDst finds a transparent connection's
// original destination (nil: OriginalDst). cfg must hold the CA.
func NewSink(emit func(trace.Event), names *Names, cfg Config, origDst OrigDstFunc) (*Sink, error) {
	cfg = cfg.withDefaults()
	if names == nil {
		names = NewNames()
	}
	if origDst == nil {
		origDst = OriginalDst
	}
	clock := func() time.Time { return time.Now().Add(cfg.ClockOffset) }
	minter, err := newCertMinter(cfg.CACert, cfg.CAKey, clock)
	if err != nil {
		return nil, fmt.Errorf("new sink: %w", err)
	}
	spool, _ := NewSpool("", 0, 0) // keeps nothing: no folder to fail on
	s := &Sink{emit: emit, names: names, cfg: cfg, minter: minter, resp: newResponder(cfg, clock),
		origDst: origDst, now: time.Now, spool: spool}
	s.proxy = s.newProxy()
	return s, nil
}

// newProxy configures goproxy so that nothing leaves: every plain request
// is answered by the responder, every CONNECT is hijacked into the sink's
// own interception, and the transport it would dial with refuses.
func (s *Sink) newProxy() *goproxy.ProxyHttpServer {
	p := goproxy.NewProxyHttpServer()
	p.Logger = log.New(io.Discard, "", 0)
	refuse := func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("netcapture never dials")
	}
	p.Tr = &http.Transport{DialContext: refuse, Proxy: nil} // promises:allow: its dialler refuses
	p.ConnectDial = func(string, string) (net.Conn, error) { return nil, errors.New("netcapture never dials") }
	p.ConnectDialWithReq = nil
	p.NonproxyHandler = http.HandlerFunc(s.serveHTTP)
	p.OnRequest().DoFunc(func(req *http.Request, _ *goproxy.ProxyCtx) (*http.Request, *http.Response) {
		return req, s.proxyResponse(req)
	})
	p.OnRequest().HijackConnect(s.hijackConnect)
	return p
}

// connMeta is what the sink knows of a connection beyond its bytes.
type connMeta struct {
	client      string
	dst         netip.AddrPort // original destination; zero when unknown
	name        string         // DNS name the sink gave dst, if any
	tls         bool
	sni         string
	proxy       bool   // came through the explicit proxy
	connectHost string // CONNECT target host, for tunnels
	watch       *httpWatch
	protocol    string // what a raw flow was recognised as (Connection.Protocol)
	silent      bool   // the client sent nothing within firstByteTimeout
}

func (m connMeta) dstIP() string {
	if !m.dst.IsValid() {
		return ""
	}
	return m.dst.Addr().Unmap().String()
}

func (m connMeta) dstPort() int { return int(m.dst.Port()) }

type ctxKey int

const (
	metaKey ctxKey = iota
	sessKey
)

// metaConn carries its meta into the HTTP server, and reads through the
// buffer that sniffed it.
type metaConn struct {
	net.Conn
	r       io.Reader
	meta    connMeta
	onClose func()
	once    sync.Once
}

func (c *metaConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *metaConn) Close() error {
	if c.onClose != nil {
		c.once.Do(c.onClose)
	}
	return c.Conn.Close()
}

// httpWatch follows a connection handed to the HTTP server: it keeps the
// first bytes read and counts the exchanges recorded, so that a connection
// the server rejects before any handler runs (a malformed request gets a
// bare 400) is still recorded, as a raw flow.
type httpWatch struct {
	mu        sync.Mutex
	capN      int
	first     []byte
	size      int64
	exchanges int
}

func (w *httpWatch) saw(p []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.size += int64(len(p))
	if room := w.capN - len(w.first); room > 0 {
		w.first = append(w.first, p[:min(len(p), room)]...)
	}
}

func (w *httpWatch) exchange() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.exchanges++
	w.mu.Unlock()
}

type watchReader struct {
	r io.Reader
	w *httpWatch
}

func (r watchReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.w.saw(p[:n])
	}
	return n, err
}

// httpConn wraps c, read through r, for the HTTP server.
func (s *Sink) httpConn(c net.Conn, r io.Reader, m connMeta) *metaConn {
	w := &httpWatch{capN: s.cfg.FirstBytesCap}
	m.watch = w
	return &metaConn{Conn: c, r: watchReader{r: r, w: w}, meta: m, onClose: func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.exchanges > 0 || w.size == 0 {
			return
		}
		s.emitEvent(trace.SourceTCP, trace.TypeConnection, &trace.Connection{Proto: "tcp", Client: m.client,
			DstIP: m.dstIP(), DstPort: m.dstPort(), Name: firstNonEmpty(m.name, m.sni, m.connectHost),
			FirstBytes: append([]byte(nil), w.first...), Size: w.size, Truncated: w.size > int64(len(w.first)),
			Protocol: "http"})
	}}
}

// session is one Serve call: its HTTP server, injected connections and the
// connections it must close when it ends.
type session struct {
	s      *Sink
	ctx    context.Context
	inject chan net.Conn
	wg     sync.WaitGroup

	open atomic.Int64 // connections being served

	mu   sync.Mutex
	live map[net.Conn]struct{}
}

func (ss *session) track(c net.Conn) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.live == nil {
		return false // the session ended
	}
	ss.live[c] = struct{}{}
	return true
}

// add counts one more goroutine the session waits for, unless it ended.
func (ss *session) add() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.live == nil {
		return false
	}
	ss.wg.Add(1)
	return true
}

func (ss *session) untrack(c net.Conn) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.live, c)
}

func (ss *session) closeAll() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for c := range ss.live {
		c.Close()
	}
	ss.live = nil
}

// chanListener is a net.Listener whose connections are handed to it.
type chanListener struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
	addr net.Addr
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// ServeTransparent serves connections REDIRECTed to ln until ctx ends,
// then closes ln and every connection and returns nil.
func (s *Sink) ServeTransparent(ctx context.Context, ln net.Listener) error {
	return s.serve(ctx, ln, false)
}

// ServeProxy serves ln as an explicit HTTP proxy until ctx ends, then
// closes ln and every connection and returns nil. CONNECT is always
// intercepted: TLS inside it gets a minted leaf, anything else the
// catch-all.
func (s *Sink) ServeProxy(ctx context.Context, ln net.Listener) error {
	return s.serve(ctx, ln, true)
}

func (s *Sink) serve(ctx context.Context, ln net.Listener, explicit bool) error {
	ss := &session{s: s, ctx: ctx, inject: make(chan net.Conn), live: map[net.Conn]struct{}{}}
	cl := &chanListener{ch: ss.inject, done: make(chan struct{}), addr: ln.Addr()}
	srv := &http.Server{
		Handler:           s.proxy,
		ReadHeaderTimeout: firstByteTimeout,
		ReadTimeout:       httpReadTimeout,
		WriteTimeout:      httpReadTimeout,
		IdleTimeout:       30 * time.Second,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          log.New(io.Discard, "", 0),
		BaseContext:       func(net.Listener) context.Context { return context.WithValue(ctx, sessKey, ss) },
		ConnContext: func(cctx context.Context, c net.Conn) context.Context {
			if mc, ok := c.(*metaConn); ok {
				return context.WithValue(cctx, metaKey, mc.meta)
			}
			return cctx
		},
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Serve(cl) }()

	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var err error
	for {
		c, aerr := ln.Accept()
		if aerr != nil {
			var ne net.Error
			if errors.As(aerr, &ne) && ne.Timeout() && ctx.Err() == nil {
				continue
			}
			if ctx.Err() == nil {
				err = fmt.Errorf("accept: %w", aerr)
			}
			break
		}
		if !ss.add() {
			c.Close()
			break
		}
		if n := ss.open.Add(1); n > maxOpenConns {
			// Past the cap a flood is recorded by address only, and closed.
			ss.open.Add(-1)
			m := connMeta{client: c.RemoteAddr().String()}
			if dst, derr := s.origDst(c); derr == nil && !explicit {
				m.dst = dst
				m.name, _ = s.names.Lookup(dst.Addr())
			}
			c.Close()
			ss.wg.Done()
			s.emitEvent(trace.SourceTCP, trace.TypeConnection, &trace.Connection{Proto: "tcp", Client: m.client,
				DstIP: m.dstIP(), DstPort: m.dstPort(), Name: m.name})
			continue
		}
		go func() {
			defer ss.open.Add(-1)
			defer ss.wg.Done()
			if explicit {
				m := connMeta{client: c.RemoteAddr().String(), proxy: true}
				ss.handOver(s.httpConn(c, c, m))
				return
			}
			m := connMeta{client: c.RemoteAddr().String()}
			if dst, derr := s.origDst(c); derr == nil {
				m.dst = dst
				m.name, _ = s.names.Lookup(dst.Addr())
			}
			ss.dispatch(c, m)
		}()
	}
	ln.Close()
	cl.Close()
	_ = srv.Close() // closes the connections the HTTP server holds
	ss.closeAll()   // and the ones being sniffed, intercepted or caught
	ss.wg.Wait()
	<-srvDone
	return err
}

// handOver gives c to the session's HTTP server, or closes it when the
// session is ending.
func (ss *session) handOver(c *metaConn) {
	select {
	case ss.inject <- c:
	case <-ss.ctx.Done():
		c.Close()
	}
}

// dispatch sorts one connection by its first bytes. It owns c.
func (ss *session) dispatch(c net.Conn, m connMeta) {
	if !ss.track(c) {
		c.Close()
		return
	}
	handed := false
	defer func() {
		ss.untrack(c)
		if !handed {
			c.Close()
		}
	}()
	s := ss.s
	// A small buffer: a skill can open thousands of connections, and
	// sniffing needs a few bytes (the ClientHello is read through it).
	br := bufio.NewReaderSize(c, 4096)
	if isSMTP(m) {
		ss.smtp(c, br, m) // the server speaks first
		return
	}
	banner := ""
	wait := firstByteTimeout
	if b, ok := s.banner(m); ok {
		banner, wait = b, s.cfg.BannerDelay
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	_, err := br.Peek(1)
	if err != nil && isTimeout(err) && banner != "" {
		_ = c.SetWriteDeadline(time.Now().Add(handshakeTimeout))
		if _, werr := io.WriteString(c, banner); werr == nil {
			ss.catchAll(c, br, m, banner)
		}
		return
	}
	if err != nil {
		m.silent = isTimeout(err) && banner == ""
		ss.catchAll(c, br, m, "")
		return
	}
	first, _ := br.Peek(1)
	if first[0] == recordHandshake && !m.tls {
		handed = ss.intercept(c, br, m)
		return
	}
	if looksHTTP(c, br) {
		_ = c.SetDeadline(time.Time{})
		handed = true
		ss.untrack(c)
		ss.serveHTTP1(c, br, m)
		return
	}
	ss.catchAll(c, br, m, "")
}

func (s *Sink) banner(m connMeta) (string, bool) {
	if m.tls || len(s.cfg.Banners) == 0 {
		return "", false
	}
	if b, ok := s.cfg.Banners[strconv.Itoa(m.dstPort())]; ok && m.dst.IsValid() {
		return b, true
	}
	b, ok := s.cfg.Banners["*"]
	return b, ok
}

var httpMethods = []string{"GET ", "POST ", "HEAD ", "PUT ", "DELETE ", "OPTIONS ", "PATCH ", "CONNECT ", "TRACE ", "PRI * "}

// looksHTTP reports whether the buffered bytes start an HTTP/1 request
// line, waiting briefly for a whole method token.
func looksHTTP(c net.Conn, br *bufio.Reader) bool {
	_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
	b, _ := br.Peek(8)
	if len(b) == 0 {
		b, _ = br.Peek(br.Buffered())
	}
	for _, m := range httpMethods {
		if len(b) >= len(m) && string(b[:len(m)]) == m {
			return true
		}
	}
	return false
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// intercept records the ClientHello on c and terminates TLS with a leaf
// for its SNI (or its destination), then sorts the plaintext. It reports
// whether it took c over (the TLS layer then owns and closes it).
func (ss *session) intercept(c net.Conn, br *bufio.Reader, m connMeta) bool {
	s := ss.s
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	raw, msg, err := readClientHello(br)
	th := &trace.TLSHello{DstIP: m.dstIP(), DstPort: m.dstPort()}
	if err == nil {
		var h clientHello
		if h, err = parseClientHello(msg); err == nil {
			th.SNI, th.ALPN, th.Versions = h.SNI, h.ALPN, h.Versions
		}
	}
	if err != nil {
		th.Error = err.Error()
		s.emitEvent(trace.SourceTLS, trace.TypeTLSHello, th)
		ss.catchAllBytes(c, raw, br, m, "")
		return false
	}
	name := th.SNI
	if !validLeafName(name) {
		name = m.connectHost
	}
	if name == "" && m.dst.IsValid() {
		name = m.dstIP()
	}
	if name == "" {
		name = "localhost"
	}
	conf := &tls.Config{
		MinVersion: tls.VersionTLS10,
		NextProtos: alpnFor(th.ALPN),
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return s.minter.leaf(name)
		},
	}
	tc := tls.Server(&metaConn{Conn: c, r: io.MultiReader(bytes.NewReader(raw), br)}, conf)
	hctx, cancel := context.WithTimeout(ss.ctx, handshakeTimeout)
	err = tc.HandshakeContext(hctx)
	cancel()
	th.Intercepted = err == nil
	if err != nil {
		th.Error = err.Error()
	}
	s.emitEvent(trace.SourceTLS, trace.TypeTLSHello, th)
	if err != nil {
		return false
	}
	_ = c.SetDeadline(time.Time{})
	m.tls, m.sni = true, th.SNI
	ss.untrack(c)
	if tc.ConnectionState().NegotiatedProtocol == "h2" {
		ss.serveH2(tc, m)
		return true
	}
	ss.dispatch(tc, m) // owns tc, and so c
	return true
}

// alpnFor picks what the sink offers a client: HTTP/1.1 whenever it can
// (every HTTP client falls back to it), HTTP/2 to clients that speak only
// h2 (gRPC), and no ALPN at all to clients asking for something else, so
// their handshake completes and their plaintext reaches the catch-all
// (Go's server would otherwise refuse the handshake).
func alpnFor(client []string) []string {
	if len(client) == 0 || slices.Contains(client, "http/1.1") {
		return []string{"http/1.1"}
	}
	if slices.Contains(client, "h2") {
		return []string{"h2"}
	}
	return nil
}

// serveH2 serves an HTTP/2 connection (intercepted TLS with ALPN h2, or
// cleartext with prior knowledge) until it ends.
func (ss *session) serveH2(tc net.Conn, m connMeta) {
	if !ss.track(tc) {
		tc.Close()
		return
	}
	defer func() {
		ss.untrack(tc)
		tc.Close()
	}()
	w := &httpWatch{capN: ss.s.cfg.FirstBytesCap}
	m.watch = w
	ss.serveHTTP2Conn(tc, m, nil, nil)
}

// catchAll records a raw flow: its first bytes (capped), its size, and the
// banner sent, until the client closes, stays idle, or catchMax passes.
func (ss *session) catchAll(c net.Conn, br *bufio.Reader, m connMeta, banner string) {
	ss.catchAllBytes(c, nil, br, m, banner)
}

func (ss *session) catchAllBytes(c net.Conn, prefix []byte, br io.Reader, m connMeta, banner string) {
	s := ss.s
	capN := s.cfg.FirstBytesCap
	// The first bytes go in the event; a flow that goes past them is
	// spooled whole, from its first byte, so it is scanned whole.
	var spool *SpoolFile
	var first []byte
	size := int64(0)
	sum := sha256.New()
	keep := func(b []byte) {
		size += int64(len(b))
		sum.Write(b)
		if room := capN - len(first); room > 0 && spool == nil {
			first = append(first, b[:min(len(b), room)]...)
			b = b[min(len(b), room):]
		}
		if len(b) == 0 {
			return
		}
		if spool == nil {
			spool = s.spool.Create("tcp")
			_, _ = spool.Write(first)
		}
		_, _ = spool.Write(b)
	}
	keep(prefix)
	// A flow that is a shell, by its first bytes or by its silence, is
	// sent one command whose answer the shell must compute: an answer
	// proves that whoever is on the other side runs what the network sends.
	var probe *shellProbe
	var after []byte
	sendProbe := func() {
		if probe != nil || len(after) > 0 {
			return
		}
		probe = newShellProbe()
		_ = c.SetWriteDeadline(time.Now().Add(handshakeTimeout))
		if _, err := io.WriteString(c, probe.line); err != nil {
			probe.line = ""
		}
	}
	if m.silent || len(first) > 0 && looksLikeShell(first) {
		sendProbe()
	}
	end := time.Now().Add(catchMax)
	buf := make([]byte, 4096)
	for {
		dl := time.Now().Add(catchIdle)
		if dl.After(end) {
			dl = end
		}
		_ = c.SetReadDeadline(dl)
		n, err := br.Read(buf)
		if n > 0 {
			keep(buf[:n])
			if probe == nil && looksLikeShell(first) {
				sendProbe()
			} else if probe != nil && probe.line != "" && !probe.answered {
				after = append(after, buf[:n]...)
				probe.answered = bytes.Contains(after, []byte(probe.answer))
				if len(after) > maxProbeReply {
					after = after[len(after)-len(probe.answer):]
				}
			}
		}
		if err != nil || time.Now().After(end) {
			break
		}
	}
	proto := "tcp"
	conn := &trace.Connection{Proto: proto, Client: m.client, DstIP: m.dstIP(), DstPort: m.dstPort(),
		Name: m.name, FirstBytes: first, Size: size, Truncated: size > int64(len(first)), Banner: banner,
		Digest:   hex.EncodeToString(sum.Sum(nil)),
		Protocol: firstNonEmpty(m.protocol, sniffProtocol(first))}
	if spool != nil {
		conn.Spool, conn.SpoolTruncated = spool.Close()
	}
	if probe != nil && probe.line != "" {
		conn.Probe, conn.ProbeAnswered = probe.line, probe.answered
	}
	if conn.Name == "" {
		conn.Name = firstNonEmpty(m.sni, m.connectHost)
	}
	s.emitEvent(trace.SourceTCP, trace.TypeConnection, conn)
}

// maxProbeReply bounds the bytes after a shell probe searched for its
// answer.
const maxProbeReply = 64 << 10

// shellProbe is a command any POSIX shell answers with a value it has to
// compute: the answer (two tags around a sum) is not in the command's
// text, so a terminal echoing the line back, or a client replaying what it
// got, does not answer it. It only prints.
type shellProbe struct {
	line, answer string
	answered     bool
}

func newShellProbe() *shellProbe {
	a, b := 1000+mathrand.IntN(9000), 1000+mathrand.IntN(9000)
	tag := randHex(3)
	return &shellProbe{
		line:   fmt.Sprintf("echo %s$((%d+%d))%s\n", tag, a, b, tag),
		answer: fmt.Sprintf("%s%d%s", tag, a+b, tag),
	}
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// hijackConnect takes every CONNECT: it answers 200, records the request,
// and sorts the tunnel's bytes like a transparent connection, so TLS in it
// is intercepted and nothing is ever forwarded.
func (s *Sink) hijackConnect(req *http.Request, client net.Conn, _ *goproxy.ProxyCtx) {
	ss, _ := req.Context().Value(sessKey).(*session)
	parent, _ := req.Context().Value(metaKey).(connMeta)
	if ss == nil {
		client.Close()
		return
	}
	host, portStr, err := net.SplitHostPort(req.URL.Host)
	if err != nil {
		host, portStr = req.URL.Host, "443"
	}
	port, _ := strconv.Atoi(portStr)
	parent.watch.exchange()
	m := connMeta{client: parent.client, proxy: true, connectHost: strings.ToLower(host)}
	if m.client == "" {
		m.client = client.RemoteAddr().String()
	}
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		m.dst = netip.AddrPortFrom(ip, uint16(port))
		m.name, _ = s.names.Lookup(ip)
	} else {
		v4, _ := s.names.Addrs(host)
		m.dst = netip.AddrPortFrom(v4, uint16(port))
		m.name = strings.ToLower(host)
	}
	s.emitEvent(trace.SourceHTTP, trace.TypeHTTP, &trace.HTTPExchange{
		Method: req.Method, URL: req.URL.Host, Host: req.Host, Proto: req.Proto, Proxy: true,
		Client: m.client, DstIP: m.dstIP(), DstPort: m.dstPort(), Headers: req.Header.Clone(),
		Status: http.StatusOK, Response: "connect-intercept",
	})
	_ = client.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		client.Close()
		return
	}
	_ = client.SetWriteDeadline(time.Time{})
	if !ss.add() {
		client.Close()
		return
	}
	defer ss.wg.Done()
	ss.dispatch(client, m)
}

// serveHTTP answers requests that arrived on a transparent connection (or
// relative requests on the proxy port).
func (s *Sink) serveHTTP(w http.ResponseWriter, req *http.Request) {
	resp := s.exchange(req)
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(resp.Body)))
	w.WriteHeader(resp.Status)
	if req.Method != http.MethodHead {
		_, _ = w.Write(resp.Body)
	}
}

// proxyResponse answers an absolute-URL request on the proxy.
func (s *Sink) proxyResponse(req *http.Request) *http.Response {
	resp := s.exchange(req)
	resp.Header.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	return &http.Response{
		StatusCode: resp.Status, Status: strconv.Itoa(resp.Status) + " " + http.StatusText(resp.Status),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: resp.Header, Request: req,
		Body: io.NopCloser(bytes.NewReader(resp.Body)), ContentLength: int64(len(resp.Body)),
	}
}

// exchange reads req's body (capped), picks the response and records both.
func (s *Sink) exchange(req *http.Request) response {
	m, _ := req.Context().Value(metaKey).(connMeta)
	m.watch.exchange()
	// The session waits for exchanges in flight, so none is emitted after
	// Serve returns.
	if ss, ok := req.Context().Value(sessKey).(*session); ok {
		if !ss.add() {
			return s.resp.newResponse(http.StatusServiceUnavailable, "text/plain", nil, "shutting-down")
		}
		defer ss.wg.Done()
	}
	host := req.Host
	if req.URL.IsAbs() && req.URL.Host != "" {
		host = req.URL.Host
		m.proxy = true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "" {
		host = firstNonEmpty(m.sni, m.connectHost, m.name, m.dstIP())
	}
	url := req.URL.String()
	if !req.URL.IsAbs() {
		scheme := "http"
		if m.tls {
			scheme = "https"
		}
		hp := req.Host
		if hp == "" {
			hp = host
		}
		url = scheme + "://" + hp + req.URL.RequestURI()
	}
	// The event holds a summary within its budget; the whole request goes
	// to the spool when the summary is cut.
	headers, headCut := trimHeaders(req.Header, len(url))
	headCut = headCut || len(url) > maxURLInEvent || len(req.Host) > maxHeaderValue
	rb := s.readRequestBody(req, url, s.cfg.BodyCap, headCut)
	if p, ok := req.Context().Value(unfinishedKey).(*bool); ok {
		*p = rb.unfinished
	}
	resp := s.resp.respond(req, host, rb.kept)
	if msg, asJSON, ok := dohQuery(req, rb.kept); ok {
		if r, ok := s.dohResponse(req, msg, asJSON, firstNonEmpty(m.client, req.RemoteAddr)); ok {
			resp = r
		}
	}
	ex := &trace.HTTPExchange{
		Method: req.Method, URL: cutNote(url, maxURLInEvent), Host: cutNote(req.Host, maxHeaderValue), Proto: req.Proto,
		TLS: m.tls, SNI: m.sni, Proxy: m.proxy, Client: firstNonEmpty(m.client, req.RemoteAddr), DstIP: m.dstIP(), DstPort: m.dstPort(),
		Headers: headers, Body: rb.kept, BodySize: rb.size, BodyTruncated: rb.size > int64(len(rb.kept)), Digest: rb.digest,
		Status: resp.Status, Response: resp.Label, RespSize: int64(len(resp.Body)),
		HeadersTruncated: headCut, Unfinished: rb.unfinished, Spool: rb.spool, SpoolTruncated: rb.spoolCut,
	}
	s.emitEvent(trace.SourceHTTP, trace.TypeHTTP, ex)
	for _, x := range resp.Extra {
		s.emitEvent(trace.SourceHTTP, x.Type, x.Data)
	}
	return resp
}

func (s *Sink) emitEvent(src trace.Source, typ trace.Type, data any) {
	s.emit(trace.Event{Time: s.now().UTC(), Source: src, Type: typ, Data: data})
}
