//go:build !linux

package mcptools

import "os"

// Reproducible randomness needs Linux's seccomp user notifications; the
// tool server runs in a Linux container only.

type randomness struct{}

func newRandomness([]byte) (*randomness, error) { return nil, errNotLinux }

func (r *randomness) pair() (*os.File, *os.File, error) { return nil, nil, errNotLinux }
func (r *randomness) take(*os.File) bool                { return false }
func (r *randomness) close()                            {}

func passGetrandom(int) error { return errNotLinux }
