package rules

import (
	"fmt"
	"math"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

// Reads judged by what left the process (issue 29, class 2): a secret a
// skill read without a flagged read (a .env loaded as configuration, the
// environment every process holds) is judged by what its processes then
// sent: opaque data to a raw IP or a drop service.

// netDrops returns, by event seq, the events that went to a raw IP or a
// drop service (SBX-NET-001 and SBX-NET-003 at medium or above) and what
// the destination is. The calling rule must declare both in After.
func (c *ctx) netDrops() map[int64]string {
	out := map[int64]string{}
	var bySeq map[int64]dest
	for _, id := range []string{"SBX-NET-001", "SBX-NET-003"} {
		for _, f := range c.found(id) {
			if f.Severity.Rank() < Medium.Rank() {
				continue // a messaging webhook is not a drop by contact alone
			}
			for _, ev := range f.Evidence {
				if _, ok := out[ev.Seq]; ok {
					continue
				}
				why := "a raw IP address"
				if id == "SBX-NET-003" {
					if bySeq == nil {
						bySeq = map[int64]dest{}
						for _, d := range c.dests() {
							bySeq[d.ev.Seq] = d
						}
					}
					why = "a drop service"
					if d, ok := bySeq[ev.Seq]; ok {
						if b, ok := matchBadDest(d.host, d.path, d.hasPath); ok {
							why = "a " + b.kind
						}
					}
				}
				out[ev.Seq] = why
			}
		}
	}
	return out
}

// dropWhy says why d went to a drop, "" when it did not: a raw IP or a
// drop service (netDrops), data hidden in a part of a protocol that
// carries none in normal use (covert), or a drop site of data/dropsites.tsv
// whose stored content is opaque (dropsites.go).
func (c *ctx) dropWhy(d dest, netDrops map[int64]string) string {
	if why := netDrops[d.ev.Seq]; why != "" {
		return why
	}
	if d.covert {
		return "a part that carries no data in normal use"
	}
	if x, ok := d.ev.Data.(*trace.HTTPExchange); ok {
		return dropSiteWhy(x)
	}
	return ""
}

// configThenDrop is SBX-EXFIL-004 for .env files read as configuration: an
// egress to a raw IP or a drop, attributed by its connect to the same tool
// call as the read, after it.
func (c *ctx) configThenDrop(r *Rule, config []*Finding) {
	if len(config) == 0 {
		return
	}
	drops := c.netDrops()
	for _, d := range c.dests() {
		if !d.egress || d.ev.PID == 0 || d.ev.Source == trace.SourceSyscall {
			continue
		}
		why := c.dropWhy(d, drops)
		if why == "" {
			continue
		}
		for _, f := range config {
			src := c.bySeq[firstSeq(*f)]
			if src == nil || src.Seq >= d.ev.Seq || src.ToolCallID == "" || src.ToolCallID != d.ev.ToolCallID {
				continue
			}
			host := d.host
			if host == "" {
				host = d.ip
			}
			fd := c.hit(r, "egress", fmt.Sprintf("%s (%s), then the same call's processes sent data to %s (%s)", f.Title, f.Message, host, why), src, d.ev)
			fd.Confidence = ConfHigh
			break
		}
	}
}

// opaque reports a payload that reads as encrypted or encoded data: 40
// bytes or more, either one token of the base64 or hex alphabet (no
// spaces, no JSON or form punctuation but a few), or binary with high
// entropy.
func opaque(b []byte) bool {
	if len(b) < 40 {
		return false
	}
	b = b[:min(len(b), 64<<10)]
	printable, alnum := 0, 0
	var counts [256]int
	for _, x := range b {
		counts[x]++
		if x >= 0x20 && x < 0x7f || x == '\n' || x == '\r' {
			printable++
		}
		if x >= '0' && x <= '9' || x >= 'a' && x <= 'z' || x >= 'A' && x <= 'Z' || x == '+' || x == '/' || x == '=' || x == '-' || x == '_' || x == '\n' {
			alnum++
		}
	}
	var h float64
	for _, n := range counts {
		if n > 0 {
			p := float64(n) / float64(len(b))
			h -= p * math.Log2(p)
		}
	}
	if printable < len(b)*8/10 {
		return h >= 6 // binary: ciphertext or compressed
	}
	return alnum >= len(b)*97/100 && h >= 3.5 && !strings.ContainsAny(string(b), " &")
}

func readRules() {
	def(Rule{ID: "SBX-EXFIL-007", Family: "exfiltration", Title: "Opaque data sent to a raw IP or a drop by a process holding planted secrets",
		Severity: High, Confidence: ConfHigh, Technique: "T1041", Harm: HarmExfil,
		After: []string{"SBX-EXFIL-001", "SBX-EXFIL-004", "SBX-EXFIL-005", "SBX-NET-001", "SBX-NET-003"},
		Help: "A process of the skill sent data that reads as encrypted or encoded (one base64 or hex token of " +
			"40 bytes or more, or high-entropy binary; in a body, a query, a URL path, a cookie or a header) " +
			"to a raw IP address, a drop service, a chat webhook, bot API or gist (rules/data/dropsites.tsv) " +
			"or in a part of a protocol that carries no data in normal use. Every process " +
			"of the skill holds the planted secrets in its environment, which a program reads in memory with " +
			"no syscall to see: what left is the evidence. Not reported when a planted secret was recognised " +
			"leaving (SBX-EXFIL-001) or a flagged read came first (SBX-EXFIL-004, -005)."},
		func(c *ctx, r *Rule) {
			for _, id := range []string{"SBX-EXFIL-001", "SBX-EXFIL-004", "SBX-EXFIL-005"} {
				if len(c.found(id)) > 0 {
					return
				}
			}
			drops := c.netDrops()
			for _, d := range c.dests() {
				if !d.egress || d.ev.PID == 0 || d.ev.Source == trace.SourceSyscall {
					continue // attributed to a process of the skill by its connect
				}
				why := c.dropWhy(d, drops)
				if why == "" {
					continue
				}
				payload := sentBytes(d.ev)
				if !opaque(payload) {
					continue
				}
				host := d.host
				if host == "" {
					host = d.ip
				}
				c.hit(r, "egress", fmt.Sprintf("%d bytes of opaque data sent to %s (%s) in %s by pid %d (%s), whose source is %s",
					len(payload), host, why, d.carried, d.ev.PID, c.progOf(d.ev.PID), c.environmentSource()), d.ev)
			}
		})
}

// sentBytes is what an event carried out: an HTTP body (or the longest
// word of its query, URL path, cookies and headers), a raw flow's first
// bytes, a mail, a WebSocket message, a DNS name's labels, a ClientHello's
// server name and ALPN ids.
func sentBytes(e *trace.Event) []byte {
	switch d := e.Data.(type) {
	case *trace.HTTPExchange:
		if len(d.Body) > 0 {
			return d.Body
		}
		return []byte(httpDataWord(d))
	case *trace.Connection:
		return d.FirstBytes
	case *trace.Mail:
		return d.Data
	case *trace.WSMessage:
		return d.Payload
	case *trace.TLSHello:
		return []byte(strings.ReplaceAll(d.SNI, ".", "") + strings.Join(d.ALPN, ""))
	case *trace.DNSQuery:
		labels := strings.Split(strings.TrimSuffix(d.Name, "."), ".")
		if len(labels) > 2 {
			return []byte(strings.Join(labels[:len(labels)-2], ""))
		}
	}
	return nil
}

// progOf names the program pid ran, "" when unknown.
func (c *ctx) progOf(pid int) string {
	if p := c.tree.Procs[pid]; p != nil && p.Path != "" {
		return p.Path
	}
	return "unknown program"
}
