package rules

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/trace"
)

func TestDestinationData(t *testing.T) {
	for name, l := range map[string][]destEntry{"vendors": vendorList, "codehosts": codeHosts, "destinations": badList} {
		if len(l) < 10 {
			t.Errorf("%s: only %d entries", name, len(l))
		}
		seen := map[string]bool{}
		for _, e := range l {
			if e.host == "" || e.kind == "" || e.source == "" {
				t.Errorf("%s: incomplete entry %+v", name, e)
			}
			if strings.ContainsAny(e.host, " /:") || e.host != strings.ToLower(e.host) {
				t.Errorf("%s: host %q is not a lower-case host name", name, e.host)
			}
			if e.path != "" && !strings.HasPrefix(e.path, "/") {
				t.Errorf("%s: path %q does not start with /", name, e.path)
			}
			if seen[e.host+e.path] {
				t.Errorf("%s: %s%s listed twice", name, e.host, e.path)
			}
			seen[e.host+e.path] = true
		}
	}
	if len(brandGroups) < 20 {
		t.Errorf("only %d brands", len(brandGroups))
	}
}

func TestReputationOf(t *testing.T) {
	tests := []struct {
		url  string
		tier Tier
	}{
		{"https://sh.rustup.rs", TierVendor},
		{"https://astral.sh/uv/install.sh", TierVendor},
		{"https://raw.githubusercontent.com/Homebrew/install/HEAD/install.sh", TierVendor},
		{"https://raw.githubusercontent.com/nvm-sh/nvm/v0.40.1/install.sh", TierVendor},
		{"https://get.docker.com", TierVendor},
		{"https://deb.nodesource.com/setup_20.x", TierVendor},
		{"https://bun.sh/install", TierVendor},
		{"https://deno.land/install.sh", TierVendor},
		{"https://aka.ms/InstallAzureCLIDeb", TierVendor},
		{"https://fnm.vercel.app/install", TierVendor},
		{"https://files.pythonhosted.org/packages/x/y.whl", TierVendor},
		{"https://ollama.com/install.sh", TierVendor},
		{"https://ollama.com/some/other/path", TierUnknown},
		{"https://raw.githubusercontent.com/someone/dotfiles/main/setup.sh", TierCodeHost},
		{"https://github.com/someone/tool/releases/download/v1/tool", TierCodeHost},
		{"https://gist.githubusercontent.com/someone/abc/raw/x.sh", TierCodeHost},
		{"http://localhost:8080/x", TierCodeHost},
		{"https://get.tool-setup.dev/install.sh", TierUnknown},
		{"http://91.92.242.30/q0c7ew2ro8l2cfqp", TierBad},
		{"http://[2001:db8::1]/x", TierBad},
		{"https://webhook.site/abc", TierBad},
		{"https://paste.rs/abc", TierBad},
		{"https://x.trycloudflare.com/i.sh", TierBad},
		{"https://my-app.vercel.app/i.sh", TierBad},
		{"https://sh.rustup.sh", TierBad},
		{"https://raw.githubusercontent.co/x/y.sh", TierBad},
		{"https://g1thub.com/x", TierBad},
		{"https://github-releases.io/x", TierBad},
		{"https://github.com.download-cdn.io/x", TierBad},
	}
	for _, tt := range tests {
		h, p := hostPath(tt.url)
		if got := ReputationOf(h, p); got.Tier != tt.tier {
			t.Errorf("ReputationOf(%s) = %s (%s), want %s", tt.url, got.Tier, got.Kind, tt.tier)
		}
	}
}

func TestLookAlike(t *testing.T) {
	for _, tt := range []struct {
		host string
		want bool
	}{
		{"githhub.com", true}, {"gihtub.com", true}, {"githb.com", true}, {"g1thub.com", true}, {"rnicrosoft.com", true},
		{"pypi-org.net", false}, {"npmjs.co", true}, {"docker.net", true}, {"anthropic-api.com", true},
		{"api.github.com", false}, {"user.github.io", false}, {"gitlab.com", false}, {"strike.me", false},
		{"pythonanywhere.com", false}, {"openapi.com", false}, {"dockerhub.example.org", false},
		{"s3.amazonaws.com", false}, {"googletagmanager.com", false}, {"example.com", false},
		{"rust-lang.github.io", false}, {"github.blog", false}, {"github.co", true}, {"rust-lnag.github.io", true}, {"rust-lang.netlify.app", true},
		{"myvault.vault.azure.net", false}, {"myreg.azurecr.io", false}, {"azure-login.net", true}, {"discord.gg", false}, {"discord-gift.com", true},
	} {
		if _, got := lookAlike(tt.host); got != tt.want {
			t.Errorf("lookAlike(%s) = %v, want %v", tt.host, got, tt.want)
		}
	}
}

func TestEncodedLabel(t *testing.T) {
	for _, tt := range []struct {
		label string
		want  bool
	}{
		{hex.EncodeToString([]byte("AKIAQSBXCTL7Q2X4")), true},
		{"mfrggzdfmztwq2lknnwg23tpobyxe43u", true}, // base32
		{"dGhlIHNlY3JldCBrZXkgaXMgMTIz", true},     // base64url-ish
		{"k3j4h5g6f7d8s9a0q1w2e3r4", true},
		{"acme-analytics-production-eu-west-1-datalake-raw", false},
		{"my-company-terraform-state-backups-2024", false},
		{"documentation", false},
		{"projectdocs2024", false},
		{"www", false},
		{"d1a2b3c4d5e6f7", true},
		{"abcdefabcdefabcdef", false}, // no digits
	} {
		if got := encodedLabel(tt.label); got != tt.want {
			t.Errorf("encodedLabel(%q) = %v, want %v (entropy %.2f)", tt.label, got, tt.want, entropy(tt.label))
		}
	}
}

func TestTypo(t *testing.T) {
	for _, tt := range []struct {
		s, t string
		want bool
	}{
		{"githhub", "github", true}, {"gthub", "github", true}, {"gihtub", "github", true},
		{"githab", "github", false}, {"githubx", "github", false}, {"github", "github", false},
	} {
		if got := typo(tt.s, tt.t); got != tt.want {
			t.Errorf("typo(%s, %s) = %v, want %v", tt.s, tt.t, got, tt.want)
		}
	}
}

// TestDropSiteData reads every line of data/dropsites.tsv and checks how
// its path patterns match.
func TestDropSiteData(t *testing.T) {
	if len(dropSites) < 10 {
		t.Errorf("only %d drop sites", len(dropSites))
	}
	seen := map[string]bool{}
	for _, s := range dropSites {
		if s.host == "" || s.kind == "" || !strings.HasPrefix(s.source, "https://") || len(s.methods) == 0 {
			t.Errorf("incomplete entry %+v", s)
		}
		for _, m := range s.methods {
			if m != strings.ToUpper(m) || m == "" {
				t.Errorf("%s: method %q", s.host, m)
			}
		}
		k := s.host + "/" + strings.Join(s.segs, "/")
		if seen[k] {
			t.Errorf("%s listed twice", k)
		}
		seen[k] = true
	}
	for _, tt := range []struct {
		method, url string
		want        string
	}{
		{"POST", "https://discord.com/api/webhooks/1187654321/Xk2v9QpL", "Discord webhook"},
		{"POST", "https://discord.com/api/v10/webhooks/1187654321/Xk2v9QpL?wait=true", "Discord webhook"},
		{"POST", "https://api.telegram.org/bot123:AAE/sendDocument", "Telegram bot API"},
		{"GET", "https://api.telegram.org/bot123:AAE/sendMessage?chat_id=1&text=x", "Telegram bot API"},
		{"POST", "https://hooks.slack.com/services/T0/B0/x", "Slack incoming webhook"},
		{"PATCH", "https://api.github.com/gists/aa5a315d61ae9438b18d", "GitHub gist"},
		{"GET", "https://api.github.com/gists/aa5a315d61ae9438b18d", ""},     // reading a gist
		{"GET", "https://api.telegram.org/bot123:AAE/getUpdates", ""},        // not a send
		{"POST", "https://discord.com/api/v10/applications/1/commands", ""},  // a bot's setup
		{"POST", "https://api.github.com/repos/o/r/issues", ""},              // the user's repository
		{"POST", "https://hooks.slack.com.example.net/services/T0/B0/x", ""}, // not Slack's
		{"POST", "https://chat.googleapis.com/v1/spaces/AAA/messages?key=k", "Google Chat webhook"},
	} {
		got := ""
		if s, ok := dropSiteOf(&trace.HTTPExchange{Method: tt.method, URL: tt.url}); ok {
			got = s.kind
		}
		if got != tt.want {
			t.Errorf("%s %s: drop site %q, want %q", tt.method, tt.url, got, tt.want)
		}
	}
}

func TestIsPublicKey(t *testing.T) {
	for p, want := range map[string]bool{
		"~/.ssh/id_ed25519.pub": true, "~/.ssh/known_hosts": true, "~/.gnupg/pubring.kbx": true,
		"~/.config/relsig/release_public.pem": true, "~/keys/signing-public-key.pem": true, "~/keys/key.pub.pem": true,
		"~/keys/id_pub.pem": true, "~/keys/pubkey.pem": true, "~/certs/server.crt": true,
		"~/.ssh/id_ed25519": false, "~/certs/server.key": false, "~/keys/public-repo-deploy.pem": false,
		"~/.gnupg/private-keys-v1.d/AB12.key": false, "~/.aws/credentials": false,
	} {
		if got := isPublicKey(p); got != want {
			t.Errorf("isPublicKey(%s) = %t, want %t", p, got, want)
		}
	}
}
