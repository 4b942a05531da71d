package orchestrator

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/traceplan"
)

// Paths inside the containers (the image and mcptools agree on them).
const (
	// AgentBin is where the host's own static binary is copied. The name
	// looks like the agent harness a skill normally runs under.
	AgentBin = "/usr/local/lib/agent/agentd"
	// JailConfig is the jail's netcapture configuration file.
	JailConfig = "/run/agentd/jail.json"
	// CallLogDir holds one strace log per tool call (root only).
	CallLogDir = "/var/lib/agentd/calls"
	// JailDir holds the jail's event log and spooled payloads, on the
	// jail's own file system (the sandbox cannot reach it); they are
	// copied out after the jail closed the log.
	JailDir = "/var/lib/agentd/jail"
	// InstallCA installs a PEM CA into every trust store of the image.
	InstallCA = "/usr/local/lib/agent/install-ca"
	// CAPath is where the per-trace CA is placed before install.
	CAPath = "/usr/local/share/ca-certificates/corp-root-ca.crt"
	// UserUID and UserGID are the skill user's ids; the image bakes a user
	// with them and the orchestrator renames it.
	UserUID = 1000
	UserGID = 1000
)

// skillDirIn is where the skill is installed in home, read-only: where a
// coding agent keeps its skills.
func skillDirIn(home, name string) string {
	return home + "/.claude/skills/" + name
}

// sandboxCaps are the only capabilities the sandbox container keeps. They are
// for the root-owned tool server and tracer: strace needs SYS_PTRACE and
// SETUID/SETGID to become the user; KILL ends a timed-out tree. The skill's
// processes run as the user under no-new-privileges and have none of them.
var sandboxCaps = []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETUID", "SETGID", "SYS_PTRACE"}

// jailSpec is the network jail: it owns the network namespace (no interface
// but loopback), runs the sinks as root with NET_ADMIN only, and carries the
// plausible hostname (a container that joins its namespace takes it).
func jailSpec(p traceplan.Plan, image, hostname string, files []File) Spec {
	return Spec{
		Name:            "sandboxctl-" + p.TraceID + "-jail",
		Role:            RoleJail,
		Image:           image,
		Labels:          map[string]string{LabelTrace: p.TraceID, LabelRole: RoleJail},
		Cmd:             []string{AgentBin, "__jail", "--config", JailConfig},
		User:            "0:0",
		Hostname:        hostname,
		NetworkMode:     "none",
		CapDrop:         []string{"ALL"},
		CapAdd:          []string{"NET_ADMIN"},
		NoNewPrivileges: true,
		Memory:          512 << 20,
		PIDs:            256,
		NanoCPUs:        500_000_000,
		Sysctls: map[string]string{"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1",
			// No unprivileged ICMP sockets (Docker allows them by
			// default): a ping's payload would reach no sink. The
			// attempt still shows as the syscall that fails.
			"net.ipv4.ping_group_range": "1 0"},
		Files: files,
		// The main process's output is only the jail's status lines and
		// errors: events go to its log file (JailDir).
		LogConfig: LogConfig{Type: "json-file", Config: map[string]string{"max-size": "1m", "max-file": "1"}},
	}
}

// sandboxSpec is the container the skill runs in. It joins the jail's
// network namespace, so every packet it sends lands in a sink. The places
// the user can write are tmpfs mounts charged to the container's memory, so
// a skill that fills the disk fills its own quota, not the host's disk.
func sandboxSpec(p traceplan.Plan, image, jailID, home string, files []File, seccomp []byte) Spec {
	l := p.Limits
	return Spec{
		Name:            "sandboxctl-" + p.TraceID + "-sandbox",
		Role:            RoleSandbox,
		Image:           image,
		Labels:          map[string]string{LabelTrace: p.TraceID, LabelRole: RoleSandbox},
		Cmd:             []string{AgentBin, "__hold"},
		User:            "0:0",
		NetworkMode:     "container:" + jailID,
		CapDrop:         []string{"ALL"},
		CapAdd:          sandboxCaps,
		NoNewPrivileges: true,
		Memory:          l.Memory,
		PIDs:            l.PIDs,
		NanoCPUs:        l.NanoCPUs,
		Seccomp:         seccomp,
		// The user's places allow exec, as on a workstation: Docker mounts
		// a tmpfs noexec unless told otherwise, and then a downloaded
		// binary, a venv's or npx's scripts, pip --user's commands and a
		// project's ./build.sh fail with "Permission denied" before doing
		// what the trace is there to see. nosuid stays.
		Tmpfs: userTmpfs(l, home),
		Files: files,
		// Its main process (agentd __hold) writes nothing the skill can
		// reach; bounded anyway.
		LogConfig: LogConfig{Type: "json-file", Config: map[string]string{"max-size": "64k", "max-file": "1"}},
	}
}

// userTmpfs are the sandbox's tmpfs mounts: every place the skill's user
// can write is one of them, each with a size, so that what the skill
// writes is charged to the container's memory and stops at a budget
// (ENOSPC) instead of filling the host's disk through the overlay root.
// The image's own world-writable places (prepare.sh's writable list:
// /run/lock, /var/lock through its link, and nothing else in this image;
// /dev/shm is the engine's 64 MiB tmpfs and /dev/mqueue is bounded by
// RLIMIT_MSGQUEUE) are covered here; TestWritablePlacesBounded checks
// the list against these mounts. /run/lock and /run/user/UID are mounted
// as Debian and systemd-logind mount them on a workstation (5 MiB,
// noexec; the user's own 0700 runtime folder), which a skill would
// otherwise miss as a sign of a container.
func userTmpfs(l traceplan.Limits, home string) map[string]string {
	m := map[string]string{
		path.Dir(home):    tmpfsOpts(l.HomeSize, "755") + ",exec", // /home, or /Users for macOS
		"/tmp":            tmpfsOpts(l.TmpSize, "1777") + ",exec",
		"/var/tmp":        tmpfsOpts(l.TmpSize/2, "1777") + ",exec",
		"/var/lib/agentd": tmpfsOpts(512<<20, "700") + ",noexec",
		"/run/lock":       tmpfsOpts(RunLockSize, "1777") + ",noexec",
	}
	if path.Dir(home) == "/home" {
		m[RuntimeDir] = tmpfsOpts(RuntimeDirSize, "700") + fmt.Sprintf(",uid=%d,gid=%d", UserUID, UserGID)
	}
	for _, d := range HarnessDirs {
		m[d] = tmpfsOpts(l.TmpSize/2, "755") + fmt.Sprintf(",uid=%d,gid=%d,exec", UserUID, UserGID)
	}
	return m
}

// HarnessDirs are the working folders agent harnesses provide and skills
// write into without making them (sandbox-image/harness-dirs.tsv, with
// the evidence; a test keeps the two lists equal). Each is a tmpfs of the
// user's, like the rest of what the user can write: the image makes the
// folders, and on the root file system they would be the host's disk.
var HarnessDirs = []string{"/workspace", "/mnt/user-data/outputs", "/mnt/user-data/uploads", "/mnt/data"}

// Sizes and places of the small tmpfs mounts a workstation has.
const (
	// RunLockSize is Debian's /run/lock (5120k).
	RunLockSize = 5 << 20
	// RuntimeDir is the user's XDG_RUNTIME_DIR, which systemd-logind
	// mounts at login; RuntimeDirSize bounds it.
	RuntimeDir     = "/run/user/1000"
	RuntimeDirSize = 32 << 20
)

// UserPlaces are the tmpfs mount points the skill's user can write, in
// the order the disk check reports them.
func userPlaces(home string) []string {
	ps := []string{path.Dir(home), "/tmp", "/var/tmp", "/run/lock", "/dev/shm"}
	if path.Dir(home) == "/home" {
		ps = append(ps, RuntimeDir)
	}
	return append(ps, HarnessDirs...)
}

func tmpfsOpts(size int64, mode string) string {
	return "rw,nosuid,nodev,size=" + strconv.FormatInt(size, 10) + ",mode=" + mode
}

// passwdFiles renames the image's uid-1000 user to user, with its home and
// login shell, dated since (when the account was made, before anything in
// its home), not the trace's start. (/etc/hostname is the engine's, taken
// from the jail; the setup script writes /etc/hosts and dates it.)
func passwdFiles(user, home, shell string, since time.Time) []File {
	passwd := fmt.Sprintf(`root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
bin:x:2:2:bin:/bin:/usr/sbin/nologin
sys:x:3:3:sys:/dev:/usr/sbin/nologin
sync:x:4:65534:sync:/bin:/bin/sync
games:x:5:60:games:/usr/games:/usr/sbin/nologin
man:x:6:12:man:/var/cache/man:/usr/sbin/nologin
lp:x:7:7:lp:/var/spool/lpd:/usr/sbin/nologin
mail:x:8:8:mail:/var/mail:/usr/sbin/nologin
news:x:9:9:news:/var/spool/news:/usr/sbin/nologin
www-data:x:33:33:www-data:/var/www:/usr/sbin/nologin
backup:x:34:34:backup:/var/backups:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
_apt:x:42:65534::/nonexistent:/usr/sbin/nologin
systemd-network:x:998:998:systemd Network Management:/:/usr/sbin/nologin
messagebus:x:100:107::/nonexistent:/usr/sbin/nologin
%[1]s:x:%[2]d:%[3]d:%[1]s,,,:%[4]s:%[5]s
`, user, UserUID, UserGID, home, shell)
	group := groupFile(user)
	shadow := fmt.Sprintf(`root:*:19700:0:99999:7:::
daemon:*:19700:0:99999:7:::
bin:*:19700:0:99999:7:::
sys:*:19700:0:99999:7:::
sync:*:19700:0:99999:7:::
nobody:*:19700:0:99999:7:::
_apt:*:19700:0:99999:7:::
%s:$y$j9T$Jd0cJ1sQm3Zx0Wf7bX8eT.$4fQm9o2R0yYq6Nw1hKpL8cV3sD5aG7jU2eX9tB0rZ1C:19880:0:99999:7:::
`, user)
	return []File{
		{Path: "/etc/passwd", Mode: 0o644, Content: []byte(passwd), ModTime: since},
		{Path: "/etc/group", Mode: 0o644, Content: []byte(group), ModTime: since},
		{Path: "/etc/shadow", Mode: 0o640, GID: 42, Content: []byte(shadow), ModTime: since},
	}
}

// groupFile is the sandbox's /etc/group, with user in the groups a
// developer's account is in.
func groupFile(user string) string {
	return fmt.Sprintf(`root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:%[1]s
tty:x:5:
disk:x:6:
lp:x:7:
mail:x:8:
news:x:9:
dialout:x:20:%[1]s
cdrom:x:24:%[1]s
sudo:x:27:%[1]s
audio:x:29:%[1]s
www-data:x:33:
backup:x:34:
plugdev:x:46:%[1]s
users:x:100:%[1]s
nogroup:x:65534:
systemd-network:x:998:
messagebus:x:107:
crontab:x:101:
docker:x:999:%[1]s
%[1]s:x:%[2]d:
`, user, UserGID)
}

// userGIDs are the groups of the skill's user in groupFile, its primary
// group first: the agent image lists what they can write.
func userGIDs() []int {
	gids := []int{UserGID}
	for _, line := range strings.Split(groupFile("u"), "\n") {
		f := strings.Split(line, ":")
		if len(f) != 4 || !slices.Contains(strings.Split(f[3], ","), "u") {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g != UserGID {
			gids = append(gids, g)
		}
	}
	return gids
}
