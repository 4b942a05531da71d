package docker_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/orchestrator/docker"
)

func TestGCRemovesOnlyItsLabel(t *testing.T) {
	image := testenv.Image(t)
	rt := testenv.RequireDocker(t)
	trace := testenv.TraceID(t)
	testenv.CleanupLabel(t, trace)
	testenv.CleanupLabel(t, trace+"-other")
	ctx := t.Context()

	// A leftover of a crashed trace: created, started, never removed.
	left, err := rt.Create(ctx, hardened(t, image, trace))
	if err != nil {
		t.Fatal(err)
	}
	if err := left.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// Not ours: no trace label, and a trace label whose value only starts
	// with ours.
	var keep []string
	for name, labels := range map[string]map[string]string{
		trace + "-unlabelled": {"sandboxctl.test": trace},
		trace + "-other":      {orchestrator.LabelTrace: trace + "-other"},
	} {
		id, err := docker.CreateRawForTest(ctx, rt, name, image, labels)
		if err != nil {
			t.Fatal(err)
		}
		keep = append(keep, id)
		t.Cleanup(func() {
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := docker.RemoveRawForTest(cctx, rt, id); err != nil {
				t.Errorf("remove %s: %v", name, err)
			}
		})
	}

	removed, err := rt.GC(ctx, trace)
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	if !slices.Equal(removed, []string{"container " + trace}) {
		t.Errorf("GC removed %q, want only the leftover %q", removed, trace)
	}
	if ok, err := docker.ExistsForTest(ctx, rt, left.ID()); err != nil || ok {
		t.Errorf("leftover still exists (%v)", err)
	}
	for _, id := range keep {
		if ok, err := docker.ExistsForTest(ctx, rt, id); err != nil || !ok {
			t.Errorf("GC removed %s, which is not its trace's (%v)", id[:12], err)
		}
	}
	// Remove is idempotent: the leftover is gone already.
	if err := left.Remove(ctx); err != nil {
		t.Errorf("Remove after GC: %v", err)
	}
	if err := left.Remove(ctx); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	if removed, err := rt.GC(ctx, trace); err != nil || len(removed) != 0 {
		t.Errorf("second GC = %q, %v; want nothing", removed, err)
	}
}

func TestCreateFailureLeavesNothing(t *testing.T) {
	image := testenv.Image(t)
	rt := testenv.RequireDocker(t)
	trace := testenv.TraceID(t)
	testenv.CleanupLabel(t, trace)
	spec := hardened(t, image, trace)
	spec.Files = []orchestrator.File{{Path: "/etc/x", HostPath: "/nonexistent/sandboxctl-test"}}
	if sb, err := rt.Create(t.Context(), spec); err == nil {
		sb.Remove(context.Background())
		t.Fatal("Create with an unreadable host file succeeded")
	}
	removed, err := rt.GC(t.Context(), trace)
	if err != nil || len(removed) != 0 {
		t.Errorf("after a failed Create, GC found %q (%v); want nothing left", removed, err)
	}
}

// TestCreateCancelledLeavesNothing cancels Create at delays that fall
// before, during and after the engine's create request: whatever the
// moment, nothing carrying the trace's label is left.
func TestCreateCancelledLeavesNothing(t *testing.T) {
	image := testenv.Image(t)
	rt := testenv.RequireDocker(t)
	trace := testenv.TraceID(t)
	testenv.CleanupLabel(t, trace)
	created := 0
	for i, delay := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond,
		20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond, 160 * time.Millisecond} {
		spec := hardened(t, image, trace)
		spec.Name = fmt.Sprintf("%s-%d", trace, i)
		ctx, cancel := context.WithCancel(t.Context())
		timer := time.AfterFunc(delay, cancel)
		sb, err := rt.Create(ctx, spec)
		timer.Stop()
		cancel()
		if err == nil {
			created++
			if err := sb.Remove(context.Background()); err != nil {
				t.Errorf("remove %s: %v", spec.Name, err)
			}
		} else if !errors.Is(err, context.Canceled) {
			t.Errorf("Create cancelled after %v: %v, want context.Canceled", delay, err)
		}
		removed, err := rt.GC(t.Context(), trace)
		if err != nil || len(removed) != 0 {
			t.Errorf("Create cancelled after %v left %q (%v)", delay, removed, err)
		}
	}
	t.Logf("%d of 8 creates finished before their cancellation", created)
}

func TestEnsureImageUnreachableBase(t *testing.T) {
	testenv.RequireDocker(t)
	// A base that is neither local nor the debootstrap one is pulled; a
	// registry on a closed loopback port fails fast and sends nothing out.
	rt, err := docker.New(t.Context(), docker.WithBase("127.0.0.1:1/sandboxctl-test/none:1"), docker.WithScratchDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var progress strings.Builder
	_, err = rt.EnsureImage(t.Context(), &progress)
	if err == nil || !strings.Contains(err.Error(), "pull base 127.0.0.1:1/sandboxctl-test/none:1") {
		t.Errorf("EnsureImage = %v, want a pull error naming the base", err)
	}
	if !strings.Contains(progress.String(), "pulling 127.0.0.1:1/sandboxctl-test/none:1") {
		t.Errorf("progress = %q", progress.String())
	}
}

// TestEnsureImageNoBase: with no base named, a registry that does not
// answer and a debootstrap that cannot run (no mirror in the apt sources),
// EnsureImage says in one progress line that it falls back, and fails with
// one error naming both reasons. Neither base exists: the names are the
// test's own, so the shared images are never touched.
func TestEnsureImageNoBase(t *testing.T) {
	testenv.RequireDocker(t)
	if os.Geteuid() != 0 {
		t.Skip("the debootstrap fallback is tried only as root")
	}
	rt, err := docker.New(t.Context(), docker.WithScratchDir(t.TempDir()), docker.WithAptRoot(t.TempDir()),
		docker.WithBasesForTest("127.0.0.1:1/sandboxctl-test/none:1", "sandboxctl-test-nobase:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var progress strings.Builder
	start := time.Now()
	_, err = rt.EnsureImage(t.Context(), &progress)
	if !errors.Is(err, docker.ErrNoBase) {
		t.Fatalf("EnsureImage = %v, want ErrNoBase", err)
	}
	for _, want := range []string{"pull 127.0.0.1:1/sandboxctl-test/none:1", "debootstrap: no Debian mirror"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is more than one line: %q", err)
	}
	var baseLines []string
	for _, l := range strings.Split(progress.String(), "\n") {
		if strings.HasPrefix(l, "base: ") {
			baseLines = append(baseLines, l)
		}
	}
	if len(baseLines) != 1 || !strings.Contains(baseLines[0], "no registry answered") || !strings.Contains(baseLines[0], "debootstrap") {
		t.Errorf("progress base lines %q, want one saying debootstrap is the fallback; progress:\n%s", baseLines, progress.String())
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("EnsureImage took %v to give up", el)
	}
}

// TestEnsureImagePullTimeout: a registry that accepts the connection and
// never answers is given up on at the pull timeout.
func TestEnsureImagePullTimeout(t *testing.T) {
	testenv.RequireDocker(t)
	if os.Geteuid() != 0 {
		t.Skip("the debootstrap fallback is tried only as root")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accept and hold, never answer
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	rt, err := docker.New(t.Context(), docker.WithScratchDir(t.TempDir()), docker.WithAptRoot(t.TempDir()),
		docker.WithPullTimeout(3*time.Second),
		docker.WithBasesForTest(ln.Addr().String()+"/sandboxctl-test/none:1", "sandboxctl-test-nobase:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var progress strings.Builder
	start := time.Now()
	_, err = rt.EnsureImage(t.Context(), &progress)
	el := time.Since(start)
	if !errors.Is(err, docker.ErrNoBase) {
		t.Fatalf("EnsureImage = %v, want ErrNoBase", err)
	}
	if el > 20*time.Second {
		t.Errorf("gave up after %v, want about the 3s pull timeout", el)
	}
	t.Logf("gave up after %v: %v", el.Round(time.Millisecond), err)
}

// TestPruneAgentImages: the agent images of earlier binaries go, except the
// newest, one a container uses and, with a minimum age, the recent ones;
// nothing outside the repository is looked at.
func TestPruneAgentImages(t *testing.T) {
	rt := testenv.RequireDocker(t)
	trace := testenv.TraceID(t)
	testenv.CleanupLabel(t, trace)
	ctx := t.Context()
	repo := "sandboxctl-agent-" + trace
	tags := []string{"oldest", "used", "older", "newest"}
	t.Cleanup(func() {
		for _, tag := range tags {
			if err := docker.RemoveImageForTest(context.Background(), rt, repo+":"+tag); err != nil {
				t.Errorf("remove %s: %v", tag, err)
			}
		}
	})
	for i, tag := range tags {
		if i > 0 {
			time.Sleep(1100 * time.Millisecond) // creation times are to the second
		}
		if err := docker.ImportAgentForTest(ctx, rt, repo, tag, trace); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := docker.CreateRawForTest(ctx, rt, trace+"-user", repo+":used", map[string]string{orchestrator.LabelTrace: trace}); err != nil {
		t.Fatal(err)
	}
	if removed, err := docker.PruneAgentImagesForTest(ctx, rt, repo, 1, time.Hour); err != nil || len(removed) != 0 {
		t.Errorf("prune with a minimum age of an hour removed %q (%v); want nothing", removed, err)
	}
	removed, err := docker.PruneAgentImagesForTest(ctx, rt, repo, 1, 0)
	if err != nil {
		t.Fatalf("prune: %v", err)
	}
	slices.Sort(removed)
	if want := []string{repo + ":older", repo + ":oldest"}; !slices.Equal(removed, want) {
		t.Errorf("prune removed %q, want %q", removed, want)
	}
}

// TestLoadAgentImage: the agent image made without a build holds the
// binary where Dockerfile.agent puts it, root's alone, on top of every
// layer of the image it comes from, with that image's labels and the new
// ones.
func TestLoadAgentImage(t *testing.T) {
	rt := testenv.RequireDocker(t)
	trace := testenv.TraceID(t)
	testenv.CleanupLabel(t, trace)
	ctx := t.Context()
	repo := "sandboxctl-agent-" + trace
	t.Cleanup(func() {
		for _, tag := range []string{"loaded", "base"} {
			if err := docker.RemoveImageForTest(context.Background(), rt, repo+":"+tag); err != nil {
				t.Errorf("remove %s: %v", tag, err)
			}
		}
	})
	if err := docker.ImportAgentForTest(ctx, rt, repo, "base", trace); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "agentd")
	if err := os.WriteFile(bin, []byte("the binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := docker.LoadAgentImageForTest(ctx, rt, repo+":base", bin, repo+":loaded", map[string]string{docker.LabelAgentSum: "sum"}); err != nil {
		t.Fatalf("load: %v", err)
	}
	labels := map[string]string{orchestrator.LabelTrace: trace}
	got, mode, err := docker.ImageFileForTest(ctx, rt, repo+":loaded", "/usr/local/lib/agent/agentd", labels)
	if err != nil || string(got) != "the binary" || mode&0o777 != 0o700 {
		t.Errorf("agentd in the image: %q mode %o (%v), want the binary, mode 700", got, mode, err)
	}
	if got, _, err := docker.ImageFileForTest(ctx, rt, repo+":loaded", "/agentd", labels); err != nil || string(got) != "base" {
		t.Errorf("the base image's file: %q (%v)", got, err)
	}
	id, err := rt.ImageID(ctx, repo+":loaded")
	if err != nil || id == "" {
		t.Fatalf("image id: %v", err)
	}
	l, err := docker.ImageLabelsForTest(ctx, rt, repo+":loaded")
	if err != nil || l[docker.LabelAgentSum] != "sum" || l[orchestrator.LabelTrace] != trace {
		t.Errorf("labels %v (%v), want the base's and the new ones", l, err)
	}
}
