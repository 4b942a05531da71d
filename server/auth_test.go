package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"mime/multipart"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseTokens(t *testing.T) {
	long := "0123456789abcdef"
	cases := []struct {
		name, in string
		want     []Token // names and limits only
		err      string
	}{
		{name: "defaults", in: "# callers\n\nalice " + long + "\n", want: []Token{{Name: "alice", Rate: DefaultRate, Burst: DefaultRate, Concurrency: DefaultConcurrency}}},
		{name: "limits", in: "ci " + long + " rate=10 burst=2 concurrency=1\nbob " + long + "x\n", want: []Token{{Name: "ci", Rate: 10, Burst: 2, Concurrency: 1}, {Name: "bob", Rate: DefaultRate, Burst: DefaultRate, Concurrency: DefaultConcurrency}}},
		{name: "short token", in: "alice short", err: "shorter than 16"},
		{name: "no token", in: "alice", err: "want NAME TOKEN"},
		{name: "bad name", in: "al/ice " + long, err: "name"},
		{name: "unknown limit", in: "alice " + long + " speed=3", err: "unknown limit"},
		{name: "zero limit", in: "alice " + long + " rate=0", err: "from 1"},
		{name: "duplicate name", in: "a " + long + "\na " + long + "x", err: "twice"},
		{name: "shared token", in: "a " + long + "\nb " + long, err: "another caller's"},
		{name: "empty", in: "# nobody\n", err: "no token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseTokens(strings.NewReader(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d tokens", len(got))
			}
			for i := range got {
				g := got[i]
				g.sum = [32]byte{}
				if g != c.want[i] {
					t.Errorf("token %d: %+v, want %+v", i, g, c.want[i])
				}
			}
			a := &auth{tokens: got}
			if tk, ok := a.lookup("Bearer " + long); !ok || tk.Name != got[0].Name {
				t.Errorf("lookup: %v %v", tk, ok)
			}
			for _, h := range []string{"", "Bearer ", "Basic " + long, "Bearer " + long + "y", long} {
				if _, ok := a.lookup(h); ok {
					t.Errorf("lookup(%q) matched", h)
				}
			}
		})
	}
}

func TestLimiter(t *testing.T) {
	var l limiter
	tk := newToken("a", "0123456789abcdef", 60, 2, 1) // one a second, two at once
	now := time.Unix(1000, 0)
	for i, want := range []bool{true, true, false} {
		if ok, _ := l.allow(&tk, now); ok != want {
			t.Fatalf("call %d: %v", i, ok)
		}
	}
	if _, wait := l.allow(&tk, now); wait <= 0 || wait > time.Second {
		t.Fatalf("wait %v", wait)
	}
	if ok, _ := l.allow(&tk, now.Add(1100*time.Millisecond)); !ok {
		t.Fatal("no refill after a second")
	}
}

func FuzzParseTokens(f *testing.F) {
	f.Add("alice 0123456789abcdef rate=3\n# x\n")
	f.Add("a b c=d")
	f.Fuzz(func(t *testing.T, s string) {
		toks, err := ParseTokens(strings.NewReader(s))
		if err == nil && len(toks) == 0 {
			t.Fatal("no error and no token")
		}
		for _, tk := range toks {
			if tk.Rate < 1 || tk.Burst < 1 || tk.Concurrency < 1 || !validName(tk.Name) {
				t.Fatalf("token %+v", tk)
			}
		}
	})
}

// FuzzUpload sends arbitrary bytes as the skill archive: the answer is a
// 2xx or a 4xx, never a 5xx, and nothing is written outside the data
// folder.
func FuzzUpload(f *testing.F) {
	f.Add(zipOf(f, member{name: "SKILL.md", body: skillMD("z", "hi")}))
	f.Add(tarOf(f, member{name: "../x", body: "y"}))
	f.Add([]byte("PK\x03\x04garbage"))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0})
	root := f.TempDir()
	data := filepath.Join(root, "data")
	logs := &lines{}
	srv, err := New(f.Context(), Config{DataDir: data, Tracer: newFake(), Version: "fuzz", ImageID: "x",
		MaxUpload: 1 << 20, Archive: DefaultArchiveLimits, Log: logs.add})
	if err != nil {
		f.Fatal(err)
	}
	// No workers: submissions stay queued; the queue is large enough.
	srv.cfg.MaxQueue = 1 << 30
	f.Cleanup(func() { srv.Shutdown(context.Background()) })
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, archive []byte) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		w, _ := mw.CreateFormFile("skill", "s")
		w.Write(archive)
		mw.Close()
		req := httptest.NewRequest("POST", "/v1/traces", &buf)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 || rec.Code < 200 {
			t.Fatalf("status %d: %s (log: %q)", rec.Code, rec.Body, logs.all())
		}
		if rec.Code >= 400 && !strings.Contains(rec.Body.String(), `"error"`) {
			t.Fatalf("a %d without a message", rec.Code)
		}
		ents, _ := os.ReadDir(root)
		if len(ents) != 1 || ents[0].Name() != "data" {
			t.Fatalf("written outside the data folder: %v", ents)
		}
	})
}

// newToken makes a Token for a caller.
func newToken(name, secret string, rate, burst, concurrency int) Token {
	t := Token{Name: name, Rate: rate, Burst: burst, Concurrency: concurrency, sum: sha256.Sum256([]byte(secret))}
	return t.withDefaults()
}
