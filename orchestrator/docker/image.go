package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"

	sandboxctl "github.com/sandboxctl/sandboxctl"
)

// ImageRepo is the repository of the sandbox image; its tag is a hash of
// the build inputs.
const ImageRepo = "sandboxctl-sandbox"

// dockerfileName is the Dockerfile's name at the root of the build context.
const dockerfileName = "Dockerfile.sandbox"

// BuildContext is the sandbox image's build context: Dockerfile.sandbox at
// the root and the files of sandbox-image/ beside it, as path → content,
// read from the context embedded in the binary. sandbox-image/agent/ is the
// agent image's context (AgentContext), not part of it: changing the agent
// image never rebuilds the sandbox image.
func BuildContext() (map[string][]byte, error) {
	out := map[string][]byte{}
	err := fs.WalkDir(sandboxctl.ImageContext, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p == agentContextDir {
			return fs.SkipDir
		}
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(sandboxctl.ImageContext, p)
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "sandbox-image/")
		out[name] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read embedded build context: %w", err)
	}
	if _, ok := out[dockerfileName]; !ok {
		return nil, fmt.Errorf("read embedded build context: no %s", dockerfileName)
	}
	return out, nil
}

// ContextHash hashes a build context and the base reference: the same
// inputs always give the same hash, and any change to a file name, a file's
// content or the base gives another.
func ContextHash(files map[string][]byte, base string) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	fmt.Fprintf(h, "base %d %s\n", len(base), base)
	for _, n := range names {
		fmt.Fprintf(h, "file %d %s %d\n", len(n), n, len(files[n]))
		h.Write(files[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ImageRef is the tag of the sandbox image built from the embedded context
// on base.
func ImageRef(base string) (string, error) {
	files, err := BuildContext()
	if err != nil {
		return "", err
	}
	return ImageRepo + ":" + ContextHash(files, base)[:12], nil
}

// contextTar writes files as the tar the engine builds from. Scripts are
// executable; everything is root-owned with a fixed mtime.
func contextTar(files map[string][]byte) ([]byte, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		mode := int64(0o644)
		switch {
		case n == agentBinName:
			mode = 0o700 // root's alone, as COPY places it: no second copy in a chmod layer
		case strings.HasSuffix(n, ".sh") || path.Base(n) == "install-ca":
			mode = 0o755
		}
		hdr := &tar.Header{Name: n, Mode: mode, Size: int64(len(files[n])), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// EnsureImage makes sure the sandbox image for the embedded build context
// exists, and returns its reference. Unchanged inputs never rebuild.
//
// With a base named (WithBase): the image built on it exists: done; the
// base exists locally: build; the base is DefaultBase: debootstrap it from
// the host's apt mirror, import it, build; otherwise pull it, then build.
//
// With none (the default), either base will do: an image already built on
// RegistryBase or DefaultBase is used; else a local RegistryBase or
// DefaultBase is built on; else RegistryBase is pulled, within the pull
// timeout, and when no registry answers DefaultBase is debootstrapped. One
// progress line starting "base: " says which; when neither works the error
// gives both reasons.
//
// Progress lines (the base chosen, pull and debootstrap output, build
// steps, apt output) go to progress.
func (r *Runtime) EnsureImage(ctx context.Context, progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	files, err := BuildContext()
	if err != nil {
		return "", err
	}
	bases := []string{r.cfg.base}
	if r.cfg.base == "" {
		bases = []string{r.cfg.registry, r.cfg.deboot}
	}
	refOf := func(base string) string { return ImageRepo + ":" + ContextHash(files, base)[:12] }
	built := func() (string, error) {
		for _, b := range bases {
			if r.imageCached(refOf(b)) {
				return refOf(b), nil
			}
			if ok, err := r.imageExists(ctx, refOf(b)); err != nil {
				return "", fmt.Errorf("ensure image: %w", err)
			} else if ok {
				r.cacheImage(refOf(b))
				return refOf(b), nil
			}
		}
		return "", nil
	}
	if ref, err := built(); ref != "" || err != nil {
		return ref, err
	}
	// Several processes (parallel test binaries, concurrent traces) may
	// arrive here at once: one builds, the others wait and find the tag.
	// One lock per build context: builds of other versions go on
	// meanwhile.
	unlock, err := lockFile(ctx, filepath.Join(r.scratchDir(), "sandboxctl-image-"+ContextHash(files, "")[:12]+".lock"))
	if err != nil {
		return "", fmt.Errorf("ensure image: %w", err)
	}
	defer unlock()
	if ref, err := built(); ref != "" || err != nil {
		return ref, err
	}
	base, err := r.ensureBase(ctx, progress, bases, files)
	if err != nil {
		return "", err
	}
	ref := refOf(base)
	if err := r.build(ctx, progress, files, base, ref); err != nil {
		return "", fmt.Errorf("ensure image: build %s: %w", ref, err)
	}
	r.cacheImage(ref)
	return ref, nil
}

// ErrNoBase is returned by EnsureImage when no base image could be had:
// none was local, the pull failed and so did debootstrap.
var ErrNoBase = errors.New("no base image for the sandbox")

// ensureBase makes one of bases exist locally and returns it.
func (r *Runtime) ensureBase(ctx context.Context, progress io.Writer, bases []string, files map[string][]byte) (string, error) {
	for _, b := range bases {
		ok, err := r.imageExists(ctx, b)
		if err != nil {
			return "", fmt.Errorf("ensure image: %w", err)
		}
		if ok {
			if len(bases) > 1 {
				fmt.Fprintf(progress, "base: %s (found locally)\n", b)
			}
			return b, nil
		}
	}
	if len(bases) == 1 {
		base := bases[0]
		if base == DefaultBase || base == r.cfg.deboot {
			if err := r.bootstrapBase(ctx, progress, files["bootstrap-base.sh"], files["toolset"]); err != nil {
				return "", fmt.Errorf("ensure image: base %s: %w", base, err)
			}
			return base, nil
		}
		if err := r.pull(ctx, progress, base); err != nil {
			return "", fmt.Errorf("ensure image: pull base %s: %w", base, err)
		}
		return base, nil
	}
	// No base named: a registry's when one answers, else debootstrap.
	pctx, cancel := context.WithTimeout(ctx, r.cfg.pullWait)
	pullErr := r.pull(pctx, progress, r.cfg.registry)
	cancel()
	if pullErr == nil {
		fmt.Fprintf(progress, "base: %s, pulled from a registry\n", r.cfg.registry)
		return r.cfg.registry, nil
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if errors.Is(pullErr, context.DeadlineExceeded) {
		pullErr = fmt.Errorf("no answer within %s", r.cfg.pullWait)
	}
	fmt.Fprintf(progress, "base: no registry answered (%s), so a Debian base is made with debootstrap from the host's apt mirror\n", oneLineErr(pullErr))
	if err := r.bootstrapBase(ctx, progress, files["bootstrap-base.sh"], files["toolset"]); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("%w: pull %s: %v; debootstrap: %w", ErrNoBase, r.cfg.registry, oneLineErr(pullErr), err)
	}
	return r.cfg.deboot, nil
}

// oneLineErr is an error's text on one line, cut at 200 bytes.
func oneLineErr(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func (r *Runtime) scratchDir() string {
	if r.cfg.scratch != "" {
		return r.cfg.scratch
	}
	return os.TempDir()
}

// lockFile takes an exclusive advisory lock on path, waiting until it is
// free or ctx ends. The returned func releases it. A lock file another user
// created and this one cannot open is no reason to fail: the build then goes
// ahead unlocked (the worst case is a duplicate build).
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644)
	if errors.Is(err, os.ErrPermission) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (r *Runtime) imageExists(ctx context.Context, ref string) (bool, error) {
	_, err := r.cli.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
}

// build runs the classic builder on the embedded context. The image is
// labelled as sandboxctl's; a base that carries the label already (the
// debootstrapped one) passes it on, so the build asks for none: the classic
// builder makes every label a step of its own, and every step a container
// and a commit (about 10 s each on fuse-overlayfs with this image).
func (r *Runtime) build(ctx context.Context, progress io.Writer, files map[string][]byte, base, ref string) error {
	fmt.Fprintf(progress, "building %s from %s\n", ref, base)
	labels := map[string]string{LabelImage: "1"}
	if img, err := r.cli.ImageInspect(ctx, base); err == nil && img.Config != nil && img.Config.Labels[LabelImage] == "1" {
		labels = nil
	}
	return r.classicBuild(ctx, progress, files, dockerfileName, map[string]*string{"BASE": &base}, labels, ref)
}

// classicBuild tags ref from dockerfile in files with the classic builder
// (no BuildKit: the engines this runs on may lack it), its output on
// progress.
func (r *Runtime) classicBuild(ctx context.Context, progress io.Writer, files map[string][]byte, dockerfile string,
	args map[string]*string, labels map[string]string, ref string) error {
	tarball, err := contextTar(files)
	if err != nil {
		return fmt.Errorf("build context: %w", err)
	}
	res, err := r.cli.ImageBuild(ctx, bytes.NewReader(tarball), client.ImageBuildOptions{
		Tags:        []string{ref},
		Dockerfile:  dockerfile,
		BuildArgs:   args,
		Labels:      labels,
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
	})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	return readJSONMessages(ctx, res.Body, progress)
}

// readJSONMessages copies an engine progress stream to progress as plain
// lines, and returns the first error it reports.
func readJSONMessages(ctx context.Context, r io.Reader, progress io.Writer) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			jsonstream.Message
			ErrorText string `json:"error,omitempty"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("read progress: %w", err)
		}
		switch {
		case m.Error != nil && m.Error.Message != "":
			return errors.New(m.Error.Message)
		case m.ErrorText != "":
			return errors.New(m.ErrorText)
		case m.Stream != "":
			io.WriteString(progress, m.Stream)
		case m.Status != "" && m.Progress == nil:
			if m.ID != "" {
				fmt.Fprintf(progress, "%s: %s\n", m.ID, m.Status)
			} else {
				fmt.Fprintln(progress, m.Status)
			}
		}
	}
}

func (r *Runtime) pull(ctx context.Context, progress io.Writer, ref string) error {
	fmt.Fprintf(progress, "pulling %s\n", ref)
	res, err := r.cli.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return err
	}
	defer res.Close()
	return readJSONMessages(ctx, res, progress)
}

// bootstrapBase debootstraps a bookworm rootfs from the host's apt mirror
// with the embedded bootstrap-base.sh, installs the toolset (the packages
// the toolset file lists; none when it is empty) in it, and imports it as
// DefaultBase.
func (r *Runtime) bootstrapBase(ctx context.Context, progress io.Writer, script, toolset []byte) error {
	if len(script) == 0 {
		return errors.New("no bootstrap-base.sh in the embedded build context")
	}
	if os.Geteuid() != 0 {
		return errors.New("building the base image needs root (debootstrap): run as root once, or make " + RegistryBase + " available (docker pull, or docker load)")
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return errors.New("debootstrap not found: apt-get install debootstrap, or make " + RegistryBase + " available (docker pull, or docker load)")
	}
	sources, err := ReadAptSources(r.cfg.aptRoot)
	if err != nil {
		return fmt.Errorf("read apt sources: %w", err)
	}
	mirror, err := PickMirror(sources, "bookworm")
	if err != nil {
		return fmt.Errorf("%w (looked in %s); or make %s available (docker pull, or docker load)", err, filepath.Join(r.cfg.aptRoot, "etc/apt"), RegistryBase)
	}
	dir, err := os.MkdirTemp(r.scratchDir(), "sandboxctl-base-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	scriptPath := filepath.Join(dir, "bootstrap-base.sh")
	if err := os.WriteFile(scriptPath, script, 0o700); err != nil {
		return err
	}
	args := []string{scriptPath, filepath.Join(dir, "rootfs.tar"), mirror}
	if len(toolset) > 0 {
		p := filepath.Join(dir, "toolset")
		if err := os.WriteFile(p, toolset, 0o600); err != nil {
			return err
		}
		args = append(args, p)
	}
	tarPath := args[1]
	fmt.Fprintf(progress, "bootstrapping a Debian bookworm base from %s (once)\n", mirror)
	start := time.Now()
	cmd := exec.CommandContext(ctx, "/bin/sh", args...)
	cmd.Stdout = progress
	cmd.Stderr = progress
	// debootstrap runs a tree of processes: on cancel, kill the group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("bootstrap-base.sh: %w", err)
	}
	fmt.Fprintf(progress, "debootstrap took %s; importing %s\n", time.Since(start).Round(time.Second), r.cfg.deboot)
	f, err := os.Open(tarPath)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := r.cli.ImageImport(ctx, client.ImageImportSource{Source: f, SourceName: "-"}, r.cfg.deboot, client.ImageImportOptions{
		Message: "debootstrap --variant=minbase bookworm " + mirror,
		Changes: []string{
			"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			`CMD ["/bin/bash"]`,
			"LABEL " + LabelImage + "=1",
		},
	})
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer res.Close()
	if err := readJSONMessages(ctx, res, io.Discard); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return nil
}
