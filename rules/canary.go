package rules

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/toolspec"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Canary hit channels: trace's, under the names the rules have always
// used.
const (
	ChannelHTTP       = trace.ChannelHTTP
	ChannelDNS        = trace.ChannelDNS
	ChannelTCP        = trace.ChannelTCP
	ChannelUDP        = trace.ChannelUDP
	ChannelTLS        = trace.ChannelTLS
	ChannelFile       = trace.ChannelFile
	ChannelArgv       = trace.ChannelArgv
	ChannelToolOutput = trace.ChannelToolOutput
	ChannelSMTP       = trace.ChannelSMTP
)

// networkChannel reports whether a token seen on ch has left the sandbox.
func networkChannel(ch string) bool { return trace.LeftSandbox(ch) }

const maxWhere = 200

// ScanCanaries looks for the set's tokens in a numbered timeline and returns
// one canary-hit event per token, encoding, channel and event where it was
// seen. It scans HTTP URLs, headers and bodies, every DNS query name of the
// trace together (so data split across labels and queries is reassembled),
// the first bytes of raw TCP/UDP flows, TLS SNI, the objects of a git push,
// SMTP credentials and messages, exec argv, tool-call
// arguments (file contents written through write_file/edit_file count as the
// file channel, as do changed files' heads from the file-system diff) and
// tool output shown to the model. Existing canary-hit
// events are not scanned. The result has Seq 0; it is pure and
// deterministic. Where never holds a token's plain value: it is replaced by
// [canary:<id>].
//
// Keys the trace shows (an `openssl enc -k` password, a key in a one-liner
// that XORs or encrypts, from exec argv and tool-call commands) are tried
// on what leaves (canary.WithKeys). A token split across several HTTP
// requests, or TCP or UDP payloads, to one destination is reassembled (per
// field, in request order; see splitStreams), as are DNS queries (FindDNS):
// its hit names every event it spans in Spans.
func ScanCanaries(set *canary.Set, events []trace.Event) []trace.Event {
	if set == nil || set.Len() == 0 {
		return nil
	}
	set = set.WithKeys(traceKeys(events))
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
	fields := &bodyFieldCache{}     // each exchange's body fields, parsed once
	var dnsNames, dnsShown []string // as matched (reverseName), as queried
	var dnsEvents []int
	for i, e := range events {
		switch d := e.Data.(type) {
		case *trace.HTTPExchange:
			scan(e, []byte(d.URL), ChannelHTTP, d.URL)
			// Basic credentials are scanned decoded: they are the
			// credential as sent (git, curl -u), so a token sent to its
			// own service reads as plain.
			hdr, basic := splitBasicAuth(d.Headers)
			scan(e, []byte(headerText(hdr)), ChannelHTTP, d.URL)
			scan(e, basic, ChannelHTTP, d.URL)
			scan(e, d.Body, ChannelHTTP, d.URL)
			// Escapes break a run of text in two (a "/" sent as %2F, a
			// JSON \/): each value is scanned again as the server reads it.
			for _, v := range decodedValues(d, fields) {
				scan(e, v, ChannelHTTP, d.URL)
			}
		case *trace.GitExchange:
			scan(e, d.Content, ChannelHTTP, d.URL)
		case *trace.Mail:
			where := "mail from " + d.From + " to " + strings.Join(d.To, ",")
			scan(e, []byte(d.AuthUser+"\n"+d.AuthSecret), ChannelSMTP, where)
			scan(e, d.Data, ChannelSMTP, where)
		case *trace.DNSQuery:
			names := []string{d.Name}
			for _, q := range d.Questions {
				if n, _, _ := strings.Cut(q, " "); n != d.Name {
					names = append(names, n)
				}
			}
			for _, n := range names {
				if n != "" {
					dnsNames = append(dnsNames, reverseName(n))
					dnsShown = append(dnsShown, n)
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
			if d.Tool == toolspec.WriteFile || d.Tool == toolspec.EditFile {
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
	for _, st := range splitStreams(events, fields) {
		for _, h := range set.FindSplit(st.data) {
			first := st.events[h.Parts[0]]
			e := events[first]
			var spans []int64
			for _, p := range h.Parts {
				if s := events[st.events[p]].Seq; !slices.Contains(spans, s) {
					spans = append(spans, s)
				}
			}
			if len(spans) < 2 {
				continue // one event held it: its own scan reports it
			}
			n := len(out)
			add(e, h, st.channel, fmt.Sprintf("%s, across %d events", st.where, len(spans)))
			if len(out) > n {
				out[n].Data.(*trace.CanaryHit).Spans = spans
			}
		}
	}
	if len(dnsNames) > 0 {
		for _, h := range set.FindDNS(dnsNames) {
			if h.Offset >= 0 && h.Offset < len(dnsEvents) {
				e := events[dnsEvents[h.Offset]]
				n := len(out)
				add(e, h, ChannelDNS, dnsShown[h.Offset])
				var spans []int64
				for _, p := range h.Parts {
					if p >= 0 && p < len(dnsEvents) {
						if s := events[dnsEvents[p]].Seq; !slices.Contains(spans, s) {
							spans = append(spans, s)
						}
					}
				}
				if len(out) > n && len(spans) > 1 {
					out[n].Data.(*trace.CanaryHit).Spans = spans
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b trace.Event) int {
		return int(a.Data.(*trace.CanaryHit).EventSeq - b.Data.(*trace.CanaryHit).EventSeq)
	})
	return out
}

// splitBasicAuth returns the headers without the Basic credentials of
// Authorization, and those credentials decoded ("user:password" lines).
func splitBasicAuth(h map[string][]string) (map[string][]string, []byte) {
	var basic []byte
	out := make(map[string][]string, len(h))
	for k, vs := range h {
		if !strings.EqualFold(k, "Authorization") && !strings.EqualFold(k, "Proxy-Authorization") {
			out[k] = vs
			continue
		}
		for _, v := range vs {
			scheme, cred, _ := strings.Cut(strings.TrimSpace(v), " ")
			if dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred)); err == nil && strings.EqualFold(scheme, "basic") {
				basic = append(append(basic, dec...), '\n')
				continue
			}
			out[k] = append(out[k], v)
		}
	}
	return out, basic
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

// traceKeys collects the keys the trace shows: exec argv and the commands
// of tool calls.
func traceKeys(events []trace.Event) []canary.Key {
	var keys []canary.Key
	for _, e := range events {
		switch d := e.Data.(type) {
		case *trace.Exec:
			keys = append(keys, canary.KeysFromArgv(d.Argv)...)
		case *trace.ToolCall:
			if c := toolCommand(d); c != "" {
				keys = append(keys, canary.KeysFromCommand(c)...)
			}
		}
	}
	return keys
}

// A splitStream is one field of what a trace sent to one destination, in
// order: the parts a token split across requests or payloads is looked for
// in.
type splitStream struct {
	channel, where string // where: the destination and the field
	data           [][]byte
	events         []int // index in the timeline of each part's event
}

// splitStreams groups what left the sandbox by destination (an HTTP host's
// registered domain, approximated by its last two labels; an IP and port
// for raw flows) and, per destination, by field: HTTP bodies, URL query
// values (all of them, and per name), the part of the path that differs
// between requests, form and JSON string values (all, and per name), and
// header values per name; raw TCP and UDP first bytes. Only streams of two
// or more parts are returned, in the order of their first part.
func splitStreams(events []trace.Event, fields *bodyFieldCache) []splitStream {
	var order []string
	streams := map[string]*splitStream{}
	// Every field is also in a stream of all destinations (anyDest), and a
	// raw flow's payload in one of all its host's ports ("host:*"): a token's
	// halves sent to two hosts, or chunks sent to one port each, only come
	// together there. A planted token is random: parts of it that join into
	// it came from it.
	dests := map[string]map[string]bool{} // stream key -> destinations in it
	add1 := func(ch, dest, field string, i int, b []byte, shown string) {
		k := ch + "\x00" + dest + "\x00" + field
		st := streams[k]
		if st == nil {
			st = &splitStream{channel: ch, where: dest + " " + field}
			streams[k] = st
			order = append(order, k)
			dests[k] = map[string]bool{}
		}
		dests[k][shown] = true
		st.data = append(st.data, b)
		st.events = append(st.events, i)
	}
	add := func(ch, dest, field string, i int, b []byte) {
		if len(b) == 0 {
			return
		}
		add1(ch, dest, field, i, b, dest)
		if !strings.HasPrefix(field, "path") {
			add1(ch, anyDest, field, i, b, dest)
		}
	}
	addRaw := func(ch, host string, port int, i int, b []byte) {
		if len(b) == 0 {
			return
		}
		dest := fmt.Sprintf("%s:%d", host, port)
		add1(ch, dest, "payload", i, b, dest)
		add1(ch, host+":*", "payload", i, b, dest)
		add1(ch, anyDest, "payload", i, b, dest)
	}
	// The ports a host was sent to, in order: one connection per byte
	// carries data in its port number.
	type portAt struct{ port, i int }
	portSeqs := map[string][]portAt{}
	var portOrder []string
	type req struct {
		i    int
		dest string
		path []string
	}
	var reqs []req
	for i, e := range events {
		switch d := e.Data.(type) {
		case *trace.HTTPExchange:
			u, err := url.Parse(d.URL)
			host := d.Host
			if err == nil && u.Hostname() != "" {
				host = u.Hostname()
			}
			dest := destination(host)
			add(ChannelHTTP, dest, "body", i, d.Body)
			if err == nil {
				var all []byte
				for _, kv := range strings.Split(u.RawQuery, "&") {
					k, v, _ := strings.Cut(kv, "=")
					raw := v
					if uv, err := url.QueryUnescape(v); err == nil {
						v = uv
					}
					add(ChannelHTTP, dest, "query:"+k, i, []byte(v))
					all = append(all, v...)
					// A "+" the client sent unencoded (curl does) is the
					// server's to read as "+" (base64 keeps it): every value
					// of the field is also joined as sent.
					if pv, err := url.PathUnescape(raw); err == nil {
						add(ChannelHTTP, dest, "query+:"+k, i, []byte(pv))
					}
				}
				add(ChannelHTTP, dest, "query", i, all)
				reqs = append(reqs, req{i, dest, strings.Split(strings.Trim(u.Path, "/"), "/")})
			}
			for _, f := range fields.of(d) {
				add(ChannelHTTP, dest, f[0], i, []byte(f[1]))
			}
			names := make([]string, 0, len(d.Headers))
			for k := range d.Headers {
				names = append(names, k)
			}
			slices.Sort(names)
			for _, k := range names {
				add(ChannelHTTP, dest, "header:"+strings.ToLower(k), i, []byte(strings.Join(d.Headers[k], "")))
			}
		case *trace.Connection:
			ch := ChannelTCP
			if d.Proto == "udp" {
				ch = ChannelUDP
			}
			host := d.DstIP
			if d.Name != "" {
				host = d.Name
			}
			addRaw(ch, host, d.DstPort, i, d.FirstBytes)
			k := ch + " " + host
			if _, ok := portSeqs[k]; !ok {
				portOrder = append(portOrder, k)
			}
			portSeqs[k] = append(portSeqs[k], portAt{d.DstPort, i})
		}
	}
	// Paths: what follows the prefix every request to the destination
	// shares, once with the segments joined as they are and once without
	// sequence numbers.
	prefix := map[string][]string{}
	for _, r := range reqs {
		p, ok := prefix[r.dest]
		if !ok {
			prefix[r.dest] = r.path
			continue
		}
		n := 0
		for n < len(p) && n < len(r.path) && p[n] == r.path[n] {
			n++
		}
		prefix[r.dest] = p[:n]
	}
	for _, r := range reqs {
		rest := r.path[min(len(prefix[r.dest]), len(r.path)):]
		var plain, nocount []byte
		for _, seg := range rest {
			if u, err := url.PathUnescape(seg); err == nil {
				seg = u
			}
			plain = append(plain, seg...)
			if !isSeqNumber(seg) {
				nocount = append(nocount, seg...)
			}
		}
		add(ChannelHTTP, r.dest, "path", r.i, plain)
		add(ChannelHTTP, r.dest, "path-data", r.i, nocount)
	}
	for _, k := range portOrder {
		seq := portSeqs[k]
		ch, host, _ := strings.Cut(k, " ")
		distinct := map[int]bool{}
		lo := seq[0].port
		for _, p := range seq {
			distinct[p.port] = true
			lo = min(lo, p.port)
		}
		if len(seq) < minPortBytes || len(distinct) < 4 {
			continue
		}
		// A byte per port: port - base for the bases an encoder picks
		// (a round number below the lowest port; 0 for the low byte
		// when every port is one 256-block), or two bytes per port.
		bases := []int{lo / 1000 * 1000, lo / 1024 * 1024, lo / 256 * 256, lo / 100 * 100}
		seen := map[int]bool{}
		for _, base := range bases {
			if seen[base] {
				continue
			}
			seen[base] = true
			fits := true
			for _, p := range seq {
				if p.port-base > 255 {
					fits = false
					break
				}
			}
			if !fits {
				continue
			}
			for _, p := range seq {
				add1(ch, host, fmt.Sprintf("ports-%d", base), p.i, []byte{byte(p.port - base)}, host)
			}
		}
		for _, p := range seq {
			add1(ch, host, "ports16", p.i, []byte{byte(p.port >> 8), byte(p.port)}, host)
		}
	}
	var out []splitStream
	for _, k := range order {
		st := streams[k]
		if len(st.data) < 2 {
			continue
		}
		if parts := strings.SplitN(k, "\x00", 3); parts[1] == anyDest || strings.HasSuffix(parts[1], ":*") {
			// A stream across destinations or ports adds nothing when its
			// parts all went to one: that one's own stream has them.
			if len(dests[k]) < 2 {
				continue
			}
			names := slices.Sorted(maps.Keys(dests[k]))
			if len(names) > 3 {
				names = append(names[:3], fmt.Sprintf("%d more", len(dests[k])-3))
			}
			st.where = strings.Join(names, ", ") + " " + parts[2]
		}
		out = append(out, *st)
	}
	return out
}

// minPortBytes is the fewest connections to one host whose ports are read
// as data: fewer could not carry a secret worth finding.
const minPortBytes = 8

// anyDest is the destination of the streams that join a field across
// every destination.
const anyDest = "*"

// destination is the registered domain of host (its last two labels), or
// the address itself.
func destination(host string) string {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if net.ParseIP(host) != nil {
		return host
	}
	labels := strings.Split(host, ".")
	if len(labels) > 2 {
		labels = labels[len(labels)-2:]
	}
	return strings.Join(labels, ".")
}

// bodyFields returns the named string values of a form or JSON body, each
// as {field, value}, and their concatenation per kind ("form", "json").
// decodedValues returns the URL query values and body fields (form and
// JSON strings) of an exchange that differ from their text as sent: the
// values as the server decodes them.
func decodedValues(d *trace.HTTPExchange, fields *bodyFieldCache) [][]byte {
	var out [][]byte
	if u, err := url.Parse(d.URL); err == nil {
		for _, kv := range strings.Split(u.RawQuery, "&") {
			_, v, _ := strings.Cut(kv, "=")
			if uv, err := url.QueryUnescape(v); err == nil && uv != v && len(uv) >= canary.MinNeedle {
				out = append(out, []byte(uv))
			}
		}
	}
	for _, f := range fields.of(d) {
		if len(f[1]) >= canary.MinNeedle && !bytes.Contains(d.Body, []byte(f[1])) {
			out = append(out, []byte(f[1]))
		}
	}
	return out
}

// bodyFieldCache keeps each exchange's bodyFields: the direct scan and the
// split streams both read them, and a JSON body is parsed once.
type bodyFieldCache map[*trace.HTTPExchange][][2]string

func (c *bodyFieldCache) of(d *trace.HTTPExchange) [][2]string {
	if *c == nil {
		*c = bodyFieldCache{}
	}
	f, ok := (*c)[d]
	if !ok {
		f = bodyFields(d)
		(*c)[d] = f
	}
	return f
}

func bodyFields(d *trace.HTTPExchange) [][2]string {
	body := d.Body
	if len(body) == 0 || len(body) > 1<<20 {
		return nil
	}
	var out [][2]string
	var all strings.Builder
	switch c := body[0]; {
	case c == '{' || c == '[':
		var v any
		if json.Unmarshal(body, &v) != nil {
			return nil
		}
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch x := v.(type) {
			case string:
				out = append(out, [2]string{"json:" + path, x})
				all.WriteString(x)
			case map[string]any:
				keys := make([]string, 0, len(x))
				for k := range x {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				for _, k := range keys {
					walk(path+"."+k, x[k])
				}
			case []any:
				for _, e := range x {
					walk(path+"[]", e)
				}
			}
		}
		walk("", v)
		out = append(out, [2]string{"json", all.String()})
	case strings.Contains(strings.Join(d.Headers["Content-Type"], ""), "x-www-form-urlencoded"):
		for _, kv := range strings.Split(string(body), "&") {
			k, v, _ := strings.Cut(kv, "=")
			if uv, err := url.QueryUnescape(v); err == nil {
				v = uv
			}
			out = append(out, [2]string{"form:" + k, v})
			all.WriteString(v)
		}
		out = append(out, [2]string{"form", all.String()})
	}
	return out
}

// isSeqNumber reports whether a path segment looks like a chunk number.
func isSeqNumber(s string) bool {
	if s == "" || len(s) > 4 {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// reverseName gives a reverse lookup's name the order of the bytes it
// carries: an ip6.arpa name's nibbles ("b.a.9.8.….ip6.arpa": 16 bytes a
// query, last first) joined in address order as one hex label, an
// in-addr.arpa name's octets as hex. A skill that hides data in the
// addresses it "looks up" is then read as any hex in DNS labels is. Any
// other name is returned as it is.
func reverseName(n string) string {
	lower := strings.ToLower(strings.TrimSuffix(n, "."))
	var zone string
	switch {
	case strings.HasSuffix(lower, ".ip6.arpa"):
		zone = ".ip6.arpa"
	case strings.HasSuffix(lower, ".in-addr.arpa"):
		zone = ".in-addr.arpa"
	default:
		return n
	}
	labels := strings.Split(strings.TrimSuffix(lower, zone), ".")
	var b strings.Builder
	for i := len(labels) - 1; i >= 0; i-- {
		l := labels[i]
		if zone == ".ip6.arpa" {
			if len(l) != 1 || !strings.Contains("0123456789abcdef", l) {
				return n
			}
			b.WriteString(l)
			continue
		}
		v, err := strconv.Atoi(l)
		if err != nil || v < 0 || v > 255 || len(l) > 3 {
			return n
		}
		fmt.Fprintf(&b, "%02x", v)
	}
	if b.Len() < 2 {
		return n
	}
	return b.String() + zone
}
