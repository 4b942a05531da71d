package mcptools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxctl/sandboxctl/mcptools"
)

// TestMain lets the test binary play agentd's hidden subcommands, as the
// server re-executes it (Config.Self) for the shim and the file tools.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "__shim":
			os.Exit(mcptools.Shim(os.Args[2:], os.Environ(), os.Stdin, os.Stdout, os.Stderr))
		case "__tool":
			os.Exit(mcptools.Tool(context.Background(), os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
		case "__steal": // TestShimStatusCannotBeForged
			os.Exit(steal())
		case "__getrandom", "__getrandom-later", "__cryptorand", "__draws": // the Entropy tests
			os.Exit(randomProbe(os.Args[1], os.Args[2:]))
		case "__mcp": // TestInContainer
			var cfg mcptools.Config
			if err := json.Unmarshal([]byte(os.Getenv(testConfigVar)), &cfg); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			if err := mcptools.Serve(context.Background(), os.Stdin, os.Stdout, cfg); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		case "__flush": // TestInContainer
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := mcptools.Flush(ctx, mcptools.DefaultLogDir); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

const hostStrace = "/usr/bin/strace"

// env is a test sandbox on the host: a home, a log folder and the user.
type env struct {
	cfg    mcptools.Config
	traced bool // tools run under strace as another user
	home   string
}

// newEnv prepares a Config. As root with strace installed, tools run under
// strace as "nobody", like in the sandbox; otherwise they run untraced as
// the current user. In CI (SANDBOXCTL_REQUIRE_DOCKER=1) a missing strace
// or a non-root run is a failure, never a silent skip.
func newEnv(t testing.TB) *env {
	t.Helper()
	root, err := os.MkdirTemp("", "mcptools-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	// The test binary plays agentd; it must be executable by the user.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	agentd := filepath.Join(root, "agentd")
	copyFile(t, self, agentd, 0o755)

	e := &env{home: filepath.Join(root, "home")}
	if err := os.Mkdir(e.home, 0o755); err != nil {
		t.Fatal(err)
	}
	e.cfg = mcptools.Config{
		Self:      agentd,
		Strace:    hostStrace,
		LogDir:    filepath.Join(root, "calls"),
		Home:      e.home,
		MaxOutput: 64 << 10,
		// The shim, the file tools and the probes are this binary: built
		// with -race, each would sleep a second as it exits (the race
		// detector's atexit_sleep_ms), which is most of a call's time.
		Env: []string{"GORACE=atexit_sleep_ms=0"},
	}
	_, straceErr := os.Stat(hostStrace)
	if os.Geteuid() == 0 && straceErr == nil {
		nobody, err := user.Lookup("nobody")
		if err != nil {
			t.Fatalf("lookup nobody: %v", err)
		}
		uid, _ := strconv.Atoi(nobody.Uid)
		gid, _ := strconv.Atoi(nobody.Gid)
		e.cfg.User, e.cfg.UID, e.cfg.GID = "nobody", uid, gid
		if err := os.Chown(e.home, uid, gid); err != nil {
			t.Fatal(err)
		}
		e.traced = true
		return e
	}
	if os.Getenv("SANDBOXCTL_REQUIRE_DOCKER") == "1" {
		t.Fatalf("traced tool tests need root and %s (euid %d, strace: %v)", hostStrace, os.Geteuid(), straceErr)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.NoStrace = true
	e.cfg.User = u.Username
	e.cfg.UID, _ = strconv.Atoi(u.Uid)
	e.cfg.GID, _ = strconv.Atoi(u.Gid)
	return e
}

func copyFile(t testing.TB, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}

// requireTraced stops tests that need strace -u (root) on hosts without it.
func (e *env) requireTraced(t *testing.T) {
	t.Helper()
	if !e.traced {
		t.Skip("needs root and strace (untraced mode)")
	}
}

// start serves e.cfg on in-process pipes and returns a client.
func (e *env) start(t testing.TB) *mcptools.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- mcptools.Serve(ctx, sr, sw, e.cfg)
		sw.Close()
	}()
	c, err := mcptools.NewClient(ctx, cw, cr)
	if err != nil {
		cancel()
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		cw.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		fctx, fcancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer fcancel()
		flush(t, fctx, e.cfg.LogDir)
	})
	return c
}

// flush runs Flush; a tracer that had to be killed is logged (it happens
// rarely on a loaded host), any other error fails the test.
func flush(t testing.TB, ctx context.Context, logDir string) {
	t.Helper()
	err := mcptools.Flush(ctx, logDir)
	switch {
	case errors.Is(err, mcptools.ErrTracersKilled):
		t.Logf("Flush: %v", err)
	case err != nil:
		t.Errorf("Flush: %v", err)
	}
}

func call(t *testing.T, c *mcptools.Client, id, name string, args any) mcptools.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Call(t.Context(), id, name, raw)
	if err != nil {
		t.Fatalf("Call(%s %s): %v", name, raw, err)
	}
	return r
}

func TestListTools(t *testing.T) {
	c := newEnv(t).start(t)
	got, err := c.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	want := []string{"bash", "edit_file", "fetch_url", "list_directory", "read_file", "search_files", "write_file"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListTools (-want +got):\n%s", diff)
	}
}

func TestTools(t *testing.T) {
	e := newEnv(t)
	c := e.start(t)
	home := e.home
	write := func(name, content string) {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if e.traced {
			os.Chown(p, e.cfg.UID, e.cfg.GID)
			os.Chown(filepath.Dir(p), e.cfg.UID, e.cfg.GID)
		}
	}
	write("notes.txt", "alpha\nbeta\ngamma\n")
	write("edit.txt", "one two three two\n")
	write("proj/main.py", "import os\nKEY = 'AKIAEXAMPLE'\n")

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Echo", r.Header.Get("X-Test"))
		fmt.Fprintf(w, "%s %s body=%s", r.Method, r.URL.Path, b)
	}))
	t.Cleanup(srv.Close)

	tests := []struct {
		name      string
		tool      string
		args      any
		wantExit  int
		wantError bool
		stdout    string // substring
		stderr    string // substring
		text      string // substring of what the model sees
		check     func(t *testing.T)
	}{
		{name: "bash echo", tool: "bash", args: map[string]any{"command": "echo hi; echo oops >&2"},
			stdout: "hi\n", stderr: "oops", text: "hi\n[stderr]\noops"},
		{name: "bash runs as the user in home", tool: "bash", args: map[string]any{"command": "id -un; pwd"},
			stdout: e.cfg.User + "\n" + home + "\n"},
		{name: "bash exit code", tool: "bash", args: map[string]any{"command": "exit 3"},
			wantExit: 3, wantError: true, text: "[exit code: 3]"},
		{name: "bash missing command", tool: "bash", args: map[string]any{},
			wantExit: -1, wantError: true, text: "command is required"},
		{name: "bash bad timeout", tool: "bash", args: map[string]any{"command": "true", "timeout_s": -1},
			wantExit: -1, wantError: true, text: "timeout_s"},
		{name: "bash wrong type", tool: "bash", args: map[string]any{"command": 7},
			wantExit: -1, wantError: true, text: "arguments"},
		{name: "read_file", tool: "read_file", args: map[string]any{"path": "notes.txt"}, stdout: "alpha\nbeta\ngamma\n"},
		{name: "read_file absolute", tool: "read_file", args: map[string]any{"path": filepath.Join(home, "notes.txt")}, stdout: "beta"},
		{name: "read_file ~ path", tool: "read_file", args: map[string]any{"path": "~/notes.txt"}, stdout: "gamma"},
		{name: "read_file ~other is not expanded", tool: "read_file", args: map[string]any{"path": "~nobody-else/notes.txt"},
			wantExit: 1, wantError: true, stderr: "no such file or directory"},
		{name: "read_file missing path", tool: "read_file", args: map[string]any{},
			wantExit: -1, wantError: true, text: "path is required"},
		{name: "read_file no such file", tool: "read_file", args: map[string]any{"path": "nope.txt"},
			wantExit: 1, wantError: true, stderr: "no such file or directory"},
		{name: "read_file directory", tool: "read_file", args: map[string]any{"path": "proj"},
			wantExit: 1, wantError: true, stderr: "is a directory"},
		{name: "write_file", tool: "write_file", args: map[string]any{"path": "out/new.txt", "content": "fresh"},
			stdout: "wrote 5 bytes", check: func(t *testing.T) {
				if b, err := os.ReadFile(filepath.Join(home, "out/new.txt")); err != nil || string(b) != "fresh" {
					t.Errorf("out/new.txt = %q, %v", b, err)
				}
			}},
		{name: "write_file ~ path", tool: "write_file", args: map[string]any{"path": "~/out/tilde.txt", "content": "t"},
			stdout: "wrote 1 bytes to " + filepath.Join(home, "out/tilde.txt"), check: func(t *testing.T) {
				if b, err := os.ReadFile(filepath.Join(home, "out/tilde.txt")); err != nil || string(b) != "t" {
					t.Errorf("out/tilde.txt = %q, %v", b, err)
				}
			}},
		{name: "write_file missing content", tool: "write_file", args: map[string]any{"path": "x"},
			wantExit: -1, wantError: true, text: "content are required"},
		{name: "edit_file", tool: "edit_file", args: map[string]any{"path": "edit.txt", "old": "three", "new": "3"},
			stdout: "edited", check: func(t *testing.T) {
				if b, _ := os.ReadFile(filepath.Join(home, "edit.txt")); string(b) != "one two 3 two\n" {
					t.Errorf("edit.txt = %q", b)
				}
			}},
		{name: "edit_file ambiguous", tool: "edit_file", args: map[string]any{"path": "edit.txt", "old": "two", "new": "2"},
			wantExit: 1, wantError: true, stderr: "appears 2 times"},
		{name: "edit_file not found", tool: "edit_file", args: map[string]any{"path": "edit.txt", "old": "zzz", "new": "2"},
			wantExit: 1, wantError: true, stderr: "not found"},
		{name: "list_directory", tool: "list_directory", args: map[string]any{"path": "."},
			stdout: "notes.txt\t17\n"},
		{name: "list_directory shows folders", tool: "list_directory", args: map[string]any{"path": home},
			stdout: "proj/\n"},
		{name: "list_directory ~", tool: "list_directory", args: map[string]any{"path": "~"}, stdout: "proj/\n"},
		{name: "list_directory ~/", tool: "list_directory", args: map[string]any{"path": "~/proj/"}, stdout: "main.py"},
		{name: "search_files ~", tool: "search_files", args: map[string]any{"pattern": "*.py", "path": "~/proj"},
			stdout: "main.py"},
		{name: "list_directory missing", tool: "list_directory", args: map[string]any{"path": "/nonexistent-dir"},
			wantExit: 1, wantError: true, stderr: "no such file"},
		{name: "search_files content", tool: "search_files", args: map[string]any{"pattern": "AKIA[A-Z]+"},
			stdout: "proj/main.py:2: KEY = 'AKIAEXAMPLE'"},
		{name: "search_files glob", tool: "search_files", args: map[string]any{"pattern": "*.py", "path": "proj"},
			stdout: "proj/main.py\n"},
		{name: "search_files nothing", tool: "search_files", args: map[string]any{"pattern": "qqqqqq"},
			stdout: "no matches"},
		{name: "search_files missing pattern", tool: "search_files", args: map[string]any{"path": "."},
			wantExit: -1, wantError: true, text: "pattern is required"},
		{name: "fetch_url get", tool: "fetch_url", args: map[string]any{"url": srv.URL + "/a", "headers": map[string]string{"X-Test": "v1"}},
			stdout: "X-Echo: v1\n\nGET /a body="},
		{name: "fetch_url post", tool: "fetch_url", args: map[string]any{"url": srv.URL + "/p", "method": "post", "body": "data=1"},
			stdout: "200 OK", text: "POST /p body=data=1"},
		{name: "fetch_url bad scheme", tool: "fetch_url", args: map[string]any{"url": "file:///etc/passwd"},
			wantExit: 1, wantError: true, stderr: "http or https"},
		{name: "fetch_url refused", tool: "fetch_url", args: map[string]any{"url": "http://127.0.0.1:1/"},
			wantExit: 1, wantError: true, stderr: "refused"},
		{name: "fetch_url missing url", tool: "fetch_url", args: map[string]any{},
			wantExit: -1, wantError: true, text: "url is required"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, c, "t"+strconv.Itoa(i), tc.tool, tc.args)
			if r.ExitCode != tc.wantExit || r.IsError != tc.wantError {
				t.Errorf("exit %d, IsError %v; want %d, %v\nstdout: %q\nstderr: %q", r.ExitCode, r.IsError, tc.wantExit, tc.wantError, r.Stdout, r.Stderr)
			}
			for _, c := range []struct{ what, got, want string }{
				{"stdout", r.Stdout, tc.stdout}, {"stderr", r.Stderr, tc.stderr}, {"text", r.Text, tc.text},
			} {
				if !strings.Contains(c.got, c.want) {
					t.Errorf("%s = %q, want it to contain %q", c.what, c.got, c.want)
				}
			}
			if r.CallID != "t"+strconv.Itoa(i) {
				t.Errorf("CallID = %q", r.CallID)
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
	}
}

func TestUnknownTool(t *testing.T) {
	c := newEnv(t).start(t)
	if _, err := c.Call(t.Context(), "u1", "rm_rf", json.RawMessage(`{}`)); err == nil {
		t.Error("Call(rm_rf) succeeded, want an error")
	}
}

func TestCallIDs(t *testing.T) {
	e := newEnv(t)
	c := e.start(t)
	tests := []struct {
		name, id, want string
	}{
		{name: "kept", id: "call_1-a.b", want: "call_1-a.b"},
		{name: "path characters replaced", id: "../../etc/x y", want: "_._.._etc_x_y"},
		{name: "reused id gets a suffix", id: "call_1-a.b", want: "call_1-a.b-2"},
		{name: "empty id gets a server number", id: "", want: "s4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := call(t, c, tc.id, "bash", map[string]any{"command": "true"})
			if r.CallID != tc.want {
				t.Errorf("CallID = %q, want %q", r.CallID, tc.want)
			}
			if e.traced {
				if _, err := os.Stat(filepath.Join(e.cfg.LogDir, tc.want+".log")); err != nil {
					t.Errorf("log of %s: %v", tc.want, err)
				}
			}
		})
	}
}

func TestOutputFlood(t *testing.T) {
	e := newEnv(t)
	c := e.start(t)
	// Under -short the flood is 64 MiB: the same cut and the same account
	// of it, without the seconds a GiB costs (make test floods the GiB,
	// whose peak memory the log shows).
	size := 1 << 30
	if testing.Short() {
		size = 64 << 20
	}
	start := time.Now()
	r := call(t, c, "flood", "bash", map[string]any{
		"command": fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x; head -c 100000 /dev/zero >&2", size)})
	took := time.Since(start)
	status, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmHWM") {
			t.Logf("%d MiB flood took %s; peak RSS of the test process (server and client): %s", size>>20, took, strings.Join(strings.Fields(l)[1:], " "))
		}
	}
	if !r.Truncated || len(r.Stdout) != 64<<10 || len(r.Stderr) != 64<<10 || r.ExitCode != 0 {
		t.Errorf("Truncated %v, kept %d stdout / %d stderr bytes, exit %d", r.Truncated, len(r.Stdout), len(r.Stderr), r.ExitCode)
	}
	if !strings.Contains(r.Text, fmt.Sprintf("kept 65536 of %d stdout bytes, 65536 of 100000 stderr bytes", size)) {
		t.Errorf("text does not report the drop: %q", r.Text[max(0, len(r.Text)-300):])
	}
}

func TestTimeout(t *testing.T) {
	e := newEnv(t)
	c := e.start(t)
	start := time.Now()
	r := call(t, c, "slow", "bash", map[string]any{"command": "echo before; sleep 60 & sleep 60", "timeout_s": 1})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("timed-out call took %s", took)
	}
	if !r.TimedOut || !r.IsError || r.ExitCode != 137 || r.Stdout != "before\n" {
		t.Errorf("TimedOut %v IsError %v exit %d stdout %q", r.TimedOut, r.IsError, r.ExitCode, r.Stdout)
	}
	if !strings.Contains(r.Text, "[timed out") {
		t.Errorf("text = %q", r.Text)
	}
}

func TestCancelStopsCall(t *testing.T) {
	e := newEnv(t)
	c := e.start(t)
	// Cancel once the command has started (under load that can take more
	// than a second), or after 30 s so a command that never starts fails.
	pidFile := filepath.Join(e.home, "cancel.pid")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var cancelled time.Time
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ctx.Err() == nil {
			if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
				cancelled = time.Now()
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	_, err := c.Call(ctx, "cancel", "bash", json.RawMessage(`{"command":"echo $$ > cancel.pid; exec sleep 60"}`))
	<-watched
	if err == nil {
		t.Error("Call with an ended context succeeded")
	}
	if cancelled.IsZero() {
		t.Fatalf("the command never wrote its pid (call error: %v)", err)
	}
	if took := time.Since(cancelled); took > 10*time.Second {
		t.Errorf("cancelled call took %s after the cancel", took)
	}
	// The client's cancellation reaches the server, which kills the command.
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		t.Fatalf("pid file %q", b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); strings.Contains(string(st), ") Z ") {
			break // killed, not yet reaped
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("command %d still running after the call was cancelled", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBackgroundStaysTraced: a process a call leaves behind neither holds
// the call up nor escapes the trace.
func TestBackgroundStaysTraced(t *testing.T) {
	e := newEnv(t)
	c := e.start(t)
	start := time.Now()
	r := call(t, c, "bg1", "bash", map[string]any{"command": "(sleep 3; echo later > bg.txt; cat /etc/hostname) & echo started"})
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("call took %s: it waited for its background process", took)
	}
	if r.Stdout != "started\n" || r.ExitCode != 0 {
		t.Errorf("stdout %q exit %d", r.Stdout, r.ExitCode)
	}
	bg := filepath.Join(e.home, "bg.txt")
	if _, err := os.Stat(bg); err == nil {
		t.Fatal("bg.txt exists before its writer's sleep ended")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(bg); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("background process never wrote bg.txt")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A second call runs while the first one's tracer is still around.
	if r := call(t, c, "bg2", "bash", map[string]any{"command": "echo two"}); r.Stdout != "two\n" {
		t.Errorf("second call stdout %q", r.Stdout)
	}
	if !e.traced {
		return
	}
	time.Sleep(200 * time.Millisecond) // let the background cat finish
	fctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	flush(t, fctx, e.cfg.LogDir)
	log, err := os.ReadFile(filepath.Join(e.cfg.LogDir, "bg1.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"bg.txt", O_WRONLY|O_CREAT|O_TRUNC`, `execve("/usr/bin/cat", ["cat", "/etc/hostname"]`, "+++ exited with 0 +++"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("bg1.log lacks %q", want)
		}
	}
}

// TestFileToolsAreTracedAndConfined: file tools run as the user under
// strace: a write into a read-only, root-owned skill folder fails, and the
// refused open is in the call's log.
func TestFileToolsAreTracedAndConfined(t *testing.T) {
	e := newEnv(t)
	e.requireTraced(t)
	c := e.start(t)
	skill := filepath.Join(e.home, ".agents", "skills", "demo")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("# demo\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(skill, 0o555); err != nil {
		t.Fatal(err)
	}
	r := call(t, c, "w1", "write_file", map[string]any{"path": filepath.Join(skill, "SKILL.md"), "content": "pwned"})
	if !r.IsError || !strings.Contains(r.Stderr, "permission denied") {
		t.Errorf("write into the skill: IsError %v stderr %q", r.IsError, r.Stderr)
	}
	r = call(t, c, "r1", "read_file", map[string]any{"path": filepath.Join(skill, "SKILL.md")})
	if r.Stdout != "# demo\n" {
		t.Errorf("read_file = %q", r.Stdout)
	}
	fctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	flush(t, fctx, e.cfg.LogDir)
	for id, want := range map[string]string{
		"w1": filepath.Join(skill, "SKILL.md") + `", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0644) = -1 EACCES`,
		"r1": filepath.Join(skill, "SKILL.md") + `", O_RDONLY|O_CLOEXEC) = `,
	} {
		log, err := os.ReadFile(filepath.Join(e.cfg.LogDir, id+".log"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(log), want) {
			t.Errorf("%s.log lacks %q:\n%s", id, want, log)
		}
	}
	// The log folder is root's alone.
	if fi, err := os.Stat(e.cfg.LogDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("log dir mode %v, %v", fi.Mode(), err)
	}
}

// TestFlushEndsTracers: Flush detaches tracers that still follow a
// background process, and returns.
func TestFlushEndsTracers(t *testing.T) {
	e := newEnv(t)
	e.requireTraced(t)
	c := e.start(t)
	call(t, c, "long", "bash", map[string]any{"command": "sleep 30 >/dev/null 2>&1 & echo $! > sleep.pid"})
	t.Cleanup(func() {
		// End the background sleep (Flush detaches, it does not kill).
		if b, err := os.ReadFile(filepath.Join(e.home, "sleep.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	out, _ := exec.Command("pgrep", "-f", "strace .*"+e.cfg.LogDir).Output()
	if len(strings.Fields(string(out))) == 0 {
		t.Fatal("no tracer running for the background sleep")
	}
	start := time.Now()
	fctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	flush(t, fctx, e.cfg.LogDir)
	t.Logf("Flush took %s", time.Since(start))
	out, _ = exec.Command("pgrep", "-f", "strace .*"+e.cfg.LogDir).Output()
	if len(strings.Fields(string(out))) != 0 {
		t.Errorf("tracers left after Flush: %s", out)
	}
}

// TestStraceFailureIsReported: a tracer that cannot start the command (here
// an unknown user) gives an error result, not a hang.
func TestStraceFailureIsReported(t *testing.T) {
	e := newEnv(t)
	e.requireTraced(t)
	e.cfg.User = "no-such-user-sandboxctl"
	c := e.start(t)
	start := time.Now()
	r := call(t, c, "x1", "bash", map[string]any{"command": "echo unreachable"})
	if !r.IsError || r.ExitCode == 0 || r.Stdout != "" || !strings.Contains(r.Stderr, "no-such-user") {
		t.Errorf("IsError %v exit %d stdout %q stderr %q", r.IsError, r.ExitCode, r.Stdout, r.Stderr)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s", took)
	}
}

func TestNewClientOnDeadStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	r, w := io.Pipe()
	w.Close() // the server side is gone: EOF at once
	if _, err := mcptools.NewClient(ctx, io.Discard, r); err == nil {
		t.Error("NewClient on a closed stream succeeded")
	}
}

// BenchmarkTrivialCall measures one `true` through the whole path: MCP
// round trip, strace, shim, bash.
func BenchmarkTrivialCall(b *testing.B) {
	e := newEnv(b)
	c := e.start(b)
	b.ResetTimer()
	for b.Loop() {
		r, err := c.Call(b.Context(), "", "bash", json.RawMessage(`{"command":"true"}`))
		if err != nil || r.ExitCode != 0 {
			b.Fatalf("call: %v %+v", err, r)
		}
	}
}

func TestSanitizeID(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "empty", in: "", want: ""},
		{name: "plain", in: "call_0001", want: "call_0001"},
		{name: "leading dot", in: ".hidden", want: "_hidden"},
		{name: "slashes and spaces", in: "a/b c", want: "a_b_c"},
		{name: "unicode bytes", in: "é", want: "__"},
		{name: "nul", in: "a\x00b", want: "a_b"},
		{name: "capped", in: strings.Repeat("x", 100), want: strings.Repeat("x", 64)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mcptools.SanitizeID(tc.in); got != tc.want {
				t.Errorf("SanitizeID(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
