package orchestrator

import (
	"context"
	"fmt"
)

// ensureImage is the image stage of a pass: the agent image the trace's
// containers run, built when its inputs changed (no registry pull): the
// plan's image, or else the sandbox image of this binary's embedded build
// context, with the host binary baked in (Runtime.AgentImage).
func (r *Runner) ensureImage(ctx context.Context, st *run) error {
	r.phase("image", "checking the sandbox image")
	img, err := r.Runtime.AgentImage(ctx, r.agentImageSpec(st.plan.Image), r.ImageProgress)
	if err != nil {
		return fmt.Errorf("sandbox image: %w", err)
	}
	st.image = img
	return nil
}

// agentImageSpec is the agent image of this Runner on from ("": the
// sandbox image).
func (r *Runner) agentImageSpec(from string) AgentImageSpec {
	return AgentImageSpec{From: from, Binary: r.Binary, UID: UserUID, GIDs: userGIDs()}
}
