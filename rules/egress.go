package rules

import (
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

// What counts as data sent out (issue 29, class 7). After a credential read,
// data carried by any part of a request that its client controls is egress,
// whatever the method: a body, a query, URL path segments, cookies and other
// headers, the TLS server name and ALPN list, DNS names, a mail, a WebSocket
// message, a raw flow's bytes. What a client library writes on its own (a
// short id, a UUID, a content hash, the Host, Accept and User-Agent
// headers, the name it resolved) is not data, so ordinary API calls,
// package downloads and browsing do not count:
//
//   - URL path, query, cookies and other headers count when, unescaped, they
//     hold 40 or more characters of encoded-looking text (hex, base32,
//     base64: encodedPart), leaving out UUIDs and single hash digests
//     (32, 40, 56, 64, 96 or 128 hex digits), or when a header's value is
//     256 characters or more; a query of 64 characters or more counts as
//     before;
//   - a TLS server name counts when no DNS answer of the trace gave that
//     name the address the hello went to (a name chosen to carry data, not
//     the one the client looked up), an ALPN entry when IANA's registry of
//     protocol ids does not list it;
//   - DNS names count one by one when a label has 32 characters or more, and
//     together when six or more distinct names under one zone (a
//     registrable domain) spell 96 or more characters of encoded-looking
//     text: data cut into short labels;
//   - a mail counts when it has a message or AUTH credentials.
//
// TLS names, ALPN entries and DNS names spread over a zone carry nothing in
// normal use: data in them is hidden on purpose (covert), so a credential
// read followed by them is exfiltration with high confidence wherever they
// went, as data sent to a raw IP or a drop service is.

// minDataChars is how many encoded-looking characters a URL path, a query
// or a header value must hold to carry data: a digest or a UUID stays
// under it, an encrypted key does not.
const minDataChars = 40

// longHeader is the length from which a header value is data whatever its
// alphabet (rot47, decimal codes, text).
const longHeader = 256

// plainHeaders are written by clients themselves to negotiate the exchange;
// their values are the library's, not the skill's data.
var plainHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Content-Type": true, "Connection": true, "Accept": true,
	"Accept-Encoding": true, "Accept-Language": true, "Accept-Charset": true, "Transfer-Encoding": true,
	"Te": true, "Upgrade": true, "Expect": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Cache-Control": true, "Pragma": true, "Sec-Websocket-Version": true, "Sec-Websocket-Extensions": true,
	"Date": true, "User-Agent": true,
}

var (
	reUUID = regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	// a single digest, bare or named ("sha256:…", "sha512-…" as in
	// Subresource Integrity)
	reDigest = regexp.MustCompile(`(?i)^(?:(?:md5|sha1|sha224|sha256|sha384|sha512)[:-])?(?:[0-9a-f]{32}|[0-9a-f]{40}|[0-9a-f]{56}|[0-9a-f]{64}|[0-9a-f]{96}|[0-9a-f]{128})$`)
	// base64 digests with their hash's name: Subresource Integrity
	// (package-lock.json, yarn.lock), go.sum's h1:, Nix's sha256-
	reSRI = regexp.MustCompile(`^(?:sha(?:1|256|384|512)-|h1:)[A-Za-z0-9+/]{27,86}={0,2}$`)
)

// digestShaped reports a string that is one hash digest (hex, or base64
// named by its hash): a content address, not data.
func digestShaped(s string) bool { return reDigest.MatchString(s) || reSRI.MatchString(s) }

// dataChars counts the characters of s that read as encoded data: the
// alphanumeric runs that encodedPart accepts, UUIDs and digest-shaped runs
// left out.
func dataChars(s string) int {
	if u, err := url.PathUnescape(s); err == nil {
		s = u
	}
	s = reUUID.ReplaceAllString(s, " ")
	n := 0
	for _, part := range strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) {
		if encodedPart(part) && !digestShaped(part) {
			n += len(part)
		}
	}
	return n
}

// httpCarried names the part of an HTTP request its client filled with
// data, or "" when it carried none.
func httpCarried(d *trace.HTTPExchange) string {
	if d.BodySize > 0 || len(d.Body) > 0 || slices.Contains([]string{"POST", "PUT", "PATCH"}, strings.ToUpper(d.Method)) {
		return "the body"
	}
	raw := d.URL
	if i := strings.Index(raw, "://"); i >= 0 {
		raw = raw[i+3:]
	}
	raw, _, _ = strings.Cut(raw, "#")
	raw, q, _ := strings.Cut(raw, "?")
	if len(q) >= 64 || dataChars(strings.NewReplacer("+", " ", "&", " ", "=", " ").Replace(q)) >= minDataChars {
		return "the query"
	}
	if _, p, ok := strings.Cut(raw, "/"); ok && dataChars(p) >= minDataChars {
		return "the URL path"
	}
	for _, k := range headerNames(d.Headers) {
		name := canonicalHeader(k)
		if plainHeaders[name] && name != "User-Agent" {
			continue
		}
		for _, v := range d.Headers[k] {
			if dataChars(v) >= minDataChars || len(v) >= longHeader && !plainHeaders[name] {
				if name == "Cookie" {
					return "a cookie"
				}
				return "the " + name + " header"
			}
		}
	}
	return ""
}

// canonicalHeader is a header name as net/http writes it (the jail keeps
// what the client sent).
func canonicalHeader(k string) string {
	b := []byte(strings.ToLower(k))
	up := true
	for i, c := range b {
		if up && c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		up = c == '-'
	}
	return string(b)
}

// registeredALPN are the protocol ids of IANA's "TLS Application-Layer
// Protocol Negotiation (ALPN) Protocol IDs" registry
// (https://www.iana.org/assignments/tls-extensiontype-values/tls-extensiontype-values.xhtml#alpn-protocol-ids),
// with the draft ids that shipped clients still offer (spdy/3.1, h3-NN,
// hq-NN, grpc-exp).
var registeredALPN = map[string]bool{
	"http/0.9": true, "http/1.0": true, "http/1.1": true, "spdy/1": true, "spdy/2": true, "spdy/3": true,
	"spdy/3.1": true, "stun.turn": true, "stun.nat-discovery": true, "h2": true, "h2c": true, "webrtc": true,
	"c-webrtc": true, "ftp": true, "imap": true, "pop3": true, "managesieve": true, "coap": true,
	"xmpp-client": true, "xmpp-server": true, "acme-tls/1": true, "mqtt": true, "dot": true, "ntske/1": true,
	"sunrpc": true, "h3": true, "smb": true, "irc": true, "nntp": true, "nnsp": true, "doq": true, "sip/2": true,
	"tds/8.0": true, "dicom": true, "postgresql": true, "radius/1.0": true, "radius/1.1": true, "grpc-exp": true,
}

var reDraftALPN = regexp.MustCompile(`^(?:h3|hq|h2)-(?:\d{1,2}|Q0\d\d|fb-\d\d)$`)

// tlsCarried names the part of a ClientHello that carried data, or "":
// an ALPN entry outside the registry, or a server name that no DNS
// answer of the trace gave the address the hello went to.
func tlsCarried(d *trace.TLSHello, names map[string][]string) string {
	for _, p := range d.ALPN {
		if !registeredALPN[p] && !reDraftALPN.MatchString(p) {
			return "the TLS ALPN list"
		}
	}
	sni := strings.ToLower(strings.TrimSuffix(d.SNI, "."))
	if sni == "" || d.DstIP == "" || net.ParseIP(sni) != nil {
		return ""
	}
	ip := net.ParseIP(strings.Trim(d.DstIP, "[]"))
	if ip == nil || ip.IsLoopback() || ip.IsPrivate() {
		return ""
	}
	if slices.Contains(names[ip.String()], sni) {
		return ""
	}
	return "the TLS server name"
}

// namesByAddr maps each address the trace's DNS answers (and the jail's
// name attribution) gave to the names it was given for.
func namesByAddr(events []trace.Event) map[string][]string {
	out := map[string][]string{}
	add := func(addr, name string) {
		ip := net.ParseIP(strings.Trim(addr, "[]"))
		name = strings.ToLower(strings.TrimSuffix(name, "."))
		if ip == nil || name == "" || slices.Contains(out[ip.String()], name) {
			return
		}
		out[ip.String()] = append(out[ip.String()], name)
	}
	for i := range events {
		switch d := events[i].Data.(type) {
		case *trace.DNSQuery:
			for _, a := range d.Answers {
				if f := strings.Fields(a); len(f) > 0 {
					add(f[len(f)-1], d.Name)
				}
			}
		case *trace.Connection:
			add(d.DstIP, d.Name)
		case *trace.Mail:
			add(d.DstIP, d.Name)
		}
	}
	return out
}

// Thresholds of data spread over DNS names.
const (
	minDataNames    = 6  // distinct names under one zone
	minDataNameText = 96 // encoded-looking characters they spell together
)

// dnsDataZones returns the zones (registrable domains) whose distinct
// names, together, carry data: six or more names whose labels below the
// zone, joined, spell 96 or more characters that read as encoded (letters
// and digits mixed, near the entropy of random text, few words). A lookup
// of hash digests (a malware-hash registry), reversed addresses (a DNS
// blocklist), words (www, api, docs) and region names do not.
func dnsDataZones(events []trace.Event) map[string]bool {
	type zone struct {
		names int
		text  strings.Builder
	}
	zones := map[string]*zone{}
	seen := map[string]bool{}
	for i := range events {
		d, ok := events[i].Data.(*trace.DNSQuery)
		if !ok {
			continue
		}
		for _, name := range queryNames(d) {
			if seen[name] {
				continue
			}
			seen[name] = true
			z, _ := registrable(name)
			sub := strings.TrimSuffix(strings.TrimSuffix(name, z), ".")
			if sub == "" {
				continue
			}
			zz := zones[z]
			if zz == nil {
				zz = &zone{}
				zones[z] = zz
			}
			zz.names++
			for _, l := range strings.Split(sub, ".") {
				if !digestShaped(l) {
					zz.text.WriteString(strings.ReplaceAll(strings.ReplaceAll(l, "-", ""), "_", ""))
				}
			}
		}
	}
	out := map[string]bool{}
	for z, zz := range zones {
		if zz.names >= minDataNames && encodedText(zz.text.String(), minDataNameText) {
			out[z] = true
		}
	}
	return out
}

// encodedText reports n characters or more of text that reads as encoded
// data: a fifth letters or more and a tenth digits or more, entropy near
// random, and few characters in word-like runs.
func encodedText(t string, n int) bool {
	if len(t) < n {
		return false
	}
	letters, digits := 0, 0
	for i := 0; i < len(t); i++ {
		switch c := t[i] | 0x20; {
		case c >= 'a' && c <= 'z':
			letters++
		case t[i] >= '0' && t[i] <= '9':
			digits++
		}
	}
	return letters*5 >= len(t) && digits*10 >= len(t) && entropy(t) >= 3.6 && wordiness(t)*4 < len(t)
}

// mailCarried names what a mail session carried out, or "".
func mailCarried(d *trace.Mail) string {
	switch {
	case len(d.Data) > 0 || d.Size > 0:
		return "a mail message"
	case d.AuthSecret != "":
		return "SMTP credentials"
	}
	return ""
}

// httpDataWord returns the longest word of a request's query, URL path,
// cookies and header values that holds encoded-looking data (what a body
// would hold in a POST), "" when none does.
func httpDataWord(d *trace.HTTPExchange) string {
	var parts []string
	raw := d.URL
	if i := strings.Index(raw, "://"); i >= 0 {
		raw = raw[i+3:]
	}
	raw, _, _ = strings.Cut(raw, "#")
	raw, q, _ := strings.Cut(raw, "?")
	if _, p, ok := strings.Cut(raw, "/"); ok {
		parts = append(parts, strings.Split(p, "/")...)
	}
	parts = append(parts, strings.FieldsFunc(q, func(r rune) bool { return r == '&' })...)
	for _, k := range headerNames(d.Headers) {
		if !plainHeaders[canonicalHeader(k)] {
			for _, v := range d.Headers[k] {
				parts = append(parts, strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == ',' || r == ' ' })...)
			}
		}
	}
	best := ""
	for _, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			p = u // not QueryUnescape: base64's + is no space in a cookie
		}
		if _, v, ok := strings.Cut(p, "="); ok && len(v) > len(p)/2 {
			p = v // a parameter's or a cookie's value
		}
		if dataChars(p) > dataChars(best) {
			best = p
		}
	}
	return best
}

// headerNames returns a request's header names, sorted.
func headerNames(h map[string][]string) []string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
