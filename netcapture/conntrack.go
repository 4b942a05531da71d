package netcapture

import (
	"net/netip"
	"strconv"
	"strings"
)

// matchConntrack parses one /proc/net/nf_conntrack line and, when it is the
// UDP flow whose reply tuple goes from the catch-all's port to client,
// returns its original destination. The line holds the original tuple then
// the reply tuple:
//
//	ipv4 2 udp 17 30 src=A dst=B sport=P dport=Q [UNREPLIED] src=C dst=A' sport=R dport=P' ...
//
// The reply tuple is what the catch-all's socket sees: when one socket
// sends to several destinations, every flow but the first would have the
// same reply tuple, and NAT gives the others another source port (P' is
// not P), so the client port the catch-all sees is P' and only the reply
// tuple names it.
func matchConntrack(line string, client netip.AddrPort, port uint16) (netip.AddrPort, bool) {
	f := strings.Fields(line)
	if len(f) < 3 || f[2] != "udp" {
		return netip.AddrPort{}, false
	}
	var tuples [2]map[string]string
	i := -1
	for _, kv := range f {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if k == "src" {
			i++
			if i > 1 {
				break
			}
			tuples[i] = map[string]string{}
		}
		if i >= 0 && i <= 1 {
			tuples[i][k] = v
		}
	}
	if i < 1 {
		return netip.AddrPort{}, false
	}
	orig, reply := tuples[0], tuples[1]
	rsport, err1 := strconv.ParseUint(reply["sport"], 10, 16)
	rdport, err2 := strconv.ParseUint(reply["dport"], 10, 16)
	dport, err3 := strconv.ParseUint(orig["dport"], 10, 16)
	dst, err4 := netip.ParseAddr(orig["dst"])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return netip.AddrPort{}, false
	}
	if uint16(rdport) != client.Port() || uint16(rsport) != port {
		return netip.AddrPort{}, false
	}
	if rdst, err := netip.ParseAddr(reply["dst"]); err != nil || (rdst != client.Addr().Unmap() && !rdst.IsUnspecified()) {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(dst, uint16(dport)), true
}
