#!/bin/sh
# capture.sh regenerates the *.log fixtures on a Linux host with strace, as
# root, with the flags mcptools passes to strace (keep them in step with
# mcptools.StraceArgs). The logs are then frozen: the golden files are
# rewritten with `go test ./strace -update`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/strace-capture.XXXXXX)
chmod 0777 "$work"
trap 'rm -rf "$work"' EXIT
user=${CAPTURE_USER:-nobody}
calls=execve,execveat,open,openat,openat2,creat,unlink,unlinkat,rmdir,rename,renameat,renameat2,chmod,fchmod,fchmodat,mkdir,mkdirat,chdir,fchdir,connect,bind,sendto,sendmsg,clone,clone3,fork,vfork,link,linkat,symlink,symlinkat
denied=io_uring_setup,io_uring_enter,io_uring_register,pidfd_getfd,process_vm_readv,process_vm_writev,process_madvise,userfaultfd,open_by_handle_at
run() { # name trace-list script
	(cd "$work" && strace -f --seccomp-bpf -I 2 -ttt -v -yy -s 4096 -u "$user" -e trace="$2,$denied" -e inject="$denied:error=EPERM" -o "$work/$1.log" \
		env -i HOME="$work" PATH=/usr/bin:/bin sh -c "$3" >/dev/null 2>&1) || true
	sed "s|$work|/work/t|g" "$work/$1.log" >"$here/$1.log"
}
run files "$calls" 'echo hi > f.txt; mkdir -p d/e; mv f.txt d/g.txt; chmod 600 d/g.txt; rm d/g.txt; rmdir d/e; cat /etc/hostname; printf x > "we>ird
na\"me"; cat /nonexistent; python3 -c "
import os
os.chdir(\"d\")
d=os.open(\"/etc\", os.O_RDONLY)
os.close(os.open(\"hostname\", os.O_RDONLY, dir_fd=d))
open(\"rel.txt\", \"a\").close()
os.rename(\"rel.txt\", \"../rel2.txt\")
os.unlink(\"../rel2.txt\")
os.fchdir(d)
open(\"passwd\").close()
"'
run net "$calls" 'python3 -c "
import socket
s=socket.socket(); s.bind((\"127.0.0.1\",0)); s.listen(); c=socket.socket(); c.connect(s.getsockname()); c.send(b\"x\")
u=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); u.sendto(b\"q\\x00\\n\",(\"127.0.0.1\",53))
u6=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM); u6.sendto(b\"q\",(\"::1\",53))
t=socket.socket(socket.AF_INET6); t.settimeout(0.2)
try: t.connect((\"::1\",9))
except Exception: pass
x=socket.socket(socket.AF_UNIX)
try: x.connect(\"/work/nosock\")
except Exception: pass
a=socket.socket(socket.AF_UNIX); a.bind(\"\\0abstract\")
"'
run procs "$calls" '(sleep 0.3; echo bg > bg.txt) & sleep 5 & k=$!; sleep 0.1; kill -9 $k; python3 -c "
import subprocess, threading
subprocess.run([\"true\"])
t=threading.Thread(target=lambda: open(\"/etc/hostname\").close()); t.start(); t.join()
"; ./nope 2>/dev/null; /bin/echo $(seq 1 40) "$(head -c 5000 /dev/zero | tr "\0" a)" >/dev/null; wait; exit 3'
run writes "$calls,write" 'for i in 1 2 3; do echo line$i; done > out.txt; echo a >> out.txt; echo b > other.txt'
# The tool server's own path: the shim, a Go file tool, bash with a
# background process (agentd played by the mcptools test binary).
if command -v go >/dev/null; then
	(cd "$here/../.." && go test -c -o "$work/agentd" ./mcptools)
	chmod 0755 "$work/agentd"
	printf '{"path":"/etc/hostname"}' >"$work/args.json"
	run tool "$calls" "./agentd __shim -- ./agentd __tool read_file <args.json; ./agentd __shim -- /bin/bash -c 'echo x > w.txt; (sleep 0.2; cat /etc/hostname) &'; sleep 0.5"
fi
# reads: the same secret named five ways (issue 13 item 2), and syscalls the
# sandbox refuses (io_uring, pidfd_getfd).
run reads "$calls" 'mkdir -p .aws && echo "[default]" > .aws/credentials && ln -s .aws/credentials cfg && cat cfg; cat /proc/self/root$HOME/.aws/credentials; ln .aws/credentials notes.txt && cat notes.txt; cat .aws/../.aws/credentials; exec 3<.aws/credentials; cat /dev/fd/3; python3 -c "
import ctypes, os
libc = ctypes.CDLL(None)
libc.syscall(425, 8, ctypes.create_string_buffer(120))
libc.syscall(438, os.getpid(), 0, 0)
os.link(\"/proc/self/fd/3\", \"again.txt\", src_dir_fd=None, follow_symlinks=True)
"'
