package rules

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

// matchBadDest checks a host (and the URL path when known; for DNS and SNI,
// where there is none, entries bound to a path match nothing) against the
// list of drop, paste, tunnel and webhook services (data/destinations.tsv).
func matchBadDest(host, p string, havePath bool) (destEntry, bool) {
	host = normHost(host)
	for _, e := range badList {
		if e.path != "" && !havePath {
			continue
		}
		if e.match(host, p) {
			return e, true
		}
	}
	return destEntry{}, false
}

// contactClass is the severity and confidence of contact with a listed
// destination.
func contactClass(e destEntry) (Severity, Confidence) {
	switch e.sev {
	case High, Critical:
		return High, ConfHigh
	case Medium:
		return Medium, ConfMedium
	}
	return Low, ConfMedium
}

// sinkRange is where the jail's DNS sink took the addresses it answered
// with before it answered from public ranges: kept so that stored traces
// reprocess the same. Today's answers are recognised by resolvedAddrs.
var (
	sinkRange  = &net.IPNet{IP: net.IPv4(198, 18, 0, 0).To4(), Mask: net.CIDRMask(15, 32)}
	sinkRange6 = &net.IPNet{IP: net.ParseIP("2001:2::"), Mask: net.CIDRMask(48, 128)}
)

// cgnat is the shared address space of carrier-grade NAT (RFC 6598),
// private in practice.
var cgnat = &net.IPNet{IP: net.IPv4(100, 64, 0, 0), Mask: net.CIDRMask(10, 32)}

func rawIP(s string) bool {
	ip := net.ParseIP(strings.Trim(s, "[]"))
	return ip != nil && !ip.IsLoopback() && !ip.IsUnspecified() && !sinkRange.Contains(ip) && !sinkRange6.Contains(ip)
}

// resolvedAddrs are the addresses the jail gave a name in this trace: its
// DNS answers, and the targets of proxy CONNECTs it resolved itself. A
// connection to one went to a name, not to an IP typed in. An SNI or a
// Host header is what the client claims, never a resolution.
func resolvedAddrs(events []trace.Event) map[string]bool {
	out := map[string]bool{}
	for ip := range newJailAddrs(events) {
		out[ip] = true
	}
	return out
}

var standardPorts = map[int]bool{80: true, 443: true, 8080: true, 8443: true, 53: true, 853: true}

// A dest is one destination contacted, from any network event.
type dest struct {
	ev      *trace.Event
	host    string // where the packets went: the name the jail resolved to the address, or the IP when none
	ip      string
	port    int
	path    string
	hasPath bool
	egress  bool // carried data out
	// carried names the part of the exchange that held the data ("the
	// body", "a cookie", "the TLS server name", ...: egress.go).
	carried string
	// covert says the data rode in a part that carries none in normal use
	// (a TLS name no lookup gave, an unregistered ALPN id, data spread
	// over a zone's DNS names): hidden on purpose, wherever it went.
	covert  bool
	claimed string // the name the client claimed (Host, SNI) when that is not where it went
}

// named returns where a connection to ip went by a name the client claims
// (an SNI, the sink's name): the claim when the jail gave it ip, else the
// name the jail gave ip, else "" (an address typed in). With no address
// recorded the claim stands.
func (c *ctx) named(claim, ip string) (host, claimed string) {
	if c.addrs == nil {
		c.addrs = newJailAddrs(c.events)
	}
	d := Destinations{c.addrs}.Named(claim, ip)
	return d.Host, d.Claimed
}

func (c *ctx) dests() []dest {
	var out []dest
	names := namesByAddr(c.events)
	dataZones := dnsDataZones(c.events)
	for i := range c.events {
		e := &c.events[i]
		switch d := e.Data.(type) {
		case *trace.HTTPExchange:
			host, p := d.Host, ""
			if u, err := url.Parse(d.URL); err == nil {
				if host == "" {
					host = u.Host
				}
				p = u.Path
			}
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			claimed := ""
			if hd := c.httpDest(d); hd.known {
				host, claimed = hd.host, hd.claimed
			}
			part := httpCarried(d)
			out = append(out, dest{ev: e, host: host, ip: d.DstIP, port: d.DstPort, path: p, hasPath: true,
				egress: part != "", carried: part, claimed: claimed})
		case *trace.Connection:
			host, claimed := c.named(strings.TrimSuffix(d.Name, "."), d.DstIP)
			out = append(out, dest{ev: e, host: host, ip: d.DstIP, port: d.DstPort, egress: d.Size > 0, carried: "the flow's bytes", claimed: claimed})
		case *trace.TLSHello:
			host, claimed := c.named(d.SNI, d.DstIP)
			part := tlsCarried(d, names)
			out = append(out, dest{ev: e, host: host, ip: d.DstIP, port: d.DstPort, egress: part != "", carried: part, covert: part != "", claimed: claimed})
		case *trace.DNSQuery:
			name := strings.ToLower(strings.TrimSuffix(d.Name, "."))
			x := dest{ev: e, host: name}
			for _, l := range strings.Split(name, ".") {
				if len(l) >= 32 {
					x.egress, x.carried = true, "a DNS label"
				}
			}
			if z, _ := registrable(name); dataZones[z] {
				x.egress, x.carried, x.covert = true, "DNS names under "+z, true
			}
			out = append(out, x)
		case *trace.Mail:
			part := mailCarried(d)
			out = append(out, dest{ev: e, host: d.Name, ip: d.DstIP, port: d.DstPort, egress: part != "", carried: part})
		case *trace.WSMessage:
			h, p := hostPath(d.URL)
			eg := d.Size > 0 && d.Opcode != "close" && d.Opcode != "ping" && d.Opcode != "pong"
			out = append(out, dest{ev: e, host: h, ip: d.DstIP, port: d.DstPort, path: p, hasPath: true, egress: eg, carried: "a WebSocket message"})
		case *trace.Net:
			if e.Type == trace.TypeConnect && (d.Family == "inet" || d.Family == "inet6") {
				out = append(out, dest{ev: e, ip: d.Addr, port: d.Port})
			}
		}
	}
	return out
}

func netRules() {
	def(Rule{ID: "SBX-NET-001", Family: "command-and-control", Title: "Connection to a raw IP address",
		Severity: Medium, Confidence: ConfMedium, Technique: "T1071",
		Help: "A connection to an IP address that no DNS lookup of the trace produced (the jail remembers " +
			"every address its DNS gave, so anything else was typed in): droppers fetch from http://<ip>/<id>. " +
			"A private address (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) is a service on the user's " +
			"network (a cluster's API server, a NAS): low."},
		func(c *ctx, r *Rule) {
			resolved := resolvedAddrs(c.events)
			for _, d := range c.dests() {
				if d.port == 53 || d.ev.Type == trace.TypeDNSQuery {
					continue
				}
				ip := ""
				switch {
				case rawIP(d.host):
					ip = d.host
				case d.host == "" && rawIP(d.ip) && !resolved[net.ParseIP(strings.Trim(d.ip, "[]")).String()]:
					ip = d.ip
				}
				if ip == "" {
					continue
				}
				msg := fmt.Sprintf("connection to raw IP %s", net.JoinHostPort(ip, strconv.Itoa(d.port)))
				if d.claimed != "" {
					msg += " claiming " + d.claimed
				}
				if a := net.ParseIP(strings.Trim(ip, "[]")); a != nil && (a.IsPrivate() || cgnat.Contains(a)) {
					// a cluster's API server, a NAS, a service on the user's
					// network: what a kubeconfig or a LAN tool names
					c.hitAs(r, ip, Low, ConfMedium, r.Harm, msg+" (a private address: a service on the user's network)", d.ev)
					continue
				}
				c.hit(r, ip, msg, d.ev)
			}
			for _, cm := range c.cmds {
				for _, u := range reURL.FindAllString(cm.text, -1) {
					if pu, err := url.Parse(u); err == nil && rawIP(pu.Hostname()) {
						if a := net.ParseIP(pu.Hostname()); a != nil && (a.IsPrivate() || cgnat.Contains(a)) {
							c.hitAs(r, pu.Hostname(), Low, ConfMedium, r.Harm, "command names raw-IP URL "+u+" (a private address)", cm.ev)
							continue
						}
						c.hit(r, pu.Hostname(), "command names raw-IP URL "+u, cm.ev)
					}
				}
			}
		})
	def(Rule{ID: "SBX-NET-002", Family: "command-and-control", Title: "Connection to an unusual port",
		Severity: Medium, Confidence: ConfLow, Technique: "T1571",
		Help: "An outbound connection to a port other than 53, 80, 443, 853, 8080 or 8443 (reverse " +
			"shells and C2 favour 4444, 1337, 9001...)."},
		func(c *ctx, r *Rule) {
			for _, d := range c.dests() {
				if d.port == 0 || standardPorts[d.port] || isLoopback(d.ip) {
					continue
				}
				host := d.host
				if host == "" {
					host = d.ip
				}
				c.hit(r, strconv.Itoa(d.port)+"/"+host, fmt.Sprintf("connection to %s", net.JoinHostPort(host, strconv.Itoa(d.port))), d.ev)
			}
		})
	def(Rule{ID: "SBX-NET-003", Family: "exfiltration", Title: "Contact with a paste, webhook or tunnel service",
		Severity: High, Confidence: ConfHigh, Technique: "T1567",
		Help: "DNS, HTTP, TLS or a command named a service that receives stolen data or tunnels out " +
			"(rules/data/destinations.tsv, each entry with its source): request catchers (webhook.site, " +
			"requestbin, pipedream), tunnels (ngrok, bore.pub), out-of-band testing (Burp Collaborator, " +
			"interactsh/oast), canarytokens, paste sites and file drops are high; throwaway app hosts " +
			"(*.vercel.app, *.workers.dev) and dynamic DNS medium; messaging webhooks (Discord, Slack, " +
			"the Telegram bot API), which notification skills use for their user, low. Contact alone " +
			"is not harm: a planted secret in it is SBX-EXFIL-001, and what a chat webhook, bot API or " +
			"gist keeps is judged by its content (rules/data/dropsites.tsv: a planted secret or opaque " +
			"data after a secret read is exfiltration)."},
		func(c *ctx, r *Rule) {
			for _, d := range c.dests() {
				if b, ok := matchBadDest(d.host, d.path, d.hasPath); ok {
					sev, conf := contactClass(b)
					c.hitAs(r, b.host, sev, conf, HarmNone, fmt.Sprintf("contact with %s (%s)", d.host, b.kind), d.ev)
				}
			}
			for _, cm := range c.cmds {
				for _, u := range reURL.FindAllString(cm.text, -1) {
					if pu, err := url.Parse(u); err == nil {
						if b, ok := matchBadDest(pu.Hostname(), pu.Path, true); ok {
							sev, conf := contactClass(b)
							c.hitAs(r, b.host, sev, conf, HarmNone, fmt.Sprintf("command names %s (%s)", pu.Hostname(), b.kind), cm.ev)
						}
					}
				}
			}
		})
	def(Rule{ID: "SBX-NET-004", Family: "exfiltration", Title: "DNS tunnelling pattern",
		Severity: Medium, Confidence: ConfMedium, Technique: "T1071.004",
		Help: "DNS names that carry data: grouped by registrable domain (the public suffix list, so " +
			"every *.github.io site or S3 bucket is its own zone), a label of 24 or more characters " +
			"that reads as encoded data (hex, base32, base64url: high entropy, digits mixed with " +
			"letters, no words), or 10 or more distinct encoded-looking names under one zone carrying " +
			"240 or more bytes. Long legal names made of words, and many short names, do not count."},
		func(c *ctx, r *Rule) {
			for _, z := range c.dnsZones() {
				if z.long != nil {
					c.hit(r, "long:"+z.zone, fmt.Sprintf("encoded-looking DNS label under %s: %s", z.zone, capString(z.longName, 120)), z.long)
				}
				if z.encNames >= 10 && z.encBytes >= 240 {
					c.hit(r, "many:"+z.zone, fmt.Sprintf("%d distinct encoded-looking names (%d bytes) queried under %s",
						z.encNames, z.encBytes, z.zone), z.first...)
				}
			}
		})
	def(Rule{ID: "SBX-NET-005", Family: "command-and-control", Title: "Look-alike domain contacted",
		Severity: Medium, Confidence: ConfMedium, Technique: "T1583.001",
		Help: "DNS, HTTP, TLS or a command named a domain that imitates a well-known one " +
			"(rules/data/brands.tsv): the same name under another suffix (rustup.sh for rustup.rs), a " +
			"doubled, dropped or swapped letter, a homoglyph (g1thub), the name joined to a word by a " +
			"hyphen (github-cdn.com), or a brand domain used as the start of another " +
			"(github.com.example.io). Code run from such a domain is SBX-EXEC-001 at critical."},
		func(c *ctx, r *Rule) {
			judged := map[string]string{}
			for _, d := range c.dests() {
				h := normHost(d.host)
				if h == "" || rawIP(h) {
					continue
				}
				of, done := judged[h]
				if !done {
					of, _ = lookAlike(h)
					judged[h] = of
				}
				if of != "" {
					c.hit(r, h, fmt.Sprintf("contact with %s, a look-alike of %s", h, of), d.ev)
				}
			}
			for _, cm := range c.cmds {
				for _, u := range reURL.FindAllString(cm.text, -1) {
					h, _ := hostPath(u)
					if of, ok := lookAlike(h); ok && !rawIP(h) {
						c.hit(r, h, fmt.Sprintf("command names %s, a look-alike of %s", h, of), cm.ev)
					}
				}
			}
		})
}
