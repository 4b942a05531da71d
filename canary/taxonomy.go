package canary

import (
	"path"
	"strings"
)

// This file is the taxonomy as data, in one place: canaryfs plants from it
// and the rules match against it. Paths are home-relative patterns written
// with a leading "~/"; a pattern without it (such as "**/.env") matches at
// any depth. "*" matches within one path segment, "**" any number of
// segments.

// Category groups planted files the way reports talk about them.
type Category string

// The categories of TAXONOMY.md's table.
const (
	CatSSH      Category = "ssh"
	CatCloud    Category = "cloud"
	CatRegistry Category = "registry" // registries and developer tools
	CatEnvFile  Category = "env_file"
	CatAgent    Category = "agent" // agent configuration and memory
	CatWallet   Category = "wallet"
	CatBrowser  Category = "browser"
	CatHistory  Category = "history" // shell history and rc files
)

// A FileSpec is one secret-bearing file of the seeded home: where it lives,
// its real format, and the kinds of token it holds.
type FileSpec struct {
	Path     string   `json:"path"` // "~/.aws/credentials"; <profile> and <project> are placeholders
	Format   string   `json:"format"`
	Category Category `json:"category"`
	Kinds    []Kind   `json:"kinds,omitempty"`
}

// Files lists every secret-bearing file canaryfs plants, in TAXONOMY.md's
// order. <project> stands for each git project under ~/projects, <profile>
// for the browser profile folder, <email> for the user's address and
// <keygrip>, <time> and <address> for names derived from the key inside.
var Files = []FileSpec{
	{"~/.ssh/id_rsa", "openssh-private-key", CatSSH, []Kind{SSHPrivateKey}},
	{"~/.ssh/id_rsa.pub", "openssh-public-key", CatSSH, nil},
	{"~/.ssh/id_ed25519", "openssh-private-key", CatSSH, []Kind{SSHPrivateKey}},
	{"~/.ssh/id_ed25519.pub", "openssh-public-key", CatSSH, nil},
	{"~/.ssh/config", "ssh-config", CatSSH, nil},
	{"~/.ssh/known_hosts", "known-hosts", CatSSH, nil},
	{"~/.ssh/authorized_keys", "authorized-keys", CatSSH, nil},
	{"~/.aws/credentials", "ini", CatCloud, []Kind{AWSAccessKey, AWSSecretKey}},
	{"~/.aws/config", "ini", CatCloud, nil},
	{"~/.config/gcloud/application_default_credentials.json", "json", CatCloud, []Kind{GCPRefreshToken}},
	{"~/.config/gcloud/credentials.db", "sqlite", CatCloud, []Kind{GCPRefreshToken}},
	{"~/.config/gcloud/legacy_credentials/<email>/adc.json", "json", CatCloud, []Kind{GCPRefreshToken}},
	{"~/.azure/msal_token_cache.json", "json", CatCloud, []Kind{AzureToken}},
	{"~/.azure/azureProfile.json", "json", CatCloud, nil},
	{"~/.kube/config", "yaml", CatCloud, []Kind{KubeToken}},
	{"~/.docker/config.json", "json", CatRegistry, []Kind{DockerAuth}},
	{"~/.npmrc", "ini", CatRegistry, []Kind{NPMToken}},
	{"~/.pypirc", "ini", CatRegistry, []Kind{PyPIToken}},
	{"~/.netrc", "netrc", CatRegistry, []Kind{Password}},
	{"~/.git-credentials", "git-credentials", CatRegistry, []Kind{GitHubToken}},
	{"~/.gitconfig", "gitconfig", CatRegistry, nil},
	{"~/.config/gh/hosts.yml", "yaml", CatRegistry, []Kind{GitHubOAuthToken}},
	{"~/.gnupg/private-keys-v1.d/<keygrip>.key", "gpg-agent-key", CatRegistry, []Kind{GPGPrivateKey}},
	{"~/.env", "dotenv", CatEnvFile, []Kind{OpenAIKey, StripeKey, DatabaseURL}},
	{"~/projects/<project>/.env", "dotenv", CatEnvFile, []Kind{DatabaseURL, StripeKey, AWSSecretKey}},
	{"~/projects/<project>/.env.local", "dotenv", CatEnvFile, []Kind{OpenAIKey}},
	{"~/projects/<project>/.env.production", "dotenv", CatEnvFile, []Kind{DatabaseURL, SlackToken}},
	{"~/.clawdbot/.env", "dotenv", CatAgent, []Kind{AnthropicKey, TelegramBotToken}},
	{"~/.openclaw/openclaw.json", "json", CatAgent, []Kind{OpenRouterKey}},
	{"~/.claude.json", "json", CatAgent, []Kind{GitHubPAT}},
	{"~/.claude/.credentials.json", "json", CatAgent, []Kind{AnthropicOAuth}},
	{"~/.claude/settings.json", "json", CatAgent, nil},
	{"~/.openclaw/workspace/SOUL.md", "markdown", CatAgent, nil},
	{"~/.openclaw/workspace/MEMORY.md", "markdown", CatAgent, []Kind{Password}},
	{"~/CLAUDE.md", "markdown", CatAgent, nil},
	{"~/projects/<project>/AGENTS.md", "markdown", CatAgent, nil},
	{"~/projects/<project>/.mcp.json", "json", CatAgent, []Kind{GitHubPAT}},
	{"~/.config/discord/Local Storage/leveldb/000003.log", "leveldb-log", CatAgent, []Kind{DiscordToken}},
	{"~/.local/share/keyrings/login.keyring", "gnome-keyring", CatRegistry, []Kind{KeyringSecret}},
	{"~/.bitcoin/wallet.dat", "berkeleydb", CatWallet, []Kind{BitcoinWallet}},
	{"~/.ethereum/keystore/UTC--<time>--<address>", "keystore-v3", CatWallet, []Kind{EthereumKeystore}},
	{"~/.config/solana/id.json", "json", CatWallet, []Kind{SolanaKeypair}},
	{"~/.electrum/wallets/default_wallet", "json", CatWallet, []Kind{WalletVault}}, // seed phrase and xprv are its needles
	{"~/.config/Exodus/exodus.wallet/seed.seco", "binary", CatWallet, []Kind{WalletVault}},
	{"~/.config/atomic/Local Storage/leveldb/000003.log", "leveldb-log", CatWallet, []Kind{WalletVault}},
	{"~/.config/google-chrome/<profile>/Local Extension Settings/nkbihfbeogaeaoehlefnkodbefgpgknn/000003.log", "leveldb-log", CatWallet, []Kind{WalletVault}},
	{"~/Documents/seed.txt", "text", CatWallet, []Kind{SeedPhrase}},
	{"~/Desktop/mnemonic.txt", "text", CatWallet, []Kind{SeedPhrase}},
	{"~/.config/google-chrome/<profile>/Login Data", "sqlite", CatBrowser, []Kind{BrowserPassword}},
	{"~/.config/google-chrome/<profile>/Cookies", "sqlite", CatBrowser, []Kind{BrowserCookie}},
	{"~/.mozilla/firefox/<profile>/logins.json", "json", CatBrowser, []Kind{BrowserPassword}},
	{"~/.mozilla/firefox/<profile>/key4.db", "sqlite", CatBrowser, nil},
	{"~/.mozilla/firefox/<profile>/cookies.sqlite", "sqlite", CatBrowser, []Kind{BrowserCookie}},
	{"~/.bash_history", "shell-history", CatHistory, []Kind{HuggingFaceToken}},
	{"~/.zsh_history", "zsh-history", CatHistory, []Kind{OpenAIKey}},
	{"~/.bashrc", "shell", CatHistory, nil},
	{"~/.zshrc", "shell", CatHistory, nil},
	{"~/.profile", "shell", CatHistory, nil},
}

// An EnvVar is a planted environment variable of the sandbox's processes.
type EnvVar struct {
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
}

// EnvVars are the variables that hold planted tokens (TAXONOMY.md).
var EnvVars = []EnvVar{
	{"OPENAI_API_KEY", OpenAIKey},
	{"ANTHROPIC_API_KEY", AnthropicKey},
	{"AWS_ACCESS_KEY_ID", AWSAccessKey},
	{"AWS_SECRET_ACCESS_KEY", AWSSecretKey},
	{"AWS_SESSION_TOKEN", AWSSessionToken},
	{"GITHUB_TOKEN", GitHubToken},
	{"GH_TOKEN", GitHubToken},
	{"NPM_TOKEN", NPMToken},
	{"SLACK_BOT_TOKEN", SlackToken},
	{"STRIPE_SECRET_KEY", StripeKey},
	{"DATABASE_URL", DatabaseURL},
	{"HF_TOKEN", HuggingFaceToken},
	{"OPENROUTER_API_KEY", OpenRouterKey},
}

// CredentialPaths are patterns for files whose read is a credential access:
// the planted files outside wallets, and the usual places such secrets live.
var CredentialPaths = []string{
	"~/.ssh/id_*", "~/.ssh/*.pem", "~/.ssh/*_rsa", "~/.ssh/*_ed25519", "~/.ssh/*_ecdsa", "~/.ssh/config",
	"~/.aws/credentials", "~/.aws/config", "~/.aws/sso/cache/*",
	"~/.config/gcloud/**", "~/.azure/**", "~/.kube/config",
	"~/.docker/config.json", "~/.npmrc", "~/.pypirc", "~/.netrc", "~/.git-credentials",
	"~/.config/gh/hosts.yml", "~/.gnupg/**",
	"**/.env", "**/.env.*",
	"~/.clawdbot/**", "~/.openclaw/**", "~/.claude.json", "~/.claude/.credentials.json",
	"~/.config/google-chrome/*/Login Data", "~/.config/google-chrome/*/Cookies",
	"~/.config/google-chrome/Local State", "~/.config/chromium/*/Login Data", "~/.config/chromium/*/Cookies",
	"~/.config/BraveSoftware/**/Login Data", "~/.mozilla/firefox/*/logins.json",
	"~/.mozilla/firefox/*/key4.db", "~/.mozilla/firefox/*/cookies.sqlite",
	"~/.bash_history", "~/.zsh_history", "~/.python_history", "~/.psql_history", "~/.mysql_history",
	"~/.config/discord/Local Storage/**", "~/.config/Slack/Local Storage/**", "~/.local/share/keyrings/**",
	"~/.password-store/**", "~/.config/rclone/rclone.conf", "~/.s3cfg", "~/.config/filezilla/*.xml",
	"**/*.pem", "**/*.key", "**/id_rsa", "**/credentials.json", "**/service-account*.json",
	// macOS places (the macOS persona plants here).
	"~/Library/Keychains/**", "~/Library/Cookies/Cookies.binarycookies",
	"~/Library/Application Support/Google/Chrome/*/Login Data", "~/Library/Application Support/Google/Chrome/*/Cookies",
	"~/Library/Application Support/Google/Chrome/Local State", "~/Library/Application Support/Firefox/Profiles/*/logins.json",
	"~/Library/Application Support/Firefox/Profiles/*/key4.db", "~/Library/Application Support/discord/Local Storage/**",
	"~/Library/Application Support/Slack/Local Storage/**",
}

// WalletPaths are patterns for cryptocurrency wallets and seed notes.
var WalletPaths = []string{
	"~/.bitcoin/**", "~/.ethereum/keystore/**", "~/.config/solana/**", "~/.electrum/**",
	"~/.config/Exodus/**", "~/.config/atomic/**", "~/.local/share/io.parity.ethereum/**",
	"~/.config/google-chrome/*/Local Extension Settings/nkbihfbeogaeaoehlefnkodbefgpgknn/**", // MetaMask
	"~/.config/google-chrome/*/Local Extension Settings/bfnaelmomeimhlpmgjnjophhpkkoljpa/**", // Phantom
	"~/.config/google-chrome/*/Local Extension Settings/hnfanknocfeofbddgcijnmhnfnkdnaad/**", // Coinbase
	"**/wallet.dat", "**/seed.txt", "**/mnemonic*", "**/*seed*phrase*", "**/keystore/UTC--*",
	// macOS places.
	"~/Library/Application Support/Exodus/**", "~/Library/Application Support/atomic/**",
	"~/Library/Application Support/Bitcoin/**", "~/Library/Ethereum/keystore/**", "~/Library/Application Support/Electrum/**",
	"~/Library/Application Support/Google/Chrome/*/Local Extension Settings/nkbihfbeogaeaoehlefnkodbefgpgknn/**",
}

// PersistencePaths are patterns where a write is a persistence finding
// (TAXONOMY.md). Absolute patterns are not home-relative.
var PersistencePaths = []string{
	"~/.bashrc", "~/.bash_profile", "~/.bash_login", "~/.profile", "~/.zshrc", "~/.zprofile",
	"~/.zshenv", "~/.zlogin", "~/.config/fish/**",
	"/etc/cron*", "/etc/cron*/**", "/var/spool/cron/**", "/etc/profile", "/etc/profile.d/**",
	"/etc/bash.bashrc", "/etc/systemd/**", "/etc/rc.local", "/etc/ld.so.preload",
	"~/.config/systemd/user/**", "~/.config/autostart/**", "~/Library/LaunchAgents/**",
	"~/.ssh/authorized_keys", "~/.ssh/rc", "**/.git/hooks/**", "~/.gitconfig", "**/.git/config",
	"**/.claude/settings.json", "**/.claude/settings.local.json", "**/.claude/commands/**",
	"**/.claude/agents/**", "**/CLAUDE.md", "**/AGENTS.md", "**/SOUL.md", "**/MEMORY.md",
	"**/.mcp.json", "~/.claude.json", "~/.openclaw/**", "~/.clawdbot/**",
	"**/.vscode/**", "**/.idea/**", "~/.agents/skills/**",
}

// SystemSecretPaths are system files whose read is a finding.
var SystemSecretPaths = []string{"/etc/shadow", "/etc/gshadow", "/etc/passwd", "/etc/sudoers", "/etc/sudoers.d/**"}

// MatchPath reports whether the absolute path p matches pattern, with "~"
// standing for home. A pattern that starts with "**/" matches at any depth
// (inside or outside home). Matching is on cleaned slash paths.
func MatchPath(pattern, home, p string) bool {
	p = path.Clean(p)
	switch {
	case strings.HasPrefix(pattern, "~/"):
		pattern = strings.TrimSuffix(home, "/") + pattern[1:]
	case strings.HasPrefix(pattern, "**/"):
		pattern = "/" + pattern
	}
	return matchSegs(strings.Split(strings.TrimPrefix(pattern, "/"), "/"), strings.Split(strings.TrimPrefix(p, "/"), "/"))
}

// MatchAny returns the first of patterns that p matches.
func MatchAny(patterns []string, home, p string) (string, bool) {
	for _, pat := range patterns {
		if MatchPath(pat, home, p) {
			return pat, true
		}
	}
	return "", false
}

func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			if len(pat) == 1 {
				return len(segs) > 0
			}
			for i := range len(segs) + 1 {
				if matchSegs(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], segs[0]); err != nil || !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}
