package orchestrator

import "github.com/moby/profiles/seccomp"

type (
	dockerSeccomp = seccomp.Seccomp
	dockerSyscall = seccomp.Syscall
)

// defaultSeccomp is Docker's default seccomp profile, as the engine's own
// library (moby/profiles) defines it.
func defaultSeccomp() *dockerSeccomp { return seccomp.DefaultProfile() }
