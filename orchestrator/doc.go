// Package orchestrator is the only package that knows the order of a
// trace's stages: plan, image, jail, sandbox, drive, collect, teardown,
// analyse, report. Runner.Run reads as that pipeline (its doc lists the
// stages), and each stage is a file of its own (plan.go, image.go, jail.go,
// sandbox.go, drive.go, collect.go, teardown.go, analyse.go, report.go);
// stealth.go adds the unwatched pass. The orchestrator calls the rules
// (rules.Evaluate) and then the report builder (reports.Build) itself.
// The plan it runs is a traceplan.Plan: plain data, which the packages that
// run traces without an engine of their own share.
//
// It declares the Runtime and Sandbox it needs; orchestrator/docker
// implements them on the Docker Engine API and orchestrator/runtimetest fakes
// them. orchestrator never reads flags or the environment, never prints and
// never exits: cmd/sandboxctl does. It removes only what its own trace
// created, on a fresh bounded context, on every path.
package orchestrator
