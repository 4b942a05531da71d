package server

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// fakeTracer judges a skill by its text: "exfil" anywhere in SKILL.md is
// malicious, else clean. It writes a run folder with the four reports.
// With block set, each trace waits for a value on release (or its
// context's end).
type fakeTracer struct {
	calls   atomic.Int32
	block   bool
	release chan struct{}
	started chan string
	mu      sync.Mutex
	plans   []traceplan.Plan
	// fail returns this error (with the plan's key in it, to check the
	// scrub) instead of a verdict.
	fail bool
	// html, when set, is the report.html written.
	html []byte
}

func newFake() *fakeTracer {
	return &fakeTracer{release: make(chan struct{}), started: make(chan string, 100)}
}

func (f *fakeTracer) Trace(ctx context.Context, p traceplan.Plan, dir string) (*reports.Report, error) {
	f.calls.Add(1)
	f.mu.Lock()
	f.plans = append(f.plans, p)
	f.mu.Unlock()
	f.started <- p.TraceID
	if f.block {
		select {
		case <-f.release:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	if f.fail {
		return nil, fmt.Errorf("provider said: bad key %s", p.Driver.APIKey)
	}
	b, err := os.ReadFile(filepath.Join(p.SkillPath, "SKILL.md"))
	if err != nil {
		return nil, err
	}
	rep := &reports.Report{Verdict: rules.Clean, Status: reports.StatusCompleted}
	if bytes.Contains(b, []byte("exfil")) {
		rep.Verdict = rules.Malicious
		rep.Findings = []rules.Finding{{RuleID: "exfil.canary", Severity: rules.Critical, Confidence: rules.ConfHigh}}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	j, _ := json.Marshal(rep)
	html := []byte("<!doctype html><title>r</title><p id=verdict>" + string(rep.Verdict))
	if f.html != nil {
		html = f.html
	}
	for name, data := range map[string][]byte{reports.FileJSON: j, reports.FileSARIF: []byte(`{"version":"2.1.0"}`),
		reports.FileHTML: html, reports.FileText: []byte("verdict: " + string(rep.Verdict))} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

type fixture struct {
	t       *testing.T
	srv     *Server
	ts      *httptest.Server
	fake    *fakeTracer
	root    string // holds data/ and nothing else
	data    string
	logs    *lines
	cleaned *lines
	token   string
}

type lines struct {
	mu sync.Mutex
	l  []string
}

func (l *lines) add(s string) {
	l.mu.Lock()
	l.l = append(l.l, s)
	l.mu.Unlock()
}

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.l...)
}

// newFixture starts a server on loopback with a fake tracer; mod edits
// the config first.
func newFixture(t *testing.T, fake *fakeTracer, mod func(*Config)) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{t: t, fake: fake, root: root, data: filepath.Join(root, "data"), logs: &lines{}, cleaned: &lines{}}
	cfg := Config{DataDir: f.data, Tracer: fake, Version: "test", ImageID: "sha256:img", Log: f.logs.add,
		Cleanup: func(ctx context.Context, id string) error { f.cleaned.add(id); return nil }}
	if mod != nil {
		mod(&cfg)
	}
	f.start(cfg)
	return f
}

func (f *fixture) start(cfg Config) {
	srv, err := New(context.Background(), cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	srv.Start(context.Background())
	f.srv = srv
	f.ts = httptest.NewServer(srv.Handler())
	f.t.Cleanup(f.stop)
}

func (f *fixture) stop() {
	f.ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.srv.Shutdown(ctx)
}

// do sends a request and decodes a JSON answer into out (when not nil).
func (f *fixture) do(method, path string, body io.Reader, ctype string, hdr map[string]string, out any) *http.Response {
	f.t.Helper()
	req, err := http.NewRequest(method, f.ts.URL+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if f.token != "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	if out != nil && resp.StatusCode < 300 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, out); err != nil {
			f.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp
}

func body(r *http.Response) string {
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// submitJSON submits files as JSON.
func (f *fixture) submitJSON(files map[string]string, opts Options, hdr map[string]string) (*http.Response, Submitted) {
	f.t.Helper()
	b, _ := json.Marshal(jsonSubmission{Files: files, Options: opts})
	var s Submitted
	r := f.do("POST", "/v1/traces", bytes.NewReader(b), "application/json", hdr, &s)
	return r, s
}

// submitArchive submits an archive as the multipart field skill.
func (f *fixture) submitArchive(archive []byte, fields map[string]string) (*http.Response, Submitted) {
	f.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	if archive != nil {
		w, _ := mw.CreateFormFile("skill", "skill.zip")
		w.Write(archive)
	}
	mw.Close()
	var s Submitted
	r := f.do("POST", "/v1/traces", &buf, mw.FormDataContentType(), nil, &s)
	return r, s
}

// wait polls a trace until it leaves queued and running.
func (f *fixture) wait(id string) TraceView {
	f.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var v TraceView
		f.do("GET", "/v1/traces/"+id, nil, "", nil, &v)
		if v.Status != StatusQueued && v.Status != StatusRunning {
			return v
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.t.Fatalf("trace %s did not end", id)
	return TraceView{}
}

func skillMD(name, body string) string {
	return "---\nname: " + name + "\ndescription: a test skill\n---\n# " + name + "\n\n" + body + "\n"
}

type member struct {
	name, body string
	typ        byte // tar type; 0: regular file
	link       string
}

func tarOf(t testing.TB, ms ...member) []byte {
	t.Helper()
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	for _, m := range ms {
		h := &tar.Header{Name: m.name, Mode: 0o644, Typeflag: m.typ, Linkname: m.link}
		if m.typ == 0 {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(m.body))
		}
		if err := w.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if m.typ == 0 {
			w.Write([]byte(m.body))
		}
	}
	w.Close()
	return b.Bytes()
}

func zipOf(t testing.TB, ms ...member) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, m := range ms {
		fw, err := w.Create(m.name)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write([]byte(m.body))
	}
	w.Close()
	return b.Bytes()
}

// filesUnder lists every path under dir (relative), folders included.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}
