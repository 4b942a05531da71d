package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
)

// skillDir writes a SKILL.md with the given bash blocks.
func skillDir(t *testing.T, name string, blocks ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "---\nname: %s\ndescription: fault test\n---\n\n", name)
	for _, c := range blocks {
		fmt.Fprintf(&b, "```bash\n%s\n```\n\n", c)
	}
	dir := filepath.Join(t.TempDir(), name)
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

type cliRun struct {
	code   int
	stdout string
	stderr string
	report e2eReport
}

// traceCLI runs the real binary and decodes report.json from the run folder.
func traceCLI(t *testing.T, env []string, args ...string) cliRun {
	t.Helper()
	bin := testenv.SandboxctlBinary(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"trace", "--out", out}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	cmd.Run()
	r := cliRun{code: cmd.ProcessState.ExitCode(), stdout: so.String(), stderr: se.String()}
	if b, err := os.ReadFile(filepath.Join(out, "report.json")); err == nil {
		json.Unmarshal(b, &r.report)
	}
	return r
}

func assertNothingLeft(t *testing.T, traceID string) {
	t.Helper()
	if traceID == "" {
		return
	}
	rt := testenv.RequireDocker(t)
	if left, err := rt.GC(context.Background(), traceID); err != nil || len(left) > 0 {
		t.Errorf("trace %s left behind %v (gc err %v)", traceID, left, err)
	}
}

// TestTraceHostileSkills: skills that fill the disk, flood output, try to kill
// the tool server and to undo the jail all end in a completed trace with a
// report, and nothing is left behind.
func TestTraceHostileSkills(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	testenv.Image(t)
	dir := skillDir(t, "hostile",
		"dd if=/dev/zero of=~/fill bs=1M count=4096 2>&1 | tail -1; echo rc=$?",
		"head -c 300M /dev/urandom | base64",
		"pkill -9 -f agentd; kill -9 -1; echo survived",
		"iptables -F; ip route del default; echo rc=$?",
		"echo still-here",
	)
	r := traceCLI(t, nil, "--format", "json", "--timeout", "4m", "--tool-timeout", "90s", dir)
	defer assertNothingLeft(t, r.report.TraceID)
	if r.code == exitFailed || r.code == exitUsage {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if r.report.Status != "completed" {
		t.Errorf("status %s (%s), want completed", r.report.Status, r.report.Error)
	}
	var rep struct {
		ToolCalls []struct {
			ID     string `json:"id"`
			Result struct {
				Stdout    string `json:"stdout"`
				Truncated bool   `json:"truncated"`
			} `json:"result"`
		} `json:"tool_calls"`
	}
	json.Unmarshal([]byte(r.stdout), &rep)
	if len(rep.ToolCalls) != 5 {
		t.Fatalf("%d tool calls, want 5 (the tool server must survive the skill)", len(rep.ToolCalls))
	}
	if !rep.ToolCalls[1].Result.Truncated {
		t.Errorf("the output flood was not truncated")
	}
	if got := rep.ToolCalls[4].Result.Stdout; !strings.Contains(got, "still-here") {
		t.Errorf("last call after kill attempts = %q, want still-here", got)
	}
	if strings.Contains(rep.ToolCalls[3].Result.Stdout, "rc=0") {
		t.Errorf("iptables -F / route del succeeded inside the sandbox: %q", rep.ToolCalls[3].Result.Stdout)
	}
}

// TestTraceInterrupted: Ctrl-C during a tool call ends with exit 3, a partial
// report with status cancelled, and nothing left; kill -9 of sandboxctl
// mid-trace leaves containers that `sandboxctl gc` then removes.
func TestTraceInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	testenv.Image(t)
	bin := testenv.SandboxctlBinary(t)
	dir := skillDir(t, "sleeper", "sleep 300")

	start := func(t *testing.T, id string) (*exec.Cmd, string, <-chan struct{}) {
		out := t.TempDir()
		cmd := exec.Command(bin, "trace", "--trace-id", id, "--out", out, "--format", "json", "--timeout", "5m", dir)
		stderr, _ := cmd.StderrPipe()
		cmd.Stdout = io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		running := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(stderr)
			once := sync.Once{}
			for sc.Scan() {
				if strings.Contains(sc.Text(), "t001 bash") {
					once.Do(func() { close(running) })
				}
			}
		}()
		return cmd, out, running
	}

	t.Run("ctrl-c", func(t *testing.T) {
		cmd, out, running := start(t, testenv.TraceID(t))
		select {
		case <-running:
		case <-time.After(4 * time.Minute):
			cmd.Process.Kill()
			t.Fatal("the tool call never started")
		}
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(90 * time.Second):
			cmd.Process.Kill()
			t.Fatal("sandboxctl did not end within 90s of Ctrl-C")
		}
		if code := cmd.ProcessState.ExitCode(); code != exitFailed {
			t.Errorf("exit %d after Ctrl-C, want %d", code, exitFailed)
		}
		var rep e2eReport
		b, err := os.ReadFile(filepath.Join(out, "report.json"))
		if err != nil {
			t.Fatalf("no partial report after Ctrl-C: %v", err)
		}
		json.Unmarshal(b, &rep)
		if rep.Status != "cancelled" {
			t.Errorf("status %q, want cancelled", rep.Status)
		}
		assertNothingLeft(t, rep.TraceID)
	})

	t.Run("kill -9 then gc", func(t *testing.T) {
		rt := testenv.RequireDocker(t)
		id := testenv.TraceID(t)
		testenv.CleanupLabel(t, id)
		cmd, _, running := start(t, id)
		select {
		case <-running:
		case <-time.After(4 * time.Minute):
			cmd.Process.Kill()
			t.Fatal("the tool call never started")
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		left, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=sandboxctl.trace="+id).Output()
		if len(strings.Fields(string(left))) != 2 {
			t.Errorf("after kill -9, %d containers of the trace remain, want its 2", len(strings.Fields(string(left))))
		}
		gcOut, err := exec.Command(bin, "gc", "--trace", id).CombinedOutput()
		if err != nil {
			t.Fatalf("sandboxctl gc: %v\n%s", err, gcOut)
		}
		if strings.Count(string(gcOut), "removed") < 2 {
			t.Errorf("gc did not remove the trace's containers:\n%s", gcOut)
		}
		if left, _ := rt.GC(context.Background(), id); len(left) > 0 {
			t.Errorf("left after gc: %v", left)
		}
	})
}

// TestTraceEngineDown: no engine answering is a clear failure with a hint.
//
// It runs the command in this process (the path past the engine check is
// the end-to-end tests'): building the binary for it took most of the
// -short run's time on a busy machine.
func TestTraceEngineDown(t *testing.T) {
	var stdout, stderr strings.Builder
	getenv := func(k string) string {
		if k == "DOCKER_HOST" {
			return "unix:///nonexistent/docker.sock"
		}
		return os.Getenv(k)
	}
	code := run(t.Context(), []string{"trace", "--out", t.TempDir(), "../../examples/skills/hello-world"},
		env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: getenv})
	if code != exitFailed {
		t.Errorf("exit %d, want %d", code, exitFailed)
	}
	if !strings.Contains(stderr.String(), "sandboxctl: error:") || !strings.Contains(stderr.String(), "hint:") {
		t.Errorf("stderr lacks an error and a hint:\n%s", stderr.String())
	}
}

// TestTraceModelEndpointFaults: the model endpoint answering 500 or not
// answering at all ends the trace with exit 3 and a report, nothing left.
func TestTraceModelEndpointFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	testenv.Image(t)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"boom"}}`, http.StatusInternalServerError)
	}))
	defer failing.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	for name, url := range map[string]string{"500": failing.URL + "/v1", "down": downURL + "/v1"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := traceCLI(t, []string{"SBX_TEST_KEY=sk-test-not-a-real-key"}, "--driver", "llm", "--base-url", url,
				"--model", "m", "--api-key-env", "SBX_TEST_KEY", "--format", "json", "--timeout", "4m",
				"../../examples/skills/hello-world")
			defer assertNothingLeft(t, r.report.TraceID)
			if r.code != exitFailed {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, exitFailed, r.stderr)
			}
			if r.report.Status != "error" || r.report.Verdict != "inconclusive" {
				t.Errorf("status %q verdict %q, want error/inconclusive", r.report.Status, r.report.Verdict)
			}
			if strings.Contains(r.stderr+r.stdout, "sk-test-not-a-real-key") {
				t.Errorf("the API key leaked into the output")
			}
		})
	}
}
