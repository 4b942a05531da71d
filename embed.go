// Package sandboxctl carries the sandbox image's build context inside the
// binary, so that `sandboxctl image build` and the first trace can build the
// image anywhere without the source tree. The Go code lives in the
// subpackages; this package holds data only and must never import them.
package sandboxctl

import "embed"

// ImageContext holds Dockerfile.sandbox and the sandbox-image/ folder, the
// complete build context of the sandbox image. orchestrator/docker hashes it
// to tag the image and sends it to the engine to build it.
//
//go:embed Dockerfile.sandbox sandbox-image
var ImageContext embed.FS
