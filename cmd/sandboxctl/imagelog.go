package main

// Image build output policy: a first build runs debootstrap and apt, which
// print thousands of lines nobody reads unless the build fails. So the whole
// output goes to a log file (created on the first byte, its path printed
// when the build fails), and the terminal gets the phase: on a terminal one
// status line rewritten in place (phase, packages so far, elapsed), otherwise
// one line per phase, about ten in all. The line saying which base was used
// ("base: ...") always stays.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/orchestrator/docker"
)

type imageLog struct {
	ui   *progressUI
	path string

	mu      sync.Mutex
	f       *os.File
	openErr error
	partial []byte
	phase   string
	step    string
	pkgs    int
	done    bool
	// The apt transaction's size (its "N newly installed" line: each
	// package is unpacked, then set up) and when its first package step
	// came, for the estimate of the time left on the status line.
	aptTotal int
	aptStart time.Time
	aptPkgs  int
	now      func() time.Time // nil: time.Now
}

// newImageLog shows image build output on ui and writes all of it to the
// file at path.
func newImageLog(ui *progressUI, path string) *imageLog {
	return &imageLog{ui: ui, path: path}
}

// imageLogPath is where the image build's full log goes: the user's cache
// folder, else the temporary one.
func imageLogPath(e env) string {
	return filepath.Join(cacheDir(e), "sandboxctl", "image-build.log")
}

// ensureImage finds or builds the sandbox image before the traces of a
// command that runs several (eval) or of image build, with its output on ui
// and in the log file; on failure it prints the error and the hints.
func ensureImage(ctx context.Context, e env, rt interface {
	EnsureImage(context.Context, io.Writer) (string, error)
}, ui *progressUI) (string, bool) {
	l := newImageLog(ui, imageLogPath(e))
	ref, err := rt.EnsureImage(ctx, l)
	l.Close()
	ui.Close()
	if err != nil {
		e.errorf("build image: %v", err)
		if errors.Is(err, context.Canceled) {
			e.hintf("interrupted: nothing half-built is kept; run the command again to build")
		}
		imageHints(e, err, l)
		return "", false
	}
	return ref, true
}

// imageHints explains an image build that failed.
func imageHints(e env, err error, l *imageLog) {
	switch {
	case errors.Is(err, docker.ErrNoBase):
		e.hintf("the sandbox image needs a Debian base: make %s available (docker pull, or docker load from a machine that has it), or install debootstrap and build once as root (sandboxctl image build)", docker.RegistryBase)
	}
	if p := l.Failed(); p != "" {
		e.hintf("the image build's full log: %s", p)
	}
}

var (
	reStep    = regexp.MustCompile(`^Step (\d+)/(\d+) : (\S+)`)
	reAptPkg  = regexp.MustCompile(`^(Setting up|Unpacking) `)
	reDebPkg  = regexp.MustCompile(`^I: (Retrieving|Extracting|Unpacking|Configuring) `)
	reAptGet  = regexp.MustCompile(`^Get:\d+ `)
	reTagged  = regexp.MustCompile(`^Successfully tagged `)
	reImgPull = regexp.MustCompile(`^pulling `)
	reAptNew  = regexp.MustCompile(`^\d+ upgraded, (\d+) newly installed`)
)

func (l *imageLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && l.openErr == nil {
		if err := os.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
			l.openErr = err
		} else {
			l.f, l.openErr = os.Create(l.path)
		}
	}
	if l.f != nil {
		l.f.Write(b)
	}
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.line(strings.TrimSpace(string(l.partial[:i])))
		l.partial = l.partial[i+1:]
	}
	return len(b), nil
}

// line classifies one line of output; l.mu is held.
func (l *imageLog) line(s string) {
	switch {
	case s == "":
	case strings.HasPrefix(s, "base: "):
		l.ui.Event(s)
	case reImgPull.MatchString(s):
		l.setPhase("pull", s)
	case strings.HasPrefix(s, "bootstrapping "):
		l.setPhase("base", "debootstrap: "+strings.TrimPrefix(s, "bootstrapping "))
	case strings.HasPrefix(s, "bootstrap-base: installing the toolset"):
		l.setPhase("toolset", "installing the toolset in the base")
	case strings.HasPrefix(s, "debootstrap took "):
		l.setPhase("base", s)
	case strings.HasPrefix(s, "building "):
		l.setPhase("build", s)
	case reTagged.MatchString(s):
		l.done = true
	case reAptPkg.MatchString(s):
		l.pkgs++
		if l.aptTotal > 0 {
			if l.aptPkgs == 0 {
				l.aptStart = l.clock()
			}
			l.aptPkgs++
		}
		l.update()
	case reDebPkg.MatchString(s):
		l.pkgs++
		l.update()
	case reAptGet.MatchString(s):
		l.update()
	default:
		if m := reAptNew.FindStringSubmatch(s); m != nil {
			n, _ := strconv.Atoi(m[1])
			l.aptTotal, l.aptPkgs = 2*n, 0
			return
		}
		if m := reStep.FindStringSubmatch(s); m != nil {
			l.step = "step " + m[1] + "/" + m[2] + " " + strings.ToLower(m[3])
			l.update()
		}
	}
}

// setPhase starts a phase: a line of its own when not on a terminal.
func (l *imageLog) setPhase(phase, msg string) {
	l.phase, l.step, l.pkgs = phase, "", 0
	l.ui.Phase("image", msg)
}

// update rewrites the status line (on a terminal only).
func (l *imageLog) update() {
	msg := l.phase
	if l.step != "" {
		msg += " " + l.step
	}
	if l.pkgs > 0 {
		msg += fmt.Sprintf(", %d package steps", l.pkgs)
	}
	if left, ok := l.left(); ok {
		msg += ", about " + left + " left"
	}
	l.ui.Update("image", msg)
}

// left estimates the time the apt transaction still needs from the pace of
// its package steps so far (the transaction is most of a first build),
// once a tenth of them are done.
func (l *imageLog) left() (string, bool) {
	if l.aptTotal == 0 || l.aptPkgs < max(l.aptTotal/10, 1) || l.aptPkgs >= l.aptTotal {
		return "", false
	}
	took := l.clock().Sub(l.aptStart)
	rest := time.Duration(float64(took) * float64(l.aptTotal-l.aptPkgs) / float64(l.aptPkgs))
	if rest < time.Minute {
		return fmt.Sprintf("%ds", int(rest.Round(5*time.Second).Seconds())), true
	}
	return fmt.Sprintf("%d min", int(rest.Round(time.Minute).Minutes())), true
}

func (l *imageLog) clock() time.Time {
	if l.now != nil {
		return l.now()
	}
	return time.Now()
}

// Failed reports the log file when the output ended before an image was
// tagged (the path to print on failure), or "" when there is nothing to
// point at.
func (l *imageLog) Failed() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil || l.done {
		return ""
	}
	return l.path
}

// Close closes the log file.
func (l *imageLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}
