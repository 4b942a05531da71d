package main

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/server"
)

// zipDir zips the files of dir under its base name.
func zipDir(t *testing.T, dir string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	base := filepath.Base(dir)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fw, err := w.Create(base + "/" + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		_, err = fw.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	return b.Bytes()
}

// serveClient talks to a `sandboxctl serve` over loopback.
type serveClient struct {
	t     *testing.T
	base  string
	token string
}

func (c *serveClient) do(method, path string, body io.Reader, hdr map[string]string) (int, http.Header, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func (c *serveClient) submit(archive []byte, fields, hdr map[string]string) (int, server.Submitted, string) {
	c.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	fw, _ := mw.CreateFormFile("skill", "skill.zip")
	fw.Write(archive)
	mw.Close()
	h := map[string]string{"Content-Type": mw.FormDataContentType()}
	for k, v := range hdr {
		h[k] = v
	}
	code, _, b := c.do("POST", "/v1/traces", &buf, h)
	var s server.Submitted
	json.Unmarshal(b, &s)
	return code, s, string(b)
}

// waitRunning polls until the trace runs.
func (c *serveClient) waitRunning(id string) {
	c.t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		_, _, b := c.do("GET", "/v1/traces/"+id, nil, nil)
		var v server.TraceView
		json.Unmarshal(b, &v)
		if v.Status == server.StatusRunning {
			return
		}
		if time.Now().After(deadline) || v.Status != server.StatusQueued {
			c.t.Fatalf("trace %s never ran: %s", id, b)
		}
	}
}

func (c *serveClient) wait(id string, d time.Duration) server.TraceView {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for {
		_, _, b := c.do("GET", "/v1/traces/"+id, nil, nil)
		var v server.TraceView
		json.Unmarshal(b, &v)
		if v.Status != server.StatusQueued && v.Status != server.StatusRunning {
			return v
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("trace %s still %s after %v", id, v.Status, d)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// serveProc is a running `sandboxctl serve`.
type serveProc struct {
	cmd  *exec.Cmd
	base string
	mu   sync.Mutex
	log  strings.Builder
	done chan struct{} // stderr closed
}

// startServe starts serve with args and waits for its address.
func startServe(t *testing.T, ctx context.Context, bin string, args ...string) *serveProc {
	t.Helper()
	p := &serveProc{cmd: exec.CommandContext(ctx, bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...), done: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGKILL) // no-op once it has exited
		if t.Failed() {
			t.Logf("serve's log:\n%s", p.logText())
		}
	})
	addr := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case p.base = <-addr:
	case <-p.done:
		t.Fatalf("serve stopped before it listened:\n%s", p.logText())
	case <-time.After(2 * time.Minute):
		t.Fatalf("serve did not start:\n%s", p.logText())
	}
	return p
}

func (p *serveProc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// stop sends sig and waits for the exit.
func (p *serveProc) stop(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	p.cmd.Process.Signal(sig)
	waited := make(chan error, 1)
	go func() { <-p.done; waited <- p.cmd.Wait() }()
	select {
	case err := <-waited:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("serve did not stop within a minute of %v", sig)
	}
	return nil
}

// TestServeEndToEnd runs `sandboxctl serve` on the real engine over real
// HTTP (loopback): the aws example through the literal driver and, at the
// same time, through the llm driver against a scripted model with a key in
// the header; both malicious with four reports; a resubmission answered
// from the cache without a trace; a hostile upload refused; SIGTERM stops
// the server with nothing left behind. The key is found nowhere in the
// data folder or the server's log.
func TestServeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	testenv.RequireDocker(t)
	img := testenv.Image(t)
	bin := testenv.SandboxctlBinary(t)
	const key = "sk-proj-serveKEYvalue0123456789abcdef"
	model, turns := scriptedModel(t, key, []map[string]any{
		{"name": "bash", "arguments": map[string]any{"command": "cd ~/.claude/skills/aws-sync-helper && bash scripts/check_profile.sh"}},
	})
	root := t.TempDir()
	data := filepath.Join(root, "data")
	tokens := filepath.Join(root, "tokens")
	os.WriteFile(tokens, []byte("e2e e2e-token-0123456789abcdef concurrency=4\nbatch batch-token-0123456789abcdef rate=60 burst=20 concurrency=20\n"), 0o600)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	args := []string{"--data", data, "--tokens", tokens, "--image", img, "--workers", "2", "--timeout", "3m", "--allow-base-url", "--drain", "20s"}
	srv := startServe(t, ctx, bin, args...)
	var ids []string
	defer func() {
		for _, id := range ids {
			assertNothingLeft(t, id)
			assertNothingLeft(t, id+"-unwatched")
		}
	}()
	base := srv.base
	c := &serveClient{t: t, base: base, token: "e2e-token-0123456789abcdef"}
	aws := zipDir(t, "../../examples/skills/aws-sync-helper")

	code, lit, body := c.submit(aws, map[string]string{"driver": "literal"}, nil)
	if code != 202 {
		t.Fatalf("literal: %d %s", code, body)
	}
	ids = append(ids, lit.ID)
	code, llm, body := c.submit(aws, map[string]string{"model": "scripted", "base_url": model.URL + "/v1", "prompt": "Check my AWS profile before I sync."},
		map[string]string{server.KeyHeader: key})
	if code != 202 {
		t.Fatalf("llm: %d %s", code, body)
	}
	ids = append(ids, llm.ID)

	// A hostile upload while they run: a link to the host's credentials.
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "SKILL.md", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	tw.Write([]byte("hi"))
	tw.WriteHeader(&tar.Header{Name: "creds", Linkname: "/root/.aws/credentials", Typeflag: tar.TypeSymlink})
	tw.Close()
	if code, _, body := c.submit(tb.Bytes(), nil, nil); code != 422 || !strings.Contains(body, "symbolic link") {
		t.Errorf("hostile upload: %d %s", code, body)
	}

	start := time.Now()
	for _, id := range []string{lit.ID, llm.ID} {
		v := c.wait(id, 6*time.Minute)
		t.Logf("%s: %s %s, the trace's own time %.1fs", id, v.Status, v.Verdict, float64(v.DurationMS)/1000)
		if v.Status != server.StatusDone || v.Verdict != "malicious" || len(v.Incidents) == 0 {
			t.Errorf("%s: %+v", id, v)
		}
		if len(v.Reports) != 4 {
			t.Fatalf("%s: reports %v", id, v.Reports)
		}
		for format, check := range map[string]func([]byte) bool{
			"json": func(b []byte) bool {
				var r struct{ Verdict string }
				return json.Unmarshal(b, &r) == nil && r.Verdict == "malicious"
			},
			"sarif": func(b []byte) bool { return bytes.Contains(b, []byte(`"2.1.0"`)) },
			"html":  func(b []byte) bool { return bytes.Contains(b, []byte("Content-Security-Policy")) },
			"txt":   func(b []byte) bool { return bytes.Contains(b, []byte("malicious")) },
		} {
			code, _, b := c.do("GET", v.Reports[format], nil, nil)
			if code != 200 || !check(b) {
				t.Errorf("%s report.%s: %d, %d bytes", id, format, code, len(b))
			}
		}
	}
	t.Logf("two concurrent traces judged in %v", time.Since(start).Round(time.Second))
	if turns.Load() < 2 {
		t.Errorf("the scripted model was asked %d times", turns.Load())
	}

	// The same skill and options again: the earlier result, no trace.
	t0 := time.Now()
	code, again, body := c.submit(aws, map[string]string{"driver": "literal"}, nil)
	if code != 200 || !again.Cached || again.CachedFrom != lit.ID || again.Verdict != "malicious" {
		t.Errorf("resubmission: %d %s", code, body)
	}
	t.Logf("cached resubmission answered in %v", time.Since(t0).Round(time.Millisecond))
	if _, _, m := c.do("GET", "/metrics", nil, nil); !bytes.Contains(m, []byte(`sandboxctl_serve_verdicts{verdict="malicious"} 3`)) ||
		!bytes.Contains(m, []byte("sandboxctl_serve_cached_total 1")) || !bytes.Contains(m, []byte("sandboxctl_serve_trace_duration_seconds_count 2")) {
		t.Errorf("metrics:\n%s", m)
	}

	// 20 submissions at once from a caller whose limits allow them: none is
	// refused, and every one is traced and judged.
	batch := &serveClient{t: t, base: base, token: "batch-token-0123456789abcdef"}
	var bmu sync.Mutex
	var bids []string
	var wg sync.WaitGroup
	t3 := time.Now()
	for i := range 20 {
		wg.Go(func() {
			md := fmt.Sprintf("---\nname: batch-%02d\ndescription: Prints a greeting. Use to say hello.\n---\n\n```bash\necho hello %d\n```\n", i, i)
			body, _ := json.Marshal(map[string]any{"files": map[string]string{"SKILL.md": md}})
			code, _, b := batch.do("POST", "/v1/traces", bytes.NewReader(body), map[string]string{"Content-Type": "application/json"})
			var sub server.Submitted
			json.Unmarshal(b, &sub)
			if code != 202 || sub.ID == "" {
				t.Errorf("batch submission %d: %d %s", i, code, b)
				return
			}
			bmu.Lock()
			bids = append(bids, sub.ID)
			bmu.Unlock()
		})
	}
	wg.Wait()
	ids = append(ids, bids...)
	for _, id := range bids {
		if v := batch.wait(id, 8*time.Minute); v.Status != server.StatusDone || v.Verdict != "clean" {
			t.Errorf("batch trace %s: %s %s (%s)", id, v.Status, v.Verdict, v.Error)
		}
	}
	t.Logf("20 concurrent submissions, %d judged in %v with 2 workers", len(bids), time.Since(t3).Round(time.Second))

	// DELETE a trace while it runs: it stops and its containers go.
	slow, _ := json.Marshal(map[string]any{"files": map[string]string{"SKILL.md": "---\nname: slow-sync\ndescription: Waits for the sync window. Use before a sync.\n---\n\n# Slow sync\n\nWait for the window:\n\n```bash\nsleep 300\n```\n"}})
	code, _, b := c.do("POST", "/v1/traces", bytes.NewReader(slow), map[string]string{"Content-Type": "application/json"})
	var del server.Submitted
	json.Unmarshal(b, &del)
	if code != 202 {
		t.Fatalf("slow skill: %d %s", code, b)
	}
	ids = append(ids, del.ID)
	c.waitRunning(del.ID)
	time.Sleep(5 * time.Second) // its containers exist by now
	t1 := time.Now()
	if code, _, b := c.do("DELETE", "/v1/traces/"+del.ID, nil, nil); code != 202 || !bytes.Contains(b, []byte(`"canceled"`)) {
		t.Errorf("DELETE: %d %s", code, b)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		var h server.Health
		_, _, b := c.do("GET", "/v1/health", nil, nil)
		json.Unmarshal(b, &h)
		if h.Running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the canceled trace still runs: %s", b)
		}
	}
	t.Logf("canceled trace stopped in %v", time.Since(t1).Round(time.Millisecond))
	assertNothingLeft(t, del.ID)

	// kill -9 while a trace runs, then start again on the same folder:
	// the trace is marked interrupted and its containers are removed.
	slow2 := bytes.Replace(slow, []byte("Wait for the window"), []byte("Wait for the next window"), 1)
	code, _, b = c.do("POST", "/v1/traces", bytes.NewReader(slow2), map[string]string{"Content-Type": "application/json"})
	var killed server.Submitted
	json.Unmarshal(b, &killed)
	if code != 202 {
		t.Fatalf("slow skill again: %d %s", code, b)
	}
	ids = append(ids, killed.ID)
	c.waitRunning(killed.ID)
	time.Sleep(5 * time.Second)
	srv.stop(t, syscall.SIGKILL)
	logText := srv.logText()
	t2 := time.Now()
	srv = startServe(t, ctx, bin, args...)
	t.Logf("restarted in %v", time.Since(t2).Round(time.Millisecond))
	c.base = srv.base
	code, _, b = c.do("GET", "/v1/traces/"+killed.ID, nil, nil)
	var kv server.TraceView
	json.Unmarshal(b, &kv)
	if code != 200 || kv.Status != server.StatusInterrupted || kv.Error == "" {
		t.Errorf("after kill -9 and a restart: %d %s", code, b)
	}
	assertNothingLeft(t, killed.ID) // the restart removed them: nothing for gc
	if code, _, b := c.do("GET", "/v1/traces/"+lit.ID, nil, nil); code != 200 || !bytes.Contains(b, []byte(`"malicious"`)) {
		t.Errorf("a judged trace after the restart: %d %s", code, b)
	}

	if err := srv.stop(t, syscall.SIGTERM); err != nil {
		t.Errorf("serve after SIGTERM: %v", err)
	}
	logText += srv.logText()
	if !strings.Contains(logText, "stopped") {
		t.Errorf("no clean stop in the log:\n%s", logText)
	}
	if strings.Contains(logText, key) {
		t.Errorf("the key is in the server's log")
	}
	n := 0
	filepath.WalkDir(data, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		n++
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("%s holds the key", p)
		}
		return nil
	})
	if n < 10 {
		t.Errorf("only %d files searched in the data folder", n)
	}
}
