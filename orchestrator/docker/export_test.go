package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/sandboxctl/sandboxctl/orchestrator"
)

// CreateRawForTest creates a container that bypasses Create's checks, with
// exactly the given labels and no network, to show what GC leaves alone.
func CreateRawForTest(ctx context.Context, r *Runtime, name, image string, labels map[string]string) (string, error) {
	res, err := r.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:       name,
		Config:     &container.Config{Image: image, Cmd: []string{"sleep", "infinity"}, Labels: labels},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	return res.ID, err
}

// RemoveRawForTest force-removes a container by id.
func RemoveRawForTest(ctx context.Context, r *Runtime, id string) error {
	return removeContainer(ctx, r.cli, id)
}

// ExistsForTest reports whether a container exists.
func ExistsForTest(ctx context.Context, r *Runtime, id string) (bool, error) {
	_, err := r.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// BareRunForTest is the floor the benchmark compares against: the API
// equivalent of `docker run --rm IMAGE true` with no hardening and no
// files (and no network, as everything here): create, start, wait, remove.
func BareRunForTest(ctx context.Context, r *Runtime, image string, labels map[string]string) error {
	res, err := r.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: image, Cmd: []string{"true"}, Labels: labels},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		return err
	}
	defer removeContainer(context.WithoutCancel(ctx), r.cli, res.ID)
	wait := r.cli.ContainerWait(ctx, res.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := r.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		return err
	}
	select {
	case <-wait.Result:
	case err := <-wait.Error:
		return err
	}
	return removeContainer(ctx, r.cli, res.ID)
}

// WithBasesForTest replaces the registry base and the debootstrap base's
// name, so a test can watch EnsureImage choose between them without
// touching the real ones.
func WithBasesForTest(registry, deboot string) Option {
	return func(c *config) { c.registry, c.deboot = registry, deboot }
}

// ImportAgentForTest makes a tiny image (one file, imported: no container,
// no commit) tagged repo:tag and labelled as an agent image (LabelAgentSum)
// and with the trace label.
func ImportAgentForTest(ctx context.Context, r *Runtime, repo, tag, trace string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "agentd", Mode: 0o755, Size: int64(len(tag))})
	tw.Write([]byte(tag))
	tw.Close()
	res, err := r.cli.ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, repo+":"+tag,
		client.ImageImportOptions{Changes: []string{"LABEL " + LabelAgentSum + "=" + tag, "LABEL " + orchestrator.LabelTrace + "=" + trace}})
	if err != nil {
		return err
	}
	defer res.Close()
	_, err = io.Copy(io.Discard, res)
	return err
}

// PruneAgentImagesForTest is PruneAgentImages for the images of repo.
func PruneAgentImagesForTest(ctx context.Context, r *Runtime, repo string, keep int, minAge time.Duration) ([]string, error) {
	return r.pruneAgentImages(ctx, repo, keep, minAge)
}

// RemoveImageForTest removes an image, ignoring one already gone.
func RemoveImageForTest(ctx context.Context, r *Runtime, ref string) error {
	_, err := r.cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	if err != nil && cerrdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// LoadAgentImageForTest is loadLayerImage with only the binary in the layer.
func LoadAgentImageForTest(ctx context.Context, r *Runtime, from, binary, ref string, labels map[string]string) error {
	return r.loadLayerImage(ctx, from, binary, nil, ref, labels)
}

// ImageFileForTest reads the file at p of image (a container is created,
// never started, and removed), with its mode.
func ImageFileForTest(ctx context.Context, r *Runtime, image, p string, labels map[string]string) ([]byte, int64, error) {
	res, err := r.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: image, Cmd: []string{"true"}, Labels: labels}, HostConfig: &container.HostConfig{NetworkMode: "none"}})
	if err != nil {
		return nil, 0, err
	}
	defer removeContainer(context.WithoutCancel(ctx), r.cli, res.ID)
	cp, err := r.cli.CopyFromContainer(ctx, res.ID, client.CopyFromContainerOptions{SourcePath: p})
	if err != nil {
		return nil, 0, err
	}
	defer cp.Content.Close()
	tr := tar.NewReader(cp.Content)
	hdr, err := tr.Next()
	if err != nil {
		return nil, 0, err
	}
	b, err := io.ReadAll(tr)
	return b, hdr.Mode, err
}

// ImageLabelsForTest are an image's labels.
func ImageLabelsForTest(ctx context.Context, r *Runtime, ref string) (map[string]string, error) {
	ins, err := r.cli.ImageInspect(ctx, ref)
	if err != nil || ins.Config == nil {
		return nil, err
	}
	return ins.Config.Labels, nil
}

// WithPullTimeout bounds the pull of RegistryBase when no base is named
// (DefaultPullTimeout by default).
func WithPullTimeout(d time.Duration) Option { return func(c *config) { c.pullWait = d } }
