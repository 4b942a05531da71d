package runtimetest_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/orchestrator/runtimetest"
)

func spec(name string) orchestrator.Spec {
	return orchestrator.Spec{
		Name:   name,
		Image:  "img",
		Labels: map[string]string{orchestrator.LabelTrace: "t1"},
		Files:  []orchestrator.File{{Path: "/etc/motd", Content: []byte("hi")}},
	}
}

// lifecycle runs what an orchestrator does and stops at the first error,
// removing the sandbox on every path.
func lifecycle(ctx context.Context, rt orchestrator.Runtime) (err error) {
	if _, err := rt.EnsureImage(ctx, nil); err != nil {
		return err
	}
	sb, err := rt.Create(ctx, spec("sb"))
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, sb.Remove(context.WithoutCancel(ctx)))
	}()
	if err := sb.Start(ctx); err != nil {
		return err
	}
	if _, err := sb.Exec(ctx, orchestrator.ExecSpec{Argv: []string{"true"}}); err != nil {
		return err
	}
	if err := sb.CopyIn(ctx, "/tmp", emptyTar()); err != nil {
		return err
	}
	rc, err := sb.CopyOut(ctx, "/etc")
	if err != nil {
		return err
	}
	rc.Close()
	if _, err := sb.Diff(ctx); err != nil {
		return err
	}
	return nil
}

func emptyTar() io.Reader {
	var b bytes.Buffer
	tar.NewWriter(&b).Close()
	return &b
}

func TestFailAt(t *testing.T) {
	for _, step := range []string{"", "image", "create", "start", "exec", "copyin", "copyout", "diff", "remove"} {
		t.Run("fail="+step, func(t *testing.T) {
			f := &runtimetest.Fake{FailAt: step}
			err := lifecycle(t.Context(), f)
			if (err != nil) != (step != "") {
				t.Fatalf("lifecycle err = %v, want error: %t", err, step != "")
			}
			if step != "" && !errors.Is(err, runtimetest.ErrInjected) {
				t.Errorf("err = %v, want ErrInjected", err)
			}
			calls, live := f.Snapshot()
			wantLive := 0
			if step == "remove" {
				wantLive = 1
			}
			if live != wantLive {
				t.Errorf("Live = %d, want %d; calls %q", live, wantLive, calls)
			}
			switch step {
			case "start", "exec", "copyin", "copyout", "diff":
				if last := calls[len(calls)-1]; last != "remove sb" {
					t.Errorf("last call = %q, want %q after failing %s", last, "remove sb", step)
				}
			}
		})
	}
}

func TestScriptedExecAndFiles(t *testing.T) {
	f := &runtimetest.Fake{
		Exec: func(ctx context.Context, sb *runtimetest.Sandbox, e orchestrator.ExecSpec) (int, error) {
			in, _ := io.ReadAll(e.Stdin)
			io.WriteString(e.Stdout, strings.ToUpper(string(in)))
			return 3, nil
		},
	}
	sb, err := f.Create(t.Context(), spec("sb"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Exec(t.Context(), orchestrator.ExecSpec{Argv: []string{"x"}}); err == nil {
		t.Error("Exec before Start succeeded")
	}
	if err := sb.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code, err := sb.Exec(t.Context(), orchestrator.ExecSpec{Argv: []string{"x"}, Stdin: strings.NewReader("ping"), Stdout: &out})
	if err != nil || code != 3 || out.String() != "PING" {
		t.Errorf("Exec = %d, %v, %q; want 3, nil, PING", code, err, out.String())
	}
	rc, err := sb.CopyOut(t.Context(), "/etc")
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(tr)
	if diff := cmp.Diff("etc/motd=hi", h.Name+"="+string(data)); diff != "" {
		t.Errorf("CopyOut (-want +got):\n%s", diff)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := sb.Remove(ctx); err == nil {
		t.Error("Remove with a cancelled context succeeded; the fake must catch teardown on a dead context")
	}
	if err := sb.Remove(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := sb.Remove(t.Context()); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	if _, live := f.Snapshot(); live != 0 {
		t.Errorf("Live = %d after Remove", live)
	}
}

func TestGCByLabel(t *testing.T) {
	f := &runtimetest.Fake{}
	a, _ := f.Create(t.Context(), spec("a"))
	other := spec("b")
	other.Labels = map[string]string{orchestrator.LabelTrace: "t2"}
	b, _ := f.Create(t.Context(), other)
	removed, err := f.GC(t.Context(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"container a"}, removed); diff != "" {
		t.Errorf("GC (-want +got):\n%s", diff)
	}
	if !a.(*runtimetest.Sandbox).Removed() || b.(*runtimetest.Sandbox).Removed() {
		t.Error("GC removed the wrong sandbox")
	}
	if _, err := f.Create(t.Context(), orchestrator.Spec{Name: "x"}); err == nil {
		t.Error("Create without a trace label succeeded")
	}
}
