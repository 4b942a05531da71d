package reports_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/reports"
)

// PageFacts is what the browser test reads from a rendered report's DOM
// (pageFactsJS).
type PageFacts struct {
	Script    string   `json:"script"`
	Sections  []string `json:"sections"`
	Narrative string   `json:"narrative"`
	Incidents []struct {
		Kind   string `json:"kind"`
		Title  string `json:"title"`
		Tokens int    `json:"tokens"`
		Dest   string `json:"dest"`
	} `json:"incidents"`
	Flows       []string       `json:"flows"`
	FlowSent    []string       `json:"flowSent"`
	Lanes       map[string]int `json:"lanes"`
	Bands       int            `json:"bands"`
	Hosts       []string       `json:"hosts"`
	Procs       int            `json:"procs"`
	SVGWidths   []float64      `json:"svgWidths"`
	BrokenLinks []string       `json:"brokenLinks"`
}

// pageFactsJS reads PageFacts from the page.
const pageFactsJS = `(() => {
  const all = s => [...document.querySelectorAll(s)];
  return {
    script: document.documentElement.getAttribute("data-script") || "",
    sections: all("main > h2").map(h => h.id),
    narrative: (document.getElementById("narrative") || {textContent: ""}).textContent,
    incidents: all(".incident").map(e => ({kind: e.dataset.kind, title: e.querySelector("b").textContent,
      tokens: e.querySelectorAll("li.token").length, dest: (e.querySelector(".dest") || {textContent: ""}).textContent})),
    flows: all(".flow-token").map(e => e.dataset.token),
    flowSent: all(".flows .box.sent").map(e => e.textContent),
    lanes: Object.fromEntries(all("#timeline-svg g.lane").map(g => [g.dataset.lane, g.querySelectorAll("rect.mark").length])),
    bands: all("#timeline-svg rect.band").length,
    hosts: all("#netmap-svg g.node").map(g => g.dataset.host),
    procs: all(".proc").length,
    svgWidths: all("svg").map(s => s.getBoundingClientRect().width),
    brokenLinks: all('a[href^="#"]').map(a => a.getAttribute("href"))
      .filter(h => !document.getElementById(decodeURIComponent(h.slice(1)))),
  };
})()`

// ReadPage returns an action that stores the page's facts in *out.
func ReadPage(out *PageFacts) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		v, err := chromedp.Evaluate[PageFacts](pageFactsJS)(ctx, t)
		*out = v
		return err
	})
}

// TestHTMLInBrowser renders each fixture's page in headless Chromium and
// checks that it loads with no request leaving it and no script error, and
// that its DOM holds the incidents first, the token flows, the timeline's
// lanes, the network map and the process tree.
func TestHTMLInBrowser(t *testing.T) {
	browser := testenv.NewBrowser(t, testenv.Chromium(t))
	wantOrder := []string{"incidents", "timeline", "network", "processes", "findings", "coverage", "events", "network-detail", "canaries", "skill"}
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // a tab each in the one browser
			r := fixture(t, name)
			var buf bytes.Buffer
			if err := reports.WriteHTML(&buf, r); err != nil {
				t.Fatal(err)
			}
			page := filepath.Join(t.TempDir(), "report.html")
			if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			var f PageFacts
			visit := browser.Visit(t, page, ReadPage(&f))
			for _, p := range visit.Problems() {
				t.Errorf("browser: %s", p)
			}
			if f.Script != "ran" {
				t.Errorf("the page's script did not run to its end (data-script=%q)", f.Script)
			}
			if len(f.BrokenLinks) > 0 {
				t.Errorf("links without a target: %v", f.BrokenLinks)
			}
			var got []string
			for _, s := range f.Sections {
				if slices.Contains(wantOrder, s) {
					got = append(got, s)
				}
			}
			if !slices.Equal(got, wantOrder) {
				t.Errorf("sections %v, want in the order %v", f.Sections, wantOrder)
			}
			if f.Narrative != r.Narrative || f.Narrative == "" {
				t.Errorf("narrative %q, want %q", f.Narrative, r.Narrative)
			}
			if len(f.Incidents) != len(r.Incidents) {
				t.Errorf("%d incident cards, want %d", len(f.Incidents), len(r.Incidents))
			}
			for _, w := range f.SVGWidths {
				if w < 300 {
					t.Errorf("an SVG is drawn %.0f px wide", w)
				}
			}
			if f.Bands != len(r.ToolCalls) {
				t.Errorf("timeline has %d tool-call bands, want %d", f.Bands, len(r.ToolCalls))
			}
			for _, lane := range []string{"proc", "file", "net", "canary"} {
				if _, ok := f.Lanes[lane]; !ok {
					t.Errorf("timeline lacks the %s lane: %v", lane, f.Lanes)
				}
			}
			switch name {
			case "canary-exfil":
				if len(f.Incidents) == 0 || f.Incidents[0].Kind != "exfiltration" || f.Incidents[0].Dest != "webhook.site" || f.Incidents[0].Tokens != 1 {
					t.Errorf("first incident %+v, want the exfiltration of 1 token to webhook.site", f.Incidents)
				}
				if !slices.Equal(f.Flows, []string{"aws-1"}) || len(f.FlowSent) != 1 || !strings.Contains(f.FlowSent[0], "webhook.site") {
					t.Errorf("flows %v sent %v, want aws-1 sent to webhook.site", f.Flows, f.FlowSent)
				}
				for lane, n := range map[string]int{"proc": 1, "file": 1, "net": 1, "canary": 1} {
					if f.Lanes[lane] < n {
						t.Errorf("timeline lane %s has %d marks, want at least %d", lane, f.Lanes[lane], n)
					}
				}
				if len(f.Hosts) == 0 || f.Hosts[0] != "webhook.site" || !slices.Contains(f.Hosts, "api.open-meteo.com") {
					t.Errorf("network map hosts %v, want webhook.site first, and api.open-meteo.com", f.Hosts)
				}
				if f.Procs < 2 {
					t.Errorf("process tree has %d processes, want the shell and cat", f.Procs)
				}
			case "inconclusive":
				if len(f.Incidents) != 0 || len(f.Flows) != 0 || len(f.Hosts) != 0 {
					t.Errorf("an empty trace drew incidents %v, flows %v, hosts %v", f.Incidents, f.Flows, f.Hosts)
				}
			}
		})
	}
}

// TestHTMLInBrowserLinkOpensDetails: following a link into a closed tool
// call's block opens it (the page's script).
func TestHTMLInBrowserLinkOpensDetails(t *testing.T) {
	exe := testenv.Chromium(t)
	var buf bytes.Buffer
	if err := reports.WriteHTML(&buf, fixture(t, "canary-exfil")); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// call_1 holds no evidence: its block starts closed.
	const target = `document.querySelector('#call-call_1')`
	var before, after bool
	testenv.VisitPage(t, exe, page,
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			v, err := chromedp.Evaluate[bool](target+`.open`)(ctx, tg)
			before = v
			return err
		}),
		chromedp.Click(`#procs-call_1 a[href="#call-call_1"]`),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			// the hashchange handler runs after the click returns
			for range 40 {
				v, err := chromedp.Evaluate[bool](`(() => { const d = `+target+`; return d.open && location.hash === "#call-call_1"; })()`)(ctx, tg)
				if err != nil || v {
					after = v
					return err
				}
				time.Sleep(50 * time.Millisecond)
			}
			return nil
		}),
	)
	if before {
		t.Fatal("call_1 starts open: the test proves nothing")
	}
	if !after {
		t.Error("following the link to call_1 did not open its block")
	}
}

// TestBrowserCheckCatches: the browser check itself fails on a page that
// fetches or throws (a check that cannot fail proves nothing).
func TestBrowserCheckCatches(t *testing.T) {
	browser := testenv.NewBrowser(t, testenv.Chromium(t))
	var buf bytes.Buffer
	if err := reports.WriteHTML(&buf, fixture(t, "clean")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, inject, want string
	}{
		{name: "image fetch", inject: `<img src="http://127.0.0.1:9/x.png">`, want: "127.0.0.1:9"},
		{name: "stylesheet", inject: `<link rel="stylesheet" href="file:///etc/hostname">`, want: "/etc/hostname"},
		{name: "inline script blocked by CSP", inject: `<script>document.title = "x"</script>`, want: "Content Security Policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a tab each in the one browser
			h := strings.Replace(buf.String(), "<main>", "<main>"+tc.inject, 1)
			page := filepath.Join(t.TempDir(), "report.html")
			if err := os.WriteFile(page, []byte(h), 0o644); err != nil {
				t.Fatal(err)
			}
			v := browser.Visit(t, page)
			if !strings.Contains(strings.Join(v.Problems(), "\n"), tc.want) {
				t.Errorf("problems %q, want one naming %q", v.Problems(), tc.want)
			}
		})
	}
}
