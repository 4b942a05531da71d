// Package docker implements orchestrator.Runtime on the Docker Engine API
// (github.com/moby/moby/client), and builds the sandbox image from the build
// context embedded in the binary.
//
// It is the only package that imports the Docker SDK. It never shells out to
// the docker CLI, never pulls an image but the sandbox's base when no image
// built on it and no base is present locally (RegistryBase, within a
// timeout, or the base the caller named), never mounts a host path or the Docker socket into a
// container, never attaches a container to a network that reaches off the
// machine (only "none" and "container:<id>"), and removes only objects it
// can identify by id or by the sandboxctl.trace label. It reads no
// environment variable: the engine address comes in as an Option.
package docker
