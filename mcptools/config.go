package mcptools

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults of Config, matching the layout of the sandbox image (see
// CONTRACTS: /usr/local/lib/agent holds agentd and strace, logs go to
// /var/lib/agentd/calls).
const (
	DefaultSelf       = "/usr/local/lib/agent/agentd"
	DefaultStrace     = "/usr/local/lib/agent/strace"
	DefaultLogDir     = "/var/lib/agentd/calls"
	DefaultUser       = "user"
	DefaultUID        = 1000
	DefaultGID        = 1000
	DefaultMaxOutput  = 64 << 10
	DefaultTimeout    = 120 * time.Second
	DefaultMaxTimeout = 600 * time.Second
	DefaultStrSize    = 4096
	// DefaultDrain is how long a call waits, once its command has ended,
	// for output still in the pipes; processes left in the background may
	// hold the pipes open for much longer.
	DefaultDrain = 200 * time.Millisecond
)

// TracedSyscalls is the -e trace= set: the families package strace turns
// into events (read and write are left out: opens with write flags say
// what was written, and tracing every write would make an output flood
// cost a syscall stop per write).
var TracedSyscalls = []string{
	"execve", "execveat",
	"open", "openat", "openat2", "creat",
	"unlink", "unlinkat", "rmdir", "rename", "renameat", "renameat2",
	"chmod", "fchmod", "fchmodat", "mkdir", "mkdirat",
	"chdir", "fchdir",
	"connect", "bind", "sendto", "sendmsg",
	"clone", "clone3", "fork", "vfork",
	"link", "linkat", "symlink", "symlinkat",
}

// DeniedSyscalls are refused to every process a tool call starts, because
// they act out of the tracer's sight: io_uring does opens, reads and
// connects that strace never sees; process_vm_* and process_madvise read or
// change another process's memory; pidfd_getfd takes another process's
// descriptors; userfaultfd stalls the kernel mid-copy (a race-window tool);
// open_by_handle_at opens a file with no path. strace injects EPERM for them
// (-e inject), so each attempt fails and is logged as "(INJECTED)", which
// package strace turns into a trace.TypeDenied event. Its seccomp filter
// stays on the processes after strace detaches, and then refuses them with
// ENOSYS. The sandbox's own seccomp profile (orchestrator) covers them for
// anything strace does not trace.
var DeniedSyscalls = []string{
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"pidfd_getfd", "process_vm_readv", "process_vm_writev", "process_madvise",
	"userfaultfd", "open_by_handle_at",
}

// Config says how the tool server runs commands. The zero value, with
// defaults filled in, is right for the sandbox image. The container must be
// set up so that:
//
//   - Self (agentd, the sandboxctl binary) and Strace exist and are
//     executable by root; neither needs to be (nor should be) readable or
//     executable by the user: the shim and the file tools start as root and
//     become the user themselves;
//   - User exists with UID and GID (the shim gives the command the
//     supplementary groups /etc/group lists for User, as initgroups would);
//   - the container has CAP_SYS_PTRACE (strace's PTRACE_SEIZE), SETUID and
//     SETGID (to become the user), and the user's processes have no
//     capabilities (no-new-privileges);
//   - the server runs as root (docker exec -u 0 -i), and LogDir is on a
//     file system the user cannot write (it is created 0700 root).
//
// Config is plain data: the orchestrator can hand it to `agentd __mcp` as
// JSON (durations in nanoseconds).
type Config struct {
	Self   string `json:"self,omitempty"`   // the agentd binary (re-executed as __shim and __tool)
	Strace string `json:"strace,omitempty"` // the strace binary
	// NoStrace runs tools without strace: for tests on hosts without it.
	// Without strace and as root, tools still run as UID/GID.
	NoStrace bool   `json:"no_strace,omitempty"`
	LogDir   string `json:"log_dir,omitempty"` // where <call_id>.log files go

	User string   `json:"user,omitempty"` // the user tools run as
	UID  int      `json:"uid,omitempty"`
	GID  int      `json:"gid,omitempty"`
	Home string   `json:"home,omitempty"` // the user's home; also the working directory of every call
	Env  []string `json:"env,omitempty"`  // extra environment for the user's processes (KEY=VALUE)

	MaxOutput  int           `json:"max_output,omitempty"`  // bytes kept per stream (stdout, stderr)
	Timeout    time.Duration `json:"timeout,omitempty"`     // default per-call timeout
	MaxTimeout time.Duration `json:"max_timeout,omitempty"` // cap on timeout_s
	StrSize    int           `json:"str_size,omitempty"`    // strace -s
	Drain      time.Duration `json:"drain,omitempty"`

	// Entropy, for twin traces: a seed that makes the sandbox's randomness
	// reproducible; nil: real randomness. With a seed, getrandom(2) of
	// every call's processes is answered by the server from the seed (a
	// stream per process, keyed by its command line and how many processes
	// with that command line came before), and /dev/urandom and
	// /dev/random become one read-only file of bytes from the seed. See
	// docs/sandbox.md, "Twin traces: reproducible randomness".
	Entropy []byte `json:"entropy,omitempty"`
}

// EntropyEnv is the variable that carries Config.Entropy, hex-encoded, to
// `agentd __mcp` (not a flag: the user's processes can read the server's
// command line, not its environment). The server takes it out of the
// user's environment.
const EntropyEnv = "SANDBOXCTL_ENTROPY"

func (c Config) withDefaults() Config {
	if c.Self == "" {
		c.Self = DefaultSelf
	}
	if c.Strace == "" {
		c.Strace = DefaultStrace
	}
	if c.LogDir == "" {
		c.LogDir = DefaultLogDir
	}
	if c.User == "" {
		c.User = DefaultUser
	}
	if c.UID == 0 && c.User != "root" {
		c.UID = DefaultUID
	}
	if c.GID == 0 && c.User != "root" {
		c.GID = DefaultGID
	}
	if c.Home == "" {
		c.Home = "/home/" + c.User
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	if c.Timeout > c.MaxTimeout {
		c.Timeout = c.MaxTimeout
	}
	if c.StrSize <= 0 {
		c.StrSize = DefaultStrSize
	}
	if c.Drain <= 0 {
		c.Drain = DefaultDrain
	}
	return c
}

// StraceArgs returns strace's arguments (without argv[0] and the traced
// command) for one call whose log goes to logPath. strace runs as root and
// follows forks (-f); it starts the shim as root, and the shim starts the
// command as c.User (so that no process of the user holds the shim's pipes). --seccomp-bpf stops
// the tracee only on the traced syscalls, so an output flood costs no stops
// (a side effect: once strace detaches, at Flush, traced syscalls of
// processes still running fail with ENOSYS). -I 2 lets SIGTERM end strace
// (with -o and a command its default, -I 3, blocks it), which Flush relies
// on. testdata/capture.sh of package strace uses the same flags.
func (c Config) StraceArgs(logPath string) []string {
	c = c.withDefaults()
	return []string{
		"-f", "--seccomp-bpf", "-I", "2", "-ttt", "-v", "-yy",
		"-s", strconv.Itoa(c.StrSize),
		"-e", "trace=" + strings.Join(append(slices.Clone(TracedSyscalls), DeniedSyscalls...), ","),
		"-e", "inject=" + strings.Join(DeniedSyscalls, ",") + ":error=EPERM",
		"-o", logPath,
	}
}

// identity is the user tool calls run as.
func (c Config) identity() identity {
	return identity{uid: c.UID, gid: c.GID, user: c.User}
}

// userEnv is the environment of the user's processes.
// notFoundHandler is bash's command_not_found_handle, exported.
const notFoundHandler = `BASH_FUNC_command_not_found_handle%%=() {  if [ -x /usr/lib/command-not-found ]; then
    /usr/lib/command-not-found -- "$@";
    return $?;
  else
    printf '%s: command not found\n' "$1" 1>&2;
    return 127;
  fi
}`

func (c Config) userEnv() []string {
	env := []string{
		"HOME=" + c.Home,
		"USER=" + c.User,
		"LOGNAME=" + c.User,
		"SHELL=/bin/bash",
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8",
		// An agent's shell has no terminal: the editor git starts for a
		// message or a rebase's todo (vim, with output to a pipe) waits
		// until the call's timeout. Agent harnesses set GIT_EDITOR so that
		// git takes the message or todo as it is and goes on.
		"GIT_EDITOR=true",
		// A command bash cannot find goes to /usr/lib/command-not-found,
		// as Debian's command-not-found package arranges for interactive
		// shells (exported, so that every bash the call starts has it):
		// the image's stand-in lets the skill's flow go on and the exec
		// records what was missing (sandbox-image/command-not-found).
		notFoundHandler,
	}
	seen := map[string]int{}
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		seen[k] = i
	}
	for _, kv := range c.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if i, dup := seen[k]; dup {
			env[i] = kv
			continue
		}
		seen[k] = len(env)
		env = append(env, kv)
	}
	return env
}
