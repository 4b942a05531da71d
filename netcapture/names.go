package netcapture

import (
	"encoding/binary"
	"hash/fnv"
	"net/netip"
	"strings"
	"sync"
)

// Fake address ranges. 198.18.0.0/15 is reserved for benchmarking (RFC
// 2544) and 2001:2::/48 is its IPv6 counterpart (RFC 5180): neither is
// routed on the internet, and inside the jail both land in the sinks.
var (
	fakeV4 = netip.MustParsePrefix("198.18.0.0/15")
	fakeV6 = netip.MustParsePrefix("2001:2::/48")
)

// maxNames bounds the allocator's memory: a tunnelling skill can ask for
// millions of names. Past it, names get a hashed address that is still
// stable but is not reversible.
const maxNames = 1 << 16

// Names gives every DNS name its own stable fake address and maps the
// address back to the name, so the TCP side can say which name a
// connection was for. It is safe for concurrent use.
type Names struct {
	mu     sync.Mutex
	next   uint32 // index of the next address in the fake ranges
	byName map[string]uint32
	byAddr map[netip.Addr]string // fake and configured addresses → name
}

// NewNames returns an empty allocator.
func NewNames() *Names {
	return &Names{next: 1, byName: map[string]uint32{}, byAddr: map[netip.Addr]string{}}
}

// canonical lower-cases a name and drops its final dot.
func canonical(name string) string {
	return strings.TrimSuffix(strings.ToLower(name), ".")
}

// Addrs returns name's fake IPv4 and IPv6 addresses, allocating them on
// first use.
func (n *Names) Addrs(name string) (v4, v6 netip.Addr) {
	c := canonical(name)
	n.mu.Lock()
	defer n.mu.Unlock()
	i, ok := n.byName[c]
	if !ok {
		if len(n.byName) >= maxNames || n.next >= 1<<17-1 {
			h := fnv.New32a()
			h.Write([]byte(c))
			i = h.Sum32()%(1<<17-2) + 1
			return indexV4(i), indexV6(i)
		}
		// Skip .0 and .255: some clients treat them as special.
		for i = n.next; indexV4(i).As4()[3] == 0 || indexV4(i).As4()[3] == 255; i++ {
		}
		n.next = i + 1
		n.byName[c] = i
		n.byAddr[indexV4(i)] = c
		n.byAddr[indexV6(i)] = c
	}
	return indexV4(i), indexV6(i)
}

// Bind records that addr stands for name (used for configured answers).
func (n *Names) Bind(addr netip.Addr, name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.byAddr) < 4*maxNames {
		n.byAddr[addr.Unmap()] = canonical(name)
	}
}

// Lookup returns the name addr was given for, if any.
func (n *Names) Lookup(addr netip.Addr) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	name, ok := n.byAddr[addr.Unmap()]
	return name, ok
}

func indexV4(i uint32) netip.Addr {
	b := fakeV4.Addr().As4()
	v := binary.BigEndian.Uint32(b[:]) + i
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b)
}

func indexV6(i uint32) netip.Addr {
	b := fakeV6.Addr().As16()
	binary.BigEndian.PutUint32(b[12:], i)
	return netip.AddrFrom16(b)
}
