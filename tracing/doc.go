// Package tracing is the one contract between the packages that run
// traces without an engine of their own (server, sweep, evaluation and
// monitor) and the engine that runs them: each is given a Tracer, which
// cmd/sandboxctl backs with orchestrator.Runner and tests with fakes. It
// names a plan (traceplan) and a report (reports), never the engine.
package tracing
