// Package testenv holds test helpers shared by the packages' tests: the
// gate for tests that need a real Docker engine, the sandbox image built
// once per test binary, the static sandboxctl binary built once per test
// binary, unique trace ids and label-based cleanup before and after a test.
//
// Test code only: no production package may import it. It reads
// SANDBOXCTL_REQUIRE_DOCKER (CI sets it to 1: a missing engine fails the
// test instead of skipping it), DOCKER_HOST and SANDBOXCTL_REQUIRE_CORPUS
// (CI sets it to 1: a missing shared corpus fails the corpus tests).
package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/orchestrator/docker"
)

// RequireDocker returns a Runtime on the local engine, closed at the end of
// the test, or skips the test when no engine answers. With
// SANDBOXCTL_REQUIRE_DOCKER=1 a missing engine is a failure instead. Under
// -short (make test-short) it skips before it asks the engine anything, so
// that a short run takes the same path whether an engine runs or not.
func RequireDocker(t testing.TB) *docker.Runtime {
	t.Helper()
	require := os.Getenv("SANDBOXCTL_REQUIRE_DOCKER")
	if msg := DockerGate(testing.Short(), require, nil); msg != "" {
		t.Skip(msg)
	}
	rt, err := docker.New(context.Background(), docker.WithHost(os.Getenv("DOCKER_HOST")))
	if err != nil {
		if require == "1" {
			t.Fatal(DockerGate(false, require, err))
		}
		t.Skip(DockerGate(false, require, err))
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// DockerGate decides what a test that needs the engine does: "" to run,
// else why it skips (or, with require "1" and an engine error, why it
// fails). short wins over require: -short never runs a Docker test.
func DockerGate(short bool, require string, engineErr error) string {
	switch {
	case short:
		return "needs a Docker engine: skipped under -short"
	case engineErr != nil && require == "1":
		return "docker engine required (SANDBOXCTL_REQUIRE_DOCKER=1): " + engineErr.Error()
	case engineErr != nil:
		return "no docker engine: " + engineErr.Error()
	}
	return ""
}

var (
	imageOnce sync.Once
	imageRef  string
	imageErr  error
)

// Image builds the sandbox image once per test binary (EnsureImage: a no-op
// when it exists) and returns its reference. Build progress goes to the log
// of the first test that asks. It skips or fails as RequireDocker does.
func Image(t testing.TB) string {
	t.Helper()
	rt := RequireDocker(t)
	imageOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		start := time.Now()
		imageRef, imageErr = rt.EnsureImage(ctx, &logWriter{t: t})
		if imageErr == nil {
			t.Logf("sandbox image %s ready in %s", imageRef, time.Since(start).Round(time.Millisecond))
		}
	})
	if imageErr != nil {
		t.Fatalf("sandbox image: %v", imageErr)
	}
	return imageRef
}

// logWriter sends whole lines to t.Log.
type logWriter struct {
	t   testing.TB
	mu  sync.Mutex
	buf []byte
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimRight(string(w.buf[:i]), "\r"); line != "" {
			w.t.Log(line)
		}
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// SandboxctlBinary builds a static (CGO_ENABLED=0) sandboxctl from
// ./cmd/sandboxctl once per test binary and returns its path. The binary is
// what the orchestrator copies into the containers. The file outlives the
// test binary, in $TMPDIR/sandboxctl-testbin, until a build a day later
// removes it.
func SandboxctlBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			binErr = err
			return
		}
		// One shared folder; each test binary builds its own file there and
		// removes the ones older than a day that earlier runs left.
		binDir := filepath.Join(os.TempDir(), "sandboxctl-testbin")
		if err := os.MkdirAll(binDir, 0o755); err != nil {
			binErr = err
			return
		}
		pruneOld(binDir, 24*time.Hour)
		f, err := os.CreateTemp(binDir, "sandboxctl-*")
		if err != nil {
			binErr = err
			return
		}
		f.Close()
		binPath = f.Name()
		cmd := exec.Command("go", "build", "-trimpath", "-o", binPath, "./cmd/sandboxctl")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = &buildError{out: string(out), err: err}
		}
	})
	if binErr != nil {
		t.Fatalf("build sandboxctl: %v", binErr)
	}
	return binPath
}

// pruneOld removes the files in dir last modified more than age ago.
func pruneOld(dir string, age time.Duration) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() && time.Since(info.ModTime()) > age {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// moduleRoot finds the folder holding go.mod, from the test's working
// folder upwards.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9]+`)

// TraceID is a trace id unique to this test run: the test's name, made
// safe for container names and labels, plus a random suffix.
func TraceID(t testing.TB) string {
	t.Helper()
	name := strings.Trim(unsafeChars.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("trace id: %v", err)
	}
	return "test-" + name + "-" + hex.EncodeToString(b)
}

// CleanupLabel removes every Docker object labelled sandboxctl.trace=id
// now and again when the test ends (nerdctl's before-and-after rule). It
// skips or fails as RequireDocker does.
func CleanupLabel(t testing.TB, id string) {
	t.Helper()
	if id == "" {
		t.Fatal("CleanupLabel: empty trace id would match every trace")
	}
	rt := RequireDocker(t)
	gc := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if removed, err := rt.GC(ctx, id); err != nil {
			t.Errorf("cleanup %s: %v", id, err)
		} else if len(removed) > 0 {
			t.Logf("cleanup %s removed %v", id, removed)
		}
	}
	gc()
	t.Cleanup(gc)
}
