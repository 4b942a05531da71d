// Package mcptools is the tool side of the agent loop: an MCP server that
// runs inside the sandbox (as `agentd __mcp`, root, on a `docker exec -i`
// stream) and the host-side client the orchestrator drives it with.
//
// Every tool call, bash or not, runs as a child process of the unprivileged
// user under `strace -f`, writing one log per call into a root-only folder,
// so each file access, exec and connection in that log carries the call's
// id. File tools and fetch_url run as `agentd __tool NAME` (this package's
// Tool), so they obey the user's permissions and go through the network jail
// like anything else the skill runs. A tiny shim (`agentd __shim`, Shim)
// sits between strace and the command: it runs as root and not dumpable,
// starts the command as the user in a process group of its own, reports the
// command's exit status from its own wait over an inherited pipe, and kills
// that group when the server asks on a second pipe; so a call returns when
// its command ends while the processes it left in the background stay
// traced until Flush, and no process of the user can reach the pipes. The
// syscalls in DeniedSyscalls are refused to every traced process (strace
// injects EPERM and logs the attempt).
//
// mcptools must never let a tool act as root (a file tool becomes the user
// before it reads its arguments), never let a tool call outlive its
// deadline, and never trust what the tool's processes print: output is
// capped, and its syscall logs are parsed (by package strace) as untrusted.
// It imports no Docker code: the orchestrator hands the client the exec's
// streams.
package mcptools
