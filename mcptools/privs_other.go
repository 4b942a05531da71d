//go:build !linux

package mcptools

import "errors"

// The tool server runs in a Linux container only; elsewhere these exist so
// that the host-side client builds.

var errNotLinux = errors.New("only on linux")

func notDumpable() {}

func setresgid(int) error { return errNotLinux }
func setresuid(int) error { return errNotLinux }
