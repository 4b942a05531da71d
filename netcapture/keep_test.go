package netcapture

//lint:file-ignore SA1019 the HTTP/2 clients of these tests reach the sink by prior knowledge over a dialled connection, which only x/net/http2.Transport does

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/sandboxctl/sandboxctl/trace"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// startKeeping serves the transparent listener with a spool in a temporary
// folder and the DNS sink wired for DoH.
func startKeeping(t *testing.T, cfg Config) (string, *collector, string) {
	t.Helper()
	col := &collector{}
	names := NewNames()
	s, err := NewSink(col.emit, names, cfg, func(net.Conn) (netip.AddrPort, error) {
		return netip.MustParseAddrPort("198.51.100.40:80"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "spool")
	if s.spool, err = NewSpool(dir, 0, 0); err != nil {
		t.Fatal(err)
	}
	if s.dns, err = NewDNSSink(col.emit, names, cfg); err != nil {
		t.Fatal(err)
	}
	ln := listenTCP(t)
	serveInBackground(t, func(ctx context.Context) error { return s.ServeTransparent(ctx, ln) })
	return ln.Addr().String(), col, dir
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

func ofType[T any](col *collector) []*T {
	var out []*T
	for _, e := range col.all() {
		if d, ok := e.Data.(*T); ok {
			out = append(out, d)
		}
	}
	return out
}

// TestKeepAliveKeepsEveryByte: two requests on one connection are two
// exchanges, and bytes after them that are not a request are a raw flow.
func TestKeepAliveKeepsEveryByte(t *testing.T) {
	addr, col, _ := startKeeping(t, testConfig(t))
	c := dial(t, addr)
	io.WriteString(c, "GET /one HTTP/1.1\r\nHost: a.example\r\n\r\n"+
		"POST /two HTTP/1.1\r\nHost: a.example\r\nContent-Length: 5\r\n\r\nhello"+
		"\x00\x01after the requests ghp_trailing\n")
	r := bufio.NewReader(c)
	for range 2 {
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
	}
	c.(*net.TCPConn).CloseWrite()
	cn := col.waitFor(t, "connection", isType(trace.TypeConnection)).Data.(*trace.Connection)
	if string(cn.FirstBytes) != "\x00\x01after the requests ghp_trailing\n" || cn.Protocol != "http-trailing" {
		t.Errorf("trailing flow = %+v", cn)
	}
	var urls []string
	for _, x := range ofType[trace.HTTPExchange](col) {
		urls = append(urls, x.Method+" "+x.URL)
	}
	if strings.Join(urls, ",") != "GET http://a.example/one,POST http://a.example/two" {
		t.Errorf("exchanges %q", urls)
	}
}

// TestUnfinishedBodyRecorded: a body that never completes is recorded
// with what arrived when the client gives up.
func TestUnfinishedBodyRecorded(t *testing.T) {
	addr, col, _ := startKeeping(t, testConfig(t))
	c := dial(t, addr)
	io.WriteString(c, "POST /up HTTP/1.1\r\nHost: a.example\r\nContent-Length: 1000\r\n\r\nghp_partial")
	time.Sleep(200 * time.Millisecond)
	c.Close()
	x := col.waitFor(t, "exchange", isType(trace.TypeHTTP)).Data.(*trace.HTTPExchange)
	if !x.Unfinished || string(x.Body) != "ghp_partial" || x.BodySize != 11 {
		t.Errorf("exchange = %+v, want the unfinished body", x)
	}
}

// TestLargeRequestSpooled: headers and a body over the event's caps are
// cut in the event and kept whole in the spool.
func TestLargeRequestSpooled(t *testing.T) {
	cfg := testConfig(t)
	cfg.BodyCap = 1024
	addr, col, dir := startKeeping(t, cfg)
	body := strings.Repeat("b", 1<<20) + "ghp_bodytail"
	req, _ := http.NewRequest("POST", "http://"+addr+"/big", strings.NewReader(body))
	req.Header.Set("X-Pad", strings.Repeat("h", 100<<10)+"ghp_headertail")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	x := col.waitFor(t, "exchange", isType(trace.TypeHTTP)).Data.(*trace.HTTPExchange)
	if len(x.Body) != 1024 || x.BodySize != int64(len(body)) || !x.HeadersTruncated || x.Spool == "" || x.SpoolTruncated {
		t.Fatalf("exchange = %+v", x)
	}
	if v := x.Headers["X-Pad"][0]; len(v) > maxHeaderValue+32 || strings.Contains(v, "ghp_headertail") {
		t.Errorf("header value kept in the event: %d bytes", len(v))
	}
	spooled, err := os.ReadFile(filepath.Join(dir, x.Spool))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(spooled, []byte("ghp_headertail")) || !bytes.HasSuffix(spooled, []byte("ghp_bodytail")) {
		t.Errorf("spool file of %d bytes lacks the header or body tail", len(spooled))
	}
}

// wsClientFrame is a masked client frame.
func wsClientFrame(fin bool, op byte, p []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	mask := [4]byte{1, 2, 3, 4}
	var f []byte
	switch {
	case len(p) < 126:
		f = []byte{b0, 0x80 | byte(len(p))}
	default:
		f = []byte{b0, 0x80 | 126, 0, 0}
		binary.BigEndian.PutUint16(f[2:], uint16(len(p)))
	}
	f = append(f, mask[:]...)
	for i, c := range p {
		f = append(f, c^mask[i%4])
	}
	return f
}

// TestWebSocketFrames: frames sent with the upgrade request, before our
// 101, are recorded like later ones; fragments are joined; a ping is
// answered.
func TestWebSocketFrames(t *testing.T) {
	addr, col, _ := startKeeping(t, testConfig(t))
	c := dial(t, addr)
	up := "GET /socket HTTP/1.1\r\nHost: ws.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	early := wsClientFrame(true, 1, []byte("early ghp_before_handshake"))
	c.Write(append([]byte(up), early...))
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != 101 || resp.Header.Get("Sec-Websocket-Accept") != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Fatalf("handshake: %v %+v", err, resp)
	}
	c.Write(wsClientFrame(false, 2, []byte("part one, ")))
	c.Write(wsClientFrame(true, 0, []byte("part two")))
	c.Write(wsClientFrame(true, 9, []byte("are you there")))
	pong := make([]byte, 2+len("are you there"))
	if _, err := io.ReadFull(r, pong); err != nil || pong[0] != 0x8a || string(pong[2:]) != "are you there" {
		t.Errorf("pong = %q, %v", pong, err)
	}
	c.Write(wsClientFrame(true, 8, nil))
	col.waitFor(t, "close", func(e trace.Event) bool {
		m, ok := e.Data.(*trace.WSMessage)
		return ok && m.Opcode == "close"
	})
	var got []string
	for _, m := range ofType[trace.WSMessage](col) {
		got = append(got, m.Opcode+":"+string(m.Payload))
		if m.URL != "ws://ws.example/socket" {
			t.Errorf("message URL %q", m.URL)
		}
	}
	want := "text:early ghp_before_handshake,binary:part one, part two,ping:are you there,close:"
	if strings.Join(got, ",") != want {
		t.Errorf("messages %q, want %q", strings.Join(got, ","), want)
	}
	if x := ofType[trace.HTTPExchange](col); len(x) != 1 || x[0].Status != 101 || x[0].Response != "websocket" {
		t.Errorf("upgrade exchange %+v", x)
	}
}

// TestH2C: HTTP/2 in cleartext, by prior knowledge and by Upgrade, is
// served and recorded like any exchange.
func TestH2C(t *testing.T) {
	addr, col, _ := startKeeping(t, testConfig(t))
	t.Run("prior knowledge", func(t *testing.T) {
		tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, a string, _ *tls.Config) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("http://h2c.example/prior?k=ghp_h2c")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		x := col.waitFor(t, "h2 exchange", func(e trace.Event) bool {
			x, ok := e.Data.(*trace.HTTPExchange)
			return ok && strings.Contains(x.URL, "/prior")
		}).Data.(*trace.HTTPExchange)
		if x.Proto != "HTTP/2.0" || resp.ProtoMajor != 2 {
			t.Errorf("exchange proto %q, response proto %d", x.Proto, resp.ProtoMajor)
		}
	})
	t.Run("upgrade", func(t *testing.T) {
		c := dial(t, addr)
		var settings bytes.Buffer
		http2.NewFramer(&settings, nil).WriteSettings()
		io.WriteString(c, "GET /upgraded?k=ghp_upgrade HTTP/1.1\r\nHost: h2c.example\r\nConnection: Upgrade, HTTP2-Settings\r\n"+
			"Upgrade: h2c\r\nHTTP2-Settings: "+base64.RawURLEncoding.EncodeToString(settings.Bytes()[9:])+"\r\n\r\n")
		r := bufio.NewReader(c)
		resp, err := http.ReadResponse(r, nil)
		if err != nil || resp.StatusCode != 101 {
			t.Fatalf("upgrade: %v %+v", err, resp)
		}
		io.WriteString(c, http2.ClientPreface)
		fr := http2.NewFramer(c, r)
		fr.WriteSettings()
		status := ""
		for status == "" {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("read frame: %v", err)
			}
			if h, ok := f.(*http2.HeadersFrame); ok && h.StreamID == 1 {
				fields, _ := hpack.NewDecoder(4096, nil).DecodeFull(h.HeaderBlockFragment())
				for _, hf := range fields {
					if hf.Name == ":status" {
						status = hf.Value
					}
				}
			}
		}
		if status != "200" {
			t.Errorf("stream 1 status %q", status)
		}
		col.waitFor(t, "upgraded exchange", func(e trace.Event) bool {
			x, ok := e.Data.(*trace.HTTPExchange)
			return ok && strings.Contains(x.URL, "ghp_upgrade")
		})
	})
}

// TestDoH: DNS-over-HTTPS queries, wire and JSON, are answered by the DNS
// sink and recorded as DNS queries.
func TestDoH(t *testing.T) {
	addr, col, _ := startKeeping(t, testConfig(t))
	q := new(dns.Msg)
	q.SetQuestion("wire.exfil-data.com.", dns.TypeA)
	packed, _ := q.Pack()
	resp, err := http.Post("http://"+addr+"/dns-query", "application/dns-message", bytes.NewReader(packed))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var ans dns.Msg
	if err := ans.Unpack(b); err != nil || len(ans.Answer) != 1 || resp.Header.Get("Content-Type") != "application/dns-message" {
		t.Fatalf("wire answer: %v %v", err, ans.String())
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/resolve?name=json.exfil-data.com&type=A", nil)
	req.Header.Set("Accept", "application/dns-json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Answer []struct{ Data string } `json:"Answer"`
	}
	json.NewDecoder(resp.Body).Decode(&j)
	resp.Body.Close()
	if len(j.Answer) != 1 || net.ParseIP(j.Answer[0].Data).To4() == nil {
		t.Errorf("json answer %+v", j)
	}
	var names []string
	for _, d := range ofType[trace.DNSQuery](col) {
		names = append(names, d.Transport+":"+d.Name)
	}
	if strings.Join(names, ",") != "doh:wire.exfil-data.com.,doh:json.exfil-data.com." {
		t.Errorf("dns events %q", names)
	}
}

// TestShortRequestServedAtOnce: a request shorter than the HTTP/2 preface
// is answered without waiting for more bytes.
func TestShortRequestServedAtOnce(t *testing.T) {
	addr, col, _ := startKeeping(t, testConfig(t))
	c := dial(t, addr)
	start := time.Now()
	io.WriteString(c, "GET / HTTP/1.0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("a short request took %v to answer", took)
	}
	col.waitFor(t, "exchange", isType(trace.TypeHTTP))
}
