package main

// The binary copied into the sandbox must run there whatever the host: a
// static one always does. `go run` (the README's first command) links
// dynamically against the host's libc whenever a C compiler is around, and a
// host libc newer than the sandbox's Debian refuses to start there. So when
// this binary is dynamic and runs from a checkout of its own module with a
// Go toolchain at hand, it builds a static copy of the same source
// (CGO_ENABLED=0) once, keyed by its own content, and copies that in.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/fsutil"
)

// sandboxBinary returns the binary to copy into the containers: this one
// when it is static, else a static build of the same source. It returns an
// error when neither is possible (the caller warns and goes on with this
// binary).
func sandboxBinary(ctx context.Context, e env, ui *progressUI) (string, error) {
	exe, dynamic, err := selfBinary()
	if err != nil || !dynamic {
		return exe, err
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Path == "" {
		return exe, errors.New("no build information in this binary")
	}
	root, err := moduleRoot(bi.Main.Path)
	if err != nil {
		return exe, err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return exe, fmt.Errorf("no go toolchain on PATH: %w", err)
	}
	sum, err := fsutil.SHA256(exe)
	if err != nil {
		return exe, err
	}
	dir := filepath.Join(cacheDir(e), "sandboxctl")
	out := filepath.Join(dir, "agentd-static-"+sum[:16])
	if _, _, err := staticAt(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return exe, err
	}
	ui.Phase("build", "a static sandboxctl for the sandbox (once per source change)")
	tmp, err := os.CreateTemp(dir, "agentd-build-*")
	if err != nil {
		return exe, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	// The build runs beside the image's (debootstrap, apt), which it must
	// not slow: it has minutes of slack until the agent image needs it, so
	// it runs at a lower priority where nice exists.
	argv := []string{goBin, "build", "-trimpath", "-o", tmp.Name(), "./cmd/sandboxctl"}
	if nice, err := exec.LookPath("nice"); err == nil {
		argv = append([]string{nice, "-n", "10"}, argv...)
	}
	cmd := exec.CommandContext(bctx, argv[0], argv[1:]...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return exe, fmt.Errorf("go build (CGO_ENABLED=0) in %s: %w: %s", root, err, strings.TrimSpace(string(b)))
	}
	if _, dyn, err := staticAt(tmp.Name()); err != nil || dyn {
		return exe, fmt.Errorf("static build in %s: not a static binary (%v)", root, err)
	}
	// Builds of other sources go after a day (not at once: another
	// checkout's trace may be copying one now).
	if old, _ := filepath.Glob(filepath.Join(dir, "agentd-static-*")); len(old) > 0 {
		for _, o := range old {
			if fi, err := os.Stat(o); err == nil && o != out && time.Since(fi.ModTime()) > 24*time.Hour {
				os.Remove(o)
			}
		}
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return exe, err
	}
	return out, nil
}

// staticAt checks the binary at path as selfBinary checks its own.
func staticAt(path string) (string, bool, error) {
	if _, err := os.Stat(path); err != nil {
		return "", false, err
	}
	return elfInfo(path)
}

// moduleRoot finds, from the working folder upwards, the folder whose go.mod
// declares module.
func moduleRoot(module string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if name, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
					if strings.Trim(strings.TrimSpace(name), `"`) == module {
						f.Close()
						return dir, nil
					}
					break
				}
			}
			f.Close()
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("not inside a checkout of %s", module)
		}
		dir = parent
	}
}

// cacheDir is the user's cache folder ($XDG_CACHE_HOME, ~/.cache), else the
// temporary one.
func cacheDir(e env) string {
	if d := e.getenv("XDG_CACHE_HOME"); d != "" {
		return d
	}
	if h := e.getenv("HOME"); h != "" {
		return filepath.Join(h, ".cache")
	}
	return os.TempDir()
}
