package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sandboxctl/sandboxctl/orchestrator"
)

// ErrNoEngine means no Docker engine answered at the configured address.
var ErrNoEngine = errors.New("no docker engine answers (start it, or point DOCKER_HOST at it; default socket " + DefaultHost + ")")

// DefaultHost is the engine address used when no WithHost option is given.
const DefaultHost = "unix:///var/run/docker.sock"

// MinAPIVersion is the oldest engine API this package is tested against
// (Debian's docker.io 20.10). The client negotiates down to the engine's
// version; New refuses engines older than this.
const MinAPIVersion = "1.41"

// DefaultBase is the base image reference that means "debootstrap a Debian
// bookworm rootfs from the host's apt mirror and import it": it is never
// pulled.
const DefaultBase = "sandboxctl-base:bookworm"

// RegistryBase is the base pulled from a registry when no base is named:
// the same Debian release DefaultBase bootstraps.
const RegistryBase = "debian:bookworm-slim"

// DefaultPullTimeout bounds the attempt to pull RegistryBase, so that a
// machine without a registry falls back to debootstrap quickly.
const DefaultPullTimeout = 45 * time.Second

// LabelImage marks images sandboxctl built or imported. Images are shared
// between traces, so they carry no trace label and gc leaves them alone.
const LabelImage = "sandboxctl.image"

// Option configures New.
type Option func(*config)

type config struct {
	cache    string // WithCacheDir
	host     string
	base     string // "": RegistryBase, else DefaultBase by debootstrap
	aptRoot  string
	scratch  string
	pingWait time.Duration
	pullWait time.Duration
	registry string // RegistryBase, replaced in tests
	deboot   string // DefaultBase, replaced in tests
}

// WithHost sets the engine address (a DOCKER_HOST value such as
// "unix:///run/docker.sock" or "tcp://127.0.0.1:2375"). Empty means
// DefaultHost.
func WithHost(host string) Option { return func(c *config) { c.host = host } }

// WithBase sets the base image the sandbox image is built FROM. Empty (the
// default) means RegistryBase when a registry answers, else DefaultBase
// debootstrapped locally (EnsureImage); DefaultBase means debootstrap only;
// any other reference is used when local and pulled otherwise.
func WithBase(ref string) Option { return func(c *config) { c.base = ref } }

// WithAptRoot sets the folder whose etc/apt sources name the Debian mirror
// for the debootstrap base ("/" by default).
func WithAptRoot(dir string) Option { return func(c *config) { c.aptRoot = dir } }

// WithCacheDir sets a folder where what is slow to compute and keyed by its
// inputs is kept between processes: the content hash of the sandbox
// binary, keyed by its path, size, modification time and inode (hashing a
// 50 MB binary is most of a warm trace's image stage). None by default.
func WithCacheDir(dir string) Option { return func(c *config) { c.cache = dir } }

// WithScratchDir sets where the debootstrap rootfs tar is written (the
// system temporary folder by default).
func WithScratchDir(dir string) Option { return func(c *config) { c.scratch = dir } }

// Runtime is an orchestrator.Runtime on a Docker engine. It is safe for
// concurrent use. Close releases its connections.
type Runtime struct {
	cli  *client.Client
	cfg  config
	host string

	mu     sync.Mutex
	images map[string]bool   // images known to exist, by reference
	sums   map[string]string // sha256 of host binaries, by binaryKey
}

var _ orchestrator.Runtime = (*Runtime)(nil)

// New connects to the engine and negotiates the API version. It returns an
// error wrapping ErrNoEngine when the engine does not answer.
func New(ctx context.Context, opts ...Option) (*Runtime, error) {
	cfg := config{host: DefaultHost, aptRoot: "/", pingWait: 10 * time.Second, pullWait: DefaultPullTimeout, registry: RegistryBase, deboot: DefaultBase}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.host == "" {
		cfg.host = DefaultHost
	}
	cli, err := client.New(client.WithHost(cfg.host))
	if err != nil {
		return nil, fmt.Errorf("docker client for %s: %w", cfg.host, err)
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.pingWait)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrNoEngine, cfg.host, err)
	}
	if v := cli.ClientVersion(); versionLess(v, MinAPIVersion) {
		cli.Close()
		return nil, fmt.Errorf("docker engine at %s speaks API %s; sandboxctl needs %s or later", cfg.host, v, MinAPIVersion)
	}
	return &Runtime{cli: cli, cfg: cfg, host: cfg.host}, nil
}

// APIVersion is the negotiated engine API version.
func (r *Runtime) APIVersion() string { return r.cli.ClientVersion() }

// Base is the base image reference the sandbox image is built from, or ""
// when EnsureImage chooses (a registry's, else debootstrap).
func (r *Runtime) Base() string { return r.cfg.base }

// Close releases the client's connections.
func (r *Runtime) Close() error { return r.cli.Close() }

// versionLess compares "major.minor" API versions.
func versionLess(a, b string) bool {
	var am, an, bm, bn int
	fmt.Sscanf(a, "%d.%d", &am, &an)
	fmt.Sscanf(b, "%d.%d", &bm, &bn)
	return am < bm || am == bm && an < bn
}

// checkSpec refuses what would break the sandbox's promises.
func checkSpec(spec orchestrator.Spec) error {
	if spec.Labels[orchestrator.LabelTrace] == "" {
		return fmt.Errorf("spec %q has no %s label", spec.Name, orchestrator.LabelTrace)
	}
	if spec.Image == "" {
		return fmt.Errorf("spec %q has no image", spec.Name)
	}
	switch nm := spec.NetworkMode; {
	case nm == "none":
	case strings.HasPrefix(nm, "container:") && len(nm) > len("container:"):
		if spec.Hostname != "" {
			return fmt.Errorf("spec %q: a hostname cannot be set on a container that joins another's network (it takes the jail's)", spec.Name)
		}
	default:
		return fmt.Errorf("spec %q: network mode %q refused: only \"none\" or \"container:<id>\" (nothing may leave the machine)", spec.Name, nm)
	}
	for _, f := range spec.Files {
		if !strings.HasPrefix(f.Path, "/") {
			return fmt.Errorf("spec %q: file path %q is not absolute", spec.Name, f.Path)
		}
	}
	if spec.ReadOnlyRootfs {
		// The engine refuses to copy into a read-only root.
		if layer, _ := splitFiles(spec.Files, spec.Tmpfs); len(layer) > 0 {
			return fmt.Errorf("spec %q: %s cannot be placed on a read-only root file system (only under a tmpfs)", spec.Name, layer[0].Path)
		}
	}
	return nil
}

// hostConfig maps the hardening of spec onto Docker's host configuration.
// It has no mounts and no binds at all: nothing of the host is visible.
func hostConfig(spec orchestrator.Spec) *container.HostConfig {
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(spec.NetworkMode),
		CapAdd:         slices.Clone(spec.CapAdd),
		CapDrop:        slices.Clone(spec.CapDrop),
		ReadonlyRootfs: spec.ReadOnlyRootfs,
		Tmpfs:          maps.Clone(spec.Tmpfs),
		Sysctls:        maps.Clone(spec.Sysctls),
		// A private cgroup namespace: /proc/self/cgroup reads "/", not a
		// docker/<id> path.
		CgroupnsMode: container.CgroupnsModePrivate,
		IpcMode:      container.IPCModePrivate,
		RestartPolicy: container.RestartPolicy{
			Name: container.RestartPolicyDisabled,
		},
	}
	// Always an explicit, bounded log: the engine's default may rotate
	// under a follower or grow without bound on the host's disk. Specs
	// that set none (tests streaming a jail's events on stdout) get 16 MiB.
	hc.LogConfig = container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "16m", "max-file": "1"}}
	if spec.LogConfig.Type != "" {
		hc.LogConfig = container.LogConfig{Type: spec.LogConfig.Type, Config: maps.Clone(spec.LogConfig.Config)}
	}
	if spec.NoNewPrivileges {
		hc.SecurityOpt = append(hc.SecurityOpt, "no-new-privileges:true")
	}
	if len(spec.Seccomp) > 0 {
		// The engine takes the profile itself, not a file name.
		hc.SecurityOpt = append(hc.SecurityOpt, "seccomp="+string(spec.Seccomp))
	}
	if spec.Memory > 0 {
		hc.Memory = spec.Memory
		hc.MemorySwap = spec.Memory // equal: no swap
	}
	if spec.PIDs > 0 {
		p := spec.PIDs
		hc.PidsLimit = &p
	}
	hc.NanoCPUs = spec.NanoCPUs
	return hc
}

// createTimeout bounds one container create request, which runs to its end
// even when the caller's context is cancelled (see Create).
const createTimeout = time.Minute

// Create creates the container described by spec and copies spec.Files in.
// Files under one of spec.Tmpfs's mount points are kept for Start: the
// engine copies into the image layer, which the tmpfs would hide, so Start
// extracts them inside the running container instead. On error nothing is
// left behind.
func (r *Runtime) Create(ctx context.Context, spec orchestrator.Spec) (orchestrator.Sandbox, error) {
	if err := checkSpec(spec); err != nil {
		return nil, fmt.Errorf("create container: %w", err)
	}
	labels := maps.Clone(spec.Labels)
	if spec.Role != "" {
		labels[orchestrator.LabelRole] = spec.Role
	}
	cfg := &container.Config{
		Image:           spec.Image,
		Cmd:             slices.Clone(spec.Cmd),
		Env:             slices.Clone(spec.Env),
		User:            spec.User,
		Hostname:        spec.Hostname,
		Labels:          labels,
		NetworkDisabled: false,
		AttachStdout:    true,
		AttachStderr:    true,
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("create container %s: %w", spec.Name, context.Cause(ctx))
	}
	// The engine finishes a create whose client went away, and the client
	// then never learns the container's id: cancelled mid-request, it would
	// leave a container behind. So the request itself runs to its end on a
	// fresh bounded context, and a cancellation is honoured right after it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	res, err := r.cli.ContainerCreate(cctx, client.ContainerCreateOptions{
		Name:       spec.Name,
		Config:     cfg,
		HostConfig: hostConfig(spec),
	})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("create container %s: %w", spec.Name, err)
	}
	s := &Sandbox{r: r, id: res.ID, name: spec.Name}
	if ctx.Err() != nil {
		return nil, errors.Join(fmt.Errorf("create container %s: %w", spec.Name, context.Cause(ctx)), s.removeFresh(ctx))
	}
	for m := range spec.Tmpfs {
		s.tmpfs = append(s.tmpfs, m)
	}
	layer, later := splitFiles(spec.Files, spec.Tmpfs)
	if len(layer) > 0 {
		if err := s.copyFiles(ctx, layer); err != nil {
			return nil, errors.Join(fmt.Errorf("create container %s: %w", spec.Name, err), s.removeFresh(ctx))
		}
	}
	s.startFiles = later
	return s, nil
}

// splitFiles separates files the engine can copy into the stopped
// container's layer from those under a tmpfs mount point.
func splitFiles(files []orchestrator.File, tmpfs map[string]string) (layer, later []orchestrator.File) {
	mounts := make([]string, 0, len(tmpfs))
	for m := range tmpfs {
		mounts = append(mounts, m)
	}
	for _, f := range files {
		if underAny(path.Clean(f.Path), mounts) {
			later = append(later, f)
		} else {
			layer = append(layer, f)
		}
	}
	return layer, later
}

// GC removes every container, network and volume labelled
// orchestrator.LabelTrace (with value traceID when it is not empty), and
// nothing else. It returns a line per object removed and every error met;
// it keeps going past errors.
func (r *Runtime) GC(ctx context.Context, traceID string) ([]string, error) {
	label := orchestrator.LabelTrace
	if traceID != "" {
		label += "=" + traceID
	}
	filters := client.Filters{}.Add("label", label)
	var removed []string
	var errs []error
	cl, err := r.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filters})
	if err != nil {
		return nil, fmt.Errorf("gc: list containers: %w", err)
	}
	for _, c := range cl.Items {
		// The filter ran on the engine; check again before removing.
		if _, ok := c.Labels[orchestrator.LabelTrace]; !ok || traceID != "" && c.Labels[orchestrator.LabelTrace] != traceID {
			continue
		}
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		if err := removeContainer(ctx, r.cli, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("gc: remove container %s: %w", name, err))
			continue
		}
		removed = append(removed, "container "+name)
	}
	nl, err := r.cli.NetworkList(ctx, client.NetworkListOptions{Filters: filters})
	if err != nil {
		errs = append(errs, fmt.Errorf("gc: list networks: %w", err))
	} else {
		for _, n := range nl.Items {
			if _, ok := n.Labels[orchestrator.LabelTrace]; !ok || traceID != "" && n.Labels[orchestrator.LabelTrace] != traceID {
				continue
			}
			if _, err := r.cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("gc: remove network %s: %w", n.Name, err))
				continue
			}
			removed = append(removed, "network "+n.Name)
		}
	}
	vl, err := r.cli.VolumeList(ctx, client.VolumeListOptions{Filters: filters})
	if err != nil {
		errs = append(errs, fmt.Errorf("gc: list volumes: %w", err))
	} else {
		for _, v := range vl.Items {
			if _, ok := v.Labels[orchestrator.LabelTrace]; !ok || traceID != "" && v.Labels[orchestrator.LabelTrace] != traceID {
				continue
			}
			if _, err := r.cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("gc: remove volume %s: %w", v.Name, err))
				continue
			}
			removed = append(removed, "volume "+v.Name)
		}
	}
	return removed, errors.Join(errs...)
}

// removeContainer force-removes a container with its anonymous volumes.
// A container that is already gone counts as removed; one whose removal is
// already in progress is waited for.
func removeContainer(ctx context.Context, cli *client.Client, id string) error {
	for {
		_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case err == nil, cerrdefs.IsNotFound(err):
			return nil
		case cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "in progress"):
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		default:
			return err
		}
	}
}
