package orchestrator

import (
	"context"
	"errors"
	"fmt"
)

// cleanup removes the containers of the trace on a fresh bounded context,
// unless the plan keeps them; it returns the names of kept containers.
func (r *Runner) cleanup(ctx context.Context, st *run) ([]string, error) {
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
		return kept, nil
	}
	r.phase("cleanup", "removing containers")
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.teardown())
	defer cancel()
	var errs []error
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
	return nil, errors.Join(errs...)
}
