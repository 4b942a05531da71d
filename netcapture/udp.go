package netcapture

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// UDP catch-all policy: every datagram that is not DNS is recorded with its
// original destination (looked up in conntrack: REDIRECT hides it from the
// socket) and its first bytes, and never answered, so QUIC and the like
// fall back to TCP where the HTTPS sink sees them. A flood is recorded up
// to maxUDPPerFlow datagrams per flow; the rest are spooled whole (so they
// are scanned) and counted in one event when the catch-all stops. Past
// 4×maxNames flows, datagrams of new flows are only counted, in a notice
// marked Incomplete.

const maxUDPPerFlow = 50

// UDPOrigDstFunc returns where a datagram from client, REDIRECTed to the
// catch-all's port, was first sent.
type UDPOrigDstFunc func(client netip.AddrPort, port uint16) (netip.AddrPort, error)

// UDPCatchAll records datagrams. It is safe for concurrent use.
type UDPCatchAll struct {
	emit    func(trace.Event)
	names   *Names
	capN    int
	origDst UDPOrigDstFunc
	now     func() time.Time

	mu    sync.Mutex
	flows map[netip.AddrPort]*udpFlow
	// untracked counts datagrams of flows past the table's cap, and their
	// bytes: neither recorded nor kept.
	untracked, untrackedBytes int64
	// spool keeps the datagrams of a flow past its cap (nil: counted only).
	spool *Spool
}

type udpFlow struct {
	seen    int
	dropped int64
	bytes   int64
	conn    trace.Connection
	spool   *SpoolFile
}

// NewUDPCatchAll returns a catch-all reporting to emit, keeping capN bytes
// of each datagram. origDst nil: conntrack.
func NewUDPCatchAll(emit func(trace.Event), names *Names, capN int, origDst UDPOrigDstFunc) *UDPCatchAll {
	if names == nil {
		names = NewNames()
	}
	if origDst == nil {
		origDst = udpOriginalDst
	}
	if capN <= 0 {
		capN = DefaultConfig().FirstBytesCap
	}
	spool, _ := NewSpool("", 0, 0) // keeps nothing: no folder to fail on
	return &UDPCatchAll{emit: emit, names: names, capN: capN, origDst: origDst, now: time.Now,
		flows: map[netip.AddrPort]*udpFlow{}, spool: spool}
}

// Serve records datagrams on pc until ctx ends, then closes pc, reports
// the datagrams a flood went past the cap with, and returns nil.
func (u *UDPCatchAll) Serve(ctx context.Context, pc net.PacketConn) error {
	stop := context.AfterFunc(ctx, func() { pc.Close() })
	defer stop()
	defer u.flush()
	local, _ := netip.ParseAddrPort(pc.LocalAddr().String())
	buf := make([]byte, 65536)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if isTimeout(err) {
				continue
			}
			return fmt.Errorf("udp catch-all: read: %w", err)
		}
		client, _ := netip.ParseAddrPort(addr.String())
		u.record(client, local.Port(), buf[:n])
	}
}

// record reports one datagram. A flow is keyed by its client address (one
// socket); past maxUDPPerFlow datagrams it is only counted, without the
// conntrack lookup, so a flood costs little.
func (u *UDPCatchAll) record(client netip.AddrPort, port uint16, b []byte) {
	u.mu.Lock()
	f := u.flows[client]
	if f == nil {
		if len(u.flows) >= 4*maxNames {
			u.untracked++
			u.untrackedBytes += int64(len(b))
			u.mu.Unlock()
			return // past this a flood is a flood: counted, reported at the end
		}
		f = &udpFlow{}
		u.flows[client] = f
	}
	f.seen++
	over := f.seen > maxUDPPerFlow
	if over {
		f.dropped++
		f.bytes += int64(len(b))
		if f.spool == nil {
			f.spool = u.spool.Create("udp")
		}
		_, _ = f.spool.Write(b)
	}
	u.mu.Unlock()
	if over {
		return
	}
	sum := sha256.Sum256(b)
	c := trace.Connection{Proto: "udp", Client: client.String(), FirstBytes: capBytes(b, u.capN),
		Size: int64(len(b)), Truncated: len(b) > u.capN, Digest: hex.EncodeToString(sum[:])}
	if dst, err := u.origDst(client, port); err == nil {
		c.DstIP, c.DstPort = dst.Addr().Unmap().String(), int(dst.Port())
		c.Name, _ = u.names.Lookup(dst.Addr())
	}
	u.mu.Lock()
	f.conn = c
	u.mu.Unlock()
	u.emit(trace.Event{Time: u.now().UTC(), Source: trace.SourceUDP, Type: trace.TypeConnection, Data: &c})
}

// flush reports flows that went past the per-flow cap.
func (u *UDPCatchAll) flush() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, f := range u.flows {
		if f.dropped == 0 {
			continue
		}
		c := f.conn
		c.FirstBytes, c.Size, c.Truncated = nil, f.bytes, true
		if f.spool != nil {
			c.Spool, c.SpoolTruncated = f.spool.Close()
		}
		u.emit(trace.Event{Time: u.now().UTC(), Source: trace.SourceUDP, Type: trace.TypeConnection,
			Count: int(f.dropped), Data: &c})
	}
	if u.untracked > 0 {
		u.emit(trace.Event{Time: u.now().UTC(), Source: trace.SourceUDP, Type: trace.TypeJailNotice, Data: &trace.Notice{
			Message: fmt.Sprintf("%d datagrams (%d bytes) of flows past the catch-all's %d-flow table were counted, not recorded",
				u.untracked, u.untrackedBytes, 4*maxNames),
			Lost: u.untracked, Incomplete: true}})
		u.untracked, u.untrackedBytes = 0, 0
	}
	u.flows = map[netip.AddrPort]*udpFlow{}
}
