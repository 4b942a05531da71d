package docker

import (
	"context"
	"fmt"
)

// ImageID is the content-addressed id (sha256:...) of the image ref: what
// a sweep keys results on, since a tag can move and an id cannot.
func (r *Runtime) ImageID(ctx context.Context, ref string) (string, error) {
	res, err := r.cli.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return res.ID, nil
}
