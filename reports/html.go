package reports

import (
	"cmp"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/safetext"
	"github.com/sandboxctl/sandboxctl/trace"
)

// HTML output policy: one self-contained file with no external stylesheet,
// script, font, image or link that a browser would fetch, and a
// Content-Security-Policy that forbids every fetch (default-src 'none'),
// so that even a page an attacker managed to shape cannot call out. Its one
// script (htmlScript, allowed by its hash) only opens the collapsed block a
// link points into; the page reads the same without it. Pictures are inline
// SVG (htmlviz.go). Everything is escaped by html/template, then every
// control, bidi or invisible character made a visible escape by safetext.
// The page opens with what an analyst acts on: the verdict, the narrative
// and the incidents, then the token flows, the timeline, the network map
// and the process tree; the findings, coverage and every event follow.
// Tool calls are <details> blocks (open when they hold evidence) so a page
// of 10,000 events stays light; each call shows at most
// MaxHTMLEventsPerCall events besides the evidence, and the rest is in
// events.jsonl.

//go:embed report.html.tmpl
var htmlTemplate string

// MaxHTMLEventsPerCall caps the rows shown under one tool call (evidence
// rows are always shown).
const MaxHTMLEventsPerCall = 1000

// maxHTMLOutput caps the tool output shown per call.
const maxHTMLOutput = 8 << 10

// maxHTMLLines caps the skill lines shown per file.
const maxHTMLLines = 5000

// htmlScript is the page's only script: when a link (or the address's
// fragment) points into a closed <details>, it opens it. It marks the
// document when it ran, which the browser test checks.
const htmlScript = `(function () {
  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    for (var p = el; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") { p.open = true; }
    }
    if (el) { el.scrollIntoView({block: "center"}); }
  }
  window.addEventListener("hashchange", reveal);
  reveal();
  document.documentElement.setAttribute("data-script", "ran");
})();`

// htmlScriptHash is the CSP source that allows htmlScript and nothing else.
var htmlScriptHash = func() string {
	sum := sha256.Sum256([]byte(htmlScript))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}()

var tmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"lower":  func(s any) string { return strings.ToLower(fmt.Sprint(s)) },
	"upper":  func(s any) string { return strings.ToUpper(fmt.Sprint(s)) },
	"pair":   func(v htmlView, seq int64) seqRef { return seqRef{V: v, Seq: seq} },
	"f1":     func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) },
	"add":    func(a, b float64) float64 { return a + b },
	"script": func() template.JS { return template.JS(htmlScript) },
	"csp": func() template.HTMLAttr {
		return template.HTMLAttr(`content="default-src 'none'; style-src 'unsafe-inline'; script-src ` + htmlScriptHash +
			`; base-uri 'none'; form-action 'none'"`)
	},
}).Parse(htmlTemplate))

type htmlView struct {
	R          *Report
	Counts     string
	Started    string
	Duration   string
	Findings   []htmlFinding
	Calls      []htmlCall
	Other      htmlCall
	Files      []htmlFile
	Leaked     []Hit
	KindCounts []string
	// Shown holds the seqs that have a row (and an anchor) on the page.
	Shown map[int64]bool

	Incidents []htmlIncident
	Flows     []htmlFlow
	MoreFlows int
	Timeline  htmlTimeline
	NetMap    htmlNetMap
	ProcCalls []htmlProcCall
}

type htmlIncident struct {
	Incident
	Anchor    string
	Links     []htmlRef // its findings
	Calls     []htmlRef
	Locs      []htmlRef
	Shown     []htmlEvidence
	MoreEv    int
	Elsewhere bool
}

type htmlRef struct{ Text, Href string }

type htmlEvidence struct {
	rules.Evidence
	Href bool
}

// maxIncidentEvidenceHTML caps the evidence lines under an incident card.
const maxIncidentEvidenceHTML = 8

// seqRef passes the view and one seq to the "seq" template.
type seqRef struct {
	V   htmlView
	Seq int64
}

type htmlFinding struct {
	rules.Finding
	Anchor   string
	Loc      string
	LocAnch  string
	Help     string
	CallAnch string
	// Elsewhere: its evidence numbers are another pass's timeline (the
	// unwatched pass's report), not this page's.
	Elsewhere bool
}

type htmlCall struct {
	Seq                       int64
	ID, Anchor, Tool, Summary string
	ExitCode                  int
	Duration                  string
	Offset                    string
	SkillLoc, SkillAnch       string
	Open                      bool
	Stdout, Stderr            string
	Events                    []htmlEvent
	Hidden                    int
	Findings                  []string
	Procs                     []htmlProc
	MoreProcs                 int
}

type htmlProc struct {
	Indent int
	PID    int
	Argv   string
	End    string
	// Flag: one of the process's events is a finding's evidence.
	Flag bool
}

type htmlEvent struct {
	Seq      int64
	Offset   string
	Source   string
	Type     string
	PID      int
	Summary  string
	Evidence bool
	Refs     []string
}

type htmlFile struct {
	Path  string
	Index int
	Lines []htmlLine
	More  int
}

type htmlLine struct {
	N      int
	Text   string
	Marked bool
	Rules  string
	Anchor string
	Refs   []string
}

func lineAnchor(fileIdx, line int) string { return fmt.Sprintf("L%d-%d", fileIdx, line) }

// WriteHTML writes the report as one self-contained HTML page.
func WriteHTML(w io.Writer, r *Report) error {
	v := htmlView{R: r, Counts: severityCounts(r.Findings), Shown: map[int64]bool{},
		Started: r.StartedAt.UTC().Format("2006-01-02 15:04:05Z"), Duration: msDuration(r.DurationMS).String()}
	fileIdx := map[string]int{}
	for i, f := range r.Skill.Files {
		fileIdx[f.Path] = i
	}
	refs := v.addFindings(r, fileIdx)
	off := eventOffset(r)
	calls := v.addCalls(r, fileIdx, refs.call, off)
	v.addEvents(r, calls, refs.ev, off)
	v.addFiles(r, refs)
	v.addCanaries(r)
	v.Incidents = htmlIncidents(r, v.Findings, v.Shown, fileIdx)
	v.Flows, v.MoreFlows = buildFlows(r, v.Shown)
	v.Timeline = buildTimeline(r, refs.ev, v.Shown, refs.call)
	v.NetMap = buildNetMap(r)
	for _, c := range v.Calls {
		if len(c.Procs) > 0 {
			v.ProcCalls = append(v.ProcCalls, htmlProcCall{ID: c.ID, Anchor: "procs-" + c.ID, Tool: c.Tool, Summary: c.Summary, Procs: c.Procs, More: c.MoreProcs})
		}
	}
	var page strings.Builder
	if err := tmpl.Execute(&page, v); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	// html/template escapes markup but not bidi overrides, invisible
	// format characters or control characters: they become visible
	// escapes here (the template itself holds none).
	if _, err := io.WriteString(w, safetext.Block(page.String(), 0)); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}

// findingRefs says what the findings point at, as the anchors of the
// findings that do: events by sequence number, skill lines by anchor (and
// the rules that mark each), tool calls by id.
type findingRefs struct {
	ev        map[int64][]string
	lineRules map[string][]string
	lineRefs  map[string][]string
	call      map[string][]string
}

// addFindings adds r's findings to the view and returns what they point
// at; fileIdx gives the index of each skill file by path.
func (v *htmlView) addFindings(r *Report, fileIdx map[string]int) findingRefs {
	evRefs := map[int64][]string{}
	lineRules := map[string][]string{}
	lineRefs := map[string][]string{}
	callFindings := map[string][]string{}
	for i, f := range r.Findings {
		hf := htmlFinding{Finding: f, Anchor: fmt.Sprintf("f%d", i+1)}
		if ru, ok := rules.Lookup(f.RuleID); ok {
			hf.Help = ru.Help
		}
		if f.SkillFile != "" {
			hf.Loc = f.SkillFile
			if f.SkillLine > 0 {
				hf.Loc += fmt.Sprintf(":%d", f.SkillLine)
				if idx, ok := fileIdx[f.SkillFile]; ok {
					hf.LocAnch = lineAnchor(idx, f.SkillLine)
					k := hf.LocAnch
					if !slices.Contains(lineRules[k], f.RuleID) {
						lineRules[k] = append(lineRules[k], f.RuleID)
					}
					lineRefs[k] = append(lineRefs[k], hf.Anchor)
				}
			}
		}
		hf.Elsewhere = f.Pass == rules.PassUnwatched
		if hf.Elsewhere {
			v.Findings = append(v.Findings, hf)
			continue
		}
		if f.ToolCallID != "" {
			hf.CallAnch = "call-" + f.ToolCallID
			callFindings[f.ToolCallID] = append(callFindings[f.ToolCallID], hf.Anchor)
		}
		for _, e := range f.Evidence {
			evRefs[e.Seq] = append(evRefs[e.Seq], hf.Anchor)
		}
		v.Findings = append(v.Findings, hf)
	}
	return findingRefs{ev: evRefs, lineRules: lineRules, lineRefs: lineRefs, call: callFindings}
}

// eventOffset returns a function that prints a time as its offset from
// the start of r's run, or "" for the zero time.
func eventOffset(r *Report) func(time.Time) string {
	origin := r.StartedAt
	if origin.IsZero() && len(r.Events) > 0 {
		origin = r.Events[0].Time
	}
	return func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return fmt.Sprintf("+%.3fs", t.Sub(origin).Seconds())
	}
}

// addCalls adds r's tool calls to the view, marked with the findings
// callFindings says point at each, and returns them by id.
func (v *htmlView) addCalls(r *Report, fileIdx map[string]int, callFindings map[string][]string, off func(time.Time) string) map[string]*htmlCall {
	calls := map[string]*htmlCall{}
	for _, e := range r.Events {
		d, ok := e.Data.(*trace.ToolCall)
		if !ok {
			continue
		}
		a := rules.Summarize(e)
		c := &htmlCall{Seq: e.Seq, ID: d.ID, Anchor: "call-" + d.ID, Tool: d.Tool, Summary: strings.TrimPrefix(a, "tool "+d.Tool+" "),
			ExitCode: d.ExitCode, Duration: d.Duration.Round(time.Millisecond).String(), Offset: off(e.Time),
			Stdout: capString(d.Stdout, maxHTMLOutput), Stderr: capString(d.Stderr, maxHTMLOutput),
			Findings: callFindings[d.ID], Open: len(callFindings[d.ID]) > 0}
		if d.SkillFile != "" {
			c.SkillLoc = d.SkillFile
			if d.SkillLine > 0 {
				c.SkillLoc += fmt.Sprintf(":%d", d.SkillLine)
				if idx, ok := fileIdx[d.SkillFile]; ok {
					c.SkillAnch = lineAnchor(idx, d.SkillLine)
				}
			}
		}
		calls[d.ID] = c
		v.Shown[e.Seq] = true
		v.Calls = append(v.Calls, *c)
	}
	for i := range v.Calls {
		calls[v.Calls[i].ID] = &v.Calls[i]
	}
	return calls
}

// addEvents puts r's other events under the tool call each belongs to
// (by its id, else by when it happened, else under "other"), with the
// process trees of the calls; evRefs gives the findings each event is
// evidence of. A call shows at most MaxHTMLEventsPerCall events that are
// evidence of nothing.
func (v *htmlView) addEvents(r *Report, calls map[string]*htmlCall, evRefs map[int64][]string, off func(time.Time) string) {
	windows := trace.NewCallWindows(r.Events)
	evPIDs := map[int]bool{}
	for _, e := range r.Events {
		if e.PID != 0 && len(evRefs[e.Seq]) > 0 {
			evPIDs[e.PID] = true
		}
	}
	procTrees(r.Events, calls, evPIDs)
	v.Other = htmlCall{ID: "other", Anchor: "call-other"}
	for _, e := range r.Events {
		if e.Type == trace.TypeToolCall {
			continue
		}
		c := calls[e.ToolCallID]
		if c == nil {
			c = calls[windows.At(e.Time)]
		}
		if c == nil {
			c = &v.Other
		}
		refs := evRefs[e.Seq]
		if len(c.Events) >= MaxHTMLEventsPerCall && len(refs) == 0 {
			c.Hidden++
			continue
		}
		v.Shown[e.Seq] = true
		c.Events = append(c.Events, htmlEvent{Seq: e.Seq, Offset: off(e.Time), Source: string(e.Source), Type: string(e.Type),
			PID: e.PID, Summary: rules.Summarize(e), Evidence: len(refs) > 0, Refs: refs})
		if len(refs) > 0 {
			c.Open = true
		}
	}
}

// addFiles adds the skill's text files to the view, with the lines
// findings point at marked.
func (v *htmlView) addFiles(r *Report, refs findingRefs) {
	for i, f := range r.Skill.Files {
		if f.Text == "" || f.Binary {
			continue
		}
		hf := htmlFile{Path: f.Path, Index: i}
		ls := lines(f.Text)
		for n, l := range ls {
			if n == maxHTMLLines {
				hf.More = len(ls) - n
				break
			}
			a := lineAnchor(i, n+1)
			rs := refs.lineRules[a]
			hf.Lines = append(hf.Lines, htmlLine{N: n + 1, Text: l, Marked: len(rs) > 0, Rules: strings.Join(rs, " "), Anchor: a, Refs: refs.lineRefs[a]})
		}
		v.Files = append(v.Files, hf)
	}
}

// addCanaries adds the canaries that leaked to the view, and how many of
// each kind were planted.
func (v *htmlView) addCanaries(r *Report) {
	for _, h := range r.Canaries.Hits {
		if h.Leaked {
			v.Leaked = append(v.Leaked, h)
		}
	}
	kinds := map[string]int{}
	for _, p := range r.Canaries.Planted {
		kinds[p.Kind]++
	}
	for k, n := range kinds {
		v.KindCounts = append(v.KindCounts, fmt.Sprintf("%s ×%d", k, n))
	}
	slices.SortFunc(v.KindCounts, cmp.Compare)
}

func capString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n… %d more bytes", len(s)-cut)
}

// maxHTMLProcs caps the processes listed per tool call.
const maxHTMLProcs = 300

// htmlIncidents links each incident to its findings, tool calls, skill
// lines and evidence rows.
func htmlIncidents(r *Report, fs []htmlFinding, shown map[int64]bool, fileIdx map[string]int) []htmlIncident {
	var out []htmlIncident
	for _, in := range r.Incidents {
		hi := htmlIncident{Incident: in, Anchor: "inc-" + in.ID, Elsewhere: in.Pass == rules.PassUnwatched}
		// one link per rule, to its first finding: "SBX-EXFIL-001 ×16"
		n := map[string]int{}
		for _, i := range in.Findings {
			if i < 0 || i >= len(fs) {
				continue
			}
			if n[fs[i].RuleID] == 0 {
				hi.Links = append(hi.Links, htmlRef{Text: fs[i].RuleID, Href: "#" + fs[i].Anchor})
			}
			n[fs[i].RuleID]++
		}
		for j := range hi.Links {
			if c := n[hi.Links[j].Text]; c > 1 {
				hi.Links[j].Text += fmt.Sprintf(" ×%d", c)
			}
		}
		for _, id := range in.ToolCallIDs {
			ref := htmlRef{Text: id}
			if !hi.Elsewhere {
				ref.Href = "#call-" + id
			}
			hi.Calls = append(hi.Calls, ref)
		}
		for _, l := range in.Locations {
			ref := htmlRef{Text: locString(l)}
			if idx, ok := fileIdx[l.File]; ok && l.Line > 0 {
				ref.Href = "#" + lineAnchor(idx, l.Line)
			}
			hi.Locs = append(hi.Locs, ref)
		}
		for i, e := range in.Evidence {
			if i == maxIncidentEvidenceHTML {
				hi.MoreEv = len(in.Evidence) - i + in.More
				break
			}
			hi.Shown = append(hi.Shown, htmlEvidence{Evidence: e, Href: !hi.Elsewhere && shown[e.Seq]})
		}
		if len(in.Evidence) <= maxIncidentEvidenceHTML {
			hi.MoreEv = in.More
		}
		out = append(out, hi)
	}
	return out
}

// procTrees lists each call's processes, indented by depth; flag holds the
// pids whose events are evidence.
func procTrees(events []trace.Event, calls map[string]*htmlCall, flag map[int]bool) {
	tree := trace.BuildTree(events)
	pids := make([]int, 0, len(tree.Procs))
	for pid := range tree.Procs {
		pids = append(pids, pid)
	}
	slices.SortFunc(pids, func(a, b int) int {
		return cmp.Or(tree.Procs[a].Start.Compare(tree.Procs[b].Start), cmp.Compare(a, b))
	})
	seen := map[int]bool{}
	var walk func(c *htmlCall, pid, depth int)
	walk = func(c *htmlCall, pid, depth int) {
		p := tree.Procs[pid]
		if p == nil || seen[pid] || p.ToolCallID != c.ID {
			return
		}
		seen[pid] = true
		if len(c.Procs) >= maxHTMLProcs {
			c.MoreProcs++
		} else {
			hp := htmlProc{Indent: 8 + 18*min(depth, 12), PID: pid, Argv: cut(strings.Join(p.Argv, " "), 240), Flag: flag[pid]}
			if hp.Argv == "" {
				hp.Argv = "(fork)"
			}
			switch {
			case p.Signal != "":
				hp.End = "killed by " + p.Signal
			case p.Exited:
				hp.End = fmt.Sprintf("exit %d", p.ExitCode)
			}
			c.Procs = append(c.Procs, hp)
		}
		for _, ch := range p.Children {
			walk(c, ch, depth+1)
		}
	}
	for _, pid := range pids {
		p := tree.Procs[pid]
		c := calls[p.ToolCallID]
		if c == nil || seen[pid] {
			continue
		}
		if parent := tree.Procs[p.PPID]; parent != nil && parent.ToolCallID == p.ToolCallID && !seen[p.PPID] && p.PPID != pid {
			continue // reached from its parent
		}
		walk(c, pid, 0)
	}
}
