package reports

// The pictures of the HTML page, computed here as plain data and drawn by
// the template as inline SVG: the timeline (tool calls as bands, and
// processes, files, network and canary hits as marks on one time axis),
// the network map (the sandbox, each destination, what went there and which
// planted tokens), the flow of each leaked token (planted → read → encoded
// → sent) and the process tree. Everything is capped so that a trace of
// 100,000 events still draws a page of bounded size: marks are binned per
// pixel column, destinations and flows are cut at a fixed count.

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Timeline geometry, in SVG user units (the SVG scales to the page width).
const (
	tlWidth   = 1000
	tlLabel   = 96 // the lanes' labels on the left
	tlRight   = 12
	tlBandH   = 22 // the row of tool-call names
	tlLaneH   = 24
	tlAxisH   = 20
	tlBinPx   = 3 // events closer than this share one mark
	tlMarkW   = 2.4
	tlMarkPad = 5
)

// Lanes of the timeline, top to bottom.
var tlLanes = []struct{ Key, Label string }{
	{"proc", "processes"},
	{"file", "files"},
	{"net", "network"},
	{"canary", "canary hits"},
}

type htmlTimeline struct {
	Width, Height float64
	PlotX, PlotW  float64
	Lanes         []htmlLane
	Bands         []htmlBand
	Ticks         []htmlTick
	Span          string // the whole axis, "4.2s"
	Marks         int    // marks drawn, all lanes
	Events        int    // events they stand for
}

type htmlLane struct {
	Key, Label string
	Y          float64 // top of the lane
	LabelY     float64
	Marks      []htmlMark
	Count      int
}

type htmlBand struct {
	X, W, LabelX float64
	ID, Anchor   string
	Title        string
	Label        string // "" when the band is too narrow for it
	Alt          bool
	Flag         bool // the call has findings
}

type htmlMark struct {
	X, Y, W, H float64
	N          int
	Title      string
	Href       string // "" when the event has no row on the page
	Evidence   bool
}

type htmlTick struct {
	X      float64
	Label  string
	Anchor string // text-anchor
}

// laneOf returns the timeline lane of an event, or "" for the events that
// are not the skill's activity (the jail's notices, the planted files'
// identities, budgets, resource figures).
func laneOf(e trace.Event) string {
	switch e.Type {
	case trace.TypeCanaryHit:
		return "canary"
	case trace.TypeDNSQuery, trace.TypeHTTP, trace.TypeConnection, trace.TypeTLSHello, trace.TypePackage,
		trace.TypeGit, trace.TypeMail, trace.TypeWSMessage, trace.TypeConnect, trace.TypeSendto, trace.TypeBind:
		return "net"
	case trace.TypeOpen, trace.TypeRead, trace.TypeWrite, trace.TypeUnlink, trace.TypeRename, trace.TypeChmod,
		trace.TypeMkdir, trace.TypeLink, trace.TypeFSChange:
		return "file"
	case trace.TypeExec, trace.TypeLeftover:
		return "proc"
	}
	return ""
}

// buildTimeline lays out the timeline of r. evRefs says which events are
// evidence; shown which have a row to link to.
func buildTimeline(r *Report, evRefs map[int64][]string, shown map[int64]bool, callFindings map[string][]string) htmlTimeline {
	tl := htmlTimeline{Width: tlWidth, PlotX: tlLabel, PlotW: tlWidth - tlLabel - tlRight}
	var t0, t1 time.Time
	extend := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if t0.IsZero() || t.Before(t0) {
			t0 = t
		}
		if t1.IsZero() || t.After(t1) {
			t1 = t
		}
	}
	type call struct {
		id, summary string
		start, end  time.Time
	}
	var calls []call
	for _, e := range r.Events {
		if d, ok := e.Data.(*trace.ToolCall); ok {
			start := d.Started
			if start.IsZero() {
				start = e.Time
			}
			calls = append(calls, call{d.ID, strings.TrimPrefix(rules.Summarize(e), "tool "), start, start.Add(d.Duration)})
			extend(start)
			extend(start.Add(d.Duration))
			continue
		}
		// The file-system diff is read after the last call: its time
		// says when it was collected, not when the file changed, so it
		// does not stretch the axis (such marks sit at its right end).
		if laneOf(e) != "" && e.Type != trace.TypeFSChange {
			extend(e.Time)
		}
	}
	if t0.IsZero() { // nothing ran: an empty axis from the start
		t0, t1 = r.StartedAt, r.StartedAt
	}
	span := t1.Sub(t0)
	if span <= 0 {
		span = time.Millisecond
	}
	// a little room on both sides, so the first and last marks show
	pad := span / 50
	t0, span = t0.Add(-pad), span+2*pad
	tl.Span = span.Round(time.Millisecond).String()
	x := func(t time.Time) float64 {
		f := min(max(float64(t.Sub(t0))/float64(span), 0), 1) // clamped to the axis
		return tl.PlotX + tl.PlotW*f
	}
	top := float64(tlBandH)
	for i, l := range tlLanes {
		y := top + float64(i*tlLaneH)
		tl.Lanes = append(tl.Lanes, htmlLane{Key: l.Key, Label: l.Label, Y: y, LabelY: y + tlLaneH/2 + 4})
	}
	plotBottom := top + float64(len(tlLanes)*tlLaneH)
	tl.Height = plotBottom + tlAxisH
	for i, c := range calls {
		bx, bw := x(c.start), x(c.end)-x(c.start)
		bw = max(bw, 1.5)
		b := htmlBand{X: bx, W: bw, LabelX: bx + 3, ID: c.id, Anchor: "call-" + c.id, Alt: i%2 == 1,
			Title: fmt.Sprintf("%s %s (%s)", c.id, cut(c.summary, 160), c.end.Sub(c.start).Round(time.Millisecond)),
			Flag:  len(callFindings[c.id]) > 0}
		if bw >= float64(7*len(c.id)) {
			b.Label = c.id
		}
		tl.Bands = append(tl.Bands, b)
	}
	// Marks: per lane, events binned by pixel column.
	type bin struct {
		n        int
		first    trace.Event
		evidence bool
		href     int64
	}
	bins := make([]map[int]*bin, len(tlLanes))
	for i := range bins {
		bins[i] = map[int]*bin{}
	}
	laneIdx := map[string]int{}
	for i, l := range tlLanes {
		laneIdx[l.Key] = i
	}
	for _, e := range r.Events {
		l := laneOf(e)
		if l == "" || e.Time.IsZero() {
			continue
		}
		li := laneIdx[l]
		k := min(int((x(e.Time)-tl.PlotX)/tlBinPx), int(tl.PlotW/tlBinPx)-1)
		b := bins[li][k]
		if b == nil {
			b = &bin{first: e}
			bins[li][k] = b
		}
		b.n += max(e.Count, 1)
		ev := len(evRefs[e.Seq]) > 0
		if ev && !b.evidence {
			b.evidence, b.href = true, 0
		}
		if b.href == 0 && shown[e.Seq] && (ev || !b.evidence) {
			b.href = e.Seq
		}
		tl.Lanes[li].Count += max(e.Count, 1)
		tl.Events += max(e.Count, 1)
	}
	for li := range tl.Lanes {
		ks := make([]int, 0, len(bins[li]))
		for k := range bins[li] {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		lane := &tl.Lanes[li]
		for _, k := range ks {
			b := bins[li][k]
			m := htmlMark{X: tl.PlotX + float64(k)*tlBinPx, Y: lane.Y + tlMarkPad, W: tlMarkW, H: tlLaneH - 2*tlMarkPad,
				N: b.n, Evidence: b.evidence}
			if b.n > 1 {
				m.Title = fmt.Sprintf("%d events from #%d: %s", b.n, b.first.Seq, cut(rules.Summarize(b.first), 160))
			} else {
				m.Title = fmt.Sprintf("#%d %s", b.first.Seq, cut(rules.Summarize(b.first), 200))
			}
			if b.href != 0 {
				m.Href = fmt.Sprintf("#e%d", b.href)
			}
			lane.Marks = append(lane.Marks, m)
			tl.Marks++
		}
	}
	// ticks in the offsets the event rows show: from the trace's start
	origin := r.StartedAt
	if origin.IsZero() {
		origin = t0.Add(pad)
	}
	for i := 0; i <= 5; i++ {
		d := t0.Add(time.Duration(float64(span) * float64(i) / 5)).Sub(origin)
		anchor := "middle"
		if i == 5 {
			anchor = "end"
		}
		tl.Ticks = append(tl.Ticks, htmlTick{X: tl.PlotX + tl.PlotW*float64(i)/5, Label: signed(fmtOffset(d)), Anchor: anchor})
	}
	return tl
}

// fmtOffset writes a time offset compactly: 850ms, 1.25s, 2m03s.
func fmtOffset(d time.Duration) string {
	if d < 0 && d > -1<<62 {
		return "-" + fmtOffset(-d)
	}
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// maxNetNodes caps the destinations drawn on the network map (the table
// lists them all, up to maxNetRows).
const (
	maxNetNodes = 24
	maxNetRows  = 200
	maxNetSent  = 6 // requests listed per destination
)

type htmlNetMap struct {
	Width, Height float64
	SandboxY      float64
	Nodes         []htmlNetNode
	Rows          []htmlNetNode
	MoreRows      int
	MoreNodes     int
}

type htmlNetNode struct {
	Host       string
	Anchor     string
	Channels   []string
	DNS, HTTP  int
	Conns      int
	BytesSent  int64
	Sent       []string // "POST https://host/path (812 B)"
	MoreSent   int
	Tokens     []string // token ids, in planted order
	TokenKinds string   // "aws_access_key ×1, ..."
	FirstSeq   int64
	Y          float64 // centre of the node on the map
	Path       string  // the edge from the sandbox
	EdgeLabel  string
	LabelX     float64
	LabelY     float64
	Width      float64 // stroke width
}

// buildNetMap groups the network evidence by destination host.
func buildNetMap(r *Report) htmlNetMap {
	ns := netNodes{byHost: map[string]*htmlNetNode{}, w: newWhereTo(r.Events)}
	ns.addEvents(r.Events)
	kinds := ns.addTokens(r)
	m := ns.rows(r, kinds)
	drawNetMap(&m)
	return m
}

// netNodes collects a run's destinations by host, in the order first met.
type netNodes struct {
	byHost map[string]*htmlNetNode
	order  []string
	w      whereTo
}

// node returns the destination host, added when new, first contacted no
// later than the event numbered seq.
func (ns *netNodes) node(host string, seq int64) *htmlNetNode {
	n := ns.byHost[host]
	if n == nil {
		n = &htmlNetNode{Host: host, FirstSeq: seq}
		ns.byHost[host] = n
		ns.order = append(ns.order, host)
	}
	n.FirstSeq = min(n.FirstSeq, seq)
	return n
}

// addChannel adds the channel ch ("dns", "tls"...) to n's, once.
func addChannel(n *htmlNetNode, ch string) {
	if ch != "" && !slices.Contains(n.Channels, ch) {
		n.Channels = append(n.Channels, ch)
	}
}

// addEvents counts the DNS queries, requests, connections and TLS hellos
// of events against their destinations.
func (ns *netNodes) addEvents(events []trace.Event) {
	for _, e := range events {
		host, ch, claimed := ns.w.eventHost(e)
		if claimed != "" {
			host += " (claiming " + claimed + ")"
		}
		if host == "" {
			continue
		}
		switch d := e.Data.(type) {
		case *trace.DNSQuery:
			// the name asked, not its registrable domain: the same host
			// as the connection that follows
			host = strings.ToLower(strings.TrimSuffix(d.Name, "."))
			if host == "" {
				continue
			}
			n := ns.node(host, e.Seq)
			n.DNS += max(e.Count, 1)
			addChannel(n, "dns")
		case *trace.HTTPExchange:
			n := ns.node(host, e.Seq)
			n.HTTP++
			n.BytesSent += d.BodySize
			addChannel(n, ch)
			if len(n.Sent) < maxNetSent {
				n.Sent = append(n.Sent, fmt.Sprintf("%s %s (%s)", d.Method, cut(d.URL, 120), byteSize(d.BodySize)))
			} else {
				n.MoreSent++
			}
		case *trace.Connection:
			n := ns.node(host, e.Seq)
			n.Conns++
			n.BytesSent += d.Size
			addChannel(n, ch)
			if d.Size > 0 || d.Refused {
				what := fmt.Sprintf("%s %s:%d (%s)", d.Proto, d.DstIP, d.DstPort, byteSize(d.Size))
				if d.Refused {
					what = fmt.Sprintf("%s %s:%d refused", d.Proto, d.DstIP, d.DstPort)
				}
				if len(n.Sent) < maxNetSent {
					n.Sent = append(n.Sent, what)
				} else {
					n.MoreSent++
				}
			}
		case *trace.TLSHello:
			n := ns.node(host, e.Seq)
			addChannel(n, "tls")
		}
	}
}

// addTokens adds the tokens that leaked to the destinations they went to
// (a leaked hit's host is its event's) and returns how many of each kind
// went to each host.
func (ns *netNodes) addTokens(r *Report) map[string]map[string]int {
	byseq := map[int64]trace.Event{}
	for _, e := range r.Events {
		byseq[e.Seq] = e
	}
	kinds := map[string]map[string]int{}
	for _, h := range r.Canaries.Hits {
		// An unwatched hit's event is in that pass's timeline, not this one.
		if !h.Leaked || h.Pass == rules.PassUnwatched {
			continue
		}
		host, _, claimed := ns.w.eventHost(byseq[h.EventSeq])
		if claimed != "" {
			host += " (claiming " + claimed + ")"
		}
		if d, ok := byseq[h.EventSeq].Data.(*trace.DNSQuery); ok {
			host = strings.ToLower(strings.TrimSuffix(d.Name, "."))
		}
		if host == "" {
			host = hostOf(h.Where)
		}
		n := ns.node(host, h.EventSeq)
		if !slices.Contains(n.Tokens, h.TokenID) {
			n.Tokens = append(n.Tokens, h.TokenID)
			if kinds[host] == nil {
				kinds[host] = map[string]int{}
			}
			kinds[host][h.Kind]++
		}
	}
	return kinds
}

// rows returns the map with its rows: the destinations in the order first
// met, up to maxNetRows, their tokens in planted order and described by
// kinds, the count of each kind of token sent to each host.
func (ns *netNodes) rows(r *Report, kinds map[string]map[string]int) htmlNetMap {
	planted := map[string]int{}
	for i, p := range r.Canaries.Planted {
		planted[p.ID] = i
	}
	m := htmlNetMap{Width: tlWidth}
	for _, h := range ns.order {
		n := ns.byHost[h]
		n.Anchor = "dest-" + fmt.Sprint(len(m.Rows)+m.MoreRows+1)
		slices.SortFunc(n.Tokens, func(a, b string) int { return cmp.Compare(planted[a], planted[b]) })
		var ks []string
		for k, c := range kinds[h] {
			ks = append(ks, fmt.Sprintf("%s ×%d", k, c))
		}
		slices.Sort(ks)
		n.TokenKinds = strings.Join(ks, ", ")
		if len(m.Rows) < maxNetRows {
			m.Rows = append(m.Rows, *n)
		} else {
			m.MoreRows++
		}
	}
	return m
}

// drawNetMap lays out the nodes of m's map: tokens first, then by first
// contact, up to maxNetNodes, each joined to the sandbox by a labelled
// edge.
func drawNetMap(m *htmlNetMap) {
	drawn := slices.Clone(m.Rows)
	slices.SortStableFunc(drawn, func(a, b htmlNetNode) int {
		return cmp.Or(cmp.Compare(len(b.Tokens), len(a.Tokens)), cmp.Compare(a.FirstSeq, b.FirstSeq))
	})
	if len(drawn) > maxNetNodes {
		m.MoreNodes = len(drawn) - maxNetNodes + len(m.Rows) - len(drawn) + m.MoreRows
		drawn = drawn[:maxNetNodes]
	}
	const rowH, pad = 46.0, 14.0
	m.Height = max(90, pad*2+rowH*float64(len(drawn)))
	m.SandboxY = m.Height / 2
	const sx, nx = 170.0, 560.0
	for i := range drawn {
		n := &drawn[i]
		n.Y = pad + rowH*float64(i) + rowH/2
		n.Path = fmt.Sprintf("M%.1f %.1f C%.1f %.1f %.1f %.1f %.1f %.1f", sx, m.SandboxY, sx+160, m.SandboxY, nx-160, n.Y, nx, n.Y)
		n.EdgeLabel = edgeLabel(n)
		n.LabelX, n.LabelY = nx+10, n.Y
		n.Width = 1.2
		if len(n.Tokens) > 0 {
			n.Width = 2 + min(float64(len(n.Tokens)), 8)/2
		}
	}
	m.Nodes = drawn
}

// edgeLabel describes the traffic to n: "3 requests · 2.1 KiB sent".
func edgeLabel(n *htmlNetNode) string {
	var parts []string
	if n.HTTP > 0 {
		parts = append(parts, fmt.Sprintf("%d request%s", n.HTTP, plural(n.HTTP)))
	}
	if n.Conns > 0 {
		parts = append(parts, fmt.Sprintf("%d connection%s", n.Conns, plural(n.Conns)))
	}
	if n.DNS > 0 && n.HTTP == 0 && n.Conns == 0 {
		parts = append(parts, fmt.Sprintf("%d DNS quer%s", n.DNS, map[bool]string{true: "y", false: "ies"}[n.DNS == 1]))
	}
	if n.BytesSent > 0 {
		parts = append(parts, byteSize(n.BytesSent)+" sent")
	}
	return strings.Join(parts, " · ")
}

func signed(s string) string {
	if strings.HasPrefix(s, "-") {
		return s
	}
	return "+" + s
}

func byteSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// maxFlows caps the token flows drawn.
const maxFlows = 100

// A htmlFlow is the path of leaked tokens: where they were planted, the
// step that read them, how they were encoded on the way, where they were
// sent. Tokens that took the same path (the same read, the same steps, the
// same destinations) share one flow.
type htmlFlow struct {
	Tokens  []htmlFlowToken
	Read    htmlStep
	Encoded []htmlStep
	Sent    []htmlStep
}

type htmlFlowToken struct {
	ID, Kind, Planted string
}

type htmlStep struct {
	Text string
	Seq  int64 // 0: no event
	Href bool  // the event has a row on the page
}

// key identifies a flow's path.
func (f htmlFlow) key() string {
	var b strings.Builder
	for _, s := range append(append([]htmlStep{f.Read}, f.Encoded...), f.Sent...) {
		fmt.Fprintf(&b, "%d\x00%s\x01", s.Seq, s.Text)
	}
	return b.String()
}

// buildFlows follows each leaked token through the timeline.
func buildFlows(r *Report, shown map[int64]bool) (flows []htmlFlow, more int) {
	byseq := map[int64]trace.Event{}
	for _, e := range r.Events {
		byseq[e.Seq] = e
	}
	w := newWhereTo(r.Events)
	tree := trace.BuildTree(r.Events)
	procName := func(pid int) string {
		if p := tree.Procs[pid]; p != nil && len(p.Argv) > 0 {
			return path.Base(p.Argv[0])
		}
		if pid != 0 {
			return fmt.Sprintf("pid %d", pid)
		}
		return ""
	}
	step := func(seq int64, text string) htmlStep {
		return htmlStep{Text: text, Seq: seq, Href: seq != 0 && shown[seq]}
	}
	leaked := map[string][]Hit{}
	other := map[string][]Hit{}
	for _, h := range r.Canaries.Hits {
		if h.Pass == rules.PassUnwatched {
			continue // its events are the unwatched pass's (Pass.Dir)
		}
		if h.Leaked {
			leaked[h.TokenID] = append(leaked[h.TokenID], h)
		} else {
			other[h.TokenID] = append(other[h.TokenID], h)
		}
	}
	// The first env-dumping evidence, for tokens planted in the
	// environment.
	var envRead htmlStep
	for _, f := range r.Findings {
		if (f.RuleID == "SBX-ENV-001" || f.RuleID == "SBX-EXFIL-005") && len(f.Evidence) > 0 && f.Pass != rules.PassUnwatched {
			envRead = step(f.Evidence[0].Seq, "environment read: "+cut(f.Evidence[0].Summary, 80))
			break
		}
	}
	home := strings.TrimSuffix(r.Sandbox.Home, "/")
	index := map[string]int{}
	for _, p := range r.Canaries.Planted {
		hs := leaked[p.ID]
		if len(hs) == 0 {
			continue
		}
		fl := htmlFlow{Tokens: []htmlFlowToken{{ID: p.ID, Kind: p.Kind, Planted: p.Location}}}
		firstSent := hs[0].EventSeq
		for _, h := range hs {
			firstSent = min(firstSent, h.EventSeq)
		}
		// Read: the first traced open of the planted file (or a name
		// that resolves to it) before the token left.
		if name, ok := strings.CutPrefix(p.Location, "env:"); ok {
			fl.Read = envRead
			if fl.Read.Text == "" {
				fl.Read = step(0, "$"+name+" is in the environment of every process the skill ran")
			}
		} else {
			want := p.Location
			if rest, ok := strings.CutPrefix(want, "~/"); ok && home != "" {
				want = home + "/" + rest
			}
			for _, e := range r.Events {
				if firstSent != 0 && e.Seq > firstSent {
					break
				}
				d, ok := e.Data.(*trace.File)
				if !ok || d.Errno != "" || (e.Type != trace.TypeOpen && e.Type != trace.TypeRead) {
					continue
				}
				if path.Clean(d.Path) == want || d.Resolved != "" && path.Clean(d.Resolved) == want {
					fl.Read = step(e.Seq, fmt.Sprintf("%s opened %s", orWord(procName(e.PID), "a process"), p.Location))
					break
				}
			}
			if fl.Read.Text == "" {
				fl.Read = step(0, "no traced read (see SBX-TRACER-002)")
			}
		}
		// Encoded: where it showed up inside the sandbox before leaving
		// (a command line, a file, the model's view), then the encodings
		// it left in.
		for _, h := range other[p.ID] {
			if len(fl.Encoded) == 3 {
				break
			}
			where := h.Channel
			if ev, ok := byseq[h.EventSeq]; ok && h.Channel == "argv" {
				where = "the command line of " + orWord(procName(ev.PID), "a process")
			} else if h.Channel == "file" {
				where = "file " + cut(h.Where, 60)
			}
			fl.Encoded = append(fl.Encoded, step(h.EventSeq, h.Encoding+" in "+where))
		}
		var encs []string
		for _, h := range hs {
			if !slices.Contains(encs, h.Encoding) {
				encs = append(encs, h.Encoding)
			}
		}
		slices.Sort(encs)
		fl.Encoded = append(fl.Encoded, step(0, "left as "+strings.Join(encs, ", ")))
		// Sent: each destination and channel once.
		seen := map[string]bool{}
		for _, h := range hs {
			host, ch, claimed := w.eventHost(byseq[h.EventSeq])
			if claimed != "" {
				host += " claiming " + claimed
			}
			if d, ok := byseq[h.EventSeq].Data.(*trace.DNSQuery); ok {
				host = strings.ToLower(strings.TrimSuffix(d.Name, "."))
			}
			if host == "" {
				host, ch = hostOf(h.Where), h.Channel
			}
			k := host + "|" + ch
			if seen[k] {
				continue
			}
			seen[k] = true
			fl.Sent = append(fl.Sent, step(h.EventSeq, fmt.Sprintf("%s over %s", host, ch)))
		}
		if i, ok := index[fl.key()]; ok {
			flows[i].Tokens = append(flows[i].Tokens, fl.Tokens...)
			continue
		}
		if len(flows) == maxFlows {
			more++
			continue
		}
		index[fl.key()] = len(flows)
		flows = append(flows, fl)
	}
	return flows, more
}

// htmlProcCall is one tool call's process tree.
type htmlProcCall struct {
	ID, Anchor, Tool, Summary string
	Procs                     []htmlProc
	More                      int
}
