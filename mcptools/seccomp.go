package mcptools

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"golang.org/x/net/bpf"
)

// The seccomp user-notification ABI (linux/seccomp.h, linux/audit.h), as
// far as golang.org/x/sys/unix does not declare it (it has the ioctl
// numbers, flags and return values, but neither the structs nor the audit
// architectures of every compat ABI).
const (
	auditArchX8664   = 0xc000003e // AUDIT_ARCH_X86_64
	auditArchI386    = 0x40000003 // AUDIT_ARCH_I386
	auditArchAarch64 = 0xc00000b7 // AUDIT_ARCH_AARCH64
	auditArchARM     = 0x40000028 // AUDIT_ARCH_ARM
	x32SyscallBit    = 0x40000000 // __X32_SYSCALL_BIT: x32 calls come with arch X86_64

	seccompRetAllow      = 0x7fff0000 // SECCOMP_RET_ALLOW
	seccompRetUserNotif  = 0x7fc00000 // SECCOMP_RET_USER_NOTIF
	seccompDataNrOff     = 0          // struct seccomp_data: int nr
	seccompDataArchOff   = 4          // __u32 arch
	seccompDataArgsOff   = 16         // __u64 args[6], after __u64 instruction_pointer
	seccompNotifSize     = 80         // struct seccomp_notif: id, pid, flags, data (64 bytes)
	seccompNotifRespSize = 24         // struct seccomp_notif_resp: id, val, error, flags
)

// A sysABI is one way a process calls a syscall: the audit architecture in
// seccomp_data.arch and the syscall's number there.
type sysABI struct {
	arch, nr uint32
}

// getrandomABIs are getrandom's numbers in the ABIs a process may use on
// each architecture the tool server runs on: the native one and the
// compat ones (x32 and i386 on amd64, 32-bit ARM on arm64).
var getrandomABIs = map[string][]sysABI{
	"amd64": {{auditArchX8664, 318}, {auditArchX8664, 318 | x32SyscallBit}, {auditArchI386, 355}},
	"arm64": {{auditArchAarch64, 278}, {auditArchARM, 384}},
}

// getrandomFilter is the seccomp program the shim installs for Entropy:
// getrandom in any of abis goes to the listener (SECCOMP_RET_USER_NOTIF),
// everything else is allowed (the other filters, Docker's profile and
// strace's, still decide for it: the kernel takes the strictest action of
// all filters, and USER_NOTIF only yields to KILL, TRAP and ERRNO, which
// none of them returns for getrandom).
func getrandomFilter(abis []sysABI) ([]bpf.RawInstruction, error) {
	var prog []bpf.Instruction
	for _, a := range abis {
		prog = append(prog,
			bpf.LoadAbsolute{Off: seccompDataArchOff, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: a.arch, SkipTrue: 3},
			bpf.LoadAbsolute{Off: seccompDataNrOff, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: a.nr, SkipTrue: 1},
			bpf.RetConstant{Val: seccompRetUserNotif},
		)
	}
	prog = append(prog, bpf.RetConstant{Val: seccompRetAllow})
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("assemble getrandom filter: %w", err)
	}
	return raw, nil
}

// A seccompNotif is a struct seccomp_notif: one syscall of a process
// waiting for the listener's answer.
type seccompNotif struct {
	id    uint64
	pid   uint32 // the calling thread, in the listener's pid namespace (0: not visible there)
	flags uint32
	nr    int32
	arch  uint32
	ip    uint64
	args  [6]uint64
}

// decodeNotif reads a struct seccomp_notif in the machine's byte order.
func decodeNotif(b []byte) (seccompNotif, error) {
	if len(b) < seccompNotifSize {
		return seccompNotif{}, fmt.Errorf("seccomp notification of %d bytes, want %d", len(b), seccompNotifSize)
	}
	e := binary.NativeEndian
	n := seccompNotif{
		id:    e.Uint64(b[0:]),
		pid:   e.Uint32(b[8:]),
		flags: e.Uint32(b[12:]),
		nr:    int32(e.Uint32(b[16+seccompDataNrOff:])),
		arch:  e.Uint32(b[16+seccompDataArchOff:]),
		ip:    e.Uint64(b[16+8:]),
	}
	for i := range n.args {
		n.args[i] = e.Uint64(b[16+seccompDataArgsOff+8*i:])
	}
	return n, nil
}

// A seccompResp is a struct seccomp_notif_resp: the syscall's result,
// val on success, or -errno.
type seccompResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

// respond is the answer to notification id: n bytes, or errno.
func respond(id, n uint64, errno syscall.Errno) seccompResp {
	if errno != 0 {
		return seccompResp{id: id, error: -int32(errno)}
	}
	return seccompResp{id: id, val: int64(n)}
}

// encode writes r as the kernel reads it, in size bytes (the kernel's
// sizeof(struct seccomp_notif_resp), at least ours; the rest is zero).
func (r seccompResp) encode(size int) []byte {
	b := make([]byte, max(size, seccompNotifRespSize))
	e := binary.NativeEndian
	e.PutUint64(b[0:], r.id)
	e.PutUint64(b[8:], uint64(r.val))
	e.PutUint32(b[16:], uint32(r.error))
	e.PutUint32(b[20:], r.flags)
	return b
}
