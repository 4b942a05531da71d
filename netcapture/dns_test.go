package netcapture

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
	"github.com/sandboxctl/sandboxctl/trace"
)

// startDNS serves a DNS sink on UDP and TCP loopback ports.
func startDNS(t *testing.T, cfg Config) (udpAddr, tcpAddr string, names *Names, col *collector) {
	t.Helper()
	col = &collector{}
	names = NewNames()
	sink, err := NewDNSSink(col.emit, names, cfg)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := listenTCP(t)
	serveInBackground(t, func(ctx context.Context) error { return sink.Serve(ctx, pc) })
	serveInBackground(t, func(ctx context.Context) error { return sink.ServeTCP(ctx, ln) })
	return pc.LocalAddr().String(), ln.Addr().String(), names, col
}

func exchange(t *testing.T, net, addr string, m *dns.Msg) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: net, Timeout: 3 * time.Second}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("Exchange(%v) over %s: %v", m.Question, net, err)
	}
	return r
}

func TestDNSSinkAnswers(t *testing.T) {
	cfg := testConfig(t)
	cfg.NXDomain = []string{"blocked.example", "*.sinkhole.test"}
	cfg.DNSRecords = []string{"pool.example. 60 IN A 198.51.100.7", "pool.example. 60 IN TXT \"hello\""}
	udp, tcp, names, col := startDNS(t, cfg)

	v4, v6 := names.Addrs("leak.cdn-sync.net")
	tests := []struct {
		name      string
		net       string
		qname     string
		qtype     uint16
		wantRcode int
		want      []string // answers as rrString prints them
	}{
		{name: "A", net: "udp", qname: "leak.cdn-sync.net.", qtype: dns.TypeA, want: []string{"A " + v4.String()}},
		{name: "A is stable and case-blind", net: "tcp", qname: "LEAK.cdn-Sync.NET.", qtype: dns.TypeA, want: []string{"A " + v4.String()}},
		{name: "AAAA", net: "udp", qname: "leak.cdn-sync.net.", qtype: dns.TypeAAAA, want: []string{"AAAA " + v6.String()}},
		{name: "TXT", net: "udp", qname: "mail.corp.co.uk.", qtype: dns.TypeTXT, want: []string{`TXT "v=spf1 include:_spf.corp.co.uk ~all"`}},
		{name: "MX", net: "udp", qname: "eu.corp.com.", qtype: dns.TypeMX, want: []string{"MX 10 mail.corp.com."}},
		{name: "PTR of a given address", net: "udp", qname: reverse(t, v4), qtype: dns.TypePTR, want: []string{"PTR leak.cdn-sync.net."}},
		{name: "PTR of a given v6 address", net: "udp", qname: reverse(t, v6), qtype: dns.TypePTR, want: []string{"PTR leak.cdn-sync.net."}},
		{name: "reserved .example", net: "udp", qname: "a.b.example.", qtype: dns.TypeA, wantRcode: dns.RcodeNameError},
		{name: "reserved .test", net: "udp", qname: "api.test.", qtype: dns.TypeAAAA, wantRcode: dns.RcodeNameError},
		{name: "reserved .invalid", net: "tcp", qname: "x.invalid.", qtype: dns.TypeA, wantRcode: dns.RcodeNameError},
		{name: "reserved .onion", net: "udp", qname: "abc.onion.", qtype: dns.TypeA, wantRcode: dns.RcodeNameError},
		{name: "undelegated .internal", net: "udp", qname: "metadata.google.internal.", qtype: dns.TypeA, wantRcode: dns.RcodeNameError},
		{name: "single label", net: "udp", qname: "wpad.", qtype: dns.TypeA, wantRcode: dns.RcodeNameError},
		{name: "a public suffix has no address", net: "udp", qname: "co.uk.", qtype: dns.TypeA},
		{name: "the machine's own name", net: "udp", qname: hostname(t) + ".", qtype: dns.TypeA, want: []string{"A 127.0.1.1"}},
		{name: "PTR of an unknown address", net: "udp", qname: "9.9.9.9.in-addr.arpa.", qtype: dns.TypePTR, wantRcode: dns.RcodeNameError},
		{name: "localhost is loopback", net: "udp", qname: "api.localhost.", qtype: dns.TypeA, want: []string{"A 127.0.0.1"}},
		{name: "PTR of loopback", net: "udp", qname: "1.0.0.127.in-addr.arpa.", qtype: dns.TypePTR, want: []string{"PTR localhost."}},
		{name: "NXDOMAIN exact", net: "udp", qname: "blocked.example.", qtype: dns.TypeA, wantRcode: dns.RcodeNameError},
		{name: "NXDOMAIN suffix", net: "udp", qname: "a.b.sinkhole.test.", qtype: dns.TypeA, wantRcode: dns.RcodeNameError},
		{name: "configured A", net: "udp", qname: "pool.example.", qtype: dns.TypeA, want: []string{"A 198.51.100.7"}},
		{name: "configured name, other type", net: "udp", qname: "pool.example.", qtype: dns.TypeMX},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := udp
			if tt.net == "tcp" {
				addr = tcp
			}
			m := new(dns.Msg)
			m.SetQuestion(tt.qname, tt.qtype)
			r := exchange(t, tt.net, addr, m)
			if r.Rcode != tt.wantRcode {
				t.Errorf("rcode = %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tt.wantRcode])
			}
			var got []string
			for _, rr := range r.Answer {
				got = append(got, rrString(rr))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("answers mismatch (-want +got):\n%s", diff)
			}
			ev := col.waitFor(t, "dns query "+tt.qname, func(e trace.Event) bool {
				q, ok := e.Data.(*trace.DNSQuery)
				return ok && q.ID == m.Id && q.Name == tt.qname
			})
			q := ev.Data.(*trace.DNSQuery)
			if q.Transport != tt.net || q.QType != dns.TypeToString[tt.qtype] || q.Rcode != dns.RcodeToString[tt.wantRcode] {
				t.Errorf("event = %+v", q)
			}
		})
	}
	if ip, _ := netip.ParseAddr("198.51.100.7"); true {
		if name, ok := names.Lookup(ip); !ok || name != "pool.example" {
			t.Errorf("Lookup(configured address) = %q, %v; want pool.example", name, ok)
		}
	}
}

func reverse(t *testing.T, ip netip.Addr) string {
	t.Helper()
	r, err := dns.ReverseAddr(ip.String())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDNSSinkRecordsOddQueries(t *testing.T) {
	udp, _, _, col := startDNS(t, testConfig(t))

	t.Run("multi-question", func(t *testing.T) {
		m := new(dns.Msg)
		m.SetQuestion("one.example.org.", dns.TypeA)
		m.Question = append(m.Question, dns.Question{Name: "two.example.org.", Qtype: dns.TypeTXT, Qclass: dns.ClassINET})
		r := exchange(t, "udp", udp, m)
		if len(r.Answer) != 2 {
			t.Errorf("answers = %v, want one per question", r.Answer)
		}
		ev := col.waitFor(t, "multi-question", func(e trace.Event) bool {
			q, ok := e.Data.(*trace.DNSQuery)
			return ok && q.ID == m.Id
		})
		want := []string{"one.example.org. A", "two.example.org. TXT"}
		if diff := cmp.Diff(want, ev.Data.(*trace.DNSQuery).Questions); diff != "" {
			t.Errorf("questions (-want +got):\n%s", diff)
		}
	})

	t.Run("odd opcode", func(t *testing.T) {
		m := new(dns.Msg)
		m.SetQuestion("upd.example.", dns.TypeA)
		m.Opcode = dns.OpcodeUpdate
		r := exchange(t, "udp", udp, m)
		if r.Rcode != dns.RcodeNotImplemented {
			t.Errorf("rcode = %s, want NOTIMP", dns.RcodeToString[r.Rcode])
		}
		ev := col.waitFor(t, "update", func(e trace.Event) bool {
			q, ok := e.Data.(*trace.DNSQuery)
			return ok && q.ID == m.Id
		})
		if got := ev.Data.(*trace.DNSQuery).Opcode; got != "UPDATE" {
			t.Errorf("opcode = %q, want UPDATE", got)
		}
	})

	t.Run("long high-entropy labels", func(t *testing.T) {
		label := strings.Repeat("a9f3c2e7b1d4", 6)[:63]
		name := label + "." + label + ".t.exfil.example."
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeTXT)
		exchange(t, "udp", udp, m)
		col.waitFor(t, "tunnel name", func(e trace.Event) bool {
			q, ok := e.Data.(*trace.DNSQuery)
			return ok && q.Name == name
		})
	})

	t.Run("malformed", func(t *testing.T) {
		c, err := net.Dial("udp", udp)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// A header claiming one question, then a label running off the end.
		junk := []byte{0xbe, 0xef, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0x3f, 's', 'e', 'c'}
		if _, err := c.Write(junk); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		buf := make([]byte, 512)
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("no FORMERR reply: %v", err)
		}
		r := new(dns.Msg)
		if err := r.Unpack(buf[:n]); err != nil || r.Rcode != dns.RcodeFormatError || r.Id != 0xbeef {
			t.Errorf("reply = %v (err %v), want FORMERR for id 0xbeef", r, err)
		}
		ev := col.waitFor(t, "malformed", func(e trace.Event) bool {
			q, ok := e.Data.(*trace.DNSQuery)
			return ok && q.Malformed != ""
		})
		q := ev.Data.(*trace.DNSQuery)
		if string(q.Raw) != string(junk) || q.ID != 0xbeef {
			t.Errorf("malformed event = %+v, want raw bytes and id kept", q)
		}
	})
}

func TestNamesStableAndReversible(t *testing.T) {
	n := NewNames()
	a4, a6 := n.Addrs("A.Example.com.")
	b4, _ := n.Addrs("b.example.com")
	again4, again6 := n.Addrs("a.example.com")
	if a4 != again4 || a6 != again6 || a4 == b4 {
		t.Fatalf("addresses not stable or not distinct: %v %v %v %v", a4, again4, a6, b4)
	}
	for _, ip := range []netip.Addr{a4, a6} {
		if got, _ := n.Lookup(ip); got != "a.example.com" {
			t.Errorf("Lookup(%v) = %q, want a.example.com", ip, got)
		}
	}
	other := NewNames()
	differ := false
	for i := range 300 {
		name := strings.Repeat("x", i%50) + "n" + string(rune('a'+i%26)) + ".example" + string(rune('a'+i/26)) + ".com"
		v4, v6 := n.Addrs(name)
		if b := v4.As4()[3]; b == 0 || b == 255 {
			t.Fatalf("allocated %v, ending in .0 or .255", v4)
		}
		if !v4.IsGlobalUnicast() || v4.IsPrivate() || !v6.IsGlobalUnicast() || !inProviders(v4, v6) {
			t.Fatalf("%s got %v %v: not a public address of one provider", name, v4, v6)
		}
		if o4, _ := other.Addrs(name); o4 != v4 {
			differ = true
		}
		if got, _ := n.Lookup(v4); got != name {
			t.Fatalf("Lookup(%v) = %q, want %q", v4, got, name)
		}
	}
	if !differ {
		t.Error("two traces gave 300 names the same addresses: the choice is not keyed per trace")
	}
}

func inProviders(v4, v6 netip.Addr) bool {
	for _, p := range providers {
		for _, pre := range p.v4 {
			if pre.Contains(v4) && p.v6.Contains(v6) {
				return true
			}
		}
	}
	return false
}

func FuzzReverseAddr(f *testing.F) {
	for _, s := range []string{"1.0.18.198.in-addr.arpa", "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.2.0.0.0.1.0.0.2.ip6.arpa", "x.in-addr.arpa", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ip, ok := reverseAddr(s)
		if !ok {
			return
		}
		back, err := dns.ReverseAddr(ip.String())
		if err != nil {
			t.Fatalf("ReverseAddr(%v): %v", ip, err)
		}
		if again, ok := reverseAddr(canonical(back)); !ok || again != ip {
			t.Errorf("round trip of %q: %v → %q → %v", s, ip, back, again)
		}
	})
}

func FuzzDNSHandle(f *testing.F) {
	m := new(dns.Msg)
	m.SetQuestion("seed.example.", dns.TypeA)
	b, _ := m.Pack()
	f.Add(b)
	f.Add([]byte{0xbe, 0xef, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0x3f, 's'})
	sink, err := NewDNSSink(func(trace.Event) {}, nil, Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out := sink.handle(raw, "udp", "127.0.0.1:1")
		if out != nil {
			if err := new(dns.Msg).Unpack(out); err != nil {
				t.Errorf("reply does not parse: %v", err)
			}
		}
	})
}

func hostname(t *testing.T) string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		t.Skip("no host name")
	}
	return strings.ToLower(h)
}

// TestDNSModes checks the resolver's modes: "all" answers what a real
// resolver would not (a naive sandbox's tell), "none" answers nothing but
// the machine itself.
func TestDNSModes(t *testing.T) {
	for _, tc := range []struct {
		name, mode, qname string
		wantRcode         int
		wantAnswer        bool
	}{
		{name: "default: delegated name", qname: "leak.cdn-sync.net.", wantAnswer: true},
		{name: "default: reserved name", qname: "sandbox-check.invalid.", wantRcode: dns.RcodeNameError},
		{name: "all: reserved name resolves", mode: DNSAll, qname: "sandbox-check.invalid.", wantAnswer: true},
		{name: "all: single label resolves", mode: DNSAll, qname: "wpad.", wantAnswer: true},
		{name: "none: delegated name", mode: DNSNone, qname: "leak.cdn-sync.net.", wantRcode: dns.RcodeNameError},
		{name: "none: localhost still", mode: DNSNone, qname: "localhost.", wantAnswer: true},
		{name: "none: own name still", mode: DNSNone, qname: hostname(t) + ".", wantAnswer: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.DNSMode = tc.mode
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			udp, _, _, _ := startDNS(t, cfg)
			m := new(dns.Msg)
			m.SetQuestion(tc.qname, dns.TypeA)
			r := exchange(t, "udp", udp, m)
			if r.Rcode != tc.wantRcode || (len(r.Answer) > 0) != tc.wantAnswer {
				t.Errorf("%s in mode %q: rcode %s, %d answers; want %s, answer %v", tc.qname, tc.mode,
					dns.RcodeToString[r.Rcode], len(r.Answer), dns.RcodeToString[tc.wantRcode], tc.wantAnswer)
			}
		})
	}
	cfg := testConfig(t)
	cfg.DNSMode = "sometimes"
	if err := cfg.Validate(); err == nil {
		t.Error("an unknown dns mode validates")
	}
}
