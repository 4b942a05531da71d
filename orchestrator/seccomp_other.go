//go:build !linux

package orchestrator

import "github.com/moby/profiles/seccomp"

type (
	dockerSeccomp = seccomp.Seccomp
	dockerSyscall = seccomp.Syscall
)

// defaultSeccomp is nil off Linux, where moby/profiles does not build
// Docker's default profile: the engine's own default then applies.
func defaultSeccomp() *dockerSeccomp { return nil }
