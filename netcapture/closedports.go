package netcapture

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// Closed-port policy: a workstation's outbound connection to a port where
// no service plausibly listens is refused, and a sandbox that accepts
// every port tells a skill where it is. So only the ports in
// Config.OpenPorts (services, alternates, and the ports C2 listeners and
// reverse shells favour) reach the sinks; a SYN to any other port is
// logged by the kernel to an NFLOG group the jail reads, then answered
// with a reset (the client sees "connection refused"). Each attempt is a
// connection event with Refused set, attributed to its DNS name; past
// maxRefusedPerDst attempts to one address (a port scan) they are counted
// in one summary event at the end. When the NFLOG group cannot be read,
// every port stays open: evidence is never traded for realism.

// DefaultOpenPorts are the TCP ports that reach the sinks by default.
var DefaultOpenPorts = []string{
	"20-23", "25", "43", "53", "80-81", "88", "110", "113", "119", "143", "179", "389", "443-445", "465",
	"514", "563", "587", "636", "853", "873", "990-995", "1080", "1194", "1234", "1337", "1433", "1521",
	"1723", "1883", "2049", "2082-2083", "2086-2087", "2095-2096", "2181", "2222", "2375-2376", "2525",
	"3000-3001", "3128", "3306", "3389", "3690", "4000", "4242", "4443-4445", "4505-4506", "4567",
	"5000-5001", "5222-5223", "5228", "5432", "5555", "5601", "5671-5672", "5900-5901", "5984", "5985-5986",
	"6000", "6379", "6443", "6660-6669", "6697", "7000-7001", "7070", "7443", "7474", "7687", "7777",
	"8000-8099", "8123", "8181", "8200", "8333", "8443", "8448", "8500", "8545-8546", "8765", "8834",
	"8880-8889", "9000-9100", "9200", "9229", "9300", "9418", "9443", "9999", "10000", "10250", "11211",
	"12345", "13337", "15672", "18080-18081", "25565", "27017", "28015", "30303", "31337", "50050", "54321",
	"11434", "5173", "4200", "2379-2380", "7860", "8501", "50051", "4317-4318",
}

// maxRefusedPerDst bounds the events of refused attempts to one address.
const maxRefusedPerDst = 32

// openPortSpecs returns the multiport specs of the open ports, at most 15
// ports per spec (a range counts two), or nil when every port is open.
func openPortSpecs(open []string) ([]string, error) {
	if len(open) == 0 {
		open = DefaultOpenPorts
	}
	var specs []string
	var cur []string
	weight := 0
	for _, p := range open {
		p = strings.TrimSpace(p)
		if p == "*" {
			return nil, nil
		}
		lo, hi, isRange := strings.Cut(p, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 1 || b > 65535 || a > b {
			return nil, fmt.Errorf("open port %q: want N or N-M within 1-65535", p)
		}
		w, spec := 1, strconv.Itoa(a)
		if a != b {
			w, spec = 2, strconv.Itoa(a)+":"+strconv.Itoa(b)
		}
		if weight+w > 15 {
			specs = append(specs, strings.Join(cur, ","))
			cur, weight = nil, 0
		}
		cur = append(cur, spec)
		weight += w
	}
	if len(cur) > 0 {
		specs = append(specs, strings.Join(cur, ","))
	}
	return specs, nil
}

// parseNFLOG reads one netlink datagram from an NFLOG group and returns the
// TCP SYNs it logged, as (source, original destination). It is bounded by
// b and fuzzed: the packets are the sandbox's.
func parseNFLOG(b []byte) []nflogPacket {
	var out []nflogPacket
	for len(b) >= 16 {
		n := int(binary.NativeEndian.Uint32(b[0:4]))
		typ := binary.NativeEndian.Uint16(b[4:6])
		if n < 16 || n > len(b) {
			return out
		}
		msg := b[16:n]
		if typ == nflogMsgPacket && len(msg) >= 4 {
			attrs := msg[4:]
			for len(attrs) >= 4 {
				al := int(binary.NativeEndian.Uint16(attrs[0:2]))
				at := binary.NativeEndian.Uint16(attrs[2:4]) & 0x3fff
				if al < 4 || al > len(attrs) {
					break
				}
				if at == nfulaPayload {
					if p, ok := parseIPTCP(attrs[4:al]); ok {
						out = append(out, p)
					}
				}
				adv := (al + 3) &^ 3
				if adv > len(attrs) {
					break
				}
				attrs = attrs[adv:]
			}
		}
		adv := (n + 3) &^ 3
		if adv > len(b) {
			return out
		}
		b = b[adv:]
	}
	return out
}

// Netlink constants of NFLOG (linux/netfilter/nfnetlink_log.h).
const (
	nfnlSubsysULOG  = 4
	nflogMsgPacket  = nfnlSubsysULOG << 8 // | NFULNL_MSG_PACKET (0)
	nflogMsgConfig  = nfnlSubsysULOG<<8 | 1
	nfulaPayload    = 9
	nfulaCfgCmd     = 1
	nfulaCfgMode    = 2
	nfulnlCmdBind   = 1
	nfulnlCmdPFBind = 3
	nfulnlCopyPkt   = 2
	nflogGroup      = 15003
)

type nflogPacket struct {
	src, dst netip.AddrPort
}

// parseIPTCP reads the addresses and ports of an IPv4 or IPv6 TCP packet.
func parseIPTCP(p []byte) (nflogPacket, bool) {
	if len(p) < 1 {
		return nflogPacket{}, false
	}
	var src, dst netip.Addr
	var tcp []byte
	switch p[0] >> 4 {
	case 4:
		ihl := int(p[0]&15) * 4
		if len(p) < 20 || ihl < 20 || len(p) < ihl+4 || p[9] != 6 {
			return nflogPacket{}, false
		}
		src, dst = netip.AddrFrom4([4]byte(p[12:16])), netip.AddrFrom4([4]byte(p[16:20]))
		tcp = p[ihl:]
	case 6:
		if len(p) < 44 || p[6] != 6 {
			return nflogPacket{}, false
		}
		src, dst = netip.AddrFrom16([16]byte(p[8:24])), netip.AddrFrom16([16]byte(p[24:40]))
		tcp = p[40:]
	default:
		return nflogPacket{}, false
	}
	sp, dp := binary.BigEndian.Uint16(tcp[0:2]), binary.BigEndian.Uint16(tcp[2:4])
	return nflogPacket{src: netip.AddrPortFrom(src, sp), dst: netip.AddrPortFrom(dst, dp)}, true
}

// refusedLog turns logged SYNs into connection events.
type refusedLog struct {
	emit  func(trace.Event)
	names *Names
	now   func() time.Time

	mu      sync.Mutex
	perDst  map[netip.Addr]int
	dropped map[netip.Addr]int
}

func newRefusedLog(emit func(trace.Event), names *Names) *refusedLog {
	return &refusedLog{emit: emit, names: names, now: time.Now,
		perDst: map[netip.Addr]int{}, dropped: map[netip.Addr]int{}}
}

func (l *refusedLog) record(p nflogPacket) {
	dst := p.dst.Addr().Unmap()
	l.mu.Lock()
	if len(l.perDst) >= 4*maxNames {
		l.mu.Unlock()
		return
	}
	l.perDst[dst]++
	over := l.perDst[dst] > maxRefusedPerDst
	if over {
		l.dropped[dst]++
	}
	l.mu.Unlock()
	if over {
		return
	}
	c := &trace.Connection{Proto: "tcp", Client: p.src.String(), DstIP: dst.String(), DstPort: int(p.dst.Port()), Refused: true}
	c.Name, _ = l.names.Lookup(dst)
	l.emit(trace.Event{Time: l.now().UTC(), Source: trace.SourceTCP, Type: trace.TypeConnection, Data: c})
}

// flush reports the attempts past the per-address cap.
func (l *refusedLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for dst, n := range l.dropped {
		c := &trace.Connection{Proto: "tcp", DstIP: dst.String(), Refused: true}
		c.Name, _ = l.names.Lookup(dst)
		l.emit(trace.Event{Time: l.now().UTC(), Source: trace.SourceTCP, Type: trace.TypeConnection, Count: n, Data: c})
	}
	l.dropped = map[netip.Addr]int{}
}

// serveRefused reads logged SYNs from src until ctx ends.
func serveRefused(ctx context.Context, src interface {
	Read([]byte) (int, error)
	Close() error
}, log *refusedLog) error {
	stop := context.AfterFunc(ctx, func() { src.Close() })
	defer stop()
	defer log.flush()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, errClosedLog) {
				return nil
			}
			if isTimeout(err) {
				continue
			}
			return fmt.Errorf("closed-port log: read: %w", err)
		}
		for _, p := range parseNFLOG(buf[:n]) {
			log.record(p)
		}
	}
}

var errClosedLog = errors.New("closed-port log closed")
