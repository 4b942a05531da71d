// Package docker holds no code: its folder holds the container image of
// sandboxctl itself (Dockerfile) and a compose file that runs `sandboxctl
// serve` against the host's engine (docs/serve.md). Its test parses both
// and checks what the server relies on; no registry is reachable from CI,
// so the image is not built there.
package docker
