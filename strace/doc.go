// Package strace turns the output of `strace -f -ttt` (as mcptools runs it
// inside the sandbox, one log file per tool call) into trace events: execs
// with argv, file opens/writes/unlinks/renames/chmods/mkdirs with resolved
// paths, connect/bind/sendto with peer addresses, clones for the process
// tree, and process exits.
//
// The logs come out of the sandbox, so they are untrusted input: line length,
// line count and event count are capped, malformed lines are counted and
// skipped, and Parse never panics (FuzzParse keeps it so). strace never runs
// anything and reads nothing but the reader it is given.
//
// The parser understands the flags mcptools passes to strace (-f -ttt -v -yy
// -s N -e inject=...); without -y it falls back on a per-process working
// directory tracked from chdir/fchdir and clone, seeded with Options.Cwd.
// With -yy an open's returned fd carries the kernel's path of the file
// opened, kept as File.Resolved when the name asked for differs (symlinks,
// /proc/self/root, /dev/fd/N); links and symlinks are link events; a call
// strace refused by injection ("(INJECTED)") is a denied event.
package strace
