package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
)

// TestKeyBeforeQueued forces the interleaving of the provider key race: a
// worker claims and runs the trace right after it is inserted as queued,
// before submit has returned. The trace must find its key.
func TestKeyBeforeQueued(t *testing.T) {
	const key = "sk-race-0123456789abcdef"
	fake := newFake()
	f := newFixture(t, fake, nil)
	ran := make(chan string, 1)
	f.srv.testHookQueued = func(id string) {
		// The trace is queued: let a worker have it, and wait until it
		// has ended, all before submit goes on.
		f.srv.poke()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			rec, err := f.srv.store.Get(t.Context(), id)
			if err == nil && rec.Status != StatusQueued && rec.Status != StatusRunning {
				ran <- rec.Status + " " + rec.Error
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		ran <- "never ran"
	}
	r, s := f.submitJSON(map[string]string{"SKILL.md": skillMD("k", "hi")}, Options{Model: "gpt-test", Provider: "openai"}, map[string]string{KeyHeader: key})
	if r.StatusCode != 202 {
		t.Fatalf("submit: %d %s", r.StatusCode, body(r))
	}
	if got := <-ran; got != StatusDone+" " {
		t.Fatalf("the trace claimed at once ended %q, want done: it did not find its key", got)
	}
	if v := f.wait(s.ID); v.Status != StatusDone {
		t.Fatalf("trace %+v", v)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.plans) != 1 || fake.plans[0].Driver.APIKey != key {
		t.Fatalf("the tracer got %d plans, key %q", len(fake.plans), func() string {
			if len(fake.plans) == 0 {
				return ""
			}
			return fake.plans[0].Driver.APIKey
		}())
	}
}

// TestDirectoryBombUpload: a .tar.gz of 20,000 folders (about 150 KB) under the
// default limit of 2,000 entries is refused, and nothing of it stays on
// disk (no folder under skills/, no upload under tmp/).
func TestDirectoryBombUpload(t *testing.T) {
	fake := newFake()
	f := newFixture(t, fake, nil)
	bomb := testenv.DirBomb(t, 20_000)
	t.Logf("the directory bomb is %d bytes", len(bomb))
	r, _ := f.submitArchive(bomb, nil)
	var e errorBody
	json.Unmarshal([]byte(body(r)), &e)
	if r.StatusCode != http.StatusUnprocessableEntity && r.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("got %d %q, want 413 or 422", r.StatusCode, e.Error)
	}
	if !strings.Contains(e.Error, "over 2000 entries") {
		t.Errorf("the reason %q does not name the bound", e.Error)
	}
	for _, d := range []string{"skills", "tmp"} {
		if got := filesUnder(t, filepath.Join(f.data, d)); len(got) != 1 {
			t.Errorf("%s/ keeps %d paths of the refused upload: %v", d, len(got)-1, got[:min(len(got), 5)])
		}
	}
	if fake.calls.Load() != 0 {
		t.Error("a trace ran")
	}
}

// TestRefusedUploadsLeaveNothing: every refusal after the archive is
// unpacked (no skill, two skills, a skill the loader refuses) removes
// what it unpacked; an accepted skill beside them stays.
func TestRefusedUploadsLeaveNothing(t *testing.T) {
	fake := newFake()
	fake.block = true
	f := newFixture(t, fake, nil)
	r, s := f.submitArchive(zipOf(t, member{name: "SKILL.md", body: skillMD("kept", "hi")}), nil)
	if r.StatusCode != 202 {
		t.Fatalf("submit: %d %s", r.StatusCode, body(r))
	}
	<-fake.started
	kept := filesUnder(t, filepath.Join(f.data, "skills"))
	cases := []struct {
		name    string
		archive []byte
		msg     string
	}{
		{"no skill", zipOf(t, member{name: "readme.txt", body: "x"}), "no skill"},
		{"two skills", zipOf(t, member{name: "a/SKILL.md", body: skillMD("a", "x")}, member{name: "b/SKILL.md", body: skillMD("b", "x")}), "2 skills"},
		{"refused by the loader", zipOf(t, member{name: "SKILL.md", body: "---\nname: [unclosed\n---\nx\n"}), "refused"},
		{"a link", tarOf(t, member{name: "SKILL.md", body: skillMD("l", "x")}, member{name: "l", typ: '2', link: "/etc/passwd"}), "symbolic link"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, _ := f.submitArchive(c.archive, nil)
			if b := body(r); r.StatusCode != 422 || !strings.Contains(b, c.msg) {
				t.Fatalf("got %d %s, want 422 with %q", r.StatusCode, b, c.msg)
			}
			if got := filesUnder(t, filepath.Join(f.data, "skills")); !slices.Equal(got, kept) {
				t.Fatalf("skills/ is %v, want %v", got, kept)
			}
		})
	}
	close(fake.release)
	if v := f.wait(s.ID); v.Status != StatusDone {
		t.Fatalf("the accepted trace: %+v", v)
	}
}

// TestLocalOnlyWithoutTokens: a server without tokens answers only
// loopback Host names and its own Origin (or none), on every route.
func TestLocalOnlyWithoutTokens(t *testing.T) {
	f := newFixture(t, newFake(), nil)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(f.ts.URL, "http://"))
	cases := []struct {
		name, method, path, host, origin string
		want                             int
	}{
		{"loopback address", "GET", "/v1/traces", "127.0.0.1:" + port, "", 200},
		{"localhost", "GET", "/v1/traces", "localhost:" + port, "", 200},
		{"localhost without port", "GET", "/v1/health", "localhost", "", 200},
		{"ipv6 loopback", "GET", "/v1/traces", "[::1]:" + port, "", 200},
		{"other loopback address", "GET", "/v1/health", "127.1.2.3", "", 200},
		{"same origin", "GET", "/v1/traces", "127.0.0.1:" + port, "http://127.0.0.1:" + port, 200},
		{"rebound name", "GET", "/v1/traces", "attacker.example:" + port, "", 403},
		{"rebound name, page", "GET", "/", "attacker.example", "", 403},
		{"rebound name, report", "GET", "/v1/traces/srv-x/report.json", "evil.test:" + port, "", 403},
		{"rebound name, metrics", "GET", "/metrics", "evil.test", "", 403},
		{"private address", "GET", "/v1/traces", "192.168.1.10:" + port, "", 403},
		{"any address", "GET", "/v1/traces", "0.0.0.0:" + port, "", 403},
		{"name ending in localhost", "GET", "/v1/traces", "notlocalhost:" + port, "", 403},
		{"mapped v4 not loopback", "GET", "/v1/traces", "[::ffff:10.0.0.1]:" + port, "", 403},
		{"cross-site origin", "POST", "/v1/traces", "127.0.0.1:" + port, "https://evil.test", 403},
		{"null origin", "POST", "/v1/traces", "127.0.0.1:" + port, "null", 403},
		{"origin of another port", "DELETE", "/v1/traces/srv-x", "127.0.0.1:" + port, "http://127.0.0.1:1", 403},
		{"origin with a path", "POST", "/v1/traces", "127.0.0.1:" + port, "http://127.0.0.1:" + port + "/x", 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, c.path, strings.NewReader(""))
			req.Host = c.host
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			w := httptest.NewRecorder()
			f.srv.Handler().ServeHTTP(w, req)
			if w.Code != c.want {
				t.Fatalf("%s %s Host %q Origin %q: %d %s, want %d", c.method, c.path, c.host, c.origin, w.Code, w.Body, c.want)
			}
		})
	}
	// The real thing: a multipart POST a cross-site page would send.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("skill", "s.zip")
	fw.Write(zipOf(t, member{name: "SKILL.md", body: skillMD("x", "hi")}))
	mw.Close()
	r := f.do("POST", "/v1/traces", &buf, mw.FormDataContentType(), map[string]string{"Origin": "https://evil.test"}, nil)
	if r.StatusCode != 403 {
		t.Fatalf("a cross-site multipart POST got %d", r.StatusCode)
	}
}

// TestTokensOnEveryTraceRoute: with tokens, every route that reads or
// changes traces wants one, and only the routes documented as public
// (health, the API description, metrics, the page's files) answer
// without; the Host is not checked (a proxy may front the server).
func TestTokensOnEveryTraceRoute(t *testing.T) {
	f := newFixture(t, newFake(), func(c *Config) { c.Tokens = []Token{newToken("alice", "alice-token-0123456789", 0, 0, 0)} })
	public := []string{"GET /v1/health", "GET /v1/openapi.json", "GET /metrics", "GET /", "GET /app.js", "GET /app.css"}
	guarded := []string{"POST /v1/traces", "GET /v1/traces", "GET /v1/traces/srv-x", "DELETE /v1/traces/srv-x",
		"GET /v1/traces/srv-x/report.json", "GET /v1/traces/srv-x/report.html", "GET /v1/traces/srv-x/report.sarif", "GET /v1/traces/srv-x/report.txt"}
	for _, rt := range append(append([]string{}, public...), guarded...) {
		t.Run(rt, func(t *testing.T) {
			method, path, _ := strings.Cut(rt, " ")
			req := httptest.NewRequest(method, path, nil)
			req.Host = "sandboxctl.example.org"
			w := httptest.NewRecorder()
			f.srv.Handler().ServeHTTP(w, req)
			want := http.StatusUnauthorized
			if slices.Contains(public, rt) {
				want = http.StatusOK
			}
			if w.Code != want {
				t.Fatalf("%s without a token: %d, want %d", rt, w.Code, want)
			}
		})
	}
	// Every route of the API description is one of the two lists.
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for p, ops := range doc.Paths {
		for m := range ops {
			if m == "parameters" {
				continue
			}
			path := strings.NewReplacer("{id}", "srv-x", "{file}", "report.json", "{report}", "report.json").Replace(p)
			rt := strings.ToUpper(m) + " " + path
			if !slices.Contains(public, rt) && !slices.Contains(guarded, rt) {
				t.Errorf("route %s %s is in neither list", strings.ToUpper(m), p)
			}
		}
	}
}

// TestHostileUploadBodies: slow, cut and malformed request bodies are
// refused with a 4xx (or the connection closed), leave no upload in tmp/
// and no skill in skills/, and the server serves the next caller.
func TestHostileUploadBodies(t *testing.T) {
	fake := newFake()
	f := newFixture(t, fake, nil)
	// A server with a short body deadline, on the same handler.
	hs := NewHTTPServer("", f.srv.Handler())
	hs.ReadTimeout = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	skill := zipOf(t, member{name: "SKILL.md", body: skillMD("x", "hi")})
	const boundary = "XbX"
	part := func(name, fname, body string) string {
		h := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + name + "\""
		if fname != "" {
			h += "; filename=\"" + fname + "\""
		}
		return h + "\r\n\r\n" + body + "\r\n"
	}
	cases := []struct {
		name string
		raw  string // the request after the request line's headers; sent as is
		// slow sends the first half, then waits past the deadline.
		slow   bool
		status int // 0: any 4xx or a closed connection
	}{
		{name: "no closing boundary", raw: part("skill", "s.zip", string(skill))[:200], status: 400},
		{name: "part without headers end", raw: "--" + boundary + "\r\nContent-Disposition: form-data; name=\"skill\"", status: 400},
		{name: "header flood in a part", raw: "--" + boundary + "\r\n" + strings.Repeat("X-A: "+strings.Repeat("a", 1000)+"\r\n", 12000) + "\r\n", status: 0},
		{name: "field over 64 KiB", raw: part("prompt", "", strings.Repeat("p", 70<<10)) + "--" + boundary + "--\r\n", status: 400},
		{name: "skill field twice", raw: part("skill", "a.zip", string(skill)) + part("skill", "b.zip", string(skill)) + "--" + boundary + "--\r\n", status: 400},
		{name: "slow body", raw: part("skill", "s.zip", string(skill)) + "--" + boundary + "--\r\n", slow: true},
		{name: "declared length longer than the body", raw: part("skill", "s.zip", string(skill)), status: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			length := len(c.raw)
			if c.name == "declared length longer than the body" {
				length += 1000
			}
			head := fmt.Sprintf("POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n", boundary, length)
			if c.slow {
				conn.Write([]byte(head + c.raw[:len(c.raw)/2]))
				time.Sleep(time.Second)
				conn.Write([]byte(c.raw[len(c.raw)/2:]))
			} else {
				conn.Write([]byte(head + c.raw))
				if length > len(c.raw) {
					conn.(*net.TCPConn).CloseWrite()
				}
			}
			resp, err := http.ReadResponse(bufioReader(conn), nil)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if c.status != 0 && resp.StatusCode != c.status || resp.StatusCode < 400 || resp.StatusCode >= 500 {
					t.Fatalf("got %d %s, want %d (or a 4xx)", resp.StatusCode, b, c.status)
				}
			} else if c.status != 0 {
				t.Fatalf("no answer: %v, want %d", err, c.status)
			}
			// The handler may still be unwinding the cut body.
			deadline := time.Now().Add(5 * time.Second)
			for {
				tmp, skills := filesUnder(t, filepath.Join(f.data, "tmp")), filesUnder(t, filepath.Join(f.data, "skills"))
				if len(tmp) == 1 && len(skills) == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("left behind: tmp %v, skills %v", tmp, skills)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	// Nothing else affected: the next caller is served.
	if r, _ := f.submitArchive(skill, nil); r.StatusCode != 202 {
		t.Fatalf("after the hostile bodies: %d %s", r.StatusCode, body(r))
	}
	if fake.calls.Load() > 1 {
		t.Errorf("%d traces ran, want at most the last one", fake.calls.Load())
	}
}

func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }

// TestMetricsLabelsBounded: 429s of every kind, with ever-changing numbers
// in their messages, leave the rejected_total label with its fixed set of
// values, and no message text reaches the metrics.
func TestMetricsLabelsBounded(t *testing.T) {
	tok := newToken("bob", "bob-token-0123456789", 1, 1, 1)
	fake := newFake()
	fake.block = true
	f := newFixture(t, fake, func(c *Config) { c.Tokens = []Token{tok}; c.MaxQueue = 1 })
	f.token = "bob-token-0123456789"
	for i := range 6 {
		f.submitJSON(map[string]string{"SKILL.md": skillMD(fmt.Sprintf("m%d", i), "hi")}, Options{}, nil)
	}
	for i := range 50 {
		// As a 429 built elsewhere would come: a message with numbers.
		f.srv.fail(httptest.NewRecorder(), &apiError{status: 429, msg: fmt.Sprintf("the queue is full (%d traces waiting)", i)})
	}
	close(fake.release)
	text := body(f.do("GET", "/metrics", nil, "", nil, nil))
	var got []string
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, "sandboxctl_serve_rejected_total{reason=\""); ok {
			got = append(got, v[:strings.IndexByte(v, '"')])
		}
	}
	if !slices.Equal(got, rejectReasons) {
		t.Fatalf("rejected_total reasons %v, want %v", got, rejectReasons)
	}
	if strings.Contains(text, "traces waiting") || strings.Contains(text, "submissions a minute") {
		t.Fatalf("a message reached the metrics:\n%s", text)
	}
	if !strings.Contains(text, `sandboxctl_serve_rejected_total{reason="rate"} `) || strings.Contains(text, `sandboxctl_serve_rejected_total{reason="rate"} 0`) {
		t.Errorf("the rate 429s were not counted as rate:\n%s", text)
	}
	if !strings.Contains(text, `sandboxctl_serve_rejected_total{reason="other"} 50`) {
		t.Errorf("429s of no known reason not counted as other:\n%s", text)
	}
}
