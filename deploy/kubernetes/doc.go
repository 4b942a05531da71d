// Package kubernetes holds no code: its folder holds the Kubernetes
// manifests of sharded sweeps (docs/scaling.md), and its test decodes them
// strictly into the k8s.io/api types and checks what the sweep relies on.
package kubernetes
