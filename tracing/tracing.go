package tracing

import (
	"context"

	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// A Tracer runs one trace of p, writing its run folder to dir ("" for
// none), and returns its report. As with orchestrator.Runner, a non-nil
// error means the trace could not observe (an infrastructure failure): the
// report, when not nil, is then partial. Findings are never errors. A
// Tracer must be safe for concurrent use and must remove the trace's
// containers before it returns, cancellation included.
type Tracer interface {
	Trace(ctx context.Context, p traceplan.Plan, dir string) (*reports.Report, error)
}

// Func is a function as a Tracer.
type Func func(ctx context.Context, p traceplan.Plan, dir string) (*reports.Report, error)

// Trace implements Tracer.
func (f Func) Trace(ctx context.Context, p traceplan.Plan, dir string) (*reports.Report, error) {
	return f(ctx, p, dir)
}
