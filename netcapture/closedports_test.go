package netcapture

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"testing"

	"github.com/sandboxctl/sandboxctl/trace"
)

// nflogMsg builds one NFLOG packet message holding pkt as its payload.
func nflogMsg(pkt []byte) []byte {
	attr := make([]byte, 4+len(pkt))
	binary.NativeEndian.PutUint16(attr[0:], uint16(4+len(pkt)))
	binary.NativeEndian.PutUint16(attr[2:], nfulaPayload)
	copy(attr[4:], pkt)
	for len(attr)%4 != 0 {
		attr = append(attr, 0)
	}
	b := make([]byte, 16+4, 16+4+len(attr))
	b = append(b, attr...)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:], nflogMsgPacket)
	b[16] = 2 // AF_INET
	return b
}

func synV4(src, dst netip.AddrPort) []byte {
	p := make([]byte, 40)
	p[0], p[9] = 0x45, 6
	s, d := src.Addr().As4(), dst.Addr().As4()
	copy(p[12:], s[:])
	copy(p[16:], d[:])
	binary.BigEndian.PutUint16(p[20:], src.Port())
	binary.BigEndian.PutUint16(p[22:], dst.Port())
	p[33] = 0x02 // SYN
	return p
}

func synV6(src, dst netip.AddrPort) []byte {
	p := make([]byte, 60)
	p[0], p[6] = 0x60, 6
	s, d := src.Addr().As16(), dst.Addr().As16()
	copy(p[8:], s[:])
	copy(p[24:], d[:])
	binary.BigEndian.PutUint16(p[40:], src.Port())
	binary.BigEndian.PutUint16(p[42:], dst.Port())
	return p
}

func TestParseNFLOG(t *testing.T) {
	a := nflogPacket{netip.MustParseAddrPort("127.0.0.1:40312"), netip.MustParseAddrPort("104.16.5.9:47291")}
	b := nflogPacket{netip.MustParseAddrPort("[::1]:40313"), netip.MustParseAddrPort("[2606:4700::1]:31999")}
	msgs := append(nflogMsg(synV4(a.src, a.dst)), nflogMsg(synV6(b.src, b.dst))...)
	udp := synV4(a.src, a.dst)
	udp[9] = 17
	msgs = append(msgs, nflogMsg(udp)...)
	got := parseNFLOG(msgs)
	if want := []nflogPacket{a, b}; !slices.Equal(want, got) {
		t.Errorf("packets = %v, want %v", got, want)
	}
	if got := parseNFLOG(msgs[:30]); len(got) != 0 {
		t.Errorf("a cut message gave %v", got)
	}
}

func FuzzParseNFLOG(f *testing.F) {
	f.Add(nflogMsg(synV4(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("1.2.3.4:5"))))
	f.Add(nflogMsg(synV6(netip.MustParseAddrPort("[::1]:1"), netip.MustParseAddrPort("[2001:db8::1]:5"))))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range parseNFLOG(b) {
			if !p.src.IsValid() || !p.dst.IsValid() {
				t.Fatalf("invalid packet %+v", p)
			}
		}
	})
}

func TestRefusedLogCapsPerDestination(t *testing.T) {
	col := &collector{}
	names := NewNames()
	v4, _ := names.Addrs("scanme.example.com")
	l := newRefusedLog(col.emit, names)
	for port := range maxRefusedPerDst + 10 {
		l.record(nflogPacket{netip.MustParseAddrPort("127.0.0.1:5000"), netip.AddrPortFrom(v4, uint16(40000+port))})
	}
	l.flush()
	evs := col.all()
	if len(evs) != maxRefusedPerDst+1 {
		t.Fatalf("%d events, want %d and one summary", len(evs), maxRefusedPerDst+1)
	}
	first := evs[0].Data.(*trace.Connection)
	if !first.Refused || first.Name != "scanme.example.com" || first.DstPort != 40000 || first.Size != 0 {
		t.Errorf("first = %+v", first)
	}
	if last := evs[len(evs)-1]; last.Count != 10 || !last.Data.(*trace.Connection).Refused {
		t.Errorf("summary = %+v %+v", last, last.Data)
	}
}
