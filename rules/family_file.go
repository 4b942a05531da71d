package rules

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

// tokenLocations returns the planted files of the canary set as globs.
func (c *ctx) tokenLocations() pathSet {
	if c.in.Canaries == nil {
		return nil
	}
	var ps pathSet
	for _, t := range c.in.Canaries.Tokens() {
		if strings.HasPrefix(t.Location, "~/") || strings.HasPrefix(t.Location, "/") {
			ps = append(ps, t.Location)
		}
	}
	return ps
}

// askedFor reports a read the agent asked for by name through a file tool:
// even when it failed, the attempt is the finding (a process probing for
// a file that is not there is not).
func askedFor(f fileOp) bool { return f.ev.Source == trace.SourceTool }

// envTemplate reports the example .env files projects commit
// (.env.example, .env.sample, ...): placeholders, not secrets.
func envTemplate(p string) bool {
	b := strings.ToLower(path.Base(p))
	for _, s := range []string{".example", ".sample", ".template", ".dist", ".defaults", ".tmpl", ".tpl"} {
		if strings.HasPrefix(b, ".env") && strings.HasSuffix(b, s) {
			return true
		}
	}
	return false
}

// gitWorktreeRead reports git reading a file of a work tree it manages
// (git status, git add hash files): a .env there is git working, not a
// skill hunting secrets. What git sends anywhere is judged by the canary
// and network rules.
func gitWorktreeRead(f fileOp) bool {
	return (f.proc == "git" || strings.HasPrefix(f.proc, "git-")) && strings.HasPrefix(path.Base(f.path), ".env")
}

// gitRepoRead reports whether f is git reading a file of one of the home's
// repositories: git add, commit, status and diff hash the working tree, a
// project's .mcp.json and certs/ with the rest, into the repository's own
// object store. What leaves with a push is judged there (SBX-EXFIL-008,
// SBX-EXFIL-001).
func (c *ctx) gitRepoRead(f fileOp) bool {
	if f.proc != "git" && !strings.HasPrefix(f.proc, "git-") {
		return false
	}
	for root := range c.in.Repos {
		if f.path != root && underDir(root, f.path) && !underDir(root+"/.git", f.path) {
			return true
		}
	}
	return false
}

// isPublicKey reports a file that holds public keys or certificates by
// its name: OpenSSH's *.pub, known_hosts, authorized_keys and
// allowed_signers, GnuPG's public keyring and trust database, a PEM named
// public (key.pub.pem, id_pub.pem, public.pem, pubkey.pem,
// signing_public_key.pem, release-public.pem) and certificates (*.crt,
// *.cer). Nothing a skill sends from them is a secret of the user's.
func isPublicKey(p string) bool {
	b := strings.ToLower(path.Base(p))
	switch b {
	case "known_hosts", "known_hosts.old", "authorized_keys", "authorized_keys2", "allowed_signers",
		"pubring.kbx", "pubring.kbx~", "pubring.gpg", "pubring.gpg~", "trustdb.gpg":
		return true
	}
	stem := b
	for _, ext := range []string{".pem", ".key", ".der", ".asc"} {
		stem = strings.TrimSuffix(stem, ext)
	}
	return strings.HasSuffix(b, ".pub") || strings.HasSuffix(b, ".crt") || strings.HasSuffix(b, ".cer") ||
		strings.HasSuffix(stem, ".pub") || strings.HasSuffix(stem, "_pub") || strings.HasSuffix(stem, "-pub") ||
		strings.HasPrefix(stem, "pubkey") || strings.HasSuffix(stem, "public") ||
		strings.Contains(strings.NewReplacer("_", "", "-", "").Replace(stem), "publickey")
}

// madeBefore reports a file the trace itself wrote (created, copied or
// renamed into place) before the read at seq: it holds what the skill put
// there, a key it installed from its own folder, not a secret of the
// user's. Planted files are judged whoever wrote them.
func (c *ctx) madeBefore(p string, seq int64) bool {
	if c.firstWrite == nil {
		c.firstWrite = map[string]int64{}
		for _, f := range c.files {
			if f.failed {
				continue
			}
			target := ""
			switch f.op {
			case opWrite:
				target = f.path
			case opRename:
				target = f.newPath
			}
			if target == "" {
				continue
			}
			if s, ok := c.firstWrite[target]; !ok || f.ev.Seq < s {
				c.firstWrite[target] = f.ev.Seq
			}
		}
	}
	s, ok := c.firstWrite[p]
	return ok && s < seq
}

func credRules() {
	def(Rule{ID: "SBX-CRED-001", Family: "credential-access", Title: "Credential file read",
		Severity: Medium, Confidence: ConfHigh, Technique: "T1552.001",
		Help: "A process read a file that holds credentials (SSH private keys, cloud and registry " +
			"credentials, .env files, tokens, shell history with secrets) under the home, or a file a " +
			"canary was planted in. Listing a folder, reading public keys and certificates (by name: " +
			"*.pub, public*.pem, *.crt, pubring.kbx...), a file the skill itself wrote before reading it " +
			"(a key it installed from its own folder), certificates in package " +
			"caches, git hashing the working tree of one of the home's repositories (git add, commit, status), " +
			"programs that print a file's type, checksum or counts (file, sha256sum, wc), " +
			"or a tool reading its own configuration (git reading .gitconfig, ssh its keys, " +
			"Python requests and pip the .netrc) does not count. On its own this is suspicious; followed by " +
			"egress it is exfiltration (SBX-EXFIL-004). Reading only .env files, a project's .mcp.json or the agent's ~/.claude.json, which applications and agents " +
			"load as configuration, has low confidence: reported, not suspect (a planted secret in " +
			"them leaving is SBX-EXFIL-001)."},
		func(c *ctx, r *Rule) {
			planted := c.tokenLocations()
			for _, f := range c.files {
				if f.op != opRead || f.failed && !askedFor(f) || isPublicKey(f.path) || c.underSkill(f.path) || envTemplate(f.path) || gitWorktreeRead(f) || c.gitRepoRead(f) || inspector(f.proc) {
					continue
				}
				_, ok := c.matchPath(planted, f.path)
				if !ok && underDir(c.home, f.path) && !vendoredPath(f.path) && !c.madeBefore(f.path, f.ev.Seq) {
					_, ok = c.matchPath(credentialPaths, f.path)
				}
				if !ok || ownedRead(f.path, f.proc) {
					continue
				}
				// wallets and browser stores have rules of their own
				if _, w := c.matchPath(walletPaths, f.path); w {
					continue
				}
				if _, b := c.matchPath(browserPaths, f.path); b {
					continue
				}
				if _, rc := c.matchPath(rcPaths, f.path); rc && isShell(f.proc) {
					continue
				}
				c.hitPath(r, "credential file", f)
			}
			for _, fd := range c.found(r.ID) {
				if ps := c.paths[fd]; len(ps) > 0 && !slices.ContainsFunc(ps, func(p string) bool { return !c.projectConfig(p) }) {
					fd.Confidence = ConfLow
				}
			}
		})
	def(Rule{ID: "SBX-CRED-005", Family: "credential-access", Title: "Credential printed by a tool",
		Severity: Medium, Confidence: ConfHigh, Technique: "T1552.001",
		Help: "A system program that prints a stored credential ran: aws configure get aws_secret_access_key, " +
			"gh auth token, git credential fill, kubectl config view --raw, gcloud auth print-access-token, ... " +
			"(rules/data/credential-commands.tsv, with sources). The tool read its own file, but what it " +
			"printed is the secret, wherever it went next: on its own this is suspicious; followed by egress " +
			"it is exfiltration (SBX-EXFIL-004). Judged by the program really executed (a program the skill " +
			"bundles or wrote under such a name is judged by what it reads)."},
		func(c *ctx, r *Rule) {
			for _, cm := range c.cmds {
				x, ok := cm.ev.Data.(*trace.Exec)
				if !ok || cm.argv == nil || x.Errno != "" || !systemProgram(x.Path) {
					continue
				}
				if what := printsCredential(path.Base(x.Path), cm.argv); what != "" {
					c.hit(r, cm.ev.ToolCallID, "printed "+what+": "+short(cm.text), cm.ev)
				}
			}
		})
	def(Rule{ID: "SBX-CRED-002", Family: "credential-access", Title: "Cryptocurrency wallet read",
		Severity: High, Confidence: ConfHigh, Technique: "T1005",
		Help: "A process read a cryptocurrency wallet, keystore, or seed phrase file (wallet.dat, " +
			"Ethereum keystores, Solana id.json, Electrum/Exodus/Atomic/MetaMask storage, seed.txt). " +
			"Wallet theft is the most common goal of malicious skills."},
		func(c *ctx, r *Rule) {
			for _, f := range c.files {
				if (f.op == opRead) && (!f.failed || askedFor(f)) && !c.underSkill(f.path) && !inspector(f.proc) {
					if _, ok := c.matchPath(walletPaths, f.path); ok {
						c.hitPath(r, "wallet file", f)
					}
				}
			}
		})
	def(Rule{ID: "SBX-CRED-003", Family: "credential-access", Title: "System password file read",
		Severity: High, Confidence: ConfHigh, Technique: "T1003.008",
		Help: "A process opened /etc/shadow, /etc/gshadow or /etc/sudoers for reading. The sandbox " +
			"user cannot read them: the attempt itself is the finding."},
		func(c *ctx, r *Rule) {
			for _, f := range c.files {
				if f.op == opRead {
					if _, ok := c.matchPath(systemSecretPaths, f.path); ok {
						c.hit(r, f.path, "read attempt of "+f.path+failedNote(f.failed), f.ev)
					}
				}
			}
			commandMatch(reShadow, "/etc/shadow", "command reads a system password file: ")(c, r)
		})
	def(Rule{ID: "SBX-CRED-004", Family: "credential-access", Title: "Browser credential store read",
		Severity: High, Confidence: ConfHigh, Technique: "T1555.003",
		Help: "A process read a browser's saved passwords or cookies (Chrome Login Data/Cookies, " +
			"Firefox logins.json/key4.db/cookies.sqlite), which no skill needs."},
		func(c *ctx, r *Rule) {
			for _, f := range c.files {
				if f.op == opRead && (!f.failed || askedFor(f)) && !inspector(f.proc) {
					if _, ok := c.matchPath(browserPaths, f.path); ok && underDir(c.home, f.path) {
						c.hitPath(r, "browser credential store", f)
					}
				}
			}
		})
	def(Rule{ID: "SBX-ENV-001", Family: "credential-access", Title: "Environment variables harvested",
		Severity: Medium, Confidence: ConfLow, Technique: "T1552",
		Help: "The skill dumped the whole environment (env, printenv, export -p, /proc/*/environ, " +
			"a script serialising os.environ or process.env), where API keys live. Followed by egress " +
			"it becomes SBX-EXFIL-005."},
		func(c *ctx, r *Rule) {
			for _, f := range c.files {
				if f.op == opRead && reEnvironPath.MatchString(f.path) {
					c.hit(r, "environ", "read of "+f.path, f.ev)
				}
			}
			for _, cm := range c.cmds {
				if cm.argv != nil && envDump(cm.argv) {
					c.hit(r, "environ", "environment dumped: "+short(cm.text), cm.ev)
				} else if reEnvDump.MatchString(cm.text) {
					c.hit(r, "environ", "environment dumped: "+short(cm.text), cm.ev)
				}
			}
		})
}

// bytecodeCache reports paths interpreters write on their own next to the
// code they run.
func bytecodeCache(p string) bool {
	return strings.Contains(p, "/__pycache__") || strings.HasSuffix(p, ".pyc") ||
		strings.Contains(p, "/.pytest_cache") || strings.Contains(p, "/node_modules/.cache")
}

// vendoredPath reports files under package caches and installed libraries,
// whose .pem/.key files are certificates and test fixtures.
func vendoredPath(p string) bool {
	for _, s := range []string{"/site-packages/", "/dist-packages/", "/node_modules/", "/.cache/",
		"/.local/lib/", "/go/pkg/mod/", "/.cargo/registry/", "/.rustup/", "/.npm/", "/.nvm/"} {
		if strings.Contains(p, s) {
			return true
		}
	}
	b := strings.ToLower(path.Base(p))
	return strings.Contains(b, "cert") || strings.Contains(b, "ca-bundle") || strings.HasPrefix(b, "ca.")
}

// hitPath records a file finding grouped per tool call: one finding lists
// every such file the call touched.
func (c *ctx) hitPath(r *Rule, what string, f fileOp) {
	call := f.ev.ToolCallID
	if call == "" {
		call = c.callAt(f.ev.Time)
	}
	fd := c.hit(r, call, "", f.ev)
	if c.paths == nil {
		c.paths = map[*Finding][]string{}
	}
	ps := c.paths[fd]
	shown := f.path
	if f.named != "" {
		shown += " (opened as " + f.named + ")"
	}
	if !slices.Contains(ps, shown) {
		ps = append(ps, shown)
		c.paths[fd] = ps
	}
	if len(ps) == 1 {
		fd.Message = "read of " + what + " " + ps[0]
		return
	}
	fd.Message = fmt.Sprintf("read of %d %ss: %s", len(ps), what, strings.Join(ps[:min(len(ps), 4)], ", "))
	if len(ps) > 4 {
		fd.Message += fmt.Sprintf(", … %d more", len(ps)-4)
	}
}

func failedNote(failed bool) string {
	if failed {
		return " (refused)"
	}
	return ""
}

func underDir(dir, p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

func (c *ctx) underSkill(p string) bool {
	d := strings.TrimSuffix(c.in.SkillDir, "/")
	return d != "" && underDir(d, p)
}

// envDump reports whether argv prints the whole environment: env or
// printenv with no operand.
func envDump(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	switch path.Base(argv[0]) {
	case "env", "printenv":
		for _, a := range argv[1:] {
			if !strings.HasPrefix(a, "-") {
				return false
			}
		}
		return true
	}
	return false
}

func persistRules() {
	type surf struct {
		id, title, tech, help string
		sev                   Severity
		conf                  Confidence
		paths                 pathSet
		cmd                   func(string) bool
	}
	surfaces := []surf{
		{id: "SBX-PERSIST-001", title: "Shell startup file modified", tech: "T1546.004", sev: High, conf: ConfMedium,
			paths: rcPaths, help: "A write to a shell rc or profile file (~/.bashrc, ~/.profile, ~/.zshrc, " +
				"/etc/profile.d, /etc/ld.so.preload): code there runs in every new shell."},
		{id: "SBX-PERSIST-002", title: "Scheduled task created", tech: "T1053.003", sev: High, conf: ConfHigh,
			paths: cronPaths, cmd: func(s string) bool { return reCrontab.MatchString(s) },
			help: "A crontab was installed or /etc/cron* / /var/spool/cron written."},
		{id: "SBX-PERSIST-003", title: "Service or autostart entry created", tech: "T1543.002", sev: High, conf: ConfHigh,
			paths: servicePaths, cmd: func(s string) bool { return reSystemctl.MatchString(s) },
			help: "A systemd unit, XDG autostart entry or macOS LaunchAgent was written or enabled."},
		{id: "SBX-PERSIST-004", title: "SSH authorized_keys modified", tech: "T1098.004", sev: Critical, conf: ConfHigh,
			paths: authorizedKeysPaths, help: "A key was added to authorized_keys: whoever holds it can log in."},
		{id: "SBX-PERSIST-005", title: "Git hook or git configuration modified", tech: "T1546", sev: Medium, conf: ConfMedium,
			paths: gitPaths, cmd: func(s string) bool { return reGitHooks.MatchString(s) },
			help: "A git hook was written or git's configuration changed (core.hooksPath, aliases, " +
				"credential helpers): code that runs on the next commit or fetch. A hook is judged on what it " +
				"runs, like a shell rc file: network calls or decoded code are harm, a linter is not."},
		{id: "SBX-PERSIST-006", title: "Agent configuration modified", tech: "T1546", sev: High, conf: ConfMedium,
			paths: agentConfigPaths, help: "The skill wrote agent configuration (.claude/settings.json hooks, " +
				".claude/commands|agents|hooks, .mcp.json, other agents' config folders, installed skills): " +
				"code or tools that every later session runs."},
		{id: "SBX-PERSIST-008", title: "Agent instructions or memory modified", tech: "T1546", sev: High, conf: ConfMedium,
			paths: agentMemoryPaths, help: "The skill wrote an instruction or memory file an agent loads at " +
				"start (CLAUDE.md, AGENTS.md, SOUL.md, MEMORY.md, .cursorrules, .cursor/rules/, .claude/instructions.md, " +
				".github/copilot-instructions.md, ...): instructions that every " +
				"later session follows."},
		{id: "SBX-PERSIST-007", title: "Editor configuration modified", tech: "T1546", sev: Medium, conf: ConfMedium,
			paths: editorPaths, help: "A write under .vscode/ or .idea/ (tasks that run on folder open, " +
				"extensions settings)."},
	}
	for _, s := range surfaces {
		def(Rule{ID: s.id, Family: "persistence", Title: s.title, Severity: s.sev, Confidence: s.conf,
			Technique: s.tech, Help: s.help + " Failed attempts count too.", Harm: HarmPersistence},
			func(c *ctx, r *Rule) {
				for _, f := range c.files {
					var target string
					switch f.op {
					case opWrite, opMkdir:
						target = f.path
					case opRename:
						target = f.newPath
					default:
						continue
					}
					if target == "" || c.underSkill(target) {
						continue
					}
					// git maintains its own repository files (git init writes
					// .git/config and sample hooks); hooksPath and aliases
					// set through git config are caught on the command line.
					if strings.HasPrefix(f.proc, "git") && s.id == "SBX-PERSIST-005" {
						continue
					}
					// A repository cloned or initialised here comes with its
					// configuration and sample hooks (git never runs a .sample);
					// only a hook the skill then writes counts.
					if s.id == "SBX-PERSIST-005" && (strings.HasSuffix(target, ".sample") || c.freshRepoConfig(target)) {
						continue
					}
					// A .git/config the file diff alone says changed, in a trace
					// whose steps ran git (git remote add, git config user.name,
					// git push -u): git's own doing, as far as the diff can tell;
					// what git config set is judged on its command line, and a
					// write by anything else is in the syscall timeline.
					if s.id == "SBX-PERSIST-005" && f.ev.Source == trace.SourceFSDiff && strings.HasSuffix(target, "/.git/config") && c.ranGit() {
						continue
					}
					if _, ok := c.matchPath(s.paths, target); ok {
						if f.op == opMkdir && s.id != "SBX-PERSIST-003" {
							continue
						}
						c.persistHit(r, target, f)
					}
				}
				if s.cmd != nil {
					for _, cm := range c.cmds {
						if !s.cmd(cm.text) {
							continue
						}
						// an exec of crontab or systemctl under a tool call
						// whose command says what it installs is judged on that
						// command
						if tc := c.calls[cm.ev.ToolCallID]; cm.argv != nil && tc != nil && s.cmd(toolCommand(tc)) {
							continue
						}
						c.persistCmdHit(r, cm)
					}
				}
			})
	}
}

// freshRepoConfig reports a repository's .git/config when the repository
// itself was made by the trace (its .git/HEAD written here): git clone and
// git init write it, whoever runs them.
func (c *ctx) freshRepoConfig(p string) bool {
	dir, base := path.Split(p)
	if base != "config" || !strings.HasSuffix(dir, "/.git/") {
		return false
	}
	if c.madeHere[dir+"HEAD"] {
		return true
	}
	// without the syscall timeline (the unwatched pass), the file diff
	// says which files are new
	for i := range c.events {
		if d, ok := c.events[i].Data.(*trace.FSChange); ok && d.Kind == "added" && d.Path == dir+"HEAD" {
			return true
		}
	}
	return false
}

// projectConfig reports a file a project keeps its configuration in,
// secrets included, that tools and agents load as they work in it: .env
// files anywhere, and a project's .mcp.json (not the home's).
func (c *ctx) projectConfig(p string) bool {
	b := path.Base(p)
	return strings.HasPrefix(b, ".env") || b == ".mcp.json" && path.Dir(p) != c.home ||
		p == c.home+"/.claude.json" // the agent's own settings and MCP servers, which it loads
}

func selfRules() {
	def(Rule{ID: "SBX-SELF-001", Family: "defense-evasion", Title: "Skill modifies its own files",
		Severity: High, Confidence: ConfHigh, Technique: "T1027",
		Help: "A write, rename, delete or permission change under the skill's own folder. The skill is " +
			"installed read-only, so these are attempts: a skill that rewrites itself can change what " +
			"the next agent session reads."},
		func(c *ctx, r *Rule) {
			if c.in.SkillDir == "" {
				return
			}
			for _, f := range c.files {
				if f.op == opRead || f.op == opList {
					continue
				}
				if bytecodeCache(f.path) {
					continue // python writing __pycache__ next to a script it runs
				}
				if c.underSkill(f.path) || (f.newPath != "" && c.underSkill(f.newPath)) {
					c.hit(r, "self", fmt.Sprintf("%s of %s%s", f.op, f.path, failedNote(f.failed)), f.ev)
				}
			}
		})
}

// systemProgram reports a program of the system's own folders, which the
// skill's user cannot write: only such a program is "a tool reading its
// own file". A program bundled with the skill, or in the home, /tmp or
// another place the user writes, is the skill's code whatever its name.
// inspector reports the system programs that read a file to print
// something else than its content: its type (file, which reads the first
// bytes), a checksum, counts. Organising or deduplicating the home runs
// them over every file; what they print holds no secret.
func inspector(proc string) bool {
	switch proc {
	case "file", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "wc":
		return true
	}
	return false
}

func systemProgram(p string) bool {
	for _, d := range []string{"/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/opt/", "/snap/"} {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// ranGit reports whether a step of the trace ran git: an exec of git, or a
// command line (the unwatched pass has no execs) that calls it.
func (c *ctx) ranGit() bool {
	for _, cm := range c.cmds {
		if x, ok := cm.ev.Data.(*trace.Exec); ok && path.Base(x.Path) == "git" && x.Errno == "" {
			return true
		}
		if reGitCall.MatchString(cm.text) {
			return true
		}
	}
	return false
}

var reGitCall = regexp.MustCompile(`(?:^|[\s;&|(])git\s+[a-z]`)
