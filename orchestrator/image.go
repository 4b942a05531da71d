package orchestrator

import (
	"context"
	"fmt"
)

// startImage starts the image stage of a pass in the background, beside
// the plan stage (seeding the home): the agent image the trace's
// containers run, built when its inputs changed (no registry pull): the
// plan's image, or else the sandbox image of this binary's embedded build
// context, with the host binary baked in (Runtime.AgentImage). The
// returned func waits for it.
func (r *Runner) startImage(ctx context.Context, from string) func() (string, error) {
	var img string
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		img, err = r.Runtime.AgentImage(ctx, r.agentImageSpec(from), r.ImageProgress)
	}()
	return func() (string, error) {
		<-done
		return img, err
	}
}

// ensureImage ends the image stage: it waits for the image startImage
// asked for.
func (r *Runner) ensureImage(st *run) error {
	r.phase("image", "checking the sandbox image")
	img, err := st.imageWait()
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

// AgentImage builds (or finds) the agent image this Runner's traces run
// on from ("": the sandbox image), with r.ImageProgress receiving the
// build's output, and returns its reference: what `image build` does ahead
// of the first trace, and what a long-running caller (serve) calls once at
// start, so that its first traces do not each wait for the build.
func (r *Runner) AgentImage(ctx context.Context, from string) (string, error) {
	img, err := r.Runtime.AgentImage(ctx, r.agentImageSpec(from), r.ImageProgress)
	if err != nil {
		return "", fmt.Errorf("agent image: %w", err)
	}
	return img, nil
}
