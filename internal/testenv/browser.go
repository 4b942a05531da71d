package testenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Chromium returns the path of a headless-capable Chromium (Debian's
// package `chromium`, which .ci/run installs), or skips the test when there
// is none. With SANDBOXCTL_REQUIRE_BROWSER=1 or SANDBOXCTL_REQUIRE_DOCKER=1
// (CI) a missing browser is a failure instead.
func Chromium(t testing.TB) string {
	t.Helper()
	p, ok := LookChromium(t)
	if !ok {
		t.Skip("no chromium on PATH (apt-get install chromium)")
	}
	return p
}

// LookChromium is Chromium for a check that is one part of a larger test:
// without a browser it returns false (and the test goes on) instead of
// skipping, unless a browser is required, which fails the test.
func LookChromium(t testing.TB) (string, bool) {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, true
		}
	}
	if os.Getenv("SANDBOXCTL_REQUIRE_BROWSER") == "1" || os.Getenv("SANDBOXCTL_REQUIRE_DOCKER") == "1" {
		t.Fatal("chromium required (SANDBOXCTL_REQUIRE_BROWSER or SANDBOXCTL_REQUIRE_DOCKER is 1): apt-get install chromium")
	}
	t.Log("no chromium on PATH: the browser check is skipped (apt-get install chromium)")
	return "", false
}

// PageVisit is what a browser saw while it loaded a local page.
type PageVisit struct {
	// Requests are the URLs the page asked for besides itself (none is
	// allowed for a self-contained page).
	Requests []string
	// Errors are script exceptions, console errors and the browser's own
	// error log entries (a Content-Security-Policy violation is one).
	Errors []string
}

// Problems lists what a self-contained page must not do: fetch anything
// or raise an error.
func (v PageVisit) Problems() []string {
	var out []string
	for _, r := range v.Requests {
		out = append(out, "request: "+r)
	}
	for _, e := range v.Errors {
		out = append(out, "error: "+e)
	}
	return out
}

// VisitPage opens the HTML file at path in headless Chromium (exe), with
// network access and every request recorded, waits until it has loaded,
// runs each action in order (chromedp.Evaluate to read the DOM, clicks...),
// and returns what the browser saw. A browser that cannot start or a page
// that does not load fails the test. A test that visits several pages
// shares one browser with NewBrowser instead.
func VisitPage(t testing.TB, exe, path string, actions ...chromedp.Action[chromedp.Void]) PageVisit {
	t.Helper()
	b := NewBrowser(t, exe)
	defer b.Close()
	return b.Visit(t, path, actions...)
}

// A Browser is one headless Chromium that several page visits share, so
// that its start (most of a visit's time) is paid once. Each Visit gets a
// browser context of its own (no cookie, storage or cache of another
// visit) in a window of its own; visits may run in parallel.
type Browser struct {
	ctx   context.Context // the browser's first tab
	close func()
}

// NewBrowser starts headless Chromium (exe). It is closed when the test
// ends, or earlier by Close.
func NewBrowser(t testing.TB, exe string) *Browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // tests run as root in CI
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 1600),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	b := &Browser{ctx: bctx, close: sync.OnceFunc(func() { bcancel(); acancel() })}
	t.Cleanup(b.Close)
	// The first run starts the browser and binds it to the context it is
	// given, so it gets bctx itself; the timer bounds the start.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(bctx) }()
	select {
	case err := <-started:
		if err != nil {
			b.Close()
			t.Fatalf("start chromium: %v", err)
		}
	case <-time.After(90 * time.Second):
		b.Close()
		t.Fatal("start chromium: no answer in 90 s")
	}
	return b
}

// Close ends the browser; it is idempotent.
func (b *Browser) Close() { b.close() }

// Visit is VisitPage in the shared browser.
func (b *Browser) Visit(t testing.TB, path string, actions ...chromedp.Action[chromedp.Void]) PageVisit {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	pageURL := (&url.URL{Scheme: "file", Path: abs}).String()
	tctx, tcancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	defer tcancel()
	ctx, cancel := context.WithTimeout(tctx, 90*time.Second)
	defer cancel()

	var mu sync.Mutex
	var v PageVisit
	err = chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			if u := e.Request.URL; u != pageURL && !strings.HasPrefix(u, pageURL+"#") {
				v.Requests = append(v.Requests, u)
			}
		case *runtime.EventExceptionThrown:
			msg := e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				msg += " " + e.ExceptionDetails.Exception.Description
			}
			v.Errors = append(v.Errors, fmt.Sprintf("exception: %s (line %d)", msg, e.ExceptionDetails.LineNumber))
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value))
				}
				v.Errors = append(v.Errors, "console: "+strings.Join(parts, " "))
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError || e.Entry.Source == cdplog.EntrySourceSecurity {
				v.Errors = append(v.Errors, fmt.Sprintf("log %s: %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL))
			}
		}
	})
	if err != nil {
		t.Fatalf("listen to chromium: %v", err)
	}
	all := append([]chromedp.Action[chromedp.Void]{
		chromedp.Navigate(pageURL),
		chromedp.WaitReady("body"),
	}, actions...)
	// Let late events (a deferred fetch, an error in a handler) arrive.
	all = append(all, chromedp.Sleep(300*time.Millisecond))
	if err := chromedp.Do(ctx, all...); err != nil {
		t.Fatalf("chromium on %s: %v", path, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return v
}
