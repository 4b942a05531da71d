package mcptools_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/mcptools"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/strace"
	"github.com/sandboxctl/sandboxctl/trace"
)

// testConfigVar carries the Config to the test binary playing `agentd
// __mcp` in the container (see TestMain).
const testConfigVar = "MCPTOOLS_TEST_CONFIG"

// TestInContainer runs the tool server in a real sandbox container, as the
// orchestrator will: the test binary plays agentd (copied to
// /usr/local/lib/agent/agentd), served over a `docker exec -i` stream with
// the client on the host; a bash call runs as the image's user under the
// image's strace, and after Flush the call's log, copied out, holds it.
func TestInContainer(t *testing.T) {
	ref := testenv.Image(t)
	rt := testenv.RequireDocker(t)
	id := testenv.TraceID(t)
	testenv.CleanupLabel(t, id)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	sb, err := rt.Create(ctx, orchestrator.Spec{
		Name:            id,
		Role:            orchestrator.RoleSandbox,
		Image:           ref,
		Labels:          map[string]string{orchestrator.LabelTrace: id, "sandboxctl.test": "1"},
		Cmd:             []string{"sleep", "infinity"},
		NetworkMode:     "none",
		CapAdd:          []string{"SYS_PTRACE"},
		CapDrop:         []string{"NET_RAW", "NET_ADMIN", "SYS_ADMIN"},
		NoNewPrivileges: true,
		PIDs:            512,
		Files:           []orchestrator.File{{Path: mcptools.DefaultSelf, Mode: 0o755, HostPath: self}},
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() {
		rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
		defer rcancel()
		if err := sb.Remove(rctx); err != nil {
			t.Errorf("remove: %v", err)
		}
	})
	if err := sb.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	var pw bytes.Buffer
	if code, err := sb.Exec(ctx, orchestrator.ExecSpec{Argv: []string{"getent", "passwd", "1000"}, Stdout: &pw}); err != nil || code != 0 {
		t.Fatalf("getent passwd 1000: %d %v", code, err)
	}
	f := strings.Split(strings.TrimSpace(pw.String()), ":")
	if len(f) < 6 {
		t.Fatalf("passwd line %q", pw.String())
	}
	cfg := mcptools.Config{User: f[0], UID: 1000, GID: 1000, Home: f[5]}
	cj, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var serverErr bytes.Buffer
	served := make(chan error, 1)
	go func() {
		_, err := sb.Exec(ctx, orchestrator.ExecSpec{
			Argv:  []string{mcptools.DefaultSelf, "__mcp"},
			Env:   []string{testConfigVar + "=" + string(cj)},
			Stdin: inR, Stdout: outW, Stderr: &serverErr,
		})
		outW.Close()
		served <- err
	}()
	c, err := mcptools.NewClient(ctx, inW, outR)
	if err != nil {
		t.Fatalf("NewClient: %v (server stderr: %s)", err, serverErr.String())
	}
	start := time.Now()
	r, err := c.Call(ctx, "c1", "bash", json.RawMessage(`{"command":"id -un; cat ~/.bashrc > /dev/null; (sleep 1; echo later > later.txt) & echo done"}`))
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	t.Logf("bash call in the container: %s round trip, %s in the sandbox", time.Since(start).Round(time.Millisecond), r.Duration)
	if r.Stdout != f[0]+"\ndone\n" || r.ExitCode != 0 {
		t.Errorf("stdout %q stderr %q exit %d", r.Stdout, r.Stderr, r.ExitCode)
	}
	var took []time.Duration
	for i := range 5 {
		start := time.Now()
		if r, err := c.Call(ctx, "t"+strconv.Itoa(i), "bash", json.RawMessage(`{"command":"true"}`)); err != nil || r.ExitCode != 0 {
			t.Fatalf("trivial call: %+v %v", r, err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("trivial bash call in the container: median %s (min %s, max %s)", took[2].Round(time.Millisecond), took[0].Round(time.Millisecond), took[4].Round(time.Millisecond))
	r, err = c.Call(ctx, "c2", "write_file", json.RawMessage(`{"path":"/usr/local/lib/agent/x","content":"no"}`))
	if err != nil || !r.IsError || !strings.Contains(r.Stderr, "permission denied") {
		t.Errorf("write_file into a root folder: %+v, %v", r, err)
	}
	c.Close()
	inW.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("server exec: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("server did not end after the client closed")
	}
	time.Sleep(1500 * time.Millisecond) // the background echo
	var flushOut bytes.Buffer
	if code, err := sb.Exec(ctx, orchestrator.ExecSpec{Argv: []string{mcptools.DefaultSelf, "__flush"}, Stdout: &flushOut, Stderr: &flushOut}); err != nil || code != 0 {
		t.Fatalf("flush: %d %v %s", code, err, flushOut.String())
	}
	logs := copyOutLogs(t, ctx, sb)
	// The host parses the copied-out log into events tagged with the call.
	evs, _, err := strace.Parse(strings.NewReader(logs["c1.log"]), "c1", strace.Options{Cwd: cfg.Home, Agentd: mcptools.DefaultSelf})
	if err != nil {
		t.Fatal(err)
	}
	var sawID bool
	for _, e := range evs {
		if x, ok := e.Data.(*trace.Exec); ok && x.Path == "/usr/bin/id" {
			sawID = e.ToolCallID == "c1" && e.PID > 0 && e.PPID > 0 && slices.Equal(x.Argv, []string{"id", "-un"})
		}
	}
	if !sawID {
		t.Errorf("no exec event of id -un with call id, pid and ppid in %d events", len(evs))
	}
	for id, want := range map[string][]string{
		"c1": {`execve("/usr/bin/id", ["id", "-un"]`, `"later.txt", O_WRONLY|O_CREAT|O_TRUNC`, "/.bashrc"},
		"c2": {`"/usr/local/lib/agent/x", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0644) = -1 EACCES`},
	} {
		for _, w := range want {
			if !strings.Contains(logs[id+".log"], w) {
				t.Errorf("%s.log lacks %q", id, w)
			}
		}
	}
}

func copyOutLogs(t *testing.T, ctx context.Context, sb orchestrator.Sandbox) map[string]string {
	t.Helper()
	rc, err := sb.CopyOut(ctx, mcptools.DefaultLogDir)
	if err != nil {
		t.Fatalf("copy out logs: %v", err)
	}
	defer rc.Close()
	logs := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("logs tar: %v", err)
		}
		b, err := io.ReadAll(io.LimitReader(tr, 16<<20))
		if err != nil {
			t.Fatal(err)
		}
		name := h.Name[strings.LastIndexByte(h.Name, '/')+1:]
		logs[name] = string(b)
	}
	return logs
}
