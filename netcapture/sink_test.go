package netcapture

//lint:file-ignore SA1019 the HTTP/2 clients of these tests reach the sink by prior knowledge over a dialled connection, which only x/net/http2.Transport does

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
	"golang.org/x/net/http2"
)

func caPool(t testing.TB, cfg Config) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.CACert) {
		t.Fatal("CA PEM does not parse")
	}
	return pool
}

// intermediates pools the certificates a server sent after its leaf.
func intermediates(chain []*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range chain[1:] {
		p.AddCert(c)
	}
	return p
}

// startProxy serves the explicit proxy on loopback.
func startProxy(t *testing.T, cfg Config) (*url.URL, *collector) {
	t.Helper()
	col := &collector{}
	s, err := NewSink(col.emit, nil, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln := listenTCP(t)
	serveInBackground(t, func(ctx context.Context) error { return s.ServeProxy(ctx, ln) })
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}, col
}

// startTransparent serves the transparent listener, with every connection's
// original destination given by dst (no iptables needed on loopback).
func startTransparent(t testing.TB, cfg Config, names *Names, dst netip.AddrPort) (string, *collector) {
	t.Helper()
	col := &collector{}
	s, err := NewSink(col.emit, names, cfg, func(net.Conn) (netip.AddrPort, error) { return dst, nil })
	if err != nil {
		t.Fatal(err)
	}
	ln := listenTCP(t)
	serveInBackground(t, func(ctx context.Context) error { return s.ServeTransparent(ctx, ln) })
	return ln.Addr().String(), col
}

func TestProxyInterceptsHTTPS(t *testing.T) {
	cfg := testConfig(t)
	proxyURL, col := startProxy(t, cfg)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(proxyURL),
		TLSClientConfig: &tls.Config{RootCAs: caPool(t, cfg)},
	}}
	resp, err := client.Post("https://api.example.org/v1/upload?k=v", "text/plain", strings.NewReader("AKIAEXAMPLESECRET"))
	if err != nil {
		t.Fatalf("POST through the proxy with the trace CA trusted: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"ok":true`) {
		t.Errorf("response = %d %q", resp.StatusCode, body)
	}
	leaf := resp.TLS.PeerCertificates[0]
	if leaf.Subject.CommonName != "api.example.org" || strings.Contains(leaf.Issuer.String(), "goproxy") {
		t.Errorf("leaf subject %q issuer %q", leaf.Subject, leaf.Issuer)
	}
	ev := col.waitFor(t, "https exchange", func(e trace.Event) bool {
		x, ok := e.Data.(*trace.HTTPExchange)
		return ok && x.Method == "POST"
	})
	x := ev.Data.(*trace.HTTPExchange)
	if x.URL != "https://api.example.org/v1/upload?k=v" || !x.TLS || !x.Proxy || x.SNI != "api.example.org" ||
		string(x.Body) != "AKIAEXAMPLESECRET" || x.BodySize != 17 || x.Status != 200 {
		t.Errorf("exchange = %+v", x)
	}
	col.waitFor(t, "connect", func(e trace.Event) bool {
		x, ok := e.Data.(*trace.HTTPExchange)
		return ok && x.Method == "CONNECT" && x.URL == "api.example.org:443"
	})

	// Plain HTTP through the proxy is answered, not forwarded.
	resp, err = client.Get("http://plain.example/install.sh")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "Setup complete.") || !strings.Contains(string(body), cfg.Marker.Path) {
		t.Errorf("install.sh through the proxy = %q, want the second stage", body)
	}
}

// TestProxyNeverTunnels points CONNECT at a real TLS server on loopback and
// proves none of its bytes come back: the tunnel is intercepted.
func TestProxyNeverTunnels(t *testing.T) {
	t.Parallel() // the raw flow waits out the catch-all's idle timeout (3 s)
	var hits atomic.Int64
	const secret = "UPSTREAM-BYTES-7c1e"
	upstream := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, secret)
	}))
	t.Cleanup(upstream.Close)
	cfg := testConfig(t)
	proxyURL, col := startProxy(t, cfg)

	t.Run("tls through CONNECT", func(t *testing.T) {
		// The client would accept any certificate: only interception
		// keeps the upstream's bytes out.
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			Proxy:           http.ProxyURL(proxyURL),
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		}}
		resp, err := client.Get(upstream.URL + "/secret")
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), secret) {
			t.Fatalf("upstream bytes came back through the proxy: %q", body)
		}
		if pool := caPool(t, cfg); resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
			t.Fatal("no TLS state")
		} else if _, err := resp.TLS.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: intermediates(resp.TLS.PeerCertificates)}); err != nil {
			t.Errorf("served certificate is not from the trace CA: %v", err)
		}
	})

	t.Run("raw bytes through CONNECT", func(t *testing.T) {
		c, err := net.Dial("tcp", proxyURL.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		host := upstream.Listener.Addr().String()
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		status, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(status, "HTTP/1.1 200") {
			t.Fatalf("CONNECT status = %q, %v", status, err)
		}
		io.WriteString(c, "SSH-2.0-probe\r\n")
		got, _ := io.ReadAll(br)
		if bytes.Contains(got, []byte(secret)) {
			t.Errorf("upstream bytes came back: %q", got)
		}
		col.waitFor(t, "tunnelled raw bytes", func(e trace.Event) bool {
			cn, ok := e.Data.(*trace.Connection)
			return ok && bytes.Contains(cn.FirstBytes, []byte("SSH-2.0-probe"))
		})
	})
	if n := hits.Load(); n != 0 {
		t.Errorf("upstream was reached %d times", n)
	}
}

func TestTransparentTLS(t *testing.T) {
	cfg := testConfig(t)
	names := NewNames()
	v4, _ := names.Addrs("evil.example")
	addr, col := startTransparent(t, cfg, names, netip.AddrPortFrom(v4, 443))

	t.Run("intercepted", func(t *testing.T) {
		c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "evil.example", RootCAs: caPool(t, cfg), NextProtos: []string{"h2", "http/1.1"}})
		if err != nil {
			t.Fatalf("handshake with the trace CA trusted: %v", err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /payload.json HTTP/1.1\r\nHost: evil.example\r\nUser-Agent: python-requests/2.31\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(body), "status") {
			t.Errorf("response = %d %v %q", resp.StatusCode, resp.Header, body)
		}
		hello := col.waitFor(t, "tls hello", isType(trace.TypeTLSHello)).Data.(*trace.TLSHello)
		if hello.SNI != "evil.example" || !hello.Intercepted || hello.DstIP != v4.String() || hello.DstPort != 443 ||
			strings.Join(hello.ALPN, ",") != "h2,http/1.1" || len(hello.Versions) == 0 {
			t.Errorf("hello = %+v", hello)
		}
		x := col.waitFor(t, "exchange", isType(trace.TypeHTTP)).Data.(*trace.HTTPExchange)
		if x.URL != "https://evil.example/payload.json" || !x.TLS || x.Proxy || x.DstIP != v4.String() || x.Response != "file:json" {
			t.Errorf("exchange = %+v", x)
		}
	})

	t.Run("h2-only client", func(t *testing.T) {
		tr := &http2.Transport{
			TLSClientConfig: &tls.Config{RootCAs: caPool(t, cfg)},
			DialTLSContext: func(ctx context.Context, _, _ string, tc *tls.Config) (net.Conn, error) {
				tc = tc.Clone()
				tc.ServerName = "grpc.example"
				return (&tls.Dialer{Config: tc}).DialContext(ctx, "tcp", addr)
			},
		}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://grpc.example/pkg.Service/Method")
		if err != nil {
			t.Fatalf("h2 GET: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
			t.Errorf("response %d over %s", resp.StatusCode, resp.Proto)
		}
		col.waitFor(t, "h2 exchange", func(e trace.Event) bool {
			x, ok := e.Data.(*trace.HTTPExchange)
			return ok && x.Proto == "HTTP/2.0" && x.URL == "https://grpc.example/pkg.Service/Method" && x.TLS
		})
	})

	t.Run("other alpn completes and reaches the catch-all", func(t *testing.T) {
		c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "mqtt.example", RootCAs: caPool(t, cfg), NextProtos: []string{"mqtt"}})
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		io.WriteString(c, "\x10\x0cMQTT-connect")
		c.Close()
		col.waitFor(t, "tls catch-all", func(e trace.Event) bool {
			cn, ok := e.Data.(*trace.Connection)
			return ok && string(cn.FirstBytes) == "\x10\x0cMQTT-connect"
		})
	})

	t.Run("handshake fails but the hello is recorded", func(t *testing.T) {
		col.mu.Lock()
		col.events = nil
		col.mu.Unlock()
		_, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "untrusting.example", NextProtos: []string{"acme-tls/1"}})
		if err == nil {
			t.Fatal("handshake succeeded without the CA trusted")
		}
		hello := col.waitFor(t, "tls hello", isType(trace.TypeTLSHello)).Data.(*trace.TLSHello)
		if hello.SNI != "untrusting.example" || hello.Intercepted || hello.Error == "" || strings.Join(hello.ALPN, ",") != "acme-tls/1" {
			t.Errorf("hello = %+v", hello)
		}
	})
}

func TestTransparentHTTPAndCatchAll(t *testing.T) {
	cfg := testConfig(t)
	cfg.BodyCap = 8
	names := NewNames()
	v4, _ := names.Addrs("c2.example")
	dst := netip.AddrPortFrom(v4, 80)
	addr, col := startTransparent(t, cfg, names, dst)

	t.Run("plain http", func(t *testing.T) {
		resp, err := http.Post("http://"+addr+"/collect", "application/octet-stream", strings.NewReader("0123456789abcdef"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		x := col.waitFor(t, "exchange", isType(trace.TypeHTTP)).Data.(*trace.HTTPExchange)
		if x.Method != "POST" || x.URL != "http://"+addr+"/collect" || string(x.Body) != "01234567" ||
			x.BodySize != 16 || !x.BodyTruncated || x.TLS || x.DstPort != 80 {
			t.Errorf("exchange = %+v", x)
		}
		// The digest covers the whole body, past the cap.
		if x.Digest != sha256Hex("0123456789abcdef") {
			t.Errorf("body digest %s, want the whole body's", x.Digest)
		}
	})

	t.Run("raw tcp", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "\x00\x01hello ghp_secret\n")
		c.Close()
		cn := col.waitFor(t, "connection", isType(trace.TypeConnection)).Data.(*trace.Connection)
		if cn.Proto != "tcp" || string(cn.FirstBytes) != "\x00\x01hello ghp_secret\n" || cn.Size != 19 ||
			cn.DstIP != v4.String() || cn.DstPort != 80 || cn.Name != "c2.example" ||
			cn.Digest != sha256Hex("\x00\x01hello ghp_secret\n") {
			t.Errorf("connection = %+v", cn)
		}
	})
}

// TestRejectedHTTPIsRecorded sends a request the HTTP server refuses
// before any handler runs: its bytes must still reach the events.
func TestRejectedHTTPIsRecorded(t *testing.T) {
	t.Parallel() // the connection event comes at the catch-all's idle timeout (3 s)
	addr, col := startTransparent(t, testConfig(t), NewNames(), netip.MustParseAddrPort("198.51.100.30:80"))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := "GET /x HTTP/1.1\r\nHost: a.example\r\nX-Leak ghp_rejected\r\n\r\n"
	io.WriteString(c, req)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	status, _ := bufio.NewReader(c).ReadString('\n')
	if !strings.HasPrefix(status, "HTTP/1.1 400") {
		t.Fatalf("status = %q, want the server's 400", status)
	}
	cn := col.waitFor(t, "connection", isType(trace.TypeConnection)).Data.(*trace.Connection)
	if string(cn.FirstBytes) != req || cn.DstIP != "198.51.100.30" || cn.Protocol != "http-malformed" {
		t.Errorf("connection = %+v", cn)
	}
	for _, e := range col.all() {
		if e.Type == trace.TypeHTTP {
			t.Errorf("unexpected exchange %+v", e.Data)
		}
	}
}

func TestCatchAllBanner(t *testing.T) {
	cfg := testConfig(t)
	addr, col := startTransparent(t, cfg, NewNames(), netip.MustParseAddrPort("198.51.100.23:22"))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "SSH-2.0-OpenSSH") {
		t.Fatalf("banner = %q, %v", line, err)
	}
	io.WriteString(c, "SSH-2.0-paramiko_3.4\r\n")
	c.Close()
	cn := col.waitFor(t, "connection", isType(trace.TypeConnection)).Data.(*trace.Connection)
	if cn.Banner != line || string(cn.FirstBytes) != "SSH-2.0-paramiko_3.4\r\n" || cn.DstIP != "198.51.100.23" {
		t.Errorf("connection = %+v", cn)
	}
}

// TestCatchAllShellProbe: a raw flow that looks like a shell is sent one
// command whose answer must be computed; only a flow that computes it
// counts as answered.
func TestCatchAllShellProbe(t *testing.T) {
	t.Parallel() // each case waits for a probe or its absence (up to 2 s)
	probeRe := regexp.MustCompile(`^echo (\w+)\$\(\((\d+)\+(\d+)\)\)(\w+)\n$`)
	// shell evaluates the probe like sh would; echo sends the line back
	// as a terminal does; none sends nothing.
	shell := func(line string) string {
		m := probeRe.FindStringSubmatch(line)
		if m == nil {
			return "sh: 1: syntax error\n$ "
		}
		a, _ := strconv.Atoi(m[2])
		b, _ := strconv.Atoi(m[3])
		return fmt.Sprintf("%s%d%s\n$ ", m[1], a+b, m[4])
	}
	echo := func(line string) string { return line + "$ " }
	tests := []struct {
		name         string
		first        string
		reply        func(string) string
		wantProbe    bool
		wantAnswered bool
	}{
		{"prompt, a shell answers", "/bin/sh: 0: can't access tty; job control turned off\n$ ", shell, true, true},
		{"user prompt, a shell answers", "dev@build-7:~$ ", shell, true, true},
		{"prompt, a terminal echoes the line", "$ ", echo, true, false},
		{"prompt, nothing comes back", "# ", nil, true, false},
		{"not a shell", "HELLO agent-7 v2\n", shell, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a sink each
			cfg := testConfig(t)
			addr, col := startTransparent(t, cfg, NewNames(), netip.MustParseAddrPort("198.51.100.24:4444"))
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, tc.first)
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			line, err := bufio.NewReader(c).ReadString('\n')
			if tc.wantProbe != (err == nil) {
				t.Fatalf("probe line = %q, %v; want a probe: %v", line, err, tc.wantProbe)
			}
			if err == nil && !probeRe.MatchString(line) {
				t.Fatalf("probe line = %q, not a computed echo", line)
			}
			if err == nil && tc.reply != nil {
				io.WriteString(c, tc.reply(line))
			}
			c.Close()
			cn := col.waitFor(t, "connection", isType(trace.TypeConnection)).Data.(*trace.Connection)
			if (cn.Probe != "") != tc.wantProbe || cn.ProbeAnswered != tc.wantAnswered {
				t.Errorf("probe %q answered %v; want probe %v answered %v", cn.Probe, cn.ProbeAnswered, tc.wantProbe, tc.wantAnswered)
			}
			if !strings.HasPrefix(string(cn.FirstBytes), tc.first) {
				t.Errorf("first bytes %q do not start with what the client sent", cn.FirstBytes)
			}
		})
	}
}
