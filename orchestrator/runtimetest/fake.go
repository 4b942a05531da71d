// Package runtimetest provides a fake orchestrator.Runtime for the unit
// tests of packages that drive sandboxes: it records every call, fails on
// demand at a named step, counts live sandboxes and lets the test script
// what Exec does (for example, reply as the MCP tool server would).
//
// It runs nothing and touches no Docker engine. Test code only.
package runtimetest

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/sandboxctl/sandboxctl/orchestrator"
)

// Steps FailAt accepts.
const (
	StepImage   = "image"
	StepCreate  = "create"
	StepStart   = "start"
	StepExec    = "exec"
	StepCopyIn  = "copyin"
	StepCopyOut = "copyout"
	StepLogs    = "logs"
	StepDiff    = "diff"
	StepStats   = "stats"
	StepState   = "state"
	StepRemove  = "remove"
	StepGC      = "gc"
)

// ErrInjected is what a step named in FailAt returns (wrapped).
var ErrInjected = errors.New("injected failure")

// Fake is an orchestrator.Runtime that records calls. The zero value is
// ready to use. Set the fields before the code under test runs; read Calls
// and Live after it returns (or through Snapshot while it runs).
type Fake struct {
	// FailAt names the step that fails, every time it is reached: one of
	// the Step constants, or "" for none.
	FailAt string
	// Image is what EnsureImage returns ("sandboxctl-sandbox:fake" if empty).
	Image string
	// Exec scripts Sandbox.Exec. Nil: exit 0 with no output (stdin drained).
	Exec func(ctx context.Context, sb *Sandbox, e orchestrator.ExecSpec) (int, error)
	// CopyOut scripts Sandbox.CopyOut. Nil: the files copied in under the
	// path, as a tar archive.
	CopyOut func(ctx context.Context, sb *Sandbox, path string) (io.ReadCloser, error)
	// Logs scripts Sandbox.Logs. Nil: no output, returns when ctx ends or
	// the sandbox is removed.
	Logs func(ctx context.Context, sb *Sandbox, stdout, stderr io.Writer) error
	// Diff, Stats and State are what those methods return.
	Diff  []orchestrator.Change
	Stats orchestrator.Stats
	State *orchestrator.State // nil: Running while started and not removed

	mu sync.Mutex
	// Calls lists every call in order, as "step name[ detail]".
	Calls []string
	// Live counts sandboxes created and not yet removed.
	Live int
	// Sandboxes lists every sandbox created, in order.
	Sandboxes []*Sandbox
	n         int
}

var _ orchestrator.Runtime = (*Fake)(nil)

// Snapshot returns a copy of Calls and the Live count, safe while the code
// under test still runs.
func (f *Fake) Snapshot() (calls []string, live int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.Calls...), f.Live
}

func (f *Fake) record(step, detail string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := step
	if detail != "" {
		c += " " + detail
	}
	f.Calls = append(f.Calls, c)
	if f.FailAt == step {
		return fmt.Errorf("%s %s: %w", step, detail, ErrInjected)
	}
	return nil
}

// EnsureImage returns f.Image.
func (f *Fake) EnsureImage(ctx context.Context, progress io.Writer) (string, error) {
	if err := f.record(StepImage, ""); err != nil {
		return "", err
	}
	if progress != nil {
		io.WriteString(progress, "fake image ready\n")
	}
	if f.Image == "" {
		return "sandboxctl-sandbox:fake", nil
	}
	return f.Image, nil
}

// AgentImage returns spec.From (or what EnsureImage returns) with
// "-agent" appended: the orchestrator's containers run that.
func (f *Fake) AgentImage(ctx context.Context, spec orchestrator.AgentImageSpec, progress io.Writer) (string, error) {
	if spec.Binary == "" {
		return "", fmt.Errorf("agent image: no binary")
	}
	from := spec.From
	if from == "" {
		var err error
		if from, err = f.EnsureImage(ctx, progress); err != nil {
			return "", err
		}
	} else if err := f.record(StepImage, spec.From); err != nil {
		return "", err
	}
	return from + "-agent", nil
}

// Create records spec and returns a fake sandbox holding spec.Files.
func (f *Fake) Create(ctx context.Context, spec orchestrator.Spec) (orchestrator.Sandbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if spec.Labels[orchestrator.LabelTrace] == "" {
		return nil, fmt.Errorf("create %s: no %s label", spec.Name, orchestrator.LabelTrace)
	}
	if err := f.record(StepCreate, spec.Name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	sb := &Sandbox{f: f, id: fmt.Sprintf("fake%08d", f.n), Spec: spec, files: map[string][]byte{}, gone: make(chan struct{})}
	for _, file := range spec.Files {
		if !file.Dir {
			sb.files[file.Path] = file.Content
		}
	}
	f.Live++
	f.Sandboxes = append(f.Sandboxes, sb)
	return sb, nil
}

// GC removes every live sandbox whose trace label matches (any, when
// traceID is empty).
func (f *Fake) GC(ctx context.Context, traceID string) ([]string, error) {
	if err := f.record(StepGC, traceID); err != nil {
		return nil, err
	}
	f.mu.Lock()
	var victims []*Sandbox
	for _, sb := range f.Sandboxes {
		if v, ok := sb.Spec.Labels[orchestrator.LabelTrace]; ok && (traceID == "" || v == traceID) {
			victims = append(victims, sb)
		}
	}
	f.mu.Unlock()
	var removed []string
	for _, sb := range victims {
		if sb.markRemoved() {
			removed = append(removed, "container "+sb.Spec.Name)
		}
	}
	return removed, nil
}

// Sandbox is a fake container.
type Sandbox struct {
	f    *Fake
	id   string
	Spec orchestrator.Spec

	mu      sync.Mutex
	started bool
	removed bool
	gone    chan struct{}
	files   map[string][]byte
}

var _ orchestrator.Sandbox = (*Sandbox)(nil)

// ID is a fake id.
func (s *Sandbox) ID() string { return s.id }

// Files returns a copy of the files placed in the sandbox (by Spec.Files
// and CopyIn), by absolute path.
func (s *Sandbox) Files() map[string][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]byte, len(s.files))
	for k, v := range s.files {
		out[k] = bytes.Clone(v)
	}
	return out
}

// Removed reports whether Remove (or GC) removed the sandbox.
func (s *Sandbox) Removed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.removed
}

func (s *Sandbox) alive(step string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed {
		return fmt.Errorf("%s %s: no such container", step, s.Spec.Name)
	}
	return nil
}

// Start marks the sandbox started.
func (s *Sandbox) Start(ctx context.Context) error {
	if err := s.f.record(StepStart, s.Spec.Name); err != nil {
		return err
	}
	if err := s.alive(StepStart); err != nil {
		return err
	}
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	return ctx.Err()
}

// Exec runs Fake.Exec, or drains stdin and exits 0.
func (s *Sandbox) Exec(ctx context.Context, e orchestrator.ExecSpec) (int, error) {
	argv0 := ""
	if len(e.Argv) > 0 {
		argv0 = e.Argv[0]
	}
	if err := s.f.record(StepExec, s.Spec.Name+" "+strings.Join(e.Argv, " ")); err != nil {
		return -1, err
	}
	if err := s.alive(StepExec); err != nil {
		return -1, err
	}
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		return -1, fmt.Errorf("exec %s in %s: container is not running", argv0, s.Spec.Name)
	}
	if s.f.Exec != nil {
		return s.f.Exec(ctx, s, e)
	}
	if e.Stdin != nil {
		if _, err := io.Copy(io.Discard, e.Stdin); err != nil {
			return -1, err
		}
	}
	return 0, ctx.Err()
}

// CopyIn extracts the regular files of the tar stream under dir.
func (s *Sandbox) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	if err := s.f.record(StepCopyIn, s.Spec.Name+" "+dir); err != nil {
		return err
	}
	if err := s.alive(StepCopyIn); err != nil {
		return err
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("copyin %s: %w", s.Spec.Name, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return fmt.Errorf("copyin %s: %w", s.Spec.Name, err)
		}
		s.mu.Lock()
		s.files[strings.TrimRight(dir, "/")+"/"+strings.TrimPrefix(h.Name, "/")] = data
		s.mu.Unlock()
	}
}

// CopyOut runs Fake.CopyOut, or tars the files placed under path.
func (s *Sandbox) CopyOut(ctx context.Context, path string) (io.ReadCloser, error) {
	if err := s.f.record(StepCopyOut, s.Spec.Name+" "+path); err != nil {
		return nil, err
	}
	if err := s.alive(StepCopyOut); err != nil {
		return nil, err
	}
	if s.f.CopyOut != nil {
		return s.f.CopyOut(ctx, s, path)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	prefix := strings.TrimRight(path, "/")
	base := prefix[strings.LastIndexByte(prefix, '/')+1:]
	for p, data := range s.Files() {
		if p != prefix && !strings.HasPrefix(p, prefix+"/") {
			continue
		}
		name := base + strings.TrimPrefix(p, prefix)
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		tw.Write(data)
	}
	tw.Close()
	return io.NopCloser(&buf), nil
}

// Logs runs Fake.Logs, or waits until ctx ends or the sandbox is removed.
func (s *Sandbox) Logs(ctx context.Context, stdout, stderr io.Writer) error {
	if err := s.f.record(StepLogs, s.Spec.Name); err != nil {
		return err
	}
	if s.f.Logs != nil {
		return s.f.Logs(ctx, s, stdout, stderr)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.gone:
		return nil
	}
}

// Diff returns Fake.Diff.
func (s *Sandbox) Diff(ctx context.Context) ([]orchestrator.Change, error) {
	if err := s.f.record(StepDiff, s.Spec.Name); err != nil {
		return nil, err
	}
	return append([]orchestrator.Change(nil), s.f.Diff...), s.alive(StepDiff)
}

// Stats returns Fake.Stats.
func (s *Sandbox) Stats(ctx context.Context) (orchestrator.Stats, error) {
	if err := s.f.record(StepStats, s.Spec.Name); err != nil {
		return orchestrator.Stats{}, err
	}
	return s.f.Stats, s.alive(StepStats)
}

// State returns Fake.State, or Running while started and not removed.
func (s *Sandbox) State(ctx context.Context) (orchestrator.State, error) {
	if err := s.f.record(StepState, s.Spec.Name); err != nil {
		return orchestrator.State{}, err
	}
	if err := s.alive(StepState); err != nil {
		return orchestrator.State{}, err
	}
	if s.f.State != nil {
		return *s.f.State, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return orchestrator.State{Running: s.started}, nil
}

// Remove removes the sandbox; it is idempotent. With FailAt "remove" it
// fails and the sandbox stays live.
func (s *Sandbox) Remove(ctx context.Context) error {
	if err := s.f.record(StepRemove, s.Spec.Name); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("remove %s: %w (teardown needs a live context)", s.Spec.Name, err)
	}
	s.markRemoved()
	return nil
}

// markRemoved removes the sandbox once; it reports whether it did.
func (s *Sandbox) markRemoved() bool {
	s.mu.Lock()
	if s.removed {
		s.mu.Unlock()
		return false
	}
	s.removed = true
	close(s.gone)
	s.mu.Unlock()
	s.f.mu.Lock()
	s.f.Live--
	s.f.mu.Unlock()
	return true
}
