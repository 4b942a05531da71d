package server

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSubmitPollReports submits a skill as JSON and as a zip, polls it to
// its verdict, fetches the four reports, and resubmits: the same skill
// under the same options is answered from the first result, other options
// trace again.
func TestSubmitPollReports(t *testing.T) {
	fake := newFake()
	f := newFixture(t, fake, nil)
	files := map[string]string{"SKILL.md": skillMD("sync", "run scripts/x.sh to exfil"), "scripts/x.sh": "echo hi\n"}
	r, s := f.submitJSON(files, Options{}, nil)
	if r.StatusCode != http.StatusAccepted || s.ID == "" || s.Cached || s.StatusURL != "/v1/traces/"+s.ID || r.Header.Get("Location") != s.StatusURL {
		t.Fatalf("submit: %d %+v %s", r.StatusCode, s, body(r))
	}
	v := f.wait(s.ID)
	if v.Status != StatusDone || v.Verdict != "malicious" || v.Skill.Name != "sync" || len(v.Skill.SHA256) != 64 || len(v.Deciding) != 1 {
		t.Fatalf("trace: %+v", v)
	}
	if len(v.Reports) != 4 {
		t.Fatalf("reports: %v", v.Reports)
	}
	for format, ctype := range map[string]string{"json": "application/json", "sarif": "application/sarif+json", "html": "text/html; charset=utf-8", "txt": "text/plain; charset=utf-8"} {
		r := f.do("GET", v.Reports[format], nil, "", nil, nil)
		b := body(r)
		if r.StatusCode != 200 || r.Header.Get("Content-Type") != ctype || !strings.Contains(b, "malicious") && format != "sarif" {
			t.Errorf("%s: %d %s %q", format, r.StatusCode, r.Header.Get("Content-Type"), b)
		}
		if format == "html" && !strings.Contains(r.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("html report without its policy: %v", r.Header)
		}
	}
	if r := f.do("GET", "/v1/traces/"+s.ID+"/events.jsonl", nil, "", nil, nil); r.StatusCode != 404 {
		t.Errorf("a file other than the four reports: %d", r.StatusCode)
	}

	// The same skill as a zip (other file order): the same content digest.
	r, s2 := f.submitArchive(zipOf(t, member{name: "sync/scripts/x.sh", body: files["scripts/x.sh"]}, member{name: "sync/SKILL.md", body: files["SKILL.md"]}), nil)
	if r.StatusCode != http.StatusOK || !s2.Cached || s2.CachedFrom != s.ID || s2.Verdict != "malicious" || s2.ID == s.ID {
		t.Fatalf("cached resubmission: %d %+v %s", r.StatusCode, s2, body(r))
	}
	if n := fake.calls.Load(); n != 1 {
		t.Fatalf("the cached resubmission traced: %d traces", n)
	}
	v2 := f.wait(s2.ID)
	if !v2.Cached || v2.Verdict != "malicious" || len(v2.Reports) != 4 {
		t.Fatalf("cached trace: %+v", v2)
	}
	// Other options: another plan, another key.
	r, s3 := f.submitJSON(files, Options{Prompt: "sync my bucket"}, nil)
	if r.StatusCode != http.StatusAccepted || s3.Cached {
		t.Fatalf("other prompt: %d %+v", r.StatusCode, s3)
	}
	if f.wait(s3.ID); fake.calls.Load() != 2 {
		t.Fatalf("other prompt: %d traces", fake.calls.Load())
	}
	if p := fake.plans[1]; p.Prompt != "sync my bucket" || p.TraceID != s3.ID || p.Driver.Kind != "literal" {
		t.Fatalf("plan: %+v", p)
	}
	// A clean skill as tar.gz-less tar.
	r, s4 := f.submitArchive(tarOf(t, member{name: "SKILL.md", body: skillMD("hello", "say hello")}), map[string]string{"timeout": "30s"})
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("tar: %d %s", r.StatusCode, body(r))
	}
	if v := f.wait(s4.ID); v.Verdict != "clean" || v.Options.Timeout != "30s" {
		t.Fatalf("tar: %+v", v)
	}
	if p := fake.plans[2]; p.Limits.Timeout != 30*time.Second {
		t.Fatalf("timeout: %v", p.Limits.Timeout)
	}
}

// TestHostileUploads answers every malformed or hostile upload with a 4xx
// and a message saying why, and writes nothing outside the data folder
// (nor leaves anything in its tmp/ or a half-unpacked skill).
func TestHostileUploads(t *testing.T) {
	fake := newFake()
	f := newFixture(t, fake, func(c *Config) {
		c.MaxUpload = 256 << 10
		c.Archive.MaxEntries, c.Archive.MaxFileSize, c.Archive.MaxTotalSize = 20, 64<<10, 128<<10
	})
	ok := member{name: "SKILL.md", body: skillMD("x", "hi")}
	big := strings.Repeat("A", 100<<10)
	var many []member
	for i := range 25 {
		many = append(many, member{name: fmt.Sprintf("f%d.txt", i), body: "x"})
	}
	cases := []struct {
		name    string
		archive []byte
		fields  map[string]string
		json    string
		ctype   string
		status  int
		msg     string
	}{
		{name: "zip traversal", archive: zipOf(t, ok, member{name: "../../escape.txt", body: "x"}), status: 422, msg: "leaves the archive"},
		{name: "tar traversal", archive: tarOf(t, ok, member{name: "a/../../../escape.txt", body: "x"}), status: 422, msg: "leaves the archive"},
		{name: "absolute path", archive: tarOf(t, ok, member{name: "/tmp/escape.txt", body: "x"}), status: 422, msg: "unsafe member name"},
		{name: "symlink", archive: tarOf(t, ok, member{name: "creds", typ: tar.TypeSymlink, link: "/root/.aws/credentials"}), status: 422, msg: "symbolic link"},
		{name: "hard link", archive: tarOf(t, ok, member{name: "h", typ: tar.TypeLink, link: "/etc/passwd"}), status: 422, msg: "hard link"},
		{name: "device", archive: tarOf(t, ok, member{name: "dev", typ: tar.TypeChar}), status: 422, msg: "device"},
		{name: "fifo", archive: tarOf(t, ok, member{name: "fifo", typ: tar.TypeFifo}), status: 422, msg: "FIFO"},
		{name: "zip bomb file", archive: zipOf(t, ok, member{name: "bomb.txt", body: big}), status: 422, msg: "over 65536 bytes"},
		{name: "zip bomb total", archive: zipOf(t, ok, member{name: "a.txt", body: big[:60<<10]}, member{name: "b.txt", body: big[:60<<10]}, member{name: "c.txt", body: big[:60<<10]}), status: 422, msg: "in all"},
		{name: "too many files", archive: tarOf(t, append([]member{ok}, many...)...), status: 422, msg: "over 20 entries"},
		{name: "upload too large", archive: append([]byte("PK\x03\x04"), bytes.Repeat([]byte{0}, 300<<10)...), status: 413, msg: "over 262144 bytes"},
		{name: "not an archive", archive: []byte("#!/bin/sh\nrm -rf /\n"), status: 400, msg: "not a zip or tar"},
		{name: "truncated zip", archive: zipOf(t, ok)[:30], status: 422, msg: "archive refused"},
		{name: "no skill field", fields: map[string]string{"driver": "literal"}, status: 400, msg: "no skill"},
		{name: "unknown field", archive: zipOf(t, ok), fields: map[string]string{"api_key": "x"}, status: 400, msg: "unknown field"},
		{name: "no skill inside", archive: zipOf(t, member{name: "readme.txt", body: "x"}), status: 422, msg: "no skill"},
		{name: "two skills", archive: zipOf(t, member{name: "a/SKILL.md", body: skillMD("a", "x")}, member{name: "b/SKILL.md", body: skillMD("b", "x")}), status: 422, msg: "2 skills"},
		{name: "replay driver", archive: zipOf(t, ok), fields: map[string]string{"driver": "replay"}, status: 400, msg: "want literal or llm"},
		{name: "timeout over max", archive: zipOf(t, ok), fields: map[string]string{"timeout": "10h"}, status: 400, msg: "maximum"},
		{name: "bad timeout", archive: zipOf(t, ok), fields: map[string]string{"timeout": "soon"}, status: 400, msg: "positive duration"},
		{name: "base url refused", archive: zipOf(t, ok), fields: map[string]string{"base_url": "http://127.0.0.1:1/v1", "model": "m"}, status: 400, msg: "allow-base-url"},
		{name: "llm without key", archive: zipOf(t, ok), fields: map[string]string{"driver": "llm", "model": "gpt"}, status: 400, msg: "X-Provider-Key"},
		{name: "bad options json", archive: zipOf(t, ok), fields: map[string]string{"options": `{"driver": "literal", "key": "x"}`}, status: 400, msg: "unknown field"},
		{name: "json traversal", json: `{"files": {"SKILL.md": "x", "../../escape.txt": "x"}}`, status: 422, msg: "leaves the archive"},
		{name: "json absolute", json: `{"files": {"/etc/cron.d/x": "x"}}`, status: 422, msg: "unsafe member name"},
		{name: "json no files", json: `{"options": {}}`, status: 400, msg: "no skill"},
		{name: "json unknown field", json: `{"files": {"SKILL.md": "x"}, "key": "x"}`, status: 400, msg: "unknown field"},
		{name: "json bad base64", json: `{"files_base64": {"a.bin": "!!"}}`, status: 400, msg: "files_base64"},
		{name: "json trailing", json: `{"files": {"SKILL.md": "x"}} {}`, status: 400, msg: "trailing"},
		{name: "json too large", json: `{"files": {"SKILL.md": "` + strings.Repeat("x", 300<<10) + `"}}`, status: 413, msg: "over 262144 bytes"},
		{name: "text body", json: "SKILL", ctype: "text/plain", status: 415, msg: "Content-Type"},
		{name: "multipart without boundary", json: "x", ctype: "multipart/form-data", status: 400, msg: "boundary"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r *http.Response
			switch {
			case c.json != "":
				ct := c.ctype
				if ct == "" {
					ct = "application/json"
				}
				r = f.do("POST", "/v1/traces", strings.NewReader(c.json), ct, nil, nil)
			default:
				r, _ = f.submitArchive(c.archive, c.fields)
			}
			var e errorBody
			json.Unmarshal([]byte(body(r)), &e)
			if r.StatusCode != c.status || !strings.Contains(e.Error, c.msg) || e.Status != c.status {
				t.Fatalf("got %d %q, want %d with %q", r.StatusCode, e.Error, c.status, c.msg)
			}
		})
	}
	if n := fake.calls.Load(); n != 0 {
		t.Errorf("%d traces ran", n)
	}
	if got := filesUnder(t, f.root); slices.ContainsFunc(got, func(p string) bool { return p != "." && !strings.HasPrefix(p, "data") }) {
		t.Errorf("written outside the data folder: %v", got)
	}
	for _, p := range filesUnder(t, f.data) {
		if strings.Contains(p, "escape") || strings.Contains(p, "creds") || strings.Contains(p, "bomb") {
			t.Errorf("a refused member was written: %s", p)
		}
	}
	if got := filesUnder(t, filepath.Join(f.data, "tmp")); len(got) != 1 {
		t.Errorf("tmp/ keeps uploads: %v", got)
	}
	if got := filesUnder(t, filepath.Join(f.data, "skills")); len(got) != 1 {
		t.Errorf("skills/ keeps refused uploads: %v", got)
	}
	var l TraceList
	f.do("GET", "/v1/traces", nil, "", nil, &l)
	if len(l.Traces) != 0 {
		t.Errorf("refused uploads were recorded: %+v", l.Traces)
	}
}

// TestTokensAndLimits: without a token a 401; a caller over its rate or
// its traces in flight, or a full queue, gets a 429 with Retry-After.
func TestTokensAndLimits(t *testing.T) {
	fake := newFake()
	fake.block = true
	f := newFixture(t, fake, func(c *Config) {
		c.Workers = 1
		c.MaxQueue = 3
		c.Tokens = []Token{newToken("alice", "alice-token-0123456789", 4, 3, 2), newToken("bob", "bob-token-0123456789ab", 60, 60, 10)}
	})
	sk := func(i int) map[string]string {
		return map[string]string{"SKILL.md": skillMD(fmt.Sprintf("s%d", i), "hi")}
	}

	if r, _ := f.submitJSON(sk(0), Options{}, nil); r.StatusCode != 401 || r.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no token: %d", r.StatusCode)
	}
	f.token = "alice-token-0123456789x"
	if r, _ := f.submitJSON(sk(0), Options{}, nil); r.StatusCode != 401 {
		t.Fatalf("wrong token: %d", r.StatusCode)
	}
	if r := f.do("GET", "/v1/health", nil, "", nil, nil); r.StatusCode != 200 {
		t.Fatalf("health needs no token: %d", r.StatusCode)
	}
	f.token = "alice-token-0123456789"
	var ids []string
	for i := range 2 {
		r, s := f.submitJSON(sk(i), Options{}, nil)
		if r.StatusCode != 202 {
			t.Fatalf("alice %d: %d %s", i, r.StatusCode, body(r))
		}
		ids = append(ids, s.ID)
	}
	<-fake.started
	// Two in flight: her bound.
	r, _ := f.submitJSON(sk(2), Options{}, nil)
	if r.StatusCode != 429 || r.Header.Get("Retry-After") == "" || !strings.Contains(body(r), "your bound") {
		t.Fatalf("concurrency: %d %s", r.StatusCode, body(r))
	}
	// Her burst of 3 is spent: the rate.
	r, _ = f.submitJSON(sk(3), Options{}, nil)
	if r.StatusCode != 429 || !strings.Contains(body(r), "submissions a minute") {
		t.Fatalf("rate: %d %s", r.StatusCode, body(r))
	}
	if ra := r.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Fatalf("rate without Retry-After: %q", ra)
	}
	// Bob fills the queue (3 waiting: alice's second and two of his).
	f.token = "bob-token-0123456789ab"
	for i := 10; i < 12; i++ {
		if r, _ := f.submitJSON(sk(i), Options{}, nil); r.StatusCode != 202 {
			t.Fatalf("bob %d: %d %s", i, r.StatusCode, body(r))
		}
	}
	r, _ = f.submitJSON(sk(12), Options{}, nil)
	if r.StatusCode != 429 || !strings.Contains(body(r), "queue is full") || r.Header.Get("Retry-After") == "" {
		t.Fatalf("queue: %d %s", r.StatusCode, body(r))
	}
	// Callers see their own traces only.
	var l TraceList
	f.do("GET", "/v1/traces", nil, "", nil, &l)
	if len(l.Traces) != 2 {
		t.Fatalf("bob sees %d traces", len(l.Traces))
	}
	if r := f.do("GET", "/v1/traces/"+ids[0], nil, "", nil, nil); r.StatusCode != 404 {
		t.Fatalf("bob reads alice's trace: %d", r.StatusCode)
	}
	var m strings.Builder
	m.WriteString(body(f.do("GET", "/metrics", nil, "", nil, nil)))
	for _, want := range []string{`sandboxctl_serve_rejected_total{reason="concurrency"} 1`, `sandboxctl_serve_rejected_total{reason="rate"} 1`,
		`sandboxctl_serve_rejected_total{reason="queue"} 1`, "sandboxctl_serve_queue_depth 3", `sandboxctl_serve_traces{status="running"} 1`} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, m.String())
		}
	}
	close(fake.release)
}

// TestConcurrentSubmissions sends 20 submissions at once within the
// limits: every one is accepted and judged, none twice.
func TestConcurrentSubmissions(t *testing.T) {
	fake := newFake()
	f := newFixture(t, fake, func(c *Config) {
		c.Workers = 3
		c.MaxQueue = 20
		c.Tokens = []Token{newToken("ci", "ci-token-0123456789abc", 60, 20, 20)}
	})
	f.token = "ci-token-0123456789abc"
	var wg sync.WaitGroup
	ids := make([]string, 20)
	codes := make([]int, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := "hi"
			if i%4 == 0 {
				body = "exfil"
			}
			r, s := f.submitJSON(map[string]string{"SKILL.md": skillMD(fmt.Sprintf("c%d", i), body)}, Options{}, nil)
			codes[i], ids[i] = r.StatusCode, s.ID
		}()
	}
	wg.Wait()
	verdicts := map[string]int{}
	for i := range 20 {
		if codes[i] != 202 {
			t.Fatalf("submission %d: %d", i, codes[i])
		}
		verdicts[f.wait(ids[i]).Verdict]++
	}
	if verdicts["malicious"] != 5 || verdicts["clean"] != 15 || fake.calls.Load() != 20 {
		t.Fatalf("verdicts %v, %d traces", verdicts, fake.calls.Load())
	}
	var l TraceList
	f.do("GET", "/v1/traces?verdict=malicious&limit=3", nil, "", nil, &l)
	if len(l.Traces) != 3 || l.NextCursor == "" {
		t.Fatalf("page 1: %d traces, cursor %q", len(l.Traces), l.NextCursor)
	}
	var l2 TraceList
	f.do("GET", "/v1/traces?verdict=malicious&limit=3&cursor="+l.NextCursor, nil, "", nil, &l2)
	if len(l2.Traces) != 2 || l2.Traces[0].ID == l.Traces[2].ID {
		t.Fatalf("page 2: %+v", l2)
	}
	for _, q := range []string{"verdict=evil", "limit=0", "limit=1000", "cursor=x", "status=gone"} {
		if r := f.do("GET", "/v1/traces?"+q, nil, "", nil, nil); r.StatusCode != 400 {
			t.Errorf("%s: %d", q, r.StatusCode)
		}
	}
}

// TestKeyNeverStored submits with a provider key: the tracer gets it; the
// database, the data folder, the log and the answers never hold it, even
// when the trace's error quotes it.
func TestKeyNeverStored(t *testing.T) {
	const key = "sk-test-KEY-0c1d2e3f4a5b6c7d8e9f"
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			fake := newFake()
			fake.fail = fail
			f := newFixture(t, fake, nil)
			r, s := f.submitJSON(map[string]string{"SKILL.md": skillMD("k", "exfil")}, Options{Model: "gpt-test", Provider: "openai"}, map[string]string{KeyHeader: key})
			if r.StatusCode != 202 {
				t.Fatalf("submit: %d %s", r.StatusCode, body(r))
			}
			v := f.wait(s.ID)
			if fake.plans[0].Driver.APIKey != key || fake.plans[0].Driver.Kind != "llm" {
				t.Fatalf("the tracer did not get the key: %+v", fake.plans[0].Driver)
			}
			want := StatusDone
			if fail {
				want = StatusFailed
			}
			if v.Status != want || fail && !strings.Contains(v.Error, "[provider key]") {
				t.Fatalf("trace: %+v", v)
			}
			var seen []string
			seen = append(seen, body(f.do("GET", "/v1/traces/"+s.ID, nil, "", nil, nil)), body(f.do("GET", "/v1/traces", nil, "", nil, nil)))
			f.srv.mu.Lock()
			if len(f.srv.keys) != 0 {
				t.Errorf("the key is still held after its trace: %d", len(f.srv.keys))
			}
			f.srv.mu.Unlock()
			f.stop() // the database closed: its WAL folded in
			seen = append(seen, f.logs.all()...)
			for _, s := range seen {
				if strings.Contains(s, key) {
					t.Errorf("the key leaked: %s", s)
				}
			}
			n := 0
			filepath.WalkDir(f.root, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				n++
				b, _ := os.ReadFile(p)
				if bytes.Contains(b, []byte(key)) || bytes.Contains(b, []byte("0c1d2e3f4a5b6c7d8e9f")) {
					t.Errorf("%s holds the key", p)
				}
				return nil
			})
			if n < 3 {
				t.Fatalf("only %d files searched", n)
			}
		})
	}
}

// TestCancel: DELETE stops a running trace (its containers cleaned up)
// and a queued one (never run); an ended trace answers 409.
func TestCancel(t *testing.T) {
	fake := newFake()
	fake.block = true
	f := newFixture(t, fake, func(c *Config) { c.Workers = 1 })
	_, a := f.submitJSON(map[string]string{"SKILL.md": skillMD("a", "hi")}, Options{}, nil)
	_, b := f.submitJSON(map[string]string{"SKILL.md": skillMD("b", "hi")}, Options{}, nil)
	if got := <-fake.started; got != a.ID {
		t.Fatalf("started %s, want %s", got, a.ID)
	}
	var v TraceView
	if r := f.do("DELETE", "/v1/traces/"+b.ID, nil, "", nil, &v); r.StatusCode != 202 || v.Status != StatusCanceled {
		t.Fatalf("cancel queued: %d %+v", r.StatusCode, v)
	}
	if r := f.do("DELETE", "/v1/traces/"+a.ID, nil, "", nil, &v); r.StatusCode != 202 || v.Status != StatusCanceled {
		t.Fatalf("cancel running: %d %+v", r.StatusCode, v)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(f.cleaned.all(), a.ID) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !slices.Contains(f.cleaned.all(), a.ID) {
		t.Fatalf("no cleanup of %s: %v", a.ID, f.cleaned.all())
	}
	if v := f.wait(a.ID); v.Status != StatusCanceled {
		t.Fatalf("after cancel: %+v", v)
	}
	if r := f.do("DELETE", "/v1/traces/"+a.ID, nil, "", nil, nil); r.StatusCode != 409 {
		t.Fatalf("cancel twice: %d", r.StatusCode)
	}
	if r := f.do("DELETE", "/v1/traces/nope", nil, "", nil, nil); r.StatusCode != 404 {
		t.Fatalf("cancel unknown: %d", r.StatusCode)
	}
	time.Sleep(100 * time.Millisecond)
	if n := fake.calls.Load(); n != 1 {
		t.Fatalf("the canceled queued trace ran: %d calls", n)
	}
}

// TestRestart: a second server on the data folder of one that stopped
// mid-trace marks the running trace and the queued trace with a key
// interrupted, and runs the other queued trace.
func TestRestart(t *testing.T) {
	fake := newFake()
	fake.block = true
	f := newFixture(t, fake, func(c *Config) { c.Workers = 1 })
	sk := func(n string) map[string]string { return map[string]string{"SKILL.md": skillMD(n, "hi")} }
	_, a := f.submitJSON(sk("a"), Options{}, nil)
	<-fake.started
	_, b := f.submitJSON(sk("b"), Options{Model: "m"}, map[string]string{KeyHeader: "sk-restart-key"})
	_, c := f.submitJSON(sk("c"), Options{}, nil)

	// While the first runs, a second server cannot take the folder.
	if _, err := New(context.Background(), Config{DataDir: f.data, Tracer: newFake()}); !errors.Is(err, ErrInUse) {
		t.Fatalf("a second server on a folder in use: %v", err)
	}
	// The first process "dies" (its lock goes with it): a second one
	// opens the same folder.
	f.srv.lock.Close()
	fake2 := newFake()
	g := &fixture{t: t, fake: fake2, root: f.root, data: f.data, logs: &lines{}, cleaned: &lines{}}
	g.start(Config{DataDir: f.data, Tracer: fake2, Version: "test", ImageID: "sha256:img", Log: g.logs.add, Workers: 1,
		Cleanup: func(_ context.Context, id string) error { g.cleaned.add(id); return nil }})
	for id, want := range map[string]string{a.ID: StatusInterrupted, b.ID: StatusInterrupted, c.ID: StatusDone} {
		v := g.wait(id)
		if v.Status != want || want == StatusInterrupted && v.Error == "" {
			t.Errorf("%s: %+v, want %s", id, v, want)
		}
	}
	if !slices.Contains(g.cleaned.all(), a.ID) {
		t.Errorf("the interrupted trace's containers were not removed: %v", g.cleaned.all())
	}
	if n := fake2.calls.Load(); n != 1 {
		t.Errorf("the restarted server ran %d traces", n)
	}
	f.ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	f.srv.Shutdown(ctx)
}

// TestShutdown: a drain lets a running trace finish; a drain that runs out
// cancels it, marks it interrupted and removes its containers; queued
// traces stay queued.
func TestShutdown(t *testing.T) {
	for _, drained := range []bool{true, false} {
		t.Run(fmt.Sprintf("drained=%v", drained), func(t *testing.T) {
			fake := newFake()
			fake.block = true
			f := newFixture(t, fake, func(c *Config) { c.Workers = 1 })
			_, a := f.submitJSON(map[string]string{"SKILL.md": skillMD("a", "hi")}, Options{}, nil)
			_, b := f.submitJSON(map[string]string{"SKILL.md": skillMD("b", "hi")}, Options{}, nil)
			<-fake.started
			timeout := time.Millisecond
			if drained {
				timeout = 10 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			drainDone := make(chan struct{})
			go func() { f.srv.Drain(ctx); close(drainDone) }()
			if drained {
				// While it drains the API answers: health says stopping,
				// a submission is turned away, a trace can be read.
				var h Health
				for deadline := time.Now().Add(5 * time.Second); h.Status != "stopping" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					r := f.do("GET", "/v1/health", nil, "", nil, nil)
					json.Unmarshal([]byte(body(r)), &h)
				}
				if h.Status != "stopping" {
					t.Fatalf("health during the drain: %+v", h)
				}
				if r, _ := f.submitJSON(map[string]string{"SKILL.md": skillMD("c", "hi")}, Options{}, nil); r.StatusCode != 503 || r.Header.Get("Retry-After") == "" {
					t.Fatalf("a submission during the drain: %d", r.StatusCode)
				}
				if r := f.do("GET", "/v1/traces/"+a.ID, nil, "", nil, nil); r.StatusCode != 200 {
					t.Fatalf("a status during the drain: %d", r.StatusCode)
				}
				fake.release <- struct{}{}
			}
			<-drainDone
			f.ts.Close()
			if err := f.srv.Close(); err != nil {
				t.Fatal(err)
			}
			st, err := OpenStore(context.Background(), filepath.Join(f.data, DBFile))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ra, _ := st.Get(context.Background(), a.ID)
			rb, _ := st.Get(context.Background(), b.ID)
			want := StatusInterrupted
			if drained {
				want = StatusDone
			}
			if ra.Status != want || rb.Status != StatusQueued {
				t.Fatalf("a %s (want %s), b %s", ra.Status, want, rb.Status)
			}
			if !drained && !slices.Contains(f.cleaned.all(), a.ID) {
				t.Fatalf("no cleanup: %v", f.cleaned.all())
			}
		})
	}
}

// TestSameUploadAtOnce: ten identical uploads at once unpack into one
// folder without tripping over each other, and all are accepted.
func TestSameUploadAtOnce(t *testing.T) {
	fake := newFake()
	fake.block = true
	f := newFixture(t, fake, func(c *Config) { c.Workers = 1 })
	files := map[string]string{"SKILL.md": skillMD("same", "hi")}
	for i := range 40 {
		files[fmt.Sprintf("ref/%d.md", i)] = strings.Repeat("reference text\n", 2000)
	}
	archive := zipOf(t, func() []member {
		var ms []member
		for n, b := range files {
			ms = append(ms, member{name: n, body: b})
		}
		return ms
	}()...)
	var wg sync.WaitGroup
	codes := make([]int, 10)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _ := f.submitArchive(archive, map[string]string{"prompt": fmt.Sprintf("p%d", i)})
			codes[i] = r.StatusCode
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusAccepted {
			t.Errorf("upload %d: %d", i, c)
		}
	}
	close(fake.release)
}

// TestSkillIDOption (issue 26): the identity a caller gives a skill reaches
// the trace's plan, where serve --store keys the skill's fingerprint
// history by it, in either form of submission; one that is a path is
// refused.
func TestSkillIDOption(t *testing.T) {
	fake := newFake()
	f := newFixture(t, fake, nil)
	r, s := f.submitJSON(map[string]string{"SKILL.md": skillMD("weather", "look up the weather")}, Options{SkillID: "/acme/weather/"}, nil)
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("submit: %d %s", r.StatusCode, body(r))
	}
	f.wait(s.ID)
	r, s = f.submitArchive(tarOf(t, member{name: "SKILL.md", body: skillMD("radar", "show the radar")}), map[string]string{"skill_id": "acme/radar"})
	if r.StatusCode != http.StatusAccepted {
		t.Fatalf("submit: %d %s", r.StatusCode, body(r))
	}
	f.wait(s.ID)
	fake.mu.Lock()
	var got []string
	for _, p := range fake.plans {
		got = append(got, p.SkillID)
	}
	fake.mu.Unlock()
	if strings.Join(got, ",") != "acme/weather,acme/radar" {
		t.Errorf("plans' skill ids %q, want acme/weather and acme/radar", got)
	}
	r, _ = f.submitArchive(tarOf(t, member{name: "SKILL.md", body: skillMD("x", "y")}), map[string]string{"skill_id": "acme/../etc"})
	if b := body(r); r.StatusCode != http.StatusBadRequest || !strings.Contains(b, "skill_id") {
		t.Errorf("a skill_id that is a path: %d %s", r.StatusCode, b)
	}
}
