package monitor

// HTML output policy: monitor.html is one self-contained file, with inline
// CSS, inline SVG charts, no script and nothing a browser would fetch; a
// Content-Security-Policy forbids every fetch besides. Every value that
// comes from the skill or its runs (labels, paths, capabilities, calls,
// the checkpoint) is escaped by html/template after safetext made its
// control, bidi and invisible characters visible escapes. The page reads
// top to bottom as the text report does: the verdict and what to do, the
// tier and the envelope, then per cell its runs, charts, deviation and
// confirmation, and the audit checkpoint last.

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxctl/sandboxctl/safetext"
)

//go:embed monitor.html.tmpl
var htmlTemplate string

var htmlTmpl = template.Must(template.New("monitor").Funcs(template.FuncMap{
	"s": func(s string) string { return safetext.Line(s, 300) },
	"lines": func(s string) string {
		return safetext.Block(s, 300)
	},
	"join": func(xs []string) string { return safetext.Line(strings.Join(xs, ", "), 600) },
	"csp": func() template.HTMLAttr {
		return `content="default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"`
	},
	"vclass": func(v string) string { return "m-" + strings.ToLower(strings.SplitN(v, "-", 2)[0]) },
}).Parse(htmlTemplate))

type htmlView struct {
	R     Report
	Cells []htmlCell
}

type htmlCell struct {
	Name   string
	C      Cell
	Dev    int // the deviating run (1-based; 0 none)
	Runs   []htmlRun
	Confs  []htmlRun
	What   string
	Less   string // what a suppression took away
	Charts []chart
}

type htmlRun struct {
	N     int
	O     Observation
	Dev   bool
	Rules string
	CPU   string
	Mem   string
}

// chart is one SVG bar chart: a figure per run.
type chart struct {
	Title         string
	Width, Height int
	Bars          []bar
	Max           string
}

type bar struct {
	X, Y, W, H int
	LabelX     int
	Run        int
	Label      string // the run's label
	Value      string
	Dev        bool
}

const (
	chartH    = 90 // bar area
	chartBarW = 22
	chartGap  = 6
)

func newChart(title string, obs []Observation, dev int, get func(Observation) float64, format func(float64) string) chart {
	c := chart{Title: title, Height: chartH + 18, Width: max(120, len(obs)*(chartBarW+chartGap)+chartGap)}
	top := 0.0
	for _, o := range obs {
		top = max(top, get(o))
	}
	c.Max = format(top)
	for i, o := range obs {
		v := get(o)
		h := 0
		if top > 0 {
			h = int(v / top * chartH)
		}
		if v > 0 && h < 1 {
			h = 1
		}
		x := chartGap + i*(chartBarW+chartGap)
		c.Bars = append(c.Bars, bar{X: x, Y: chartH - h, W: chartBarW, H: h, LabelX: x + chartBarW/2, Run: i + 1,
			Label: o.Label, Value: format(v), Dev: i+1 == dev})
	}
	return c
}

func fnum(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func mib(v float64) string { return fmt.Sprintf("%.1f MiB", v/(1<<20)) }

func newHTMLRun(n int, o Observation, dev bool) htmlRun {
	r := htmlRun{N: n, O: o, Dev: dev, Rules: strings.Join(o.Rules, ", "),
		CPU: fmt.Sprintf("%.2f", o.Resources.CPUSeconds), Mem: fmt.Sprintf("%d", o.Resources.PeakMemory>>20)}
	if r.Rules == "" {
		r.Rules = "-"
	}
	return r
}

// WriteHTML writes the report as one self-contained HTML page (see the
// policy at the top of this file).
func WriteHTML(w io.Writer, r Report) error {
	v := htmlView{R: r}
	for _, c := range r.Cells {
		hc := htmlCell{Name: c.name(), C: c}
		if c.Deviation != nil {
			hc.Dev, hc.What = c.Deviation.Run, c.Deviation.what()
		}
		if c.Suppression != nil {
			hc.Less = c.Suppression.what()
		}
		for i, o := range c.Observations {
			hc.Runs = append(hc.Runs, newHTMLRun(i+1, o, i+1 == hc.Dev))
		}
		if c.Confirmation != nil {
			for i, o := range append(slices.Clone(c.Confirmation.Observations), c.Confirmation.Replay...) {
				hc.Confs = append(hc.Confs, newHTMLRun(i+1, o, false))
			}
		}
		obs := c.Observations
		hc.Charts = []chart{
			newChart("CPU seconds", obs, hc.Dev, func(o Observation) float64 { return o.Resources.CPUSeconds }, fnum),
			newChart("peak memory", obs, hc.Dev, func(o Observation) float64 { return float64(o.Resources.PeakMemory) }, mib),
			newChart("bytes sent", obs, hc.Dev, func(o Observation) float64 { return float64(o.Resources.NetworkBytesUp) }, fnum),
			newChart("files written", obs, hc.Dev, func(o Observation) float64 { return float64(len(o.Written)) }, fnum),
			newChart("capabilities", obs, hc.Dev, func(o Observation) float64 { return float64(o.Capabilities.Count()) }, fnum),
		}
		v.Cells = append(v.Cells, hc)
	}
	var b strings.Builder
	if err := htmlTmpl.Execute(&b, v); err != nil {
		return fmt.Errorf("render monitor html: %w", err)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
