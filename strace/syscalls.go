package strace

import (
	"path"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// syscalls maps the name of a traced syscall to the handler that turns a
// complete call into events (or into the parser's state: cwd, fds,
// processes). A family of syscalls that differ only in where their
// arguments sit, or in the type of their event, shares one handler, which
// asks sysCall.name. Calls not here (exit_group, kill, reads, ...) carry
// no event of their own: process ends come from the "+++" lines. What
// mcptools asks strace to trace is mcptools.TracedSyscalls: a syscall
// added there needs a handler here, or its calls are read and dropped.
var syscalls = map[string]func(*parser, sysCall){
	"execve":    (*parser).sysExec,
	"execveat":  (*parser).sysExec,
	"open":      (*parser).sysOpen,
	"creat":     (*parser).sysOpen,
	"openat":    (*parser).sysOpen,
	"openat2":   (*parser).sysOpen,
	"link":      (*parser).sysLink,
	"linkat":    (*parser).sysLinkat,
	"symlink":   (*parser).sysSymlink,
	"symlinkat": (*parser).sysSymlink,
	"unlink":    (*parser).sysUnlink,
	"rmdir":     (*parser).sysUnlink,
	"unlinkat":  (*parser).sysUnlinkat,
	"rename":    (*parser).sysRename,
	"renameat":  (*parser).sysRenameat,
	"renameat2": (*parser).sysRenameat,
	"chmod":     (*parser).sysChmod,
	"fchmod":    (*parser).sysFchmod,
	"fchmodat":  (*parser).sysFchmodat,
	"mkdir":     (*parser).sysMkdir,
	"mkdirat":   (*parser).sysMkdirat,
	"chdir":     (*parser).sysChdir,
	"fchdir":    (*parser).sysFchdir,
	"connect":   (*parser).sysConnect,
	"bind":      (*parser).sysConnect,
	"sendto":    (*parser).sysSendto,
	"sendmsg":   (*parser).sysSendto,
	"write":     (*parser).sysWrite,
	"pwrite64":  (*parser).sysWrite,
	"writev":    (*parser).sysWrite,
	"pwritev":   (*parser).sysWrite,
	"pwritev2":  (*parser).sysWrite,
	"clone":     (*parser).sysClone,
	"clone3":    (*parser).sysClone,
	"fork":      (*parser).sysClone,
	"vfork":     (*parser).sysClone,
}

// sysCall is one complete call as parser.call decoded it: what every
// handler in syscalls reads. Handlers take it by value: a pointer passed
// through the table's functions would cost an allocation per line.
type sysCall struct {
	pid  int
	at   time.Time
	name string
	raw  string   // the argument text between the parentheses
	args []string // raw split at its top-level commas
	res  result
	pr   *proc // the calling process
}

// arg returns argument i, or "" when the call has fewer.
func (c sysCall) arg(i int) string {
	if i < len(c.args) {
		return c.args[i]
	}
	return ""
}

// dirPath resolves the path argument at i against the dirfd argument at
// dirfd (against the process's cwd when dirfd < 0), then follows what
// /dev/fd/N and /proc/self/fd/N stand for.
func (p *parser) dirPath(c sysCall, dirfd, i int) string {
	pth := stringArg(c.arg(i))
	dir := c.pr.cwd
	if dirfd >= 0 {
		fd, ann := fdArg(c.arg(dirfd))
		switch {
		case ann != "":
			dir = ann
		case fd != "AT_FDCWD":
			dir = ""
		}
	}
	return p.fdPath(c.pr, resolve(dir, pth))
}

// denied records a call strace refused by injection (-e inject): only the
// syscalls mcptools asks strace to refuse are injected. The argument text
// is cut at 256 bytes.
func (p *parser) denied(c sysCall) {
	a := c.raw
	if len(a) > 256 {
		a = a[:256] + "..."
	}
	p.emit(c.pid, c.at, trace.TypeDenied, &trace.Denied{Syscall: c.name, Args: a, Errno: c.res.errno})
}

// sysExec records execve and execveat. An exec that succeeds says whether
// the process is now the tool server itself (Options.Agentd), whose execs
// are noise.
func (p *parser) sysExec(c sysCall) {
	d := &trace.Exec{Cwd: c.pr.cwd, Errno: c.res.errno}
	if c.name == "execve" {
		d.Path, d.Argv = p.dirPath(c, -1, 0), argvArg(c.arg(1))
	} else {
		d.Path, d.Argv = p.dirPath(c, 0, 1), argvArg(c.arg(2))
	}
	if c.res.known && c.res.val == 0 {
		p.lead(c.pr).agentd = p.opts.Agentd != "" && d.Path == p.opts.Agentd
	}
	if !p.opts.KeepNoise && p.lead(c.pr).agentd {
		p.stats.Noise++
		return
	}
	p.emit(c.pid, c.at, trace.TypeExec, d)
}

// sysOpen records open, creat, openat and openat2, remembering the path of
// the descriptor returned so that a later /dev/fd/N names the file. Start-up
// noise is dropped unless Options.KeepNoise.
func (p *parser) sysOpen(c sysCall) {
	d := &trace.File{Errno: c.res.errno}
	p.openArgs(c, d)
	d.Write = writeFlags(d.Flags)
	if strings.HasPrefix(c.res.ann, "/") {
		// The kernel's name for what was opened: symlinks, ".." and
		// /proc/self/root resolved, /dev/fd/N followed.
		if c.res.ann != d.Path {
			d.Resolved = c.res.ann
		}
		p.rememberFD(c.pr, c.res.val, c.res.ann)
	}
	if !p.opts.KeepNoise && p.openNoise(c, d) {
		p.stats.Noise++
		return
	}
	p.emit(c.pid, c.at, trace.TypeOpen, d)
}

// openArgs fills in d's path, flags and mode from wherever the open
// syscall c.name keeps them (creat's flags are implied).
func (p *parser) openArgs(c sysCall, d *trace.File) {
	switch c.name {
	case "open":
		d.Path, d.Flags, d.Mode = p.dirPath(c, -1, 0), c.arg(1), c.arg(2)
	case "creat":
		d.Path, d.Flags, d.Mode = p.dirPath(c, -1, 0), "O_CREAT|O_WRONLY|O_TRUNC", c.arg(1)
	case "openat":
		d.Path, d.Flags, d.Mode = p.dirPath(c, 0, 1), c.arg(2), c.arg(3)
	case "openat2":
		d.Path = p.dirPath(c, 0, 1)
		d.Flags, _ = structField(c.arg(2), "flags")
		if m, ok := structField(c.arg(2), "mode"); ok && m != "0" {
			d.Mode = m
		}
	}
}

// openNoise reports whether the open d is start-up noise: any open of
// /dev/null, or a read-only open (that worked or found nothing) of a
// library or locale file, or of what the Go runtime reads when the process
// is the tool server. Either name counts, the one asked for or the
// kernel's: the noise folders are root's, so no name there can lead into
// the home.
func (p *parser) openNoise(c sysCall, d *trace.File) bool {
	eff := d.Path
	if d.Resolved != "" {
		eff = d.Resolved
	}
	return eff == "/dev/null" || !d.Write && (c.res.errno == "" || c.res.errno == "ENOENT") &&
		(noise(d.Path) || noise(eff) || p.lead(c.pr).agentd && (goRuntimeOpen(d.Path) || goRuntimeOpen(eff)))
}

// sysLink records link(old, new).
func (p *parser) sysLink(c sysCall) {
	p.emit(c.pid, c.at, trace.TypeLink, &trace.File{Path: p.dirPath(c, -1, 0), NewPath: p.dirPath(c, -1, 1), Errno: c.res.errno})
}

// sysLinkat records linkat, keeping its flags; with AT_EMPTY_PATH and an
// empty path the file linked is the descriptor's own.
func (p *parser) sysLinkat(c sysCall) {
	d := &trace.File{Path: p.dirPath(c, 0, 1), NewPath: p.dirPath(c, 2, 3), Errno: c.res.errno}
	if f := c.arg(4); f != "" && f != "0" {
		d.Flags = f
		if strings.Contains(f, "AT_EMPTY_PATH") && stringArg(c.arg(1)) == "" {
			_, d.Path = fdArg(c.arg(0))
		}
	}
	p.emit(c.pid, c.at, trace.TypeLink, d)
}

// sysSymlink records symlink and symlinkat as a link event flagged
// "symlink", from the target to the link.
func (p *parser) sysSymlink(c sysCall) {
	target := stringArg(c.arg(0))
	var lp string
	if c.name == "symlink" {
		lp = p.dirPath(c, -1, 1)
	} else {
		lp = p.dirPath(c, 1, 2)
	}
	// A relative target is relative to the link's folder.
	if !strings.HasPrefix(target, "/") && strings.HasPrefix(lp, "/") {
		target = resolve(path.Dir(lp), target)
	}
	p.emit(c.pid, c.at, trace.TypeLink, &trace.File{Path: p.fdPath(c.pr, resolve("", target)), NewPath: lp, Flags: "symlink", Errno: c.res.errno})
}

// sysUnlink records unlink and rmdir.
func (p *parser) sysUnlink(c sysCall) {
	p.emit(c.pid, c.at, trace.TypeUnlink, &trace.File{Path: p.dirPath(c, -1, 0), Errno: c.res.errno})
}

// sysUnlinkat records unlinkat, keeping its flags (AT_REMOVEDIR).
func (p *parser) sysUnlinkat(c sysCall) {
	d := &trace.File{Path: p.dirPath(c, 0, 1), Errno: c.res.errno}
	if f := c.arg(2); f != "0" {
		d.Flags = f
	}
	p.emit(c.pid, c.at, trace.TypeUnlink, d)
}

// sysRename records rename(old, new).
func (p *parser) sysRename(c sysCall) {
	p.emit(c.pid, c.at, trace.TypeRename, &trace.File{Path: p.dirPath(c, -1, 0), NewPath: p.dirPath(c, -1, 1), Errno: c.res.errno})
}

// sysRenameat records renameat and renameat2, keeping renameat2's flags.
func (p *parser) sysRenameat(c sysCall) {
	d := &trace.File{Path: p.dirPath(c, 0, 1), NewPath: p.dirPath(c, 2, 3), Errno: c.res.errno}
	if f := c.arg(4); f != "" && f != "0" {
		d.Flags = f
	}
	p.emit(c.pid, c.at, trace.TypeRename, d)
}

// sysChmod records chmod(path, mode).
func (p *parser) sysChmod(c sysCall) {
	p.emit(c.pid, c.at, trace.TypeChmod, &trace.File{Path: p.dirPath(c, -1, 0), Mode: c.arg(1), Errno: c.res.errno})
}

// sysFchmod records fchmod, on the path strace annotated its descriptor
// with.
func (p *parser) sysFchmod(c sysCall) {
	_, ann := fdArg(c.arg(0))
	p.emit(c.pid, c.at, trace.TypeChmod, &trace.File{Path: ann, Mode: c.arg(1), Errno: c.res.errno})
}

// sysFchmodat records fchmodat(dirfd, path, mode).
func (p *parser) sysFchmodat(c sysCall) {
	p.emit(c.pid, c.at, trace.TypeChmod, &trace.File{Path: p.dirPath(c, 0, 1), Mode: c.arg(2), Errno: c.res.errno})
}

// sysMkdir records mkdir(path, mode).
func (p *parser) sysMkdir(c sysCall) {
	p.emit(c.pid, c.at, trace.TypeMkdir, &trace.File{Path: p.dirPath(c, -1, 0), Mode: c.arg(1), Errno: c.res.errno})
}

// sysMkdirat records mkdirat(dirfd, path, mode).
func (p *parser) sysMkdirat(c sysCall) {
	p.emit(c.pid, c.at, trace.TypeMkdir, &trace.File{Path: p.dirPath(c, 0, 1), Mode: c.arg(2), Errno: c.res.errno})
}

// sysChdir follows a chdir that worked, for the relative paths to come;
// it is no event.
func (p *parser) sysChdir(c sysCall) {
	if c.res.known && c.res.val == 0 {
		p.setCwd(c.pr, p.dirPath(c, -1, 0))
	}
}

// sysFchdir follows an fchdir that worked to the path strace annotated
// its descriptor with; it is no event.
func (p *parser) sysFchdir(c sysCall) {
	if _, ann := fdArg(c.arg(0)); c.res.known && c.res.val == 0 && strings.HasPrefix(ann, "/") {
		p.setCwd(c.pr, ann)
	}
}

// sysConnect records connect and bind with the address asked for; a call
// whose address cannot be read is a skipped line.
func (p *parser) sysConnect(c sysCall) {
	n, ok := sockaddr(c.arg(1))
	if !ok {
		p.stats.Skipped++
		return
	}
	_, ann := fdArg(c.arg(0))
	n.Proto, n.Errno = protoOf(ann), c.res.errno
	typ := trace.TypeConnect
	if c.name == "bind" {
		typ = trace.TypeBind
	}
	p.emit(c.pid, c.at, typ, n)
}

// sysSendto records sendto and sendmsg that name an address, with the
// bytes sent.
func (p *parser) sysSendto(c sysCall) {
	addr := c.arg(4)
	if c.name == "sendmsg" {
		addr, _ = structField(c.arg(1), "msg_name")
	}
	n, ok := sockaddr(addr)
	if !ok {
		return // a connected socket: its connect was the event
	}
	_, ann := fdArg(c.arg(0))
	n.Proto, n.Errno = protoOf(ann), c.res.errno
	if c.res.val > 0 {
		n.Bytes = c.res.val
	}
	p.emit(c.pid, c.at, trace.TypeSendto, n)
}

// sysWrite records the write family's writes that reached a file (not a
// pipe, socket or device), folded by parser.write.
func (p *parser) sysWrite(c sysCall) {
	_, ann := fdArg(c.arg(0))
	if !strings.HasPrefix(ann, "/") || strings.HasPrefix(ann, "/dev/") || c.res.val <= 0 {
		return
	}
	p.write(c.pid, c.at, ann, c.res.val)
}

// sysClone records clone, clone3, fork and vfork: the child's state
// inherits the cwd; a new thread joins its parent's thread group and is
// counted, a new process is a clone event.
func (p *parser) sysClone(c sysCall) {
	if !c.res.known || c.res.val <= 0 || c.res.val > 1<<30 {
		return
	}
	child := int(c.res.val)
	thread := strings.Contains(c.raw, "CLONE_THREAD")
	cp := p.procs[child]
	if cp == nil {
		cp = &proc{tgid: child, cwd: c.pr.cwd}
		if len(p.procs) < maxProcs {
			p.procs[child] = cp
		}
	}
	if thread {
		cp.tgid = c.pr.tgid
		p.stats.Threads++
		return
	}
	cp.tgid, cp.ppid = child, c.pr.tgid
	p.stats.Processes++
	p.emit(c.pid, c.at, trace.TypeClone, &trace.Process{ChildPID: child})
}
