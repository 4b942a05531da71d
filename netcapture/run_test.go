package netcapture

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
	"github.com/sandboxctl/sandboxctl/trace"
)

func freePort(t *testing.T) int {
	t.Helper()
	ln := listenTCP(t)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestRunServesAndSignalsReady runs the jail's main on loopback without the
// network setup (that needs a namespace of its own: see the Docker test).
func TestRunServesAndSignalsReady(t *testing.T) {
	cfg := testConfig(t)
	cfg.SkipNetworkSetup = true
	cfg.TCPPort, cfg.DNSPort, cfg.UDPPort, cfg.ProxyPort = freePort(t), freePort(t), freePort(t), freePort(t)

	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, pw); pw.Close() }()
	t.Cleanup(func() { cancel(); pr.Close() })

	lines := make(chan trace.Event, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var e trace.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("event line %q: %v", sc.Text(), err)
				return
			}
			lines <- e
		}
	}()
	next := func() trace.Event {
		select {
		case e, ok := <-lines:
			if !ok {
				t.Fatal("event stream ended")
			}
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
		}
		return trace.Event{}
	}

	ready := next()
	if n, ok := ready.Data.(*trace.Notice); !ok || n.Message != ReadyMessage || ready.Seq != 1 {
		t.Fatalf("first event = %+v, want the ready notice with seq 1", ready)
	}
	m := new(dns.Msg)
	m.SetQuestion("after.ready.example.", dns.TypeA)
	if _, _, err := (&dns.Client{Timeout: 3 * time.Second}).Exchange(m, net.JoinHostPort("127.0.0.1", itoa(cfg.DNSPort))); err != nil {
		t.Fatalf("query the jail's DNS sink: %v", err)
	}
	q := next()
	if d, ok := q.Data.(*trace.DNSQuery); !ok || d.Name != "after.ready.example." || q.Seq != 2 {
		t.Errorf("second event = %+v, want the query with seq 2", q)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after ctx end = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after ctx end")
	}
}

func TestRunRefusesConfigWithoutCA(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SkipNetworkSetup = true
	if err := Run(t.Context(), cfg, io.Discard); err == nil {
		t.Error("Run without a CA = nil, want an error")
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestNatRulesOrder pins the order that makes the jail work: DNS to any
// address first, then loopback left alone, then everything else.
func TestNatRulesOrder(t *testing.T) {
	cfg := Config{TCPPort: 1, DNSPort: 2, UDPPort: 3}
	want := [][]string{
		{"-F", "OUTPUT"},
		{"-A", "OUTPUT", "-p", "udp", "--dport", "53", "-j", "REDIRECT", "--to-ports", "2"},
		{"-A", "OUTPUT", "-p", "tcp", "--dport", "53", "-j", "REDIRECT", "--to-ports", "2"},
		{"-A", "OUTPUT", "-d", "127.0.0.0/8", "-j", "RETURN"},
		{"-A", "OUTPUT", "-p", "tcp", "-j", "REDIRECT", "--to-ports", "1"},
		{"-A", "OUTPUT", "-p", "udp", "-j", "REDIRECT", "--to-ports", "3"},
	}
	if diff := cmp.Diff(want, natRules(cfg, "127.0.0.0/8")); diff != "" {
		t.Errorf("natRules (-want +got):\n%s", diff)
	}
}
