package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/orchestrator/docker"
)

func init() {
	register(command{name: "image", short: "build the sandbox image (no registry needed)", run: runImage})
	register(command{name: "gc", short: "remove what crashed traces left behind, by label only", run: runGC})
}

// openDocker connects to the engine, with hints for the usual reasons it
// does not answer.
func openDocker(ctx context.Context, e env, opts ...docker.Option) (*docker.Runtime, bool) {
	if h := e.getenv("DOCKER_HOST"); h != "" {
		opts = append([]docker.Option{docker.WithHost(h)}, opts...)
	}
	if c := cacheDir(e); c != "" {
		opts = append([]docker.Option{docker.WithCacheDir(filepath.Join(c, "sandboxctl"))}, opts...)
	}
	rt, err := docker.New(ctx, opts...)
	if err != nil {
		e.errorf("%v", err)
		if errors.Is(err, docker.ErrNoEngine) {
			e.hintf("start the engine (systemctl start docker, or open Docker Desktop), or point DOCKER_HOST at it")
		}
		return nil, false
	}
	return rt, true
}

const imageSynopsis = `build [flags]

Builds the sandbox image from the Dockerfile.sandbox embedded in this binary,
on a Debian bookworm base: debian:bookworm-slim when it is local or a registry
answers, else one made with debootstrap from the host's own apt mirror (needs
root and the debootstrap package); one line says which. --base names another
base (an image you have or can pull), or ` + docker.DefaultBase + ` for
debootstrap only. The tag is a hash of the build inputs, so an unchanged image
is never rebuilt. The build's full output goes to a log file, named on failure.`

func runImage(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "image", imageSynopsis)
	base := fs.String("base", "", "base image (default: "+docker.RegistryBase+" when a registry answers, else the debootstrap base "+docker.DefaultBase+")")
	if code, ok := parseFlags(fs, interspersed(fs, args)); !ok {
		return code
	}
	if fs.NArg() != 1 || fs.Arg(0) != "build" {
		e.errorf("unknown image subcommand %q", strings.Join(fs.Args(), " "))
		e.hintf("usage: sandboxctl image build [--base IMAGE]")
		return exitUsage
	}
	var opts []docker.Option
	if *base != "" {
		opts = append(opts, docker.WithBase(*base))
	}
	rt, ok := openDocker(ctx, e, opts...)
	if !ok {
		return exitFailed
	}
	defer rt.Close()
	start := time.Now()
	tty := e.isTerminal != nil && e.isTerminal()
	ref, ok := ensureImage(ctx, e, rt, newProgressUI(e.stderr, tty))
	if !ok {
		return exitFailed
	}
	fmt.Fprintf(e.stdout, "%s\n", ref)
	fmt.Fprintf(e.stderr, "sandboxctl: image %s ready in %.1fs\n", ref, time.Since(start).Seconds())
	// The agent image (this binary baked in) too, so that the first trace
	// does not build it.
	start = time.Now()
	ui := newProgressUI(e.stderr, tty)
	bin, err := sandboxBinary(ctx, e, ui)
	if err != nil {
		e.warnf("the sandbox gets this dynamically linked binary: %v", err)
	}
	l := newImageLog(ui, imageLogPath(e))
	r := &orchestrator.Runner{Runtime: rt, Binary: bin, ImageProgress: l}
	agent, err := r.AgentImage(ctx, ref)
	l.Close()
	ui.Close()
	if err != nil {
		e.errorf("%v", err)
		imageHints(e, err, l)
		return exitFailed
	}
	fmt.Fprintf(e.stdout, "%s\n", agent)
	fmt.Fprintf(e.stderr, "sandboxctl: agent image %s ready in %.1fs\n", agent, time.Since(start).Seconds())
	return exitClean
}

const gcSynopsis = `[flags]

Removes the containers, networks and volumes labelled sandboxctl.trace that
crashed or killed traces left behind. Without --trace it also removes the
agent images of earlier sandboxctl binaries that no container uses (the
newest is kept). It never touches anything else.`

func runGC(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "gc", gcSynopsis)
	id := fs.String("trace", "", "remove only what this trace id left")
	if code, ok := parseFlags(fs, interspersed(fs, args)); !ok {
		return code
	}
	if fs.NArg() != 0 {
		e.errorf("gc takes no arguments")
		return exitUsage
	}
	rt, ok := openDocker(ctx, e)
	if !ok {
		return exitFailed
	}
	defer rt.Close()
	removed, err := rt.GC(ctx, *id)
	if *id == "" {
		images, ierr := rt.PruneAgentImages(ctx, 1, 0)
		for _, im := range images {
			removed = append(removed, "image "+im)
		}
		err = errors.Join(err, ierr)
	}
	for _, r := range removed {
		fmt.Fprintf(e.stdout, "removed %s\n", r)
	}
	if err != nil {
		e.errorf("gc: %v", err)
		return exitFailed
	}
	if len(removed) == 0 {
		fmt.Fprintln(e.stderr, "sandboxctl: nothing to remove")
	}
	return exitClean
}

// engine is what a command that runs many traces (sweep, eval, serve)
// needs of the engine before its traces start.
type engine struct {
	rt      *docker.Runtime
	bin     string // the sandbox binary baked into the agent images
	image   string // the sandbox image: the one asked for, or the one built
	imageID string // its content id (part of result keys)
}

// openEngine connects to the engine, finds the sandbox binary and finds or
// builds the sandbox image (image, or the embedded build when empty) once,
// before the traces race for it. On failure it has said why and returns
// false; otherwise the caller closes eng.rt.
func openEngine(ctx context.Context, e env, image string) (eng engine, ok bool) {
	rt, ok := openDocker(ctx, e)
	if !ok {
		return eng, false
	}
	ui := newProgressUI(e.stderr, false)
	bin, err := sandboxBinary(ctx, e, ui)
	if err != nil {
		e.warnf("the sandbox gets this dynamically linked binary: %v", err)
	}
	if image == "" {
		if image, ok = ensureImage(ctx, e, rt, ui); !ok {
			rt.Close()
			return eng, false
		}
	}
	id, err := rt.ImageID(ctx, image)
	if err != nil {
		e.errorf("%v", err)
		rt.Close()
		return eng, false
	}
	return engine{rt: rt, bin: bin, image: image, imageID: id}, true
}

// gcPasses removes the Docker objects of every pass of the trace id
// (orchestrator.PassTraceIDs): what a trace killed mid-way left behind.
func gcPasses(ctx context.Context, rt orchestrator.Runtime, id string) error {
	var errs []error
	for _, x := range orchestrator.PassTraceIDs(id) {
		if _, err := rt.GC(ctx, x); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
