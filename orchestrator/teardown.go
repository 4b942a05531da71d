package orchestrator

import (
	"context"
	"errors"
	"fmt"
)

// cleanup removes the containers of the trace in the background, on a
// fresh bounded context, unless the plan keeps them. The returned func
// waits for it and returns the names of kept containers and what could
// not be removed. A container left behind is not a gap in the evidence
// (everything was read before), so it never changes the report; it is the
// pass's error, and `sandboxctl gc` removes it by its label.
func (r *Runner) cleanup(ctx context.Context, st *run) func() ([]string, error) {
	if st.plan.Keep {
		var kept []string
		for _, sb := range []Sandbox{st.sandbox, st.jail} {
			if sb != nil {
				kept = append(kept, sb.ID())
			}
		}
		if st.jailEv != nil {
			st.jailEv.stop()
		}
		return func() ([]string, error) { return kept, nil }
	}
	r.phase("cleanup", "removing containers")
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		err = r.remove(ctx, st)
	}()
	return func() ([]string, error) {
		<-done
		return nil, err
	}
}

// remove removes the trace's containers, the sandbox first (it lives in
// the jail's network namespace).
func (r *Runner) remove(ctx context.Context, st *run) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.teardown())
	defer cancel()
	var errs []error
	if st.tools != nil {
		st.tools.srv.cancel() // a warm pair's server, unclaimed: nothing to wait for
		st.tools.close()
	}
	if st.installer != nil {
		st.installer.abort() // a warm pair's installer, unclaimed
	}
	if st.sandbox != nil {
		if err := st.sandbox.Remove(cctx); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", st.sandbox.ID(), err))
		}
	}
	if st.jail != nil {
		if err := st.jail.Remove(cctx); err != nil {
			errs = append(errs, fmt.Errorf("remove jail %s: %w", st.jail.ID(), err))
		}
	}
	if st.jailEv != nil {
		st.jailEv.stop()
	}
	if st.procs != nil {
		st.procs.stop() // ended by collect already, unless the pass failed before it
	}
	return errors.Join(errs...)
}
