// Package persona says which operating system the sandbox passes for, and
// holds what it takes to pass for one other than the Debian it runs.
//
// The default persona, Linux, is the image as built. The macOS persona adds
// recording shims of the commands a skill written for a Mac runs (security,
// osascript, sw_vers, base64 -D, ...): small scripts installed at their
// macOS paths when the sandbox is set up, so that a chain written for a Mac
// reaches its later stages, and so that each use of a macOS tool is an exec
// in the syscall log that the rules can name (IsShim). The shims answer
// from what canaryfs planted in the home (the login keychain, the
// pasteboard): a stealer that asks the keychain gets a canary.
//
// This package is data only: the shims are embedded files, and nothing here
// runs them. canaryfs lays the home out for a persona; the orchestrator
// installs Shims; the rules recognise them.
package persona
