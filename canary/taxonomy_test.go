package canary_test

import (
	"testing"

	"github.com/sandboxctl/sandboxctl/canary"
)

func TestMatchPath(t *testing.T) {
	const home = "/home/mwalker"
	tests := []struct {
		name     string
		patterns []string
		path     string
		want     bool
	}{
		{name: "ssh key", patterns: canary.CredentialPaths, path: "/home/mwalker/.ssh/id_ed25519", want: true},
		{name: "ssh pub is id_*", patterns: canary.CredentialPaths, path: "/home/mwalker/.ssh/id_rsa.pub", want: true},
		{name: "known_hosts", patterns: canary.CredentialPaths, path: "/home/mwalker/.ssh/known_hosts"},
		{name: "project env", patterns: canary.CredentialPaths, path: "/home/mwalker/projects/api/.env.production", want: true},
		{name: "chrome login data", patterns: canary.CredentialPaths, path: "/home/mwalker/.config/google-chrome/Default/Login Data", want: true},
		{name: "other home", patterns: canary.CredentialPaths, path: "/home/other/.aws/credentials"},
		{name: "unclean path", patterns: canary.CredentialPaths, path: "/home/mwalker/x/../.aws/credentials", want: true},
		{name: "gcloud deep", patterns: canary.CredentialPaths, path: "/home/mwalker/.config/gcloud/legacy_credentials/a@b/adc.json", want: true},
		{name: "gcloud dir itself", patterns: canary.CredentialPaths, path: "/home/mwalker/.config/gcloud"},
		{name: "wallet", patterns: canary.WalletPaths, path: "/home/mwalker/.ethereum/keystore/UTC--2026-01-01T00-00-00.0Z--ab", want: true},
		{name: "metamask", patterns: canary.WalletPaths, path: "/home/mwalker/.config/google-chrome/Default/Local Extension Settings/nkbihfbeogaeaoehlefnkodbefgpgknn/000003.log", want: true},
		{name: "seed anywhere", patterns: canary.WalletPaths, path: "/tmp/seed.txt", want: true},
		{name: "bashrc", patterns: canary.PersistencePaths, path: "/home/mwalker/.bashrc", want: true},
		{name: "cron.d", patterns: canary.PersistencePaths, path: "/etc/cron.d/job", want: true},
		{name: "git hook", patterns: canary.PersistencePaths, path: "/home/mwalker/projects/api/.git/hooks/pre-commit", want: true},
		{name: "readme", patterns: canary.PersistencePaths, path: "/home/mwalker/projects/api/README.md"},
		{name: "mac keychain", patterns: canary.CredentialPaths, path: "/home/mwalker/Library/Keychains/login.keychain-db", want: true},
		{name: "mac chrome", patterns: canary.CredentialPaths, path: "/home/mwalker/Library/Application Support/Google/Chrome/Default/Login Data", want: true},
		{name: "mac exodus", patterns: canary.WalletPaths, path: "/home/mwalker/Library/Application Support/Exodus/exodus.wallet/seed.seco", want: true},
		{name: "mac launch agent", patterns: canary.PersistencePaths, path: "/home/mwalker/Library/LaunchAgents/com.x.plist", want: true},
		{name: "mac preferences", patterns: canary.CredentialPaths, path: "/home/mwalker/Library/Preferences/com.apple.dock.plist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pat, got := canary.MatchAny(tt.patterns, home, tt.path)
			if got != tt.want {
				t.Errorf("MatchAny(%q) = %q, %v; want %v", tt.path, pat, got, tt.want)
			}
		})
	}
}
