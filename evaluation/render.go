package evaluation

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/sandboxctl/sandboxctl/rules"
)

// WriteText writes the figures and the disagreements for a terminal.
func WriteText(w io.Writer, rep *Report) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "evaluation of %s with the %s driver", skills(len(rep.Results)), rep.Driver)
	if rep.Commit != "" {
		fmt.Fprintf(&b, " at %s", rep.Commit)
	}
	if rep.Sample > 0 {
		fmt.Fprintf(&b, " (sample of %d, seed %s)", rep.Sample, rep.Seed)
	}
	fmt.Fprintf(&b, ", %s\n\n", fmtDuration(rep.DurationMS))

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CORPUS\tGROUP\tSKILLS\tMAL\tRECALL MAL\tRECALL MAL|SUSP\tBENIGN\tFALSE MAL\tFALSE SUSP\tINCONCL\tFAILED\tDUAL-USE\tEXPECT MET")
	row := func(corpus, group string, t Tally) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\n",
			corpus, group, t.Skills, t.Malicious,
			pct(t.RecallMalicious, t.CaughtMalicious, t.Malicious), pct(t.RecallAny, t.CaughtAny, t.Malicious),
			t.Benign,
			pct(t.FalseMaliciousRate, t.FalseMalicious, t.Benign), pct(t.FalseSuspiciousRate, t.FalseSuspicious, t.Benign),
			pct(t.InconclusiveRate, t.Inconclusive, t.Skills), t.Failed,
			dualUse(t), expectMet(t))
	}
	for _, g := range rep.Summary.Groups {
		row(g.Corpus, g.Group, g.Tally)
	}
	for _, c := range rep.Summary.Corpora {
		row(c.Corpus, "(all)", c.Tally)
	}
	if len(rep.Summary.Corpora) > 1 {
		row("(all)", "(all)", rep.Summary.Overall)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c := causeList(rep.Summary.Overall); c != "" {
		rate, n, d := rep.Summary.Overall.RunnableInconclusive()
		fmt.Fprintf(&b, "\ninconclusive by cause: %s; without needs-model: %s\n", c, pct(rate, n, d))
	}

	if d := rep.Summary.Disagreements; len(d) > 0 {
		fmt.Fprintf(&b, "\n%s %s with the label or expected verdict:\n", skills(len(d)), agree(len(d)))
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "KIND\tSKILL\tLABEL\tGROUP\tVERDICT\tDECIDED BY")
		for _, x := range d {
			fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\t%s\n", x.Kind, x.Corpus, x.Slug, x.Label, x.Group, verdictText(x), decidedBy(x))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

func skills(n int) string {
	if n == 1 {
		return "1 skill"
	}
	return fmt.Sprintf("%d skills", n)
}

func agree(n int) string {
	if n == 1 {
		return "disagrees"
	}
	return "disagree"
}

func verdictText(d Disagreement) string {
	if len(d.Expect) == 0 || d.Kind != KindUnexpected {
		return d.Verdict
	}
	want := make([]string, len(d.Expect))
	for i, v := range d.Expect {
		want[i] = string(v)
	}
	return d.Verdict + " (expected " + strings.Join(want, "|") + ")"
}

// decidedBy names the deciding rules, or why there are none.
func decidedBy(d Disagreement) string {
	if len(d.Deciding) > 0 {
		return strings.Join(d.Deciding, ", ")
	}
	why := "no rule"
	if d.Cause != "" {
		why += " (" + d.Cause + ")"
	}
	if d.Error != "" {
		return why + "; " + oneLine(d.Error, 100)
	}
	return why
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

func pct(rate *float64, n, d int) string {
	if rate == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%% (%d/%d)", *rate*100, n, d)
}

func dualUse(t Tally) string {
	if t.DualUse == 0 {
		return "-"
	}
	var parts []string
	for _, v := range []string{"malicious", "suspicious", "clean", "inconclusive", VerdictError} {
		if n := t.DualUseVerdicts[v]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, v))
		}
	}
	return strings.Join(parts, ", ")
}

func expectMet(t Tally) string {
	if t.Expected == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", t.ExpectMet, t.Expected)
}

func fmtDuration(ms int64) string {
	s := ms / 1000
	if s < 60 {
		return fmt.Sprintf("%ds", s)
	}
	return fmt.Sprintf("%dm%02ds", s/60, s%60)
}

// Markers of the sections of docs/detection.md that UpdateDoc rewrites.
const (
	latestBegin  = "<!-- eval:latest:begin -->"
	latestEnd    = "<!-- eval:latest:end -->"
	historyBegin = "<!-- eval:history:begin -->"
	historyEnd   = "<!-- eval:history:end -->"
)

// ErrNoMarkers is returned by UpdateDoc for a document without the marked
// sections.
var ErrNoMarkers = errors.New("document lacks the " + latestBegin + " / " + latestEnd + " and " + historyBegin + " / " + historyEnd + " markers")

// UpdateDoc returns doc with its marked sections updated from rep: the
// "latest" section is replaced by rep's tables (date, commit, figures per
// corpus and group, disagreements), and the "history" table gets one row per
// corpus of rep, replacing the rows of the same commit, driver and corpus.
// Rows of other commits, such as the baseline, are kept as they are.
func UpdateDoc(doc []byte, rep *Report) ([]byte, error) {
	s := string(doc)
	lb, le := strings.Index(s, latestBegin), strings.Index(s, latestEnd)
	hb, he := strings.Index(s, historyBegin), strings.Index(s, historyEnd)
	if lb < 0 || le < lb || hb < 0 || he < hb {
		return nil, ErrNoMarkers
	}
	latest := "\n" + Markdown(rep)
	history := "\n" + historyTable(s[hb+len(historyBegin):he], rep)
	type edit struct {
		from, to int
		text     string
	}
	edits := []edit{{lb + len(latestBegin), le, latest}, {hb + len(historyBegin), he, history}}
	slices.SortFunc(edits, func(a, b edit) int { return b.from - a.from })
	for _, e := range edits {
		s = s[:e.from] + e.text + s[e.to:]
	}
	return []byte(s), nil
}

// historyHeader is the history table's header; its columns are what
// historyRow writes.
const historyHeader = "| date | commit | driver | corpus | skills | recall (malicious) | recall (malicious or suspicious) | false-malicious | false-suspicious | inconclusive | note |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|\n"

func historyRow(rep *Report, corpus string, t Tally, note string) string {
	return fmt.Sprintf("| %s | %s | %s | %s | %d | %s | %s | %s | %s | %s | %s |\n",
		rep.GeneratedAt.UTC().Format("2006-01-02"), cellOr(rep.Commit, "unknown"), rep.Driver, corpus, t.Skills,
		pct(t.RecallMalicious, t.CaughtMalicious, t.Malicious), pct(t.RecallAny, t.CaughtAny, t.Malicious),
		pct(t.FalseMaliciousRate, t.FalseMalicious, t.Benign), pct(t.FalseSuspiciousRate, t.FalseSuspicious, t.Benign),
		pct(t.InconclusiveRate, t.Inconclusive, t.Skills), note)
}

func cellOr(s, def string) string {
	if s == "" {
		return def
	}
	return strings.ReplaceAll(s, "|", "/")
}

// historyTable keeps the rows of old (the section's current text) that are
// not for rep's commit, driver and corpora, and appends rep's rows.
func historyTable(old string, rep *Report) string {
	ours := map[string]bool{}
	for _, c := range rep.Summary.Corpora {
		ours[cellOr(rep.Commit, "unknown")+"|"+rep.Driver+"|"+c.Corpus] = true
	}
	var b strings.Builder
	b.WriteString(historyHeader)
	for _, line := range strings.Split(old, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| date ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) >= 4 {
			key := strings.TrimSpace(cells[1]) + "|" + strings.TrimSpace(cells[2]) + "|" + strings.TrimSpace(cells[3])
			note := ""
			if len(cells) >= 11 {
				note = strings.TrimSpace(cells[10])
			}
			if ours[key] && note == "" {
				continue
			}
		}
		b.WriteString(line + "\n")
	}
	for _, c := range rep.Summary.Corpora {
		note := ""
		if rep.Sample > 0 {
			note = fmt.Sprintf("sample of %d", rep.Sample)
		}
		b.WriteString(historyRow(rep, c.Corpus, c.Tally, note))
	}
	return b.String()
}

// Markdown renders rep's figures as the "latest" section of
// docs/detection.md.
func Markdown(rep *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured on %s at commit `%s` with the %s driver: %s",
		rep.GeneratedAt.UTC().Format("2006-01-02"), cellOr(rep.Commit, "unknown"), rep.Driver, skills(len(rep.Results)))
	if rep.Sample > 0 {
		fmt.Fprintf(&b, " (a stratified sample of %d, seed `%s`)", rep.Sample, rep.Seed)
	}
	fmt.Fprintf(&b, ", %d at a time, in %s.\n\n", rep.Parallel, fmtDuration(rep.DurationMS))

	b.WriteString("| corpus | group | skills | recall (malicious) | recall (malicious or suspicious) | false-malicious | false-suspicious | inconclusive | failed | dual-use verdicts | expected verdict met |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	row := func(corpus, group string, t Tally, bold bool) {
		f := "| %s | %s | %d | %s | %s | %s | %s | %s | %d | %s | %s |\n"
		if bold {
			f = "| **%s** | **%s** | %d | %s | %s | %s | %s | %s | %d | %s | %s |\n"
		}
		fmt.Fprintf(&b, f, corpus, group, t.Skills,
			pct(t.RecallMalicious, t.CaughtMalicious, t.Malicious), pct(t.RecallAny, t.CaughtAny, t.Malicious),
			pct(t.FalseMaliciousRate, t.FalseMalicious, t.Benign), pct(t.FalseSuspiciousRate, t.FalseSuspicious, t.Benign),
			pct(t.InconclusiveRate, t.Inconclusive, t.Skills), t.Failed, dualUse(t), expectMet(t))
	}
	for _, c := range rep.Summary.Corpora {
		row(c.Corpus, "all", c.Tally, true)
	}
	if len(rep.Summary.Corpora) > 1 {
		row("all", "all", rep.Summary.Overall, true)
	}
	for _, g := range rep.Summary.Groups {
		row(g.Corpus, g.Group, g.Tally, false)
	}

	causeTable(&b, rep)

	d := rep.Summary.Disagreements
	counts := map[string]int{}
	for _, x := range d {
		counts[x.Kind]++
	}
	fmt.Fprintf(&b, "\n%s %s with the label or expected verdict", skills(len(d)), agree(len(d)))
	if len(d) > 0 {
		var parts []string
		for _, k := range kindOrder {
			if counts[k] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
			}
		}
		fmt.Fprintf(&b, " (%s):\n\n", strings.Join(parts, ", "))
		b.WriteString("| kind | skill | label | group | verdict | decided by |\n|---|---|---|---|---|---|\n")
		for _, x := range d {
			fmt.Fprintf(&b, "| %s | %s/%s | %s | %s | %s | %s |\n", x.Kind, x.Corpus, x.Slug, x.Label, x.Group,
				cellOr(verdictText(x), "-"), cellOr(decidedBy(x), "-"))
		}
	} else {
		b.WriteString(".\n")
	}
	return b.String()
}

// causeOrder is the order causes are listed in: rules.Causes, then a
// cause this version does not know, then CauseUnknown.
func causeOrder(ts ...Tally) []string {
	seen := map[string]bool{}
	for _, t := range ts {
		for c := range t.InconclusiveCauses {
			seen[c] = true
		}
	}
	var out []string
	for _, c := range rules.Causes {
		if seen[c] {
			out = append(out, c)
			delete(seen, c)
		}
	}
	rest := slices.Sorted(maps.Keys(seen))
	if i := slices.Index(rest, CauseUnknown); i >= 0 {
		rest = append(slices.Delete(rest, i, i+1), CauseUnknown)
	}
	return append(out, rest...)
}

// causeList is "tool-missing 30, usage-error 12, ...", most first.
func causeList(t Tally) string {
	order := causeOrder(t)
	slices.SortStableFunc(order, func(a, b string) int { return t.InconclusiveCauses[b] - t.InconclusiveCauses[a] })
	parts := make([]string, len(order))
	for i, c := range order {
		parts[i] = fmt.Sprintf("%s %d", c, t.InconclusiveCauses[c])
	}
	return strings.Join(parts, ", ")
}

// causeTable writes the inconclusive breakdown: for each cause, how many
// skills of each corpus it made inconclusive, and the share of
// inconclusive skills among those that gave the driver something to run.
func causeTable(b *strings.Builder, rep *Report) {
	ts := []Tally{rep.Summary.Overall}
	for _, c := range rep.Summary.Corpora {
		ts = append(ts, c.Tally)
	}
	order := causeOrder(ts...)
	if len(order) == 0 {
		return
	}
	b.WriteString("\nWhy inconclusive (docs/verdicts.md, \"Why inconclusive\"): skills by the cause of their verdict.\n\n| cause |")
	for _, c := range rep.Summary.Corpora {
		fmt.Fprintf(b, " %s |", c.Corpus)
	}
	b.WriteString(" all |\n|---|")
	for range rep.Summary.Corpora {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	for _, cause := range order {
		fmt.Fprintf(b, "| %s |", cause)
		for _, c := range rep.Summary.Corpora {
			fmt.Fprintf(b, " %d |", c.InconclusiveCauses[cause])
		}
		fmt.Fprintf(b, " %d |\n", rep.Summary.Overall.InconclusiveCauses[cause])
	}
	b.WriteString("| **inconclusive without needs-model** |")
	for _, c := range rep.Summary.Corpora {
		rate, n, d := c.RunnableInconclusive()
		fmt.Fprintf(b, " %s |", pct(rate, n, d))
	}
	rate, n, d := rep.Summary.Overall.RunnableInconclusive()
	fmt.Fprintf(b, " %s |\n", pct(rate, n, d))
}
