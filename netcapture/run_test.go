package netcapture

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
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
	if diff := cmp.Diff(want, natRules(cfg, "127.0.0.0/8", nil)); diff != "" {
		t.Errorf("natRules (-want +got):\n%s", diff)
	}
	// With closed ports, only the open ones are redirected.
	want = append(append(want[:4:4],
		[]string{"-A", "OUTPUT", "-p", "tcp", "-m", "multiport", "--dports", "22,80:81", "-j", "REDIRECT", "--to-ports", "1"},
		[]string{"-A", "OUTPUT", "-p", "tcp", "-m", "multiport", "--dports", "443", "-j", "REDIRECT", "--to-ports", "1"}),
		want[5])
	if diff := cmp.Diff(want, natRules(cfg, "127.0.0.0/8", []string{"22,80:81", "443"})); diff != "" {
		t.Errorf("natRules with closed ports (-want +got):\n%s", diff)
	}
}

func TestOpenPortSpecs(t *testing.T) {
	tests := []struct {
		name    string
		in      []string
		want    []string
		wantErr bool
	}{
		{name: "all open", in: []string{"80", "*"}, want: nil},
		{name: "fifteen per spec, ranges count two", in: []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14-20", "21"},
			want: []string{"1,2,3,4,5,6,7,8,9,10,11,12,13,14:20", "21"}},
		{name: "bad port", in: []string{"0"}, wantErr: true},
		{name: "reversed range", in: []string{"90-80"}, wantErr: true},
		{name: "not a number", in: []string{"http"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := openPortSpecs(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("specs (-want +got):\n%s", diff)
			}
		})
	}
	specs, err := openPortSpecs(nil)
	if err != nil || len(specs) < 5 {
		t.Fatalf("default open ports: %v %v", specs, err)
	}
	for _, s := range specs {
		n := 0
		for _, p := range strings.Split(s, ",") {
			n++
			if strings.Contains(p, ":") {
				n++
			}
		}
		if n > 15 {
			t.Errorf("spec %q holds %d ports, multiport takes 15", s, n)
		}
	}
}

func TestRestoreScript(t *testing.T) {
	got := restoreScript([][]string{{"-F", "OUTPUT"}, {"-A", "OUTPUT", "-d", "127.0.0.0/8", "-j", "RETURN"}},
		[][]string{{"-A", "OUTPUT", "!", "-d", "127.0.0.0/8", "-p", "tcp", "-j", "REJECT"}})
	want := "*nat\n-F OUTPUT\n-A OUTPUT -d 127.0.0.0/8 -j RETURN\nCOMMIT\n*filter\n-A OUTPUT ! -d 127.0.0.0/8 -p tcp -j REJECT\nCOMMIT\n"
	if got != want {
		t.Errorf("restoreScript = %q, want %q", got, want)
	}
	if got := restoreScript([][]string{{"-F", "OUTPUT"}}, nil); strings.Contains(got, "filter") {
		t.Errorf("no filter rules, yet %q", got)
	}
}
