package docker

import (
	"context"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
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
		if isNotFound(err) {
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
