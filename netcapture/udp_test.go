package netcapture

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

func TestUDPCatchAllRecordsAndCapsFloods(t *testing.T) {
	col := &collector{}
	names := NewNames()
	v4, _ := names.Addrs("telemetry.example")
	dst := netip.AddrPortFrom(v4, 4789)
	u := NewUDPCatchAll(col.emit, names, 8, func(netip.AddrPort, uint16) (netip.AddrPort, error) { return dst, nil })
	spoolDir := filepath.Join(t.TempDir(), "spool")
	u.spool, _ = NewSpool(spoolDir, 0, 0)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- u.Serve(ctx, pc) }()
	t.Cleanup(cancel)

	c, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const sent = maxUDPPerFlow + 10
	for range sent {
		if _, err := c.Write([]byte("datagram-with-a-secret")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // loopback UDP drops when the reader lags
	}
	first := col.waitFor(t, "udp datagram", isType(trace.TypeConnection)).Data.(*trace.Connection)
	if first.Proto != "udp" || string(first.FirstBytes) != "datagram" || first.Size != 22 || !first.Truncated ||
		first.DstIP != v4.String() || first.DstPort != 4789 || first.Name != "telemetry.example" {
		t.Errorf("first datagram = %+v", first)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(col.all()) < maxUDPPerFlow && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve = %v, want nil on ctx end", err)
	}
	evs := col.all()
	if len(evs) != maxUDPPerFlow+1 {
		t.Fatalf("got %d events, want %d datagrams and one summary", len(evs), maxUDPPerFlow+1)
	}
	last := evs[len(evs)-1]
	sum := last.Data.(*trace.Connection)
	if last.Count != sent-maxUDPPerFlow || sum.Size != 22*(sent-maxUDPPerFlow) || sum.Spool == "" {
		t.Errorf("summary = count %d, %+v", last.Count, last.Data)
	}
	// The datagrams past the cap are kept whole, for scanning.
	if b, err := os.ReadFile(filepath.Join(spoolDir, sum.Spool)); err != nil || len(b) != 22*(sent-maxUDPPerFlow) {
		t.Errorf("spooled %d bytes (%v), want %d", len(b), err, 22*(sent-maxUDPPerFlow))
	}
}
