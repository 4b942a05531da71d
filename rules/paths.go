package rules

import (
	"path"
	"strings"

	"github.com/sandboxctl/sandboxctl/canary"
)

// A pathSet is a list of globs. A glob starting with "/" is absolute;
// "~/" is under the home; "**/" matches at any depth (under any folder).
type pathSet []string

func (c *ctx) matchPath(ps pathSet, p string) (string, bool) {
	if p == "" || len(ps) == 0 {
		return "", false
	}
	p = path.Clean(p)
	cs := c.compiled[&ps[0]]
	if cs == nil || len(cs) != len(ps) {
		cs = compilePaths(ps, c.home)
		c.compiled[&ps[0]] = cs
	}
	for _, cp := range cs {
		if !strings.HasPrefix(p, cp.prefix) || !strings.HasSuffix(p, cp.suffix) {
			continue
		}
		if !cp.meta || canary.MatchPath(cp.raw, c.home, p) {
			return cp.raw, true
		}
	}
	return "", false
}

// A compiledPath is a pattern with the literal prefix and suffix every match
// must have, checked before the (allocating) glob match.
type compiledPath struct {
	raw, prefix, suffix string
	meta                bool
}

func compilePaths(ps pathSet, home string) []compiledPath {
	out := make([]compiledPath, len(ps))
	for i, raw := range ps {
		full := raw
		switch {
		case strings.HasPrefix(raw, "~/"):
			full = strings.TrimSuffix(home, "/") + raw[1:]
		case strings.HasPrefix(raw, "**/"):
			full = "/" + raw
		}
		cp := compiledPath{raw: raw}
		if j := strings.IndexAny(full, "*?["); j >= 0 {
			cp.meta = true
			cp.prefix = full[:j]
			cp.suffix = full[strings.LastIndexAny(full, "*?]")+1:]
		} else {
			cp.prefix, cp.suffix = full, full
		}
		out[i] = cp
	}
	return out
}

// The path taxonomy the rules use: canary's exported taxonomy (shared with
// the planter) plus patterns of our own. Canary token locations are added to
// the credential set at evaluation time. Patterns use canary.MatchPath's
// syntax: "~/" is the home, "**" any number of segments.
var (
	credentialPaths = append(pathSet{
		"~/.ssh/id_rsa", "~/.ssh/id_dsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ed25519", "~/.ssh/*.pem",
		"~/.ssh/*_rsa", "~/.ssh/*_ed25519",
		"~/.aws/credentials", "~/.aws/sso/cache/**", "~/.aws/cli/cache/**",
		"~/.config/gcloud/application_default_credentials.json", "~/.config/gcloud/credentials.db",
		"~/.config/gcloud/access_tokens.db", "~/.config/gcloud/legacy_credentials/**",
		"~/.azure/**", "~/.kube/config", "~/.docker/config.json", "~/.npmrc", "~/.pypirc", "~/.netrc",
		"~/.git-credentials", "~/.config/gh/hosts.yml", "~/.gnupg/private-keys-v1.d/**",
		"~/.gnupg/secring.gpg", "~/.env", "**/.env", "**/.env.local", "**/.env.production",
		"**/.env.development", "~/.clawdbot/.env", "~/.openclaw/**", "~/.claude.json",
		"~/.claude/.credentials.json", "~/.config/openai/**", "~/.vault-token",
		"~/.bash_history", "~/.zsh_history", "**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx",
	}, canary.CredentialPaths...)
	walletPaths = append(pathSet{
		"**/wallet.dat", "~/.bitcoin/**", "~/.ethereum/keystore/**", "**/keystore/UTC--*",
		"~/.config/solana/id.json", "~/.electrum/wallets/**", "~/.config/Exodus/**", "~/.exodus/**",
		"~/.config/atomic/**", "**/Local Extension Settings/nkbihfbeogaeaoehlefnkodbefgpgknn/**",
		"**/seed.txt", "**/mnemonic*", "**/seed_phrase*", "~/.monero/**", "~/.litecoin/**",
	}, canary.WalletPaths...)
	browserPaths = pathSet{
		"**/Login Data", "**/Login Data For Account", "**/Cookies", "**/Web Data",
		"**/logins.json", "**/key4.db", "**/key3.db", "**/cookies.sqlite", "**/Local State",
	}
	systemSecretPaths = pathSet{"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/sudoers", "/etc/security/opasswd"}

	// The persistence surfaces come from rules/data/persistence.tsv, by
	// location class.
	rcPaths             = persistPaths("shell-rc")
	cronPaths           = persistPaths("scheduled")
	servicePaths        = persistPaths("service")
	authorizedKeysPaths = persistPaths("authorized-keys")
	gitPaths            = persistPaths("git")
	agentConfigPaths    = persistPaths("agent-config")
	agentMemoryPaths    = persistPaths("agent-memory")
	editorPaths         = persistPaths("editor")
	configExecPaths     = persistPaths("tool-exec", "package-source", "network-config", "interpreter-startup")

	privEscPaths        = pathSet{"/etc/sudoers", "/etc/sudoers.d/**", "/etc/passwd", "/etc/shadow", "/etc/group", "/etc/ld.so.preload"}
	containerProbePaths = pathSet{"/.dockerenv", "/run/.containerenv", "/proc/1/cgroup", "/proc/1/sched",
		"/proc/1/mountinfo", "/sys/class/dmi/id/**", "/proc/scsi/scsi", "/run/systemd/container",
		"/sys/hypervisor/**", "/proc/xen", "/proc/vz"}
	// runtimeProbePaths are container tells that language runtimes read on
	// their own to size their heap (the JVM, Node, .NET read their cgroup
	// and mount table): a probe only when another program reads them.
	runtimeProbePaths = pathSet{"/proc/*/cgroup", "/proc/*/mountinfo", "/proc/*/mounts", "/proc/mounts"}
	// tracerProbePaths hold TracerPid: the one line that shows a ptrace
	// tracer.
	tracerProbePaths = pathSet{"/proc/*/status", "/proc/*/task/*/status"}
)

// owners maps files that a tool reads on every start to the programs that
// do so: such a read is the tool working, not a skill hunting secrets.
var owners = map[string][]string{
	".gitconfig":       {"git"},
	".git-credentials": {"git", "git-credential-store"},
	".npmrc":           {"npm", "node", "npx"},
	".pypirc":          {"twine"},
	// requests (and so pip), uv, poetry and the HTTP clients read it to log
	// in to the host they are about to call; a secret from it leaving is
	// still SBX-EXFIL-001.
	".netrc":      {"curl", "wget", "ftp", "lftp", "aria2c", "git", "git-remote-https", "python3", "pip", "pip3", "pipx", "uv", "poetry", "twine", "http", "https"},
	"id_rsa":      {"ssh", "ssh-add", "scp", "sftp"},
	"id_ed25519":  {"ssh", "ssh-add", "scp", "sftp"},
	"id_ecdsa":    {"ssh", "ssh-add", "scp", "sftp"},
	"config.json": {"docker"},
	"config":      {"kubectl", "ssh", "aws"},
	"credentials": {"aws"},
	// the hosted services' CLIs reading their own login
	"hosts.yml":             {"gh", "hub", "glab"},
	"credentials.tfrc.json": {"terraform", "tofu"},
	"credentials.db":        {"gcloud", "bq", "gsutil"},
	"access_tokens.db":      {"gcloud", "bq", "gsutil"},
	"msal_token_cache.json": {"az"},
	"azureProfile.json":     {"az"},
	".bashrc":               {"bash"},
	".zshrc":                {"zsh"},
	".bash_history":         {"bash"},
	".zsh_history":          {"zsh"},
}

func ownedRead(p, proc string) bool {
	if strings.Contains(p, "/.gnupg/") && (proc == "gpg" || proc == "gpg2" || proc == "gpg-agent") {
		return true
	}
	if strings.HasPrefix(proc, "python") {
		proc = "python3"
	}
	for _, o := range owners[path.Base(p)] {
		if proc == o {
			return true
		}
	}
	return false
}
