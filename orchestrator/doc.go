// Package orchestrator is the only package that knows the order of a trace's
// steps: load, plan, image, jail, seeded home, sandbox, driver loop, events,
// rules, report, cleanup.
//
// It declares the Runtime and Sandbox it needs; orchestrator/docker
// implements them on the Docker Engine API and orchestrator/runtimetest fakes
// them. orchestrator never reads flags or the environment, never prints and
// never exits: cmd/sandboxctl does. It removes only what its own trace
// created, on a fresh bounded context, on every path.
package orchestrator
