package orchestrator

//lint:file-ignore SA1019 Syscall.Name is deprecated, but profiles written for older engines still name one syscall in it, and retarget must take it out too

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/sandboxctl/sandboxctl/mcptools"
)

// Seccomp policy of the sandbox container: Docker's default profile, with
// the syscalls that act out of the tracer's sight (mcptools.DeniedSyscalls)
// taken out of its rules and given SCMP_ACT_TRACE instead. With no tracer
// attached the kernel then fails them with ENOSYS; under strace, the tracer
// is told first, and strace fails them with EPERM (-e inject) and logs the
// attempt. So every process in the container is refused them, and the
// skill's attempts reach the timeline as denied events (an ERRNO action
// would refuse them too, but silently: it takes precedence over strace's own
// filter, so strace would never see the call).
//
// process_vm_readv and process_vm_writev stay allowed at this level because
// strace itself (root, untraced) reads its tracees' memory with them; the
// skill's processes are refused them by strace's injection, and after
// strace detaches by the filter strace installed on them (ENOSYS).

// hostOnlyCalls are the denied syscalls the tracer itself needs.
var hostOnlyCalls = []string{"process_vm_readv", "process_vm_writev"}

// traceOnlyCalls are the syscalls the sandbox's profile gives
// SCMP_ACT_TRACE.
func traceOnlyCalls() []string {
	var out []string
	for _, c := range mcptools.DeniedSyscalls {
		if !slices.Contains(hostOnlyCalls, c) {
			out = append(out, c)
		}
	}
	return out
}

// sandboxSeccomp returns the sandbox's seccomp profile in the JSON form
// Docker takes (SecurityOpt "seccomp=<json>"), or nil where Docker's default
// profile is not available to build on (then the engine's default applies
// and the denial rests on strace alone).
func sandboxSeccomp() ([]byte, error) {
	prof := defaultSeccomp()
	if prof == nil {
		return nil, nil
	}
	deny := traceOnlyCalls()
	if err := retarget(prof, deny); err != nil {
		return nil, err
	}
	b, err := json.Marshal(prof)
	if err != nil {
		return nil, fmt.Errorf("encode seccomp profile: %w", err)
	}
	return b, nil
}

// retarget takes names out of every rule of prof (a syscall may have one
// action only) and adds one SCMP_ACT_TRACE rule for them.
func retarget(prof *dockerSeccomp, names []string) error {
	kept := prof.Syscalls[:0]
	for _, sc := range prof.Syscalls {
		sc.Names = slices.DeleteFunc(sc.Names, func(n string) bool { return slices.Contains(names, n) })
		if sc.Name != "" && slices.Contains(names, sc.Name) {
			sc.Name = ""
		}
		if len(sc.Names) == 0 && sc.Name == "" {
			continue
		}
		kept = append(kept, sc)
	}
	prof.Syscalls = append(kept, &dockerSyscall{LinuxSyscall: specs.LinuxSyscall{
		Names: slices.Clone(names), Action: specs.ActTrace,
	}, Comment: "sandboxctl: out of the tracer's sight; strace refuses them and logs the attempt, ENOSYS without a tracer"})
	if prof.DefaultAction == specs.ActTrace {
		return fmt.Errorf("seccomp profile: default action %s", prof.DefaultAction)
	}
	return nil
}
