// Package docker implements orchestrator.Runtime on the Docker Engine API
// (github.com/moby/moby/client), and builds the sandbox image from the build
// context embedded in the binary.
//
// It is the only package that imports the Docker SDK. It never shells out to
// the docker CLI, never pulls an image unless the caller named a base that is
// not present locally, never mounts a host path or the Docker socket into a
// container, never attaches a container to a network that reaches off the
// machine (only "none" and "container:<id>"), and removes only objects it
// can identify by id or by the sandboxctl.trace label. It reads no
// environment variable: the engine address comes in as an Option.
package docker
