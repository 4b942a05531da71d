package netcapture

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

// BenchmarkHTTPSInterception does 1000 small HTTPS GETs per iteration
// through the transparent sink and 1000 to a local httptest TLS server,
// and reports both rates, their ratio and the latency the sink adds. Two
// shapes: one kept-alive connection, and a new connection (and TLS
// handshake) per request, as a script calling curl in a loop makes.
//
//	go test -run '^$' -bench HTTPSInterception -benchtime 3x ./netcapture
func BenchmarkHTTPSInterception(b *testing.B) {
	const n = 1000
	cfg := testConfig(b)
	// The direct server gets a leaf of the same kind (ECDSA P-256) as the
	// sink's, so the ratio measures the sink, not the key type.
	minter, err := newCertMinter(cfg.CACert, cfg.CAKey, time.Now)
	if err != nil {
		b.Fatal(err)
	}
	leaf, err := minter.leaf("127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	direct := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"status":"ok"}`+"\n")
	}))
	direct.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	direct.StartTLS()
	b.Cleanup(direct.Close)
	names := NewNames()
	v4, _ := names.Addrs("bench.example")
	// Events are encoded as the jail does (JSON lines), then dropped.
	ew := newEventWriter(io.Discard)
	b.Cleanup(func() { _ = ew.flush() })
	sink, err := NewSink(ew.Emit, names, cfg, func(net.Conn) (netip.AddrPort, error) { return netip.AddrPortFrom(v4, 443), nil })
	if err != nil {
		b.Fatal(err)
	}
	ln := listenTCP(b)
	serveInBackground(b, func(ctx context.Context) error { return sink.ServeTransparent(ctx, ln) })
	sinkAddr := ln.Addr().String()
	pool := caPool(b, cfg)

	for _, shape := range []struct {
		name      string
		keepAlive bool
	}{{"keepalive", true}, {"conn-per-request", false}} {
		b.Run(shape.name, func(b *testing.B) {
			directClient := &http.Client{Transport: &http.Transport{
				TLSClientConfig:   &tls.Config{RootCAs: caPool(b, cfg)},
				DisableKeepAlives: !shape.keepAlive,
			}}
			var d net.Dialer
			sinkClient := &http.Client{Transport: &http.Transport{
				DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					return d.DialContext(ctx, "tcp", sinkAddr)
				},
				TLSClientConfig:   &tls.Config{RootCAs: pool},
				DisableKeepAlives: !shape.keepAlive,
			}}
			get := func(c *http.Client, url string) {
				resp, err := c.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			var tDirect, tSink time.Duration
			for b.Loop() {
				start := time.Now()
				for range n {
					get(directClient, direct.URL+"/v1/ping")
				}
				tDirect += time.Since(start)
				start = time.Now()
				for range n {
					get(sinkClient, "https://bench.example/v1/ping")
				}
				tSink += time.Since(start)
			}
			reqs := float64(n * b.N)
			b.ReportMetric(reqs/tDirect.Seconds(), "direct-req/s")
			b.ReportMetric(reqs/tSink.Seconds(), "sink-req/s")
			b.ReportMetric(tSink.Seconds()/tDirect.Seconds(), "time-ratio")
			b.ReportMetric(float64((tSink-tDirect).Microseconds())/reqs, "added-µs/req")
		})
	}
}
