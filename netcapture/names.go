package netcapture

import (
	"crypto/rand"
	"encoding/binary"
	"hash/fnv"
	"net/netip"
	"strings"
	"sync"
)

// Address policy: every name gets addresses that look like a real
// answer: taken from the public ranges of large hosting and CDN networks
// (a name resolving into 198.18.0.0/15, the benchmarking range, would tell
// a skill it is in a lab). The choice is keyed per Names (per trace), so
// two traces give a name different addresses, stable within each; and
// every address given is remembered, so a later connection to it is
// attributed to its name. IPv4 and IPv6 come from the same provider.
// Inside the jail every address lands in the sinks: none is ever dialled.

// provider is one network's address ranges.
type provider struct {
	v4 []netip.Prefix
	v6 netip.Prefix
}

var providers = []provider{
	{v4: prefixes("104.16.0.0/13", "172.64.0.0/13"), v6: netip.MustParsePrefix("2606:4700::/32")},                   // Cloudflare
	{v4: prefixes("151.101.0.0/16", "199.232.0.0/16"), v6: netip.MustParsePrefix("2a04:4e42::/32")},                 // Fastly
	{v4: prefixes("13.32.0.0/15", "18.160.0.0/15", "52.84.0.0/15"), v6: netip.MustParsePrefix("2600:9000::/28")},    // CloudFront
	{v4: prefixes("3.208.0.0/12", "54.144.0.0/12", "44.192.0.0/11"), v6: netip.MustParsePrefix("2600:1f18::/32")},   // AWS us-east-1
	{v4: prefixes("34.96.0.0/12", "35.184.0.0/13", "142.250.0.0/15"), v6: netip.MustParsePrefix("2607:f8b0::/32")},  // Google
	{v4: prefixes("20.42.0.0/15", "40.112.0.0/13", "52.224.0.0/11"), v6: netip.MustParsePrefix("2603:1030::/32")},   // Azure
	{v4: prefixes("185.199.108.0/22", "140.82.112.0/20"), v6: netip.MustParsePrefix("2606:50c0::/32")},              // GitHub
	{v4: prefixes("159.89.0.0/16", "167.99.0.0/16", "134.209.0.0/16"), v6: netip.MustParsePrefix("2604:a880::/32")}, // DigitalOcean
	{v4: prefixes("78.46.0.0/15", "88.198.0.0/16", "49.12.0.0/16"), v6: netip.MustParsePrefix("2a01:4f8::/32")},     // Hetzner
	{v4: prefixes("23.32.0.0/11", "2.16.0.0/13"), v6: netip.MustParsePrefix("2600:1400::/24")},                      // Akamai
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// maxNames bounds the allocator's memory: a tunnelling skill can ask for
// millions of names. Past it, names get a hashed address that is still
// stable but is not reversible.
const maxNames = 1 << 16

// Names gives every DNS name its own stable address and maps the address
// back to the name, so the TCP side can say which name a connection was
// for. It is safe for concurrent use.
type Names struct {
	key    [16]byte // per-trace: the same name maps elsewhere in another trace
	mu     sync.Mutex
	byName map[string][2]netip.Addr
	byAddr map[netip.Addr]string // given and configured addresses → name
}

// NewNames returns an empty allocator with a fresh key.
func NewNames() *Names {
	n := &Names{byName: map[string][2]netip.Addr{}, byAddr: map[netip.Addr]string{}}
	_, _ = rand.Read(n.key[:]) // crypto/rand never fails
	return n
}

// canonical lower-cases a name and drops its final dot.
func canonical(name string) string {
	return strings.TrimSuffix(strings.ToLower(name), ".")
}

// Addrs returns name's IPv4 and IPv6 addresses, choosing them on first
// use.
func (n *Names) Addrs(name string) (v4, v6 netip.Addr) {
	c := canonical(name)
	n.mu.Lock()
	defer n.mu.Unlock()
	if a, ok := n.byName[c]; ok {
		return a[0], a[1]
	}
	if len(n.byName) >= maxNames {
		return n.pick(c, 0)
	}
	for try := uint32(0); ; try++ {
		v4, v6 = n.pick(c, try)
		_, taken4 := n.byAddr[v4]
		_, taken6 := n.byAddr[v6]
		if !taken4 && !taken6 || try > 64 {
			break
		}
	}
	n.byName[c] = [2]netip.Addr{v4, v6}
	n.byAddr[v4] = c
	n.byAddr[v6] = c
	return v4, v6
}

// pick derives the try'th candidate addresses of a canonical name.
func (n *Names) pick(c string, try uint32) (netip.Addr, netip.Addr) {
	h := fnv.New128a()
	h.Write(n.key[:])
	var t [4]byte
	binary.BigEndian.PutUint32(t[:], try)
	h.Write(t[:])
	h.Write([]byte(c))
	sum := h.Sum(nil)
	x := binary.BigEndian.Uint64(sum[:8])
	y := binary.BigEndian.Uint64(sum[8:])
	p := providers[x%uint64(len(providers))]
	pre := p.v4[(x>>8)%uint64(len(p.v4))]
	v4 := hostIn(pre, y)
	v6 := hostIn6(p.v6, x>>16, y)
	return v4, v6
}

// hostIn is an address of pre chosen by r, never ending in .0 or .255.
func hostIn(pre netip.Prefix, r uint64) netip.Addr {
	base := binary.BigEndian.Uint32(pre.Addr().AsSlice())
	span := uint64(1) << (32 - pre.Bits())
	for i := uint64(0); ; i++ {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], base+uint32((r+i*7919)%span))
		if b[3] != 0 && b[3] != 255 {
			return netip.AddrFrom4(b)
		}
	}
}

// hostIn6 is an address of pre with its low 64 bits from a and b, shaped
// like a server's (a short interface id rather than a random one).
func hostIn6(pre netip.Prefix, a, b uint64) netip.Addr {
	out := pre.Addr().As16()
	bits := pre.Bits()
	// Random bits from the end of the prefix up to /64, then ::xxxx.
	var mid [8]byte
	binary.BigEndian.PutUint64(mid[:], a)
	for i := bits; i < 64; i++ {
		if mid[(i-bits)/8%8]>>(7-uint(i-bits)%8)&1 == 1 {
			out[i/8] |= 1 << (7 - uint(i)%8)
		}
	}
	binary.BigEndian.PutUint16(out[14:], uint16(b%0xfffe)+1)
	return netip.AddrFrom16(out)
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
