// Package canary is the taxonomy of planted secrets (kinds, the paths they
// live at, the environment variables that hold them), the minting of unique
// tokens in the real format of each kind, and their detection in any byte
// stream: Set.Find for network bodies, files and argv, Set.FindDNS for the
// names of one trace's DNS queries.
//
// It sits at the bottom of the pipeline: canaryfs plants what it mints, the
// rules look for what it registered. It is a leaf: it imports nothing of
// sandboxctl, does no I/O beyond reading its random source, and must never
// mark a token as a canary to a reader inside the sandbox (no word "canary",
// no fixed prefix beyond the one the real format has). The Set, with the
// values, stays on the host.
package canary
