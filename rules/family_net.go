package rules

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

// A badDest is a service used to receive stolen data, host payloads, or
// tunnel out. PathPrefix, when set, must start the URL path (Discord and
// Telegram are legitimate hosts; only their webhook/bot APIs are drops).
type badDest struct {
	Suffix     string
	PathPrefix string
	Kind       string
	Conf       Confidence
}

var badDests = []badDest{
	{"webhook.site", "", "request catcher", ConfHigh},
	{"requestbin.com", "", "request catcher", ConfHigh},
	{"requestbin.net", "", "request catcher", ConfHigh},
	{"requestcatcher.com", "", "request catcher", ConfHigh},
	{"pipedream.net", "", "request catcher", ConfHigh},
	{"beeceptor.com", "", "request catcher", ConfHigh},
	{"hookbin.com", "", "request catcher", ConfHigh},
	{"ngrok.io", "", "tunnel", ConfHigh},
	{"ngrok-free.app", "", "tunnel", ConfHigh},
	{"ngrok.app", "", "tunnel", ConfHigh},
	{"ngrok-free.dev", "", "tunnel", ConfHigh},
	{"bore.pub", "", "tunnel", ConfHigh},
	{"trycloudflare.com", "", "tunnel", ConfHigh},
	{"serveo.net", "", "tunnel", ConfHigh},
	{"localhost.run", "", "tunnel", ConfHigh},
	{"loca.lt", "", "tunnel", ConfHigh},
	{"burpcollaborator.net", "", "out-of-band testing", ConfHigh},
	{"oastify.com", "", "out-of-band testing", ConfHigh},
	{"interact.sh", "", "out-of-band testing", ConfHigh},
	{"interactsh.com", "", "out-of-band testing", ConfHigh},
	{"oast.pro", "", "out-of-band testing", ConfHigh},
	{"oast.live", "", "out-of-band testing", ConfHigh},
	{"oast.site", "", "out-of-band testing", ConfHigh},
	{"oast.online", "", "out-of-band testing", ConfHigh},
	{"oast.fun", "", "out-of-band testing", ConfHigh},
	{"oast.me", "", "out-of-band testing", ConfHigh},
	{"canarytokens.com", "", "canary service", ConfHigh},
	{"canarytokens.org", "", "canary service", ConfHigh},
	{"pastebin.com", "", "paste site", ConfHigh},
	{"paste.ee", "", "paste site", ConfHigh},
	{"hastebin.com", "", "paste site", ConfHigh},
	{"dpaste.org", "", "paste site", ConfHigh},
	{"ix.io", "", "paste site", ConfHigh},
	{"sprunge.us", "", "paste site", ConfHigh},
	{"termbin.com", "", "paste site", ConfHigh},
	{"glot.io", "", "paste site", ConfHigh},
	{"rentry.co", "", "paste site", ConfHigh},
	{"rentry.org", "", "paste site", ConfHigh},
	{"paste.rs", "", "paste site", ConfHigh},
	{"pastes.dev", "", "paste site", ConfHigh},
	{"paste.gg", "", "paste site", ConfHigh},
	{"paste.c-net.org", "", "paste site", ConfHigh},
	{"pastebin.pl", "", "paste site", ConfHigh},
	{"controlc.com", "", "paste site", ConfHigh},
	{"justpaste.it", "", "paste site", ConfHigh},
	{"privatebin.net", "", "paste site", ConfHigh},
	{"ghostbin.co", "", "paste site", ConfHigh},
	{"requestrepo.com", "", "request catcher", ConfHigh},
	{"postb.in", "", "request catcher", ConfHigh},
	{"ptsv2.com", "", "request catcher", ConfHigh},
	{"ptsv3.com", "", "request catcher", ConfHigh},
	{"webhook.cool", "", "request catcher", ConfHigh},
	{"smee.io", "", "request catcher", ConfHigh},
	{"dnslog.cn", "", "out-of-band testing", ConfHigh},
	{"ceye.io", "", "out-of-band testing", ConfHigh},
	{"xss.ht", "", "out-of-band testing", ConfHigh},
	{"localtunnel.me", "", "tunnel", ConfHigh},
	{"localxpose.io", "", "tunnel", ConfHigh},
	{"pagekite.me", "", "tunnel", ConfHigh},
	{"playit.gg", "", "tunnel", ConfHigh},
	{"tunnelmole.net", "", "tunnel", ConfHigh},
	{"zrok.io", "", "tunnel", ConfHigh},
	{"pinggy.link", "", "tunnel", ConfHigh},
	{"transfer.sh", "", "file drop", ConfHigh},
	{"catbox.moe", "", "file drop", ConfHigh},
	{"bashupload.com", "", "file drop", ConfHigh},
	{"oshi.at", "", "file drop", ConfHigh},
	{"tmpfiles.org", "", "file drop", ConfHigh},
	{"filebin.net", "", "file drop", ConfHigh},
	{"uguu.se", "", "file drop", ConfHigh},
	{"keep.sh", "", "file drop", ConfHigh},
	{"file.io", "", "file drop", ConfHigh},
	{"0x0.st", "", "file drop", ConfHigh},
	{"temp.sh", "", "file drop", ConfHigh},
	{"gofile.io", "", "file drop", ConfHigh},
	{"discord.com", "/api/webhooks", "Discord webhook", ConfHigh},
	{"discordapp.com", "/api/webhooks", "Discord webhook", ConfHigh},
	{"api.telegram.org", "/bot", "Telegram bot API", ConfHigh},
	{"vercel.app", "", "throwaway app host", ConfMedium},
	{"workers.dev", "", "throwaway app host", ConfMedium},
	{"glitch.me", "", "throwaway app host", ConfMedium},
	{"repl.co", "", "throwaway app host", ConfMedium},
}

// matchBadDest checks a host (and the URL path when known; "" for DNS and
// SNI, where path-bound entries match nothing).
func matchBadDest(host, p string, havePath bool) (badDest, bool) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, b := range badDests {
		if host == b.Suffix || strings.HasSuffix(host, "."+b.Suffix) {
			if b.PathPrefix != "" && (!havePath || !strings.HasPrefix(p, b.PathPrefix)) {
				continue
			}
			return b, true
		}
	}
	return badDest{}, false
}

// sinkRange is where the jail's DNS sink took the addresses it answered
// with before it answered from public ranges: kept so that stored traces
// reprocess the same. Today's answers are recognised by resolvedAddrs.
var (
	sinkRange  = &net.IPNet{IP: net.IPv4(198, 18, 0, 0).To4(), Mask: net.CIDRMask(15, 32)}
	sinkRange6 = &net.IPNet{IP: net.ParseIP("2001:2::"), Mask: net.CIDRMask(48, 128)}
)

func rawIP(s string) bool {
	ip := net.ParseIP(strings.Trim(s, "[]"))
	return ip != nil && !ip.IsLoopback() && !ip.IsUnspecified() && !sinkRange.Contains(ip) && !sinkRange6.Contains(ip)
}

// resolvedAddrs are the addresses the trace's DNS answers gave, and those
// the jail attributed to a name: a connection to one went to a name, not
// to an IP typed in.
func resolvedAddrs(events []trace.Event) map[string]bool {
	out := map[string]bool{}
	add := func(s string) {
		if ip := net.ParseIP(strings.Trim(s, "[]")); ip != nil {
			out[ip.String()] = true
		}
	}
	for i := range events {
		switch d := events[i].Data.(type) {
		case *trace.DNSQuery:
			for _, a := range d.Answers {
				if t, v, ok := strings.Cut(a, " "); ok && (t == "A" || t == "AAAA") {
					add(v)
				}
			}
		case *trace.Connection:
			if d.Name != "" {
				add(d.DstIP)
			}
		case *trace.TLSHello:
			if d.SNI != "" && net.ParseIP(d.SNI) == nil {
				add(d.DstIP)
			}
		}
	}
	return out
}

var standardPorts = map[int]bool{80: true, 443: true, 8080: true, 8443: true, 53: true, 853: true}

// A dest is one destination contacted, from any network event.
type dest struct {
	ev      *trace.Event
	host    string // name, or IP when no name is known
	ip      string
	port    int
	path    string
	hasPath bool
	egress  bool // carried data out
}

func (c *ctx) dests() []dest {
	var out []dest
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
			q := ""
			if i := strings.IndexByte(d.URL, '?'); i >= 0 {
				q = d.URL[i+1:]
			}
			eg := d.BodySize > 0 || len(d.Body) > 0 || len(q) >= 64 ||
				slices.Contains([]string{"POST", "PUT", "PATCH"}, strings.ToUpper(d.Method))
			out = append(out, dest{ev: e, host: host, ip: d.DstIP, port: d.DstPort, path: p, hasPath: true, egress: eg})
		case *trace.Connection:
			out = append(out, dest{ev: e, host: d.Name, ip: d.DstIP, port: d.DstPort, egress: d.Size > 0})
		case *trace.TLSHello:
			out = append(out, dest{ev: e, host: d.SNI, ip: d.DstIP, port: d.DstPort})
		case *trace.DNSQuery:
			eg := false
			for _, l := range strings.Split(d.Name, ".") {
				if len(l) >= 32 {
					eg = true
				}
			}
			out = append(out, dest{ev: e, host: strings.TrimSuffix(d.Name, "."), egress: eg})
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
			"every address its DNS gave, so anything else was typed in): droppers fetch from http://<ip>/<id>."},
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
				if ip != "" {
					c.hit(r, ip, fmt.Sprintf("connection to raw IP %s", net.JoinHostPort(ip, strconv.Itoa(d.port))), d.ev)
				}
			}
			for _, cm := range c.cmds {
				for _, u := range reURL.FindAllString(cm.text, -1) {
					if pu, err := url.Parse(u); err == nil && rawIP(pu.Hostname()) {
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
		Help: "DNS, HTTP, TLS or a command named a service that receives stolen data or tunnels out: " +
			"webhook.site, requestbin, pipedream, ngrok, bore.pub, Burp Collaborator, interactsh/oast, " +
			"canarytokens, Pastebin, glot.io, rentry, transfer.sh, Discord webhooks, the Telegram bot API; " +
			"throwaway hosts (*.vercel.app, *.workers.dev) with medium confidence."},
		func(c *ctx, r *Rule) {
			for _, d := range c.dests() {
				if b, ok := matchBadDest(d.host, d.path, d.hasPath); ok {
					f := c.hit(r, b.Suffix, fmt.Sprintf("contact with %s (%s)", d.host, b.Kind), d.ev)
					f.Confidence = maxConf(f.Confidence, b.Conf, len(f.Evidence) == 1)
				}
			}
			for _, cm := range c.cmds {
				for _, u := range reURL.FindAllString(cm.text, -1) {
					if pu, err := url.Parse(u); err == nil {
						if b, ok := matchBadDest(pu.Hostname(), pu.Path, true); ok {
							f := c.hit(r, b.Suffix, fmt.Sprintf("command names %s (%s)", pu.Hostname(), b.Kind), cm.ev)
							f.Confidence = maxConf(f.Confidence, b.Conf, len(f.Evidence) == 1)
						}
					}
				}
			}
		})
	def(Rule{ID: "SBX-NET-004", Family: "exfiltration", Title: "DNS tunnelling pattern",
		Severity: Medium, Confidence: ConfMedium, Technique: "T1071.004",
		Help: "DNS names with labels of 40 or more encoded characters, or 20 or more distinct names " +
			"under one domain: data smuggled in queries."},
		func(c *ctx, r *Rule) {
			per := map[string]map[string]bool{}
			first := map[string][]*trace.Event{}
			var order []string
			for i := range c.events {
				e := &c.events[i]
				d, ok := e.Data.(*trace.DNSQuery)
				if !ok {
					continue
				}
				name := strings.ToLower(strings.TrimSuffix(d.Name, "."))
				labels := strings.Split(name, ".")
				for _, l := range labels {
					if len(l) >= 40 && reEncoded.MatchString(l) {
						c.hit(r, "long:"+parentDomain(labels), "encoded-looking DNS label in "+capString(name, 120), e)
					}
				}
				pd := parentDomain(labels)
				if per[pd] == nil {
					per[pd] = map[string]bool{}
					order = append(order, pd)
				}
				if !per[pd][name] {
					per[pd][name] = true
					first[pd] = append(first[pd], e)
				}
			}
			for _, pd := range order {
				if len(per[pd]) >= 20 {
					c.hit(r, "many:"+pd, fmt.Sprintf("%d distinct names queried under %s", len(per[pd]), pd), first[pd]...)
				}
			}
		})
}

var reEncoded = regexp.MustCompile(`^[a-z0-9_-]+$`)

func parentDomain(labels []string) string {
	if len(labels) <= 2 {
		return strings.Join(labels, ".")
	}
	return strings.Join(labels[len(labels)-2:], ".")
}

// maxConf gives a finding the confidence of its strongest destination: the
// first sighting sets it, later ones can only raise it.
func maxConf(cur, next Confidence, first bool) Confidence {
	if first {
		return next
	}
	rank := map[Confidence]int{ConfLow: 1, ConfMedium: 2, ConfHigh: 3}
	if rank[next] > rank[cur] {
		return next
	}
	return cur
}
