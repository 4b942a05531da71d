package reports

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/safetext"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Text output policy: fits 80 columns (long words are cut, never
// overflowing), sections in a fixed order (banner, trace facts, findings by
// severity, network, canaries), no token values, ANSI colour only when
// TextOptions.Color is set (the CLI sets it for a terminal), and nothing
// that depends on the clock or on map order. Every line goes through
// safetext before it is written: a control, bidi or invisible character from
// the skill or the sandbox shows as a visible escape, so the only escape
// sequences in the output are the colours added here.

// TextOptions tune WriteText.
type TextOptions struct {
	Color bool
	// Width is the line width; 0 means 80.
	Width int
	// MaxEvidence is how many evidence lines each finding shows; 0 means 2.
	MaxEvidence int
	// Verbose shows every finding with its evidence and every planted and
	// leaked token; without it findings are counted by rule under their
	// incidents, so the summary fits one screen.
	Verbose bool
}

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiGreen  = "\x1b[32m"
	ansiBlue   = "\x1b[34m"
	ansiDim    = "\x1b[2m"
)

type textWriter struct {
	w     *bufio.Writer
	width int
	color bool
}

func (t *textWriter) paint(code, s string) string {
	if !t.color || code == "" {
		return s
	}
	return code + s + ansiReset
}

// line writes s, escaped, cut to the width.
func (t *textWriter) line(s string) {
	t.w.WriteString(safetext.Line(s, t.width))
	t.w.WriteByte('\n')
}

// painted writes s, escaped and cut to the width, in colour code.
func (t *textWriter) painted(code, s string) {
	t.w.WriteString(t.paint(code, safetext.Line(s, t.width)))
	t.w.WriteByte('\n')
}

// para writes text wrapped to the width with a first-line prefix and an
// indent for the following lines.
func (t *textWriter) para(prefix, indent, text string) {
	// Escape first, so that a newline or carriage return in the text shows
	// as \n or \r instead of being taken for a space.
	words := strings.Fields(safetext.Line(text, 0))
	cur := prefix
	empty := true
	for _, w := range words {
		w = cut(w, t.width-len(indent))
		if !empty && runeLen(cur)+1+runeLen(w) > t.width {
			t.line(cur)
			cur, empty = indent, true
		}
		if empty {
			cur += w
			empty = false
		} else {
			cur += " " + w
		}
	}
	if !empty || cur != indent {
		t.line(cur)
	}
}

func runeLen(s string) int { return len([]rune(s)) }

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func verdictColor(v rules.Verdict) string {
	switch v {
	case rules.Malicious:
		return ansiRed + ansiBold
	case rules.Suspicious:
		return ansiYellow + ansiBold
	case rules.Clean:
		return ansiGreen + ansiBold
	}
	return ansiBlue + ansiBold
}

func severityColor(s rules.Severity) string {
	switch s {
	case rules.Critical, rules.High:
		return ansiRed
	case rules.Medium:
		return ansiYellow
	}
	return ansiDim
}

// WriteText writes the human summary of a report: its sections in the
// fixed order of the text output policy above, one function each.
func WriteText(w io.Writer, r *Report, opt TextOptions) error {
	t := &textWriter{w: bufio.NewWriter(w), width: opt.Width, color: opt.Color}
	if t.width <= 0 {
		t.width = 80
	}
	writeBannerText(t, r)
	writeRunText(t, r)
	writeReasonsText(t, r)
	writeNarrativeText(t, r)
	writePassesText(t, r)
	writeBaselineText(t, r)
	writeIncidentsText(t, r)
	writeFindingsText(t, r, opt)
	writeCoverageText(t, r)
	writeNetworkText(t, r)
	writeFlowsText(t, r)
	writeTwinsText(t, r)
	writeCanariesText(t, r, opt.Verbose)
	if err := t.w.Flush(); err != nil {
		return fmt.Errorf("write text report: %w", err)
	}
	return nil
}

// writeBannerText writes the verdict between two rules, in the verdict's
// colour, with how many incidents and findings and the worst severity.
func writeBannerText(t *textWriter, r *Report) {
	rule := strings.Repeat("=", t.width)
	t.line(rule)
	banner := " VERDICT: " + strings.ToUpper(string(r.Verdict))
	if len(r.Findings) == 0 {
		banner += "   no findings"
	} else {
		banner += fmt.Sprintf("   %d incident%s, %d finding%s, worst %s", len(r.Incidents), plural(len(r.Incidents)),
			len(r.Findings), plural(len(r.Findings)), r.Summary.SeverityMax)
	}
	t.painted(verdictColor(r.Verdict), banner)
	t.line(rule)
}

// writeRunText writes what was run and how: the skill, the trace and its
// driver, when it started and for how long, and the run's error if any.
func writeRunText(t *textWriter, r *Report) {
	name := r.Skill.Name
	if name == "" {
		name = "(unnamed)"
	}
	sha := r.Skill.SHA256
	if len(sha) > 12 {
		sha = sha[:12]
	}
	t.para("Skill     ", "          ", fmt.Sprintf("%s (%s), sha256 %s, %d file%s", name, r.Skill.Path, orDash(sha), len(r.Skill.Files), plural(len(r.Skill.Files))))
	drv := r.Driver.Kind
	if r.Driver.Model != "" {
		drv += " " + strings.TrimPrefix(r.Driver.Provider+"/", "/") + r.Driver.Model
	}
	t.para("Trace     ", "          ", fmt.Sprintf("%s, driver %s, status %s", orDash(r.TraceID), orDash(drv), r.Status))
	t.para("Started   ", "          ", fmt.Sprintf("%s, duration %s, %d tool call(s), %d event(s)",
		r.StartedAt.UTC().Format("2006-01-02 15:04:05Z"), msDuration(r.DurationMS), len(r.ToolCalls), len(r.Events)))
	if r.Error != "" {
		t.para("Error     ", "          ", r.Error)
	}
}

// writeNarrativeText writes the story of the run, when the report has one.
func writeNarrativeText(t *textWriter, r *Report) {
	if r.Narrative == "" {
		return
	}
	t.line("")
	t.painted(ansiBold, "What happened")
	t.para("  ", "  ", r.Narrative)
}

// writePassesText writes one line per pass of a trace run again (watched
// and unwatched): its verdict, why it ran and where its own report is.
func writePassesText(t *textWriter, r *Report) {
	for _, p := range r.Passes {
		s := fmt.Sprintf("%s pass, tracer %s: %s, %d finding(s), status %s", p.Name, p.Tracer, p.Verdict, p.FindingCount, p.Status)
		if p.Reason != "" {
			s += "; run because " + p.Reason
		}
		if p.Dir != "" {
			s += "; report in " + p.Dir + "/"
		}
		t.para("Pass      ", "          ", s)
	}
}

// writeBaselineText writes what the run did to the skill's fingerprint,
// when it has one: its state, whether this run joined the baseline, and
// the kinds of anomaly found against it.
func writeBaselineText(t *textWriter, r *Report) {
	fp := r.Fingerprint
	if fp == nil {
		return
	}
	s := fmt.Sprintf("%s after %d run(s), %d clean in a row; this run %s", fp.State, fp.Invocations, fp.CleanStreak,
		map[bool]string{true: "absorbed", false: "kept out of the baseline"}[fp.Absorbed])
	if len(fp.Anomalies) > 0 {
		var types []string
		for _, a := range fp.Anomalies {
			if !slices.Contains(types, a.Type) {
				types = append(types, a.Type)
			}
		}
		s += fmt.Sprintf("; %d anomal%s against the %s baseline: %s", len(fp.Anomalies),
			map[bool]string{true: "y", false: "ies"}[len(fp.Anomalies) == 1], fp.Baseline, strings.Join(types, ", "))
	}
	t.para("Baseline  ", "          ", "fingerprint "+s)
}

// writeFindingsText writes the findings section: counted by rule, or with
// Verbose each finding with its evidence.
func writeFindingsText(t *textWriter, r *Report, opt TextOptions) {
	t.line("")
	t.painted(ansiBold, "Findings")
	if len(r.Findings) == 0 {
		t.line("  none")
	}
	if !opt.Verbose {
		writeFindingCounts(t, r)
		return
	}
	maxEv := opt.MaxEvidence
	if maxEv <= 0 {
		maxEv = 2
	}
	for _, f := range r.Findings {
		writeFindingText(t, f, maxEv)
	}
}

// writeFindingText writes one finding: its severity, rule and title, its
// message, where in the skill and which tool call it came from, and its
// first maxEv evidence events.
func writeFindingText(t *textWriter, f rules.Finding, maxEv int) {
	tag := fmt.Sprintf("[%s]", strings.ToUpper(string(f.Severity)))
	title := f.Title
	if f.Pass != "" {
		title += " (" + f.Pass + " pass)"
	}
	head := safetext.Line(tag+" "+f.RuleID+" "+title, t.width)
	t.w.WriteString(t.paint(severityColor(f.Severity), tag) + strings.TrimPrefix(head, tag) + "\n")
	t.para("  ", "  ", f.Message)
	var where []string
	if f.SkillFile != "" {
		loc := f.SkillFile
		if f.SkillLine > 0 {
			loc += fmt.Sprintf(":%d", f.SkillLine)
		}
		where = append(where, "at "+loc)
	}
	if f.ToolCallID != "" {
		where = append(where, "tool call "+f.ToolCallID)
	}
	where = append(where, fmt.Sprintf("confidence %s, ATT&CK %s", f.Confidence, f.Technique))
	t.para("  ", "  ", strings.Join(where, "; "))
	for i, e := range f.Evidence {
		if i == maxEv {
			t.para("    ", "      ", fmt.Sprintf("… %d more event%s", len(f.Evidence)-maxEv+f.More, plural(len(f.Evidence)-maxEv+f.More)))
			break
		}
		t.para(fmt.Sprintf("    #%d ", e.Seq), "      ", e.Summary)
	}
}

// writeNetworkText writes the network section: the names queried, the
// first HTTP requests, and the other connections by destination.
func writeNetworkText(t *textWriter, r *Report) {
	t.line("")
	t.painted(ansiBold, "Network")
	var names []string
	for _, d := range r.Network.DNS {
		if n := strings.TrimSuffix(d.Name, "."); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	t.para("  DNS     ", "          ", fmt.Sprintf("%d quer%s", len(r.Network.DNS), pluralY(len(r.Network.DNS)))+listTail(names, 6))
	var reqs []string
	for _, h := range r.Network.HTTP {
		reqs = append(reqs, fmt.Sprintf("%s %s (%d)", h.Method, h.URL, h.Status))
	}
	t.para("  HTTP    ", "          ", fmt.Sprintf("%d request%s", len(r.Network.HTTP), plural(len(r.Network.HTTP))))
	for i, s := range reqs {
		if i == 5 {
			t.para("          ", "          ", fmt.Sprintf("… %d more", len(reqs)-5))
			break
		}
		t.line("          " + s)
	}
	var conns []string
	for _, c := range r.Network.Connections {
		s := fmt.Sprintf("%s %s:%d", c.Proto, c.DstIP, c.DstPort)
		if c.Name != "" {
			s += " " + c.Name
		}
		if !slices.Contains(conns, s) {
			conns = append(conns, s)
		}
	}
	t.para("  Other   ", "          ", fmt.Sprintf("%d connection%s", len(r.Network.Connections), plural(len(r.Network.Connections)))+listTail(conns, 5))
}

// writeCanariesText writes the canaries section: the tokens planted and
// those seen leaving the sandbox.
func writeCanariesText(t *textWriter, r *Report, verbose bool) {
	t.line("")
	t.painted(ansiBold, "Canaries")
	writePlantedText(t, r, verbose)
	writeLeakedText(t, r, verbose)
}

// writePlantedText writes how many tokens were planted and of which kinds
// (the kinds listed only with verbose).
func writePlantedText(t *textWriter, r *Report, verbose bool) {
	kinds := map[string]int{}
	var korder []string
	for _, p := range r.Canaries.Planted {
		if kinds[p.Kind] == 0 {
			korder = append(korder, p.Kind)
		}
		kinds[p.Kind]++
	}
	slices.Sort(korder)
	var ks []string
	for _, k := range korder {
		if kinds[k] > 1 {
			ks = append(ks, fmt.Sprintf("%s x%d", k, kinds[k]))
		} else {
			ks = append(ks, k)
		}
	}
	if verbose {
		t.para("  Planted ", "          ", fmt.Sprintf("%d token%s", len(r.Canaries.Planted), plural(len(r.Canaries.Planted)))+listTail(ks, 100))
	} else {
		t.para("  Planted ", "          ", fmt.Sprintf("%d token%s of %d kind%s", len(r.Canaries.Planted), plural(len(r.Canaries.Planted)), len(ks), plural(len(ks))))
	}
}

// writeLeakedText writes how many tokens leaked and, each once, how they
// left: with verbose always, without it only when no incident carries
// tokens (the incidents named say it then).
func writeLeakedText(t *textWriter, r *Report, verbose bool) {
	var leaks []string
	for _, h := range r.Canaries.Hits {
		if !h.Leaked {
			continue
		}
		s := fmt.Sprintf("%s from %s via %s (%s) to %s", h.Kind, h.Location, h.Channel, h.Encoding, h.Where)
		if h.Pass == rules.PassUnwatched {
			s += " (unwatched pass)"
		}
		if !slices.Contains(leaks, s) {
			leaks = append(leaks, s)
		}
	}
	if len(leaks) == 0 {
		t.para("  Leaked  ", "          ", "none seen leaving the sandbox")
		return
	}
	var in []string
	for _, i := range r.Incidents {
		if len(i.Tokens) > 0 {
			in = append(in, i.ID)
		}
	}
	more := ""
	if !verbose && len(in) > 0 {
		more = " (incident " + strings.Join(in, ", ") + ")"
	}
	t.w.WriteString("  Leaked  " + t.paint(ansiRed, fmt.Sprintf("%d token%s", r.Summary.LeakedTokens, plural(r.Summary.LeakedTokens))) + more + "\n")
	if !verbose && len(in) > 0 {
		return
	}
	for _, l := range leaks {
		t.para("          ", "            ", l)
	}
}

func severityCounts(fs []rules.Finding) string {
	n := map[rules.Severity]int{}
	for _, f := range fs {
		n[f.Severity]++
	}
	var parts []string
	for _, s := range rules.Severities {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

func listTail(items []string, max int) string {
	if len(items) == 0 {
		return ""
	}
	if len(items) > max {
		return ": " + strings.Join(items[:max], ", ") + fmt.Sprintf(", … %d more", len(items)-max)
	}
	return ": " + strings.Join(items, ", ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pluralY(n int) string {
	if n == 1 {
		return "y"
	}
	return "ies"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// maxIncidentEvents is how many evidence events an incident shows in text.
const maxIncidentEvents = 4

// writeIncidentsText writes one block per incident: its title, where it
// came from and the rules behind it, the tokens it carried by where they
// were planted, and its first events (canary sightings left out: the
// tokens say it).
func writeIncidentsText(t *textWriter, r *Report) {
	t.line("")
	t.painted(ansiBold, "Incidents")
	if len(r.Incidents) == 0 {
		t.line("  none")
	}
	for _, in := range r.Incidents {
		tag := fmt.Sprintf("[%s]", strings.ToUpper(string(in.Severity)))
		head := safetext.Line(tag+" "+in.ID+" "+in.Title, t.width)
		t.w.WriteString(t.paint(severityColor(in.Severity), tag) + strings.TrimPrefix(head, tag) + "\n")
		var facts []string
		facts = append(facts, string(in.Kind))
		if len(in.Locations) > 0 {
			var locs []string
			for _, l := range in.Locations {
				locs = append(locs, locString(l))
			}
			facts = append(facts, "at "+strings.Join(locs, ", "))
		}
		if len(in.ToolCallIDs) > 0 {
			facts = append(facts, "tool call "+strings.Join(in.ToolCallIDs, ", "))
		}
		if in.Pass != "" {
			facts = append(facts, in.Pass+" pass")
		}
		facts = append(facts, fmt.Sprintf("%d finding%s: %s", len(in.Findings), plural(len(in.Findings)), ruleCounts(r, in)))
		t.para("  ", "  ", strings.Join(facts, "; "))
		for _, g := range tokenGroups(in.Tokens) {
			t.para("  "+g.head+": ", "    ", g.body)
		}
		shown := 0
		var rest int
		for _, e := range in.Evidence {
			if e.Source == trace.SourceCanary && len(in.Tokens) > 0 {
				continue
			}
			if shown == maxIncidentEvents {
				rest++
				continue
			}
			t.line(fmt.Sprintf("    #%d %s", e.Seq, e.Summary))
			shown++
		}
		if rest += in.More; rest > 0 {
			t.para("    ", "      ", fmt.Sprintf("… %d more event%s", rest, plural(rest)))
		}
	}
}

// ruleCounts lists an incident's rules worst first with how many findings
// each has: "SBX-EXFIL-001 x16, SBX-NET-003".
func ruleCounts(r *Report, in Incident) string {
	n := map[string]int{}
	for _, i := range in.Findings {
		if i >= 0 && i < len(r.Findings) {
			n[r.Findings[i].RuleID]++
		}
	}
	var parts []string
	for _, id := range in.RuleIDs {
		if n[id] > 1 {
			parts = append(parts, fmt.Sprintf("%s x%d", id, n[id]))
		} else {
			parts = append(parts, id)
		}
	}
	return strings.Join(parts, ", ")
}

type tokenGroup struct{ head, body string }

// tokenGroups lists tokens by where they were planted: one line per file
// with the token ids, one for the environment with the variable names,
// each with its encodings.
func tokenGroups(ts []IncidentToken) []tokenGroup {
	var out []tokenGroup
	idx := map[string]int{}
	encs := map[string][]string{}
	for _, tk := range ts {
		head, item := tk.Planted, tk.TokenID
		if name, ok := strings.CutPrefix(tk.Planted, "env:"); ok {
			head, item = "env", name
		}
		i, ok := idx[head]
		if !ok {
			i = len(out)
			idx[head] = i
			out = append(out, tokenGroup{head: head})
		}
		if out[i].body != "" {
			out[i].body += ", "
		}
		out[i].body += item
		for _, e := range tk.Encodings {
			if !slices.Contains(encs[head], e) {
				encs[head] = append(encs[head], e)
			}
		}
	}
	for i := range out {
		e := encs[out[i].head]
		slices.Sort(e)
		if len(e) > 0 {
			out[i].body += " (" + strings.Join(e, ", ") + ")"
		}
	}
	return out
}

// writeFindingCounts writes one line per rule: how many findings, the
// severity, the title and the incidents they belong to.
func writeFindingCounts(t *textWriter, r *Report) {
	inc := map[int]string{}
	for _, in := range r.Incidents {
		for _, i := range in.Findings {
			inc[i] = in.ID
		}
	}
	type row struct {
		id, title string
		sev       rules.Severity
		n         int
		incs      []string
	}
	var rows []*row
	for i, f := range r.Findings {
		title := f.Title
		if f.Pass != "" {
			title += " (" + f.Pass + " pass)"
		}
		j := slices.IndexFunc(rows, func(x *row) bool { return x.id == f.RuleID && x.sev == f.Severity && x.title == title })
		if j < 0 {
			rows = append(rows, &row{id: f.RuleID, title: title, sev: f.Severity})
			j = len(rows) - 1
		}
		rows[j].n++
		if id := inc[i]; id != "" && !slices.Contains(rows[j].incs, id) {
			rows[j].incs = append(rows[j].incs, id)
		}
	}
	for _, x := range rows {
		s := fmt.Sprintf("%d %s %s %s", x.n, x.sev, x.id, x.title)
		if len(x.incs) > 0 {
			s += " (" + strings.Join(x.incs, ", ") + ")"
		}
		t.para("  ", "      ", s)
	}
	if len(r.Findings) > 0 {
		t.line("  (--verbose shows each finding with its evidence)")
	}
}
