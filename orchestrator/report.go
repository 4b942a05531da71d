package orchestrator

import (
	"context"
	"errors"
	"fmt"

	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
)

// meta is what the report says about the pass besides its timeline: the
// plan, the sandbox, the seeded home and how the pass ended (traceStatus).
func (r *Runner) meta(ctx context.Context, st *run, runErr error) reports.Meta {
	p := st.plan
	status, msg := traceStatus(ctx, runErr, st)
	return reports.Meta{
		TraceID:   p.TraceID,
		Version:   r.Version,
		Skill:     st.skill,
		Driver:    reports.Driver{Kind: p.Driver.Kind, Provider: p.Driver.Provider, Model: p.Driver.Model, Notes: st.loop.Notes},
		Prompt:    p.Prompt,
		StartedAt: st.started,
		Duration:  r.now().Sub(st.started),
		Status:    status,
		Error:     msg,
		Sandbox: reports.Sandbox{
			Image: st.image, User: st.home.User, Hostname: st.home.Hostname, Home: st.home.HomeDir, Persona: p.Persona,
			Limits: reports.Limits{
				TimeoutMS: p.Limits.Timeout.Milliseconds(), MemoryBytes: p.Limits.Memory, PIDs: p.Limits.PIDs,
				CPUs: float64(p.Limits.NanoCPUs) / 1e9, OutputBytes: p.Limits.OutputBytes,
				Turns: p.Limits.Turns, Tokens: p.Limits.Tokens,
			},
		},
		Canaries:    st.home.Set,
		SkillDir:    st.skillDir,
		Home:        st.home.HomeDir,
		MarkerPath:  st.home.HomeDir + "/" + st.jailCfg.Marker.Path,
		MarkerToken: st.jailCfg.Marker.Token,
		Repos:       repos(st.home),
		Buckets:     st.home.Buckets(),
	}
}

// repos are the seeded home's git working trees, as the rules read them.
func repos(h *canaryfs.Home) map[string]rules.Repo {
	out := map[string]rules.Repo{}
	for dir, r := range h.Repos() {
		out[dir] = rules.Repo{Files: r.Files}
	}
	return out
}

// traceStatus maps how the trace ended to the report's status.
func traceStatus(ctx context.Context, err error, st *run) (reports.Status, string) {
	switch {
	case ctx.Err() != nil:
		return reports.StatusCancelled, "interrupted"
	case st.deadline || errors.Is(err, ErrTimeout) || errors.Is(st.loopErr, ErrTimeout) || st.loop.Stop == agent.StopWall:
		return reports.StatusTimeout, "trace deadline reached"
	case err != nil:
		return reports.StatusError, err.Error()
	case st.loopErr != nil:
		return reports.StatusError, st.loopErr.Error()
	}
	return reports.StatusCompleted, ""
}

// writeRunDir writes the run folder of out to dir, unless dir is "".
func writeRunDir(dir string, out Outcome) error {
	if dir == "" {
		return nil
	}
	if err := reports.WriteRunDir(dir, out.Report, out.Transcript); err != nil {
		return fmt.Errorf("write run folder %s: %w", dir, err)
	}
	return nil
}
