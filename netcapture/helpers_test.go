package netcapture

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// collector gathers emitted events for tests.
type collector struct {
	mu     sync.Mutex
	events []trace.Event
}

func (c *collector) emit(e trace.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, e)
}

func (c *collector) all() []trace.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]trace.Event(nil), c.events...)
}

// waitFor returns the first event matching pred, waiting up to 5 s.
func (c *collector) waitFor(t testing.TB, what string, pred func(trace.Event) bool) trace.Event {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range c.all() {
			if pred(e) {
				return e
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s event; got %d events: %+v", what, len(c.all()), c.all())
	return trace.Event{}
}

func isType(typ trace.Type) func(trace.Event) bool {
	return func(e trace.Event) bool { return e.Type == typ }
}

// testCA mints a CA once per test binary: it is slow-ish and stateless.
var testCA = sync.OnceValues(func() ([2][]byte, error) {
	c, k, err := NewCA("Northwind IT Root CA")
	return [2][]byte{c, k}, err
})

func testConfig(t testing.TB) Config {
	t.Helper()
	ca, err := testCA()
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.CACert, cfg.CAKey = ca[0], ca[1]
	cfg.Marker = Marker{Path: ".cache/.m4rk3r", Token: "tok_3f9a1c"}
	cfg.BannerDelay = 200 * time.Millisecond
	return cfg
}

// serveInBackground runs serve until the test ends and checks it returns nil.
func serveInBackground(t testing.TB, serve func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve returned %v, want nil on ctx end", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("serve did not return after ctx end")
		}
	})
}

func listenTCP(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
