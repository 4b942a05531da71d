package rules

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Canary hit channels.
const (
	ChannelHTTP       = "http"
	ChannelDNS        = "dns"
	ChannelTCP        = "tcp"
	ChannelUDP        = "udp"
	ChannelTLS        = "tls"
	ChannelFile       = "file"
	ChannelArgv       = "argv"
	ChannelToolOutput = "tool_output"
)

// networkChannel reports whether a token seen on ch has left the sandbox.
func networkChannel(ch string) bool {
	switch ch {
	case ChannelHTTP, ChannelDNS, ChannelTCP, ChannelUDP, ChannelTLS:
		return true
	}
	return false
}

const maxWhere = 200

// ScanCanaries looks for the set's tokens in a numbered timeline and returns
// one canary-hit event per token, encoding, channel and event where it was
// seen. It scans HTTP URLs, headers and bodies, every DNS query name of the
// trace together (so data split across labels and queries is reassembled),
// the first bytes of raw TCP/UDP flows, TLS SNI, exec argv, tool-call
// arguments (file contents written through write_file/edit_file count as the
// file channel, as do changed files' heads from the file-system diff) and
// tool output shown to the model. Existing canary-hit
// events are not scanned. The result has Seq 0; it is pure and
// deterministic. Where never holds a token's plain value: it is replaced by
// [canary:<id>].
func ScanCanaries(set *canary.Set, events []trace.Event) []trace.Event {
	if set == nil || set.Len() == 0 {
		return nil
	}
	type key struct {
		tok, enc, ch string
		seq          int64
	}
	seen := map[key]bool{}
	var out []trace.Event
	add := func(e trace.Event, h canary.Hit, ch, where string) {
		k := key{h.Token.ID, string(h.Encoding), ch, e.Seq}
		if seen[k] {
			return
		}
		seen[k] = true
		out = append(out, trace.Event{
			Time: e.Time, Source: trace.SourceCanary, Type: trace.TypeCanaryHit,
			ToolCallID: e.ToolCallID, PID: e.PID, PPID: e.PPID,
			Data: &trace.CanaryHit{
				TokenID: h.Token.ID, Kind: string(h.Token.Kind), Location: h.Token.Location,
				Encoding: string(h.Encoding), Channel: ch, Where: redact(set, where),
				Offset: h.Offset, EventSeq: e.Seq,
			},
		})
	}
	scan := func(e trace.Event, data []byte, ch, where string) {
		if len(data) < canary.MinNeedle {
			return
		}
		for _, h := range set.Find(data) {
			add(e, h, ch, where)
		}
	}
	var dnsNames []string
	var dnsEvents []int
	for i, e := range events {
		switch d := e.Data.(type) {
		case *trace.HTTPExchange:
			scan(e, []byte(d.URL), ChannelHTTP, d.URL)
			scan(e, []byte(headerText(d.Headers)), ChannelHTTP, d.URL)
			scan(e, d.Body, ChannelHTTP, d.URL)
		case *trace.DNSQuery:
			names := []string{d.Name}
			for _, q := range d.Questions {
				if n, _, _ := strings.Cut(q, " "); n != d.Name {
					names = append(names, n)
				}
			}
			for _, n := range names {
				if n != "" {
					dnsNames = append(dnsNames, n)
					dnsEvents = append(dnsEvents, i)
				}
			}
		case *trace.Connection:
			ch := ChannelTCP
			if d.Proto == "udp" {
				ch = ChannelUDP
			}
			scan(e, d.FirstBytes, ch, fmt.Sprintf("%s:%d", d.DstIP, d.DstPort))
		case *trace.TLSHello:
			scan(e, []byte(d.SNI), ChannelTLS, d.SNI)
		case *trace.WSMessage:
			scan(e, d.Payload, ChannelHTTP, d.URL)
		case *trace.FSChange:
			scan(e, d.Head, ChannelFile, d.Path)
		case *trace.Exec:
			joined := strings.Join(d.Argv, " ")
			scan(e, []byte(joined), ChannelArgv, joined)
		case *trace.ToolCall:
			ch := ChannelArgv
			where := d.Tool
			if d.Tool == "write_file" || d.Tool == "edit_file" {
				ch = ChannelFile
				var a struct {
					Path string `json:"path"`
				}
				_ = json.Unmarshal(d.Arguments, &a)
				where = a.Path
			} else if c := toolCommand(d); c != "" {
				where = c
			}
			scan(e, d.Arguments, ch, where)
			scan(e, []byte(d.Stdout), ChannelToolOutput, d.Tool+" stdout")
			scan(e, []byte(d.Stderr), ChannelToolOutput, d.Tool+" stderr")
		}
	}
	if len(dnsNames) > 0 {
		for _, h := range set.FindDNS(dnsNames) {
			if h.Offset >= 0 && h.Offset < len(dnsEvents) {
				e := events[dnsEvents[h.Offset]]
				add(e, h, ChannelDNS, dnsNames[h.Offset])
			}
		}
	}
	slices.SortStableFunc(out, func(a, b trace.Event) int {
		return int(a.Data.(*trace.CanaryHit).EventSeq - b.Data.(*trace.CanaryHit).EventSeq)
	})
	return out
}

func headerText(h map[string][]string) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		for _, v := range h[k] {
			b.WriteString(k + ": " + v + "\n")
		}
	}
	return b.String()
}

// redact replaces each token's plain value and needles in s, then caps it.
func redact(set *canary.Set, s string) string {
	for _, t := range set.Tokens() {
		for _, n := range append([]string{t.Value}, t.Needles...) {
			if len(n) >= canary.MinNeedle {
				s = strings.ReplaceAll(s, n, "[canary:"+t.ID+"]")
			}
		}
	}
	return capString(s, maxWhere)
}

func capString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// PayloadHits turns hits that canary.Set.Find reported in the whole of a
// payload e holds only in part (a request, WebSocket message or raw flow
// the jail spooled past the event's budget) into canary-hit events for e,
// on the channel and with the place ScanCanaries uses for e's own bytes.
// Evaluate drops those that repeat a hit already found in e.
func PayloadHits(set *canary.Set, e trace.Event, hits []canary.Hit) []trace.Event {
	ch, where := "", ""
	switch d := e.Data.(type) {
	case *trace.HTTPExchange:
		ch, where = ChannelHTTP, d.URL
	case *trace.WSMessage:
		ch, where = ChannelHTTP, d.URL
	case *trace.Connection:
		ch, where = ChannelTCP, fmt.Sprintf("%s:%d", d.DstIP, d.DstPort)
		if d.Proto == "udp" {
			ch = ChannelUDP
		}
	default:
		return nil
	}
	out := make([]trace.Event, 0, len(hits))
	for _, h := range hits {
		out = append(out, trace.Event{
			Time: e.Time, Source: trace.SourceCanary, Type: trace.TypeCanaryHit,
			ToolCallID: e.ToolCallID, PID: e.PID, PPID: e.PPID,
			Data: &trace.CanaryHit{
				TokenID: h.Token.ID, Kind: string(h.Token.Kind), Location: h.Token.Location,
				Encoding: string(h.Encoding), Channel: ch, Where: redact(set, where),
				Offset: h.Offset, EventSeq: e.Seq,
			},
		})
	}
	return out
}
