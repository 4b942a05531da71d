package netcapture

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/sandboxctl/sandboxctl/trace"
	"golang.org/x/net/publicsuffix"
)

// DNS sink policy: every query is recorded, whatever it looks like. Every
// name that exists on the internet resolves (to its own address, see
// Names), unless the config says NXDOMAIN, so a skill's next step (the
// connection) shows; names no public resolver answers (reservedName) get
// NXDOMAIN, as they would on a workstation. Nothing is ever resolved
// upstream. Messages that do not parse are recorded with their raw bytes
// (capped) and answered FORMERR when their header can be read.

const (
	dnsTTL       = 60
	maxRawDNS    = 512 // raw bytes kept of a malformed message
	dnsTCPIdle   = 10 * time.Second
	maxDNSPacket = 65535
)

// DNSSink answers DNS over UDP and TCP. It is safe for concurrent use.
type DNSSink struct {
	emit    func(trace.Event)
	names   *Names
	nx      []string            // canonical exact names, or "*.suffix"
	records map[string][]dns.RR // canonical name → configured answers
	self    string              // the machine's own host name, canonical
	mode    string              // Config.DNSMode
	now     func() time.Time
}

// NewDNSSink returns a sink that reports every query to emit. names is
// shared with the TCP side so connections to a fake address carry their
// name (nil: a private allocator). Only cfg.NXDomain, cfg.DNSRecords and
// cfg.DNSMode are used.
func NewDNSSink(emit func(trace.Event), names *Names, cfg Config) (*DNSSink, error) {
	if names == nil {
		names = NewNames()
	}
	s := &DNSSink{emit: emit, names: names, records: map[string][]dns.RR{}, mode: cfg.DNSMode, now: time.Now}
	if h, err := os.Hostname(); err == nil {
		s.self = canonical(h)
	}
	for _, n := range cfg.NXDomain {
		s.nx = append(s.nx, canonical(n))
	}
	for _, line := range cfg.DNSRecords {
		rr, err := dns.NewRR(line)
		if err != nil {
			return nil, fmt.Errorf("parse dns record %q: %w", line, err)
		}
		if rr == nil {
			continue
		}
		c := canonical(rr.Header().Name)
		s.records[c] = append(s.records[c], rr)
		switch a := rr.(type) {
		case *dns.A:
			if ip, ok := netip.AddrFromSlice(a.A); ok {
				names.Bind(ip, c)
			}
		case *dns.AAAA:
			if ip, ok := netip.AddrFromSlice(a.AAAA); ok {
				names.Bind(ip, c)
			}
		}
	}
	return s, nil
}

// Serve answers queries on pc until ctx ends, then closes pc and returns
// nil. Any other read error is returned.
func (s *DNSSink) Serve(ctx context.Context, pc net.PacketConn) error {
	stop := context.AfterFunc(ctx, func() { pc.Close() })
	defer stop()
	buf := make([]byte, maxDNSPacket)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("dns sink: read: %w", err)
		}
		resp := s.handle(buf[:n], "udp", addr.String())
		if resp == nil {
			continue
		}
		_, _ = pc.WriteTo(resp, addr) // the client may be gone; nothing to record
	}
}

// ServeTCP answers DNS over TCP on ln until ctx ends, then closes ln and
// every open connection and returns nil.
func (s *DNSSink) ServeTCP(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("dns sink: accept: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			closeOnDone := context.AfterFunc(ctx, func() { c.Close() })
			defer closeOnDone()
			defer c.Close()
			s.serveTCPConn(c)
		}()
	}
}

func (s *DNSSink) serveTCPConn(c net.Conn) {
	var hdr [2]byte
	for {
		_ = c.SetDeadline(time.Now().Add(dnsTCPIdle))
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(hdr[:]))
		if _, err := io.ReadFull(c, msg); err != nil {
			s.emitQuery(&trace.DNSQuery{Transport: "tcp", Client: c.RemoteAddr().String(),
				Malformed: "short tcp message: " + err.Error(), Raw: capBytes(msg, maxRawDNS)})
			return
		}
		resp := s.handle(msg, "tcp", c.RemoteAddr().String())
		if resp == nil {
			continue
		}
		out := make([]byte, 2+len(resp))
		binary.BigEndian.PutUint16(out, uint16(len(resp)))
		copy(out[2:], resp)
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// handle records one message and returns the packed answer, or nil when
// none is due.
func (s *DNSSink) handle(raw []byte, transport, client string) []byte {
	q := &trace.DNSQuery{Transport: transport, Client: client}
	req := new(dns.Msg)
	if err := req.Unpack(raw); err != nil {
		q.Malformed = err.Error()
		q.Raw = capBytes(raw, maxRawDNS)
		if len(raw) < 12 {
			s.emitQuery(q)
			return nil
		}
		// The header parsed: say FORMERR so the client does not hang,
		// keeping whatever of the question did parse in the record.
		q.ID = binary.BigEndian.Uint16(raw)
		q.Opcode = opcodeString(int(raw[2]>>3) & 0xF)
		if len(req.Question) > 0 {
			q.Name, q.QType = req.Question[0].Name, typeString(req.Question[0].Qtype)
		}
		resp := new(dns.Msg)
		resp.Id = q.ID
		resp.Response = true
		resp.Opcode = int(raw[2]>>3) & 0xF
		resp.Rcode = dns.RcodeFormatError
		q.Rcode = dns.RcodeToString[resp.Rcode]
		s.emitQuery(q)
		b, err := resp.Pack()
		if err != nil {
			return nil
		}
		return b
	}
	if req.Response {
		// A response sent to us (reflection, or a probe): record, never answer.
		q.ID, q.Opcode = req.Id, opcodeString(req.Opcode)
		q.Malformed = "message is a response, not a query"
		q.Raw = capBytes(raw, maxRawDNS)
		if len(req.Question) > 0 {
			q.Name, q.QType = req.Question[0].Name, typeString(req.Question[0].Qtype)
		}
		s.emitQuery(q)
		return nil
	}
	resp := s.answer(req)
	q.ID, q.Opcode = req.Id, opcodeString(req.Opcode)
	if len(req.Question) > 0 {
		q.Name, q.QType = req.Question[0].Name, typeString(req.Question[0].Qtype)
	}
	if len(req.Question) > 1 {
		for _, qq := range req.Question {
			q.Questions = append(q.Questions, qq.Name+" "+typeString(qq.Qtype))
		}
	}
	q.Rcode = dns.RcodeToString[resp.Rcode]
	for _, rr := range resp.Answer {
		q.Answers = append(q.Answers, rrString(rr))
	}
	s.emitQuery(q)

	size := dns.MinMsgSize
	if transport == "tcp" {
		size = dns.MaxMsgSize
	} else if opt := req.IsEdns0(); opt != nil && int(opt.UDPSize()) > size {
		size = int(opt.UDPSize())
	}
	resp.Truncate(size)
	b, err := resp.Pack()
	if err != nil {
		resp = new(dns.Msg)
		resp.SetRcode(req, dns.RcodeServerFailure)
		if b, err = resp.Pack(); err != nil {
			return nil
		}
	}
	return b
}

// answer builds the reply to a parsed query.
func (s *DNSSink) answer(req *dns.Msg) *dns.Msg {
	resp := new(dns.Msg)
	resp.SetReply(req)
	resp.Authoritative = true
	resp.RecursionAvailable = true
	if opt := req.IsEdns0(); opt != nil {
		resp.SetEdns0(1232, false)
	}
	if req.Opcode != dns.OpcodeQuery {
		resp.Rcode = dns.RcodeNotImplemented
		return resp
	}
	if len(req.Question) == 0 {
		resp.Rcode = dns.RcodeFormatError
		return resp
	}
	for _, q := range req.Question {
		rrs, rcode := s.answerQuestion(q)
		resp.Answer = append(resp.Answer, rrs...)
		if rcode != dns.RcodeSuccess {
			resp.Rcode = rcode
		}
	}
	if len(resp.Answer) == 0 {
		resp.Ns = append(resp.Ns, soa(req.Question[0].Name))
	}
	return resp
}

func (s *DNSSink) answerQuestion(q dns.Question) ([]dns.RR, int) {
	name := q.Name
	c := canonical(name)
	hdr := func(t uint16) dns.RR_Header {
		return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: dnsTTL}
	}
	if q.Qclass != dns.ClassINET && q.Qclass != dns.ClassANY {
		return nil, dns.RcodeRefused
	}
	if s.isNX(c) {
		return nil, dns.RcodeNameError
	}
	if rrs, ok := s.records[c]; ok {
		var out []dns.RR
		for _, rr := range rrs {
			if t := rr.Header().Rrtype; t == q.Qtype || t == dns.TypeCNAME || q.Qtype == dns.TypeANY {
				rr = dns.Copy(rr)
				rr.Header().Name = name
				out = append(out, rr)
			}
		}
		return out, dns.RcodeSuccess
	}
	if strings.HasSuffix(c, ".in-addr.arpa") || strings.HasSuffix(c, ".ip6.arpa") {
		if q.Qtype != dns.TypePTR && q.Qtype != dns.TypeANY {
			return nil, dns.RcodeSuccess
		}
		ip, ok := reverseAddr(c)
		if !ok {
			return nil, dns.RcodeNameError
		}
		if ip.IsLoopback() {
			return []dns.RR{&dns.PTR{Hdr: hdr(dns.TypePTR), Ptr: "localhost."}}, dns.RcodeSuccess
		}
		target, ok := s.names.Lookup(ip)
		if !ok {
			return nil, dns.RcodeNameError
		}
		return []dns.RR{&dns.PTR{Hdr: hdr(dns.TypePTR), Ptr: dns.Fqdn(target)}}, dns.RcodeSuccess
	}
	if c == "" {
		// The root: nothing to fake that a client would use.
		return nil, dns.RcodeSuccess
	}
	var v4, v6 netip.Addr
	switch {
	case c == "localhost" || strings.HasSuffix(c, ".localhost"):
		// RFC 6761: localhost is loopback, whoever asks.
		v4, v6 = netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()
	case c == s.self && c != "":
		// The machine's own name, where Debian's /etc/hosts puts it (the
		// jail and the sandbox share the jail's host name).
		v4, v6 = netip.AddrFrom4([4]byte{127, 0, 1, 1}), netip.IPv6Loopback()
	case s.mode == DNSNone:
		return nil, dns.RcodeNameError
	case reservedName(c) && s.mode != DNSAll:
		return nil, dns.RcodeNameError
	case isPublicSuffix(c):
		// "com", "co.uk": they exist, with no address.
		return nil, dns.RcodeSuccess
	default:
		v4, v6 = s.names.Addrs(c)
	}
	zone := dns.Fqdn(registered(c))
	switch q.Qtype {
	case dns.TypeA:
		return []dns.RR{&dns.A{Hdr: hdr(dns.TypeA), A: v4.AsSlice()}}, dns.RcodeSuccess
	case dns.TypeAAAA:
		return []dns.RR{&dns.AAAA{Hdr: hdr(dns.TypeAAAA), AAAA: v6.AsSlice()}}, dns.RcodeSuccess
	case dns.TypeANY:
		return []dns.RR{&dns.A{Hdr: hdr(dns.TypeA), A: v4.AsSlice()},
			&dns.AAAA{Hdr: hdr(dns.TypeAAAA), AAAA: v6.AsSlice()}}, dns.RcodeSuccess
	case dns.TypeTXT:
		return []dns.RR{&dns.TXT{Hdr: hdr(dns.TypeTXT), Txt: []string{"v=spf1 include:_spf." + strings.TrimSuffix(zone, ".") + " ~all"}}}, dns.RcodeSuccess
	case dns.TypeMX:
		return []dns.RR{&dns.MX{Hdr: hdr(dns.TypeMX), Preference: 10, Mx: "mail." + zone}}, dns.RcodeSuccess
	case dns.TypeNS:
		return []dns.RR{&dns.NS{Hdr: hdr(dns.TypeNS), Ns: "ns1." + zone}, &dns.NS{Hdr: hdr(dns.TypeNS), Ns: "ns2." + zone}}, dns.RcodeSuccess
	case dns.TypeSOA:
		return []dns.RR{soa(name)}, dns.RcodeSuccess
	case dns.TypeHTTPS, dns.TypeSVCB:
		svcb := dns.SVCB{Hdr: hdr(q.Qtype), Priority: 1, Target: ".", Value: []dns.SVCBKeyValue{
			&dns.SVCBAlpn{Alpn: []string{"http/1.1"}},
			&dns.SVCBIPv4Hint{Hint: []net.IP{v4.AsSlice()}},
		}}
		if q.Qtype == dns.TypeHTTPS {
			return []dns.RR{&dns.HTTPS{SVCB: svcb}}, dns.RcodeSuccess
		}
		return []dns.RR{&svcb}, dns.RcodeSuccess
	case dns.TypeSRV:
		return []dns.RR{&dns.SRV{Hdr: hdr(dns.TypeSRV), Priority: 0, Weight: 5, Port: 443, Target: dns.Fqdn(c)}}, dns.RcodeSuccess
	case dns.TypeCAA:
		return []dns.RR{&dns.CAA{Hdr: hdr(dns.TypeCAA), Tag: "issue", Value: "letsencrypt.org"}}, dns.RcodeSuccess
	}
	return nil, dns.RcodeSuccess
}

// isNX reports whether a canonical name is configured as NXDOMAIN.
func (s *DNSSink) isNX(c string) bool {
	for _, p := range s.nx {
		if suf, ok := strings.CutPrefix(p, "*."); ok {
			if strings.HasSuffix(c, "."+suf) {
				return true
			}
		} else if c == p {
			return true
		}
	}
	return false
}

func (s *DNSSink) emitQuery(q *trace.DNSQuery) {
	s.emit(trace.Event{Time: s.now().UTC(), Source: trace.SourceDNS, Type: trace.TypeDNSQuery, Data: q})
}

func soa(name string) dns.RR {
	zone := dns.Fqdn(registered(canonical(name)))
	return &dns.SOA{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: dnsTTL},
		Ns: "ns1." + zone, Mbox: "hostmaster." + zone, Serial: 2024110101, Refresh: 7200, Retry: 3600,
		Expire: 1209600, Minttl: dnsTTL}
}

// registered is the registered domain of a canonical name (its public
// suffix plus one label), or the name itself. Only used to make MX, NS
// and SOA answers look plausible.
func registered(c string) string {
	if d, err := publicsuffix.EffectiveTLDPlusOne(c); err == nil {
		return d
	}
	return c
}

// reservedName reports names no public resolver answers (NXDOMAIN): the
// special-use names of RFC 6761 (.test, .invalid, .example), 6762
// (.local), 7686 (.onion) and 9476 (.alt), and every name whose top-level
// domain is not delegated (.internal, .corp, .lan, single labels), as the
// public suffix list knows them. Answering them would tell a skill that
// every name resolves here. Configured records and NXDOMAIN rules come
// first, so a trace that needs such a name can still give it one.
func reservedName(c string) bool {
	tld := c[strings.LastIndexByte(c, '.')+1:]
	if tld == "onion" {
		return true
	}
	_, icann := publicsuffix.PublicSuffix(tld)
	return !icann
}

// isPublicSuffix reports names that are an ICANN public suffix themselves.
func isPublicSuffix(c string) bool {
	ps, icann := publicsuffix.PublicSuffix(c)
	return icann && ps == c
}

// reverseAddr parses a canonical in-addr.arpa or ip6.arpa name.
func reverseAddr(c string) (netip.Addr, bool) {
	if rest, ok := strings.CutSuffix(c, ".in-addr.arpa"); ok {
		parts := strings.Split(rest, ".")
		if len(parts) != 4 {
			return netip.Addr{}, false
		}
		ip, err := netip.ParseAddr(parts[3] + "." + parts[2] + "." + parts[1] + "." + parts[0])
		return ip, err == nil
	}
	if rest, ok := strings.CutSuffix(c, ".ip6.arpa"); ok {
		nib := strings.Split(rest, ".")
		if len(nib) != 32 {
			return netip.Addr{}, false
		}
		var b [16]byte
		for i, x := range nib {
			if len(x) != 1 {
				return netip.Addr{}, false
			}
			var v byte
			switch ch := x[0]; {
			case ch >= '0' && ch <= '9':
				v = ch - '0'
			case ch >= 'a' && ch <= 'f':
				v = ch - 'a' + 10
			default:
				return netip.Addr{}, false
			}
			pos := 31 - i // nibble index from the most significant
			if pos%2 == 0 {
				b[pos/2] |= v << 4
			} else {
				b[pos/2] |= v
			}
		}
		return netip.AddrFrom16(b), true
	}
	return netip.Addr{}, false
}

func opcodeString(op int) string {
	if s, ok := dns.OpcodeToString[op]; ok {
		return s
	}
	return fmt.Sprintf("OPCODE%d", op)
}

func typeString(t uint16) string {
	if s, ok := dns.TypeToString[t]; ok {
		return s
	}
	return fmt.Sprintf("TYPE%d", t)
}

// rrString is an answer without its header, e.g. "A 104.18.32.7".
func rrString(rr dns.RR) string {
	full := rr.String()
	hdr := rr.Header().String()
	return typeString(rr.Header().Rrtype) + " " + strings.TrimSpace(strings.TrimPrefix(full, hdr))
}

func capBytes(b []byte, n int) []byte {
	if len(b) > n {
		b = b[:n]
	}
	return append([]byte(nil), b...)
}
