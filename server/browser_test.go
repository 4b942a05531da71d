package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
)

// pageState is what the browser test reads from the page.
type pageState struct {
	Health   string   `json:"health"`
	Status   string   `json:"status"`
	Verdict  string   `json:"verdict"`
	Links    []string `json:"links"`
	Rows     []string `json:"rows"`
	Frame    string   `json:"frame"`
	FrameFor string   `json:"frameFor"`
	Result   string   `json:"result"`
}

const pageStateJS = `(() => ({
  health: document.getElementById("health").textContent,
  status: document.getElementById("cur-status").textContent,
  verdict: document.getElementById("cur-verdict").textContent,
  links: [...document.querySelectorAll("#cur-reports a.report-link")].map(a => a.dataset.format),
  rows: [...document.querySelectorAll("#traces tr.row")].map(r => r.dataset.id),
  frame: document.getElementById("report").getAttribute("src") || "",
  frameFor: document.getElementById("report").dataset.trace || "",
  result: document.getElementById("submit-result").textContent,
}))()`

// TestPageInBrowser drives the web page in headless Chromium against a
// server on loopback with a token: upload a skill archive, watch it reach
// its verdict, see the report links, the HTML report in its frame and the
// trace in the list. The page asks for nothing but its own origin and
// blob: URLs, and raises no error (a CSP violation is one).
func TestPageInBrowser(t *testing.T) {
	exe := testenv.Chromium(t)
	fake := newFake()
	// A real report page, as the pipeline renders it.
	html, err := os.ReadFile("../reports/testdata/canary-exfil.golden.html")
	if err != nil {
		t.Fatal(err)
	}
	fake.html = html
	f := newFixture(t, fake, func(c *Config) {
		c.Tokens = []Token{newToken("web", "web-token-0123456789ab", 60, 60, 4)}
	})
	archive := filepath.Join(t.TempDir(), "skill.zip")
	if err := os.WriteFile(archive, zipOf(t, member{name: "sync/SKILL.md", body: skillMD("sync", "exfil the keys")}), 0o644); err != nil {
		t.Fatal(err)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 1400), chromedp.UserDataDir(t.TempDir()))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	var mu sync.Mutex
	var foreign, errs []string
	if err := chromedp.Listen(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			if u := e.Request.URL; !strings.HasPrefix(u, f.ts.URL+"/") && !strings.HasPrefix(u, "blob:") && !strings.HasPrefix(u, "data:") {
				foreign = append(foreign, u)
			}
		case *runtime.EventExceptionThrown:
			errs = append(errs, "exception: "+e.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				errs = append(errs, "console error")
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError || e.Entry.Source == cdplog.EntrySourceSecurity {
				errs = append(errs, fmt.Sprintf("log %s: %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL))
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	var st pageState
	read := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		v, err := chromedp.Evaluate[pageState](pageStateJS)(ctx, tg)
		st = v
		return err
	})
	err = chromedp.Do(bctx,
		chromedp.Navigate(f.ts.URL+"/"),
		chromedp.WaitReady("body"),
		chromedp.SetValue("#token", "web-token-0123456789ab"),
		chromedp.SetUploadFiles("#skill", []string{archive}),
		chromedp.Click(`button[type="submit"]`),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[bool](`document.getElementById("cur-verdict").textContent === "malicious" && document.getElementById("report").dataset.trace !== undefined`, chromedp.WithPollingTimeout(20*time.Second))(ctx, tg)
			return err
		}),
		chromedp.Sleep(300*time.Millisecond),
		read,
	)
	if err != nil {
		t.Fatalf("chromium: %v (page: %+v)", err, st)
	}
	var l TraceList
	f.token = "web-token-0123456789ab"
	f.do("GET", "/v1/traces", nil, "", nil, &l)
	if len(l.Traces) != 1 {
		t.Fatalf("traces: %+v", l.Traces)
	}
	id := l.Traces[0].ID
	if !strings.HasPrefix(st.Health, "ok") || st.Status != "done" || st.Verdict != "malicious" || !strings.Contains(st.Result, id) {
		t.Errorf("page: %+v", st)
	}
	if strings.Join(st.Links, ",") != "html,json,sarif,txt" {
		t.Errorf("report links %v", st.Links)
	}
	if len(st.Rows) != 1 || st.Rows[0] != id {
		t.Errorf("list rows %v, want [%s]", st.Rows, id)
	}
	if !strings.HasPrefix(st.Frame, "blob:") || st.FrameFor != id {
		t.Errorf("report frame %q for %q", st.Frame, st.FrameFor)
	}
	// The report opened straight from the API (a link shared, a token in
	// a header): the server's policy and the page's own both allow its
	// script to run, and nothing else.
	var ran string
	err = chromedp.Do(bctx,
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": "Bearer web-token-0123456789ab"}})
			return err
		}),
		chromedp.Navigate(f.ts.URL+"/v1/traces/"+id+"/report.html"),
		chromedp.WaitReady("body"),
		chromedp.Sleep(300*time.Millisecond),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			v, err := chromedp.Evaluate[string](`document.documentElement.getAttribute("data-script") || ""`)(ctx, tg)
			ran = v
			return err
		}),
	)
	if err != nil {
		t.Fatalf("chromium on the report: %v", err)
	}
	if ran != "ran" {
		t.Errorf("the report's script did not run under the server's policy (data-script=%q)", ran)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(foreign) > 0 || len(errs) > 0 {
		t.Errorf("foreign requests %v, errors %v", foreign, errs)
	}
}
