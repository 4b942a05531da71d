package strace_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxctl/sandboxctl/strace"
	"github.com/sandboxctl/sandboxctl/trace"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json")

// The fixtures were captured by testdata/capture.sh in a work folder shown
// as /work/t.
const fixtureCwd = "/work/t"

func TestGolden(t *testing.T) {
	logs, err := filepath.Glob("testdata/*.log")
	if err != nil || len(logs) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, log := range logs {
		name := strings.TrimSuffix(filepath.Base(log), ".log")
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(log)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			evs, st, err := strace.Parse(f, "call-"+name, strace.Options{Cwd: fixtureCwd, Agentd: fixtureCwd + "/agentd"})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, err := json.MarshalIndent(struct {
				Stats  strace.Stats  `json:"stats"`
				Events []trace.Event `json:"events"`
			}{st, evs}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)+"\n"); diff != "" {
				t.Errorf("Parse(%s) mismatch (-want +got):\n%s", log, diff)
			}
		})
	}
}

func at(sec, usec int64) time.Time { return time.Unix(sec, usec*1000).UTC() }

func TestParseLines(t *testing.T) {
	tests := []struct {
		name string
		log  string
		opts strace.Options
		want []trace.Event
	}{
		{
			name: "execve argv with escapes and truncation",
			log:  `10 1700000000.000001 execve("/bin/sh", ["sh", "-c", "echo \"a\\tb\"\n\x41\101\303\251", "long"..., ...], ["A=1"]) = 0` + "\n",
			want: []trace.Event{{Time: at(1700000000, 1), Type: trace.TypeExec, PID: 10,
				Data: &trace.Exec{Path: "/bin/sh", Argv: []string{"sh", "-c", "echo \"a\\tb\"\nAAé", "long...", "..."}}}},
		},
		{
			name: "failed relative exec resolved against cwd",
			log:  `10 1700000000.5 execve("./x", ["./x"], 0x7ffd /* 3 vars */) = -1 ENOENT (No such file or directory)` + "\n",
			opts: strace.Options{Cwd: "/home/u"},
			want: []trace.Event{{Time: at(1700000000, 500000), Type: trace.TypeExec, PID: 10,
				Data: &trace.Exec{Path: "/home/u/x", Argv: []string{"./x"}, Cwd: "/home/u", Errno: "ENOENT"}}},
		},
		{
			name: "openat with AT_FDCWD annotation and write flags",
			log:  `10 1700000000.000002 openat(AT_FDCWD</home/u>, "../u/.bashrc", O_WRONLY|O_CREAT|O_APPEND, 0644) = 3</home/u/.bashrc>` + "\n",
			want: []trace.Event{{Time: at(1700000000, 2), Type: trace.TypeOpen, PID: 10,
				Data: &trace.File{Path: "/home/u/.bashrc", Flags: "O_WRONLY|O_CREAT|O_APPEND", Mode: "0644", Write: true}}},
		},
		{
			name: "openat with plain AT_FDCWD uses tracked cwd after chdir",
			log: "10 1.000000 chdir(\"/etc\") = 0\n" +
				"10 1.000001 openat(AT_FDCWD, \"ssh/ssh_config\", O_RDONLY) = 3\n" +
				"10 1.000002 chdir(\"/nonexistent\") = -1 ENOENT (No such file or directory)\n" +
				"10 1.000003 open(\"passwd\", O_RDONLY) = 3\n",
			opts: strace.Options{Cwd: "/"},
			want: []trace.Event{
				{Time: at(1, 1), Type: trace.TypeOpen, PID: 10, Data: &trace.File{Path: "/etc/ssh/ssh_config", Flags: "O_RDONLY"}},
				{Time: at(1, 3), Type: trace.TypeOpen, PID: 10, Data: &trace.File{Path: "/etc/passwd", Flags: "O_RDONLY"}},
			},
		},
		{
			name: "openat with dirfd and fchdir",
			log: "10 1.000000 openat(3</home/u/.ssh>, \"id_rsa\", O_RDONLY) = 4</home/u/.ssh/id_rsa>\n" +
				"10 1.000001 fchdir(3</home/u/.aws>) = 0\n" +
				"10 1.000002 unlink(\"credentials\") = 0\n" +
				"10 1.000003 openat(5, \"x\", O_RDONLY) = -1 EACCES (Permission denied)\n",
			want: []trace.Event{
				{Time: at(1, 0), Type: trace.TypeOpen, PID: 10, Data: &trace.File{Path: "/home/u/.ssh/id_rsa", Flags: "O_RDONLY"}},
				{Time: at(1, 2), Type: trace.TypeUnlink, PID: 10, Data: &trace.File{Path: "/home/u/.aws/credentials"}},
				{Time: at(1, 3), Type: trace.TypeOpen, PID: 10, Data: &trace.File{Path: "x", Flags: "O_RDONLY", Errno: "EACCES"}},
			},
		},
		{
			name: "escaped annotation path",
			log:  `10 1.000000 openat(AT_FDCWD</t/a\76b\nc>, "f", O_RDONLY) = 3</t/a\76b\nc/f>` + "\n",
			want: []trace.Event{{Time: at(1, 0), Type: trace.TypeOpen, PID: 10,
				Data: &trace.File{Path: "/t/a>b\nc/f", Flags: "O_RDONLY"}}},
		},
		{
			name: "openat2 and creat",
			log: "10 1.000000 openat2(AT_FDCWD</r>, \"a\", {flags=O_RDWR|O_CLOEXEC, mode=0600, resolve=RESOLVE_NO_SYMLINKS}, 24) = 3</r/a>\n" +
				"10 1.000001 creat(\"b\", 0644) = 4</r/b>\n",
			opts: strace.Options{Cwd: "/r"},
			want: []trace.Event{
				{Time: at(1, 0), Type: trace.TypeOpen, PID: 10, Data: &trace.File{Path: "/r/a", Flags: "O_RDWR|O_CLOEXEC", Mode: "0600", Write: true}},
				{Time: at(1, 1), Type: trace.TypeOpen, PID: 10, Data: &trace.File{Path: "/r/b", Flags: "O_CREAT|O_WRONLY|O_TRUNC", Mode: "0644", Write: true}},
			},
		},
		{
			name: "unfinished and resumed",
			log: "10 1.000000 openat(AT_FDCWD</r>, \"/etc/shadow\", O_RDONLY <unfinished ...>\n" +
				"11 1.000001 +++ exited with 0 +++\n" +
				"10 1.000002 <... openat resumed>) = -1 EACCES (Permission denied)\n",
			want: []trace.Event{
				{Time: at(1, 1), Type: trace.TypeExit, PID: 11, Data: &trace.Process{}},
				{Time: at(1, 0), Type: trace.TypeOpen, PID: 10, Data: &trace.File{Path: "/etc/shadow", Flags: "O_RDONLY", Errno: "EACCES"}},
			},
		},
		{
			name: "resumed without a start is skipped",
			log:  "10 1.000002 <... openat resumed>) = 3\n",
			want: nil,
		},
		{
			name: "process tree: clone, vfork child before parent resumes, threads",
			log: "10 1.000000 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f) = 11\n" +
				"10 1.000001 vfork( <unfinished ...>\n" +
				"12 1.000002 execve(\"/bin/true\", [\"true\"], []) = 0\n" +
				"10 1.000003 <... vfork resumed>) = 12\n" +
				"12 1.000004 +++ exited with 0 +++\n" +
				"10 1.000005 clone3({flags=CLONE_VM|CLONE_THREAD, exit_signal=0} => {parent_tid=[13]}, 88) = 13\n" +
				"10 1.000005 clone(child_stack=0x7f, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD, parent_tid=[14], tls=0x7f) = 14\n" +
				"14 1.000005 +++ exited with 0 +++\n" +
				"13 1.000006 openat(AT_FDCWD</>, \"/etc/hostname\", O_RDONLY) = 3</etc/hostname>\n" +
				"13 1.000007 +++ exited with 0 +++\n" +
				"11 1.000008 +++ killed by SIGKILL (core dumped) +++\n" +
				"10 1.000009 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_KILLED, si_pid=11} ---\n" +
				"10 1.000010 +++ exited with 3 +++\n",
			want: []trace.Event{
				{Time: at(1, 0), Type: trace.TypeClone, PID: 10, Data: &trace.Process{ChildPID: 11}},
				{Time: at(1, 2), Type: trace.TypeExec, PID: 12, PPID: 10, Data: &trace.Exec{Path: "/bin/true", Argv: []string{"true"}}},
				{Time: at(1, 1), Type: trace.TypeClone, PID: 10, Data: &trace.Process{ChildPID: 12}},
				{Time: at(1, 4), Type: trace.TypeExit, PID: 12, PPID: 10, Data: &trace.Process{}},
				{Time: at(1, 6), Type: trace.TypeOpen, PID: 10, Data: &trace.File{Path: "/etc/hostname", Flags: "O_RDONLY"}},
				{Time: at(1, 8), Type: trace.TypeExit, PID: 11, PPID: 10, Data: &trace.Process{Signal: "SIGKILL"}},
				{Time: at(1, 10), Type: trace.TypeExit, PID: 10, Data: &trace.Process{ExitCode: 3}},
			},
		},
		{
			name: "sockets",
			log: "10 1.000000 connect(3<TCP:[1234]>, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr(\"198.18.0.7\")}, 16) = -1 EINPROGRESS (Operation now in progress)\n" +
				"10 1.000001 connect(4<UDPv6:[5]>, {sa_family=AF_INET6, sin6_port=htons(53), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, \"fd00::1\", &sin6_addr), sin6_scope_id=0}, 28) = 0\n" +
				"10 1.000002 connect(5<UNIX:[6]>, {sa_family=AF_UNIX, sun_path=\"/var/run/docker.sock\"}, 110) = -1 ENOENT (No such file or directory)\n" +
				"10 1.000003 bind(6<UNIX:[7]>, {sa_family=AF_UNIX, sun_path=@\"abs\\0x\"}, 9) = 0\n" +
				"10 1.000004 sendto(7<UDP:[8]>, \"\\x12\\x34\", 2, 0, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr(\"10.0.0.1\")}, 16) = 2\n" +
				"10 1.000005 sendto(3<TCP:[1.2.3.4:5->6.7.8.9:80]>, \"GET /\", 5, MSG_NOSIGNAL, NULL, 0) = 5\n" +
				"10 1.000006 sendmsg(7<UDP:[8]>, {msg_name={sa_family=AF_INET, sin_port=htons(5353), sin_addr=inet_addr(\"224.0.0.251\")}, msg_namelen=16, msg_iov=[{iov_base=\"x\", iov_len=1}], msg_iovlen=1, msg_controllen=0, msg_flags=0}, 0) = 1\n" +
				"10 1.000007 connect(8<NETLINK:[9]>, {sa_family=AF_NETLINK, nl_pid=0, nl_groups=00000000}, 12) = 0\n",
			want: []trace.Event{
				{Time: at(1, 0), Type: trace.TypeConnect, PID: 10, Data: &trace.Net{Family: "inet", Addr: "198.18.0.7", Port: 443, Proto: "tcp", Errno: "EINPROGRESS"}},
				{Time: at(1, 1), Type: trace.TypeConnect, PID: 10, Data: &trace.Net{Family: "inet6", Addr: "fd00::1", Port: 53, Proto: "udp"}},
				{Time: at(1, 2), Type: trace.TypeConnect, PID: 10, Data: &trace.Net{Family: "unix", Addr: "/var/run/docker.sock", Errno: "ENOENT"}},
				{Time: at(1, 3), Type: trace.TypeBind, PID: 10, Data: &trace.Net{Family: "unix", Addr: "@abs\x00x"}},
				{Time: at(1, 4), Type: trace.TypeSendto, PID: 10, Data: &trace.Net{Family: "inet", Addr: "10.0.0.1", Port: 53, Proto: "udp", Bytes: 2}},
				{Time: at(1, 6), Type: trace.TypeSendto, PID: 10, Data: &trace.Net{Family: "inet", Addr: "224.0.0.251", Port: 5353, Proto: "udp", Bytes: 1}},
				{Time: at(1, 7), Type: trace.TypeConnect, PID: 10, Data: &trace.Net{Family: "netlink"}},
			},
		},
		{
			name: "file family",
			log: "10 1.000000 rename(\"a\", \"/t/b\") = 0\n" +
				"10 1.000001 renameat2(AT_FDCWD</t>, \"c\", 3</u>, \"d\", RENAME_NOREPLACE) = 0\n" +
				"10 1.000002 chmod(\"e\", 0755) = 0\n" +
				"10 1.000003 fchmod(3</t/f>, 0700) = 0\n" +
				"10 1.000004 fchmodat(AT_FDCWD</t>, \"g\", 04755) = -1 EPERM (Operation not permitted)\n" +
				"10 1.000005 mkdir(\"h\", 0777) = 0\n" +
				"10 1.000006 mkdirat(AT_FDCWD</t>, \"i\", 0700) = -1 EEXIST (File exists)\n" +
				"10 1.000007 unlinkat(AT_FDCWD</t>, \"j\", AT_REMOVEDIR) = 0\n" +
				"10 1.000008 rmdir(\"k\") = 0\n",
			opts: strace.Options{Cwd: "/t"},
			want: []trace.Event{
				{Time: at(1, 0), Type: trace.TypeRename, PID: 10, Data: &trace.File{Path: "/t/a", NewPath: "/t/b"}},
				{Time: at(1, 1), Type: trace.TypeRename, PID: 10, Data: &trace.File{Path: "/t/c", NewPath: "/u/d", Flags: "RENAME_NOREPLACE"}},
				{Time: at(1, 2), Type: trace.TypeChmod, PID: 10, Data: &trace.File{Path: "/t/e", Mode: "0755"}},
				{Time: at(1, 3), Type: trace.TypeChmod, PID: 10, Data: &trace.File{Path: "/t/f", Mode: "0700"}},
				{Time: at(1, 4), Type: trace.TypeChmod, PID: 10, Data: &trace.File{Path: "/t/g", Mode: "04755", Errno: "EPERM"}},
				{Time: at(1, 5), Type: trace.TypeMkdir, PID: 10, Data: &trace.File{Path: "/t/h", Mode: "0777"}},
				{Time: at(1, 6), Type: trace.TypeMkdir, PID: 10, Data: &trace.File{Path: "/t/i", Mode: "0700", Errno: "EEXIST"}},
				{Time: at(1, 7), Type: trace.TypeUnlink, PID: 10, Data: &trace.File{Path: "/t/j", Flags: "AT_REMOVEDIR"}},
				{Time: at(1, 8), Type: trace.TypeUnlink, PID: 10, Data: &trace.File{Path: "/t/k"}},
			},
		},
		{
			name: "writes to one file fold; pipes and devices are ignored",
			log: "10 1.000000 write(1</t/out>, \"a\", 1) = 1\n" +
				"10 1.000001 write(1</t/out>, \"bc\", 2) = 2\n" +
				"10 1.000002 write(2<pipe:[5]>, \"x\", 1) = 1\n" +
				"10 1.000003 write(3</dev/null<char 1:3>>, \"x\", 1) = 1\n" +
				"10 1.000004 write(1</t/out>, \"d\", 1) = 1\n",
			want: []trace.Event{
				{Time: at(1, 0), Type: trace.TypeWrite, PID: 10, Count: 3, Data: &trace.File{Path: "/t/out", Bytes: 4, Write: true}},
			},
		},
		{
			name: "loader noise dropped",
			log: "10 1.000000 openat(AT_FDCWD</t>, \"/etc/ld.so.cache\", O_RDONLY|O_CLOEXEC) = 3</etc/ld.so.cache>\n" +
				"10 1.000001 openat(AT_FDCWD</t>, \"/lib/x86_64-linux-gnu/libc.so.6\", O_RDONLY|O_CLOEXEC) = 3</usr/lib/x86_64-linux-gnu/libc.so.6>\n" +
				"10 1.000002 openat(AT_FDCWD</t>, \"/usr/lib/evil\", O_WRONLY|O_CREAT, 0644) = 3</usr/lib/evil>\n",
			want: []trace.Event{
				{Time: at(1, 2), Type: trace.TypeOpen, PID: 10, Data: &trace.File{Path: "/usr/lib/evil", Flags: "O_WRONLY|O_CREAT", Mode: "0644", Write: true}},
			},
		},
		{
			name: "agentd's own execs and Go runtime start-up are noise, its tool's work is not",
			log: "10 1.000000 execve(\"/a/agentd\", [\"agentd\", \"__tool\", \"read_file\"], []) = 0\n" +
				"10 1.000001 openat(AT_FDCWD</h>, \"/proc/self/cgroup\", O_RDONLY|O_CLOEXEC) = 3</proc/10/cgroup>\n" +
				"10 1.000002 openat(AT_FDCWD</h>, \"/h/.ssh/id_rsa\", O_RDONLY|O_CLOEXEC) = 3</h/.ssh/id_rsa>\n" +
				"11 1.000003 execve(\"/bin/cat\", [\"cat\"], []) = 0\n" +
				"11 1.000004 openat(AT_FDCWD</h>, \"/proc/self/cgroup\", O_RDONLY) = 3</proc/11/cgroup>\n",
			opts: strace.Options{Agentd: "/a/agentd"},
			want: []trace.Event{
				{Time: at(1, 2), Type: trace.TypeOpen, PID: 10, Data: &trace.File{Path: "/h/.ssh/id_rsa", Flags: "O_RDONLY|O_CLOEXEC"}},
				{Time: at(1, 3), Type: trace.TypeExec, PID: 11, Data: &trace.Exec{Path: "/bin/cat", Argv: []string{"cat"}}},
				{Time: at(1, 4), Type: trace.TypeOpen, PID: 11, Data: &trace.File{Path: "/proc/self/cgroup", Flags: "O_RDONLY", Resolved: "/proc/11/cgroup"}},
			},
		},
		{
			name: "under a fake clock the loader's and libfaketime's own work is noise, the skill's is not",
			log: "10 1.000000 openat(AT_FDCWD</h>, \"/etc/ld.so.preload\", O_RDONLY|O_CLOEXEC) = 3</etc/ld.so.preload>\n" +
				"10 1.000001 openat(AT_FDCWD</h>, \"/etc/faketimerc\", O_RDONLY) = 3</etc/faketimerc>\n" +
				"10 1.000002 openat(AT_FDCWD</h>, \"/dev/shm/faketime_shm_10\", O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600) = 4</dev/shm/faketime_shm_10>\n" +
				"10 1.000003 link(\"/dev/shm/sem.Xa1b2c\", \"/dev/shm/sem.faketime_sem_10\") = 0\n" +
				"10 1.000004 unlink(\"/dev/shm/sem.Xa1b2c\") = 0\n" +
				"10 1.000004 openat(AT_FDCWD</h>, \"/h/.faketimerc\", O_RDONLY) = -1 ENOENT (No such file or directory)\n" +
				"10 1.000004 openat(AT_FDCWD</h>, \"(null)/.faketimerc\", O_RDONLY) = -1 ENOENT (No such file or directory)\n" +
				"10 1.000004 openat(AT_FDCWD</h>, \"(null)\", O_RDONLY) = -1 ENOENT (No such file or directory)\n" +
				"10 1.000005 openat(AT_FDCWD</h>, \"/etc/ld.so.preload\", O_WRONLY|O_APPEND) = 5</etc/ld.so.preload>\n" +
				"10 1.000006 openat(AT_FDCWD</h>, \"/h/.aws/credentials\", O_RDONLY) = 6</h/.aws/credentials>\n",
			opts: strace.Options{FakeClock: true},
			want: []trace.Event{
				{Time: at(1, 5), Type: trace.TypeOpen, PID: 10, Data: &trace.File{Path: "/etc/ld.so.preload", Flags: "O_WRONLY|O_APPEND", Write: true}},
				{Time: at(1, 6), Type: trace.TypeOpen, PID: 10, Data: &trace.File{Path: "/h/.aws/credentials", Flags: "O_RDONLY"}},
			},
		},
		{
			name: "without a fake clock the same reads are kept",
			log:  "10 1.000000 openat(AT_FDCWD</h>, \"/etc/faketimerc\", O_RDONLY) = 3</etc/faketimerc>\n",
			want: []trace.Event{
				{Time: at(1, 0), Type: trace.TypeOpen, PID: 10, Data: &trace.File{Path: "/etc/faketimerc", Flags: "O_RDONLY"}},
			},
		},
		{
			name: "garbage lines are skipped",
			log: "strace: Process 5 attached\n\n10\n10 x.y openat(\n10 1.0 )))((( = 3\n10 1.0 openat(AT_FDCWD, \"a\" = 3\n" +
				"10 1.0 +++ exited with x +++\n10 1.0 <... openat resumed> = 3\n",
			want: nil,
		},
		{
			name: "single process log without pids",
			log:  "1.000000 openat(AT_FDCWD, \"/etc/passwd\", O_RDONLY) = 3\n",
			want: []trace.Event{{Time: at(1, 0), Type: trace.TypeOpen, Data: &trace.File{Path: "/etc/passwd", Flags: "O_RDONLY"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := strace.Parse(strings.NewReader(tc.log), "c7", tc.opts)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			for i := range tc.want {
				tc.want[i].Source = trace.SourceSyscall
				tc.want[i].ToolCallID = "c7"
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCaps(t *testing.T) {
	line := "10 1.000000 openat(AT_FDCWD</t>, \"/etc/passwd\", O_RDONLY) = 3</etc/passwd>\n"
	long := "10 1.000000 execve(\"/bin/x\", [\"" + strings.Repeat("A", 5000) + "\"], []) = 0\n"
	tests := []struct {
		name      string
		log       string
		opts      strace.Options
		wantN     int
		wantStats strace.Stats
	}{
		{
			name:      "long line skipped, next parsed",
			log:       long + line,
			opts:      strace.Options{MaxLineBytes: 1000},
			wantN:     1,
			wantStats: strace.Stats{Lines: 2, Events: 1, LongLines: 1},
		},
		{
			name:      "line count capped",
			log:       strings.Repeat(line, 10),
			opts:      strace.Options{MaxLines: 4},
			wantN:     4,
			wantStats: strace.Stats{Lines: 4, Events: 4, LinesCapped: true},
		},
		{
			name:      "event count capped",
			log:       strings.Repeat(line, 10),
			opts:      strace.Options{MaxEvents: 3},
			wantN:     3,
			wantStats: strace.Stats{Lines: 10, Events: 3, DroppedEvents: 7},
		},
		{
			name:      "last line without newline",
			log:       strings.TrimSuffix(line, "\n"),
			wantN:     1,
			wantStats: strace.Stats{Lines: 1, Events: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			evs, st, err := strace.Parse(strings.NewReader(tc.log), "c", tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != tc.wantN {
				t.Errorf("got %d events, want %d", len(evs), tc.wantN)
			}
			if diff := cmp.Diff(tc.wantStats, st); diff != "" {
				t.Errorf("Stats mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	logs, _ := filepath.Glob("testdata/*.log")
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("10 1.0 openat(3<TCP:[1:2->3:4]>, \"\\x\\\", <<<>>> = -1 E\n10 1.0 <... x resumed>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, st, err := strace.Parse(bytes.NewReader(b), "f", strace.Options{MaxLineBytes: 4096, KeepNoise: true})
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(evs)) != st.Events {
			t.Fatalf("%d events, stats say %d", len(evs), st.Events)
		}
		for _, e := range evs {
			if trace.NewData(e.Type) == nil || e.Data == nil || e.ToolCallID != "f" {
				t.Fatalf("bad event %+v", e)
			}
		}
	})
}

func BenchmarkParse(b *testing.B) {
	var log []byte
	logs, _ := filepath.Glob("testdata/*.log")
	for _, l := range logs {
		d, err := os.ReadFile(l)
		if err != nil {
			b.Fatal(err)
		}
		log = append(log, d...)
	}
	lines := bytes.Count(log, []byte("\n"))
	b.SetBytes(int64(len(log)))
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := strace.Parse(bytes.NewReader(log), "b", strace.Options{KeepNoise: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}
