package orchestrator

import (
	"context"
	"fmt"
)

// ensureImage is the image stage of a pass: the plan's image, or else the
// sandbox image of this binary's embedded build context, which the Runtime
// builds when its inputs changed (no registry pull).
func (r *Runner) ensureImage(ctx context.Context, st *run) error {
	st.image = st.plan.Image
	if st.image != "" {
		return nil
	}
	r.phase("image", "checking the sandbox image")
	img, err := r.Runtime.EnsureImage(ctx, r.ImageProgress)
	if err != nil {
		return fmt.Errorf("sandbox image: %w", err)
	}
	st.image = img
	return nil
}
