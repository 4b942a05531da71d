package reports

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/safetext"
	"github.com/sandboxctl/sandboxctl/trace"
)

// HTML output policy: one self-contained file, no script, no external
// stylesheet, font, image or link that a browser would fetch; everything
// escaped by html/template, then every control, bidi or invisible character
// made a visible escape by safetext. Tool calls are <details> blocks (open when they
// hold evidence) so a page of 10,000 events stays light; each call shows at
// most MaxHTMLEventsPerCall events besides the evidence, and the rest is in
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

var tmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"lower": func(s any) string { return strings.ToLower(fmt.Sprint(s)) },
	"upper": func(s any) string { return strings.ToUpper(fmt.Sprint(s)) },
	"pair":  func(v htmlView, seq int64) seqRef { return seqRef{V: v, Seq: seq} },
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
}

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
	// Findings, and which events and lines they point at.
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
	// Tool calls and the events beneath them.
	origin := r.StartedAt
	if origin.IsZero() && len(r.Events) > 0 {
		origin = r.Events[0].Time
	}
	off := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return fmt.Sprintf("+%.3fs", t.Sub(origin).Seconds())
	}
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
	windows := trace.NewCallWindows(r.Events)
	for i := range v.Calls {
		calls[v.Calls[i].ID] = &v.Calls[i]
	}
	procTrees(r.Events, calls)
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
	// Skill text with the lines findings point at marked.
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
			rs := lineRules[a]
			hf.Lines = append(hf.Lines, htmlLine{N: n + 1, Text: l, Marked: len(rs) > 0, Rules: strings.Join(rs, " "), Anchor: a, Refs: lineRefs[a]})
		}
		v.Files = append(v.Files, hf)
	}
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

// procTrees lists each call's processes, indented by depth.
func procTrees(events []trace.Event, calls map[string]*htmlCall) {
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
			hp := htmlProc{Indent: 8 + 18*min(depth, 12), PID: pid, Argv: cut(strings.Join(p.Argv, " "), 240)}
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
