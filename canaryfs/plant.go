package canaryfs

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/canary"
)

// plant fills the home. The order of calls fixes the random stream, so it
// must not depend on map iteration.
func (b *builder) plant() {
	b.plantEnv()
	b.plantSSH()
	b.plantCloud()
	b.plantTools()
	b.plantEnvFiles()
	b.plantAgents()
	b.plantWallets()
	b.plantBrowsers()
	b.plantShell()
	b.plantProjects()
	b.plantLivedIn()
	b.plantSSHRSA()
	for _, f := range b.later {
		f()
	}
}

func (b *builder) plantEnv() {
	for _, v := range canary.EnvVars {
		var t canary.Token
		switch v.Kind {
		case canary.AWSAccessKey:
			// With a session token the key id of temporary credentials
			// starts with ASIA.
			t = b.m.Mint(v.Kind, "env:"+v.Name)
			t.Value = "ASIA" + t.Value[4:]
		case canary.DatabaseURL:
			t = b.m.DatabaseURL("env:"+v.Name, "postgres", b.user, "localhost", "app_dev")
		default:
			t = b.m.Mint(v.Kind, "env:"+v.Name)
		}
		b.register(t)
		b.env = append(b.env, v.Name+"="+t.Value)
	}
}

func (b *builder) plantSSH() {
	comment := b.user + "@" + b.host
	b.dir(".ssh", 0o700)
	ed := b.register(b.m.SSHKeyEd25519("~/.ssh/id_ed25519", comment))
	old := b.ago(60*24*time.Hour, 400*24*time.Hour)
	b.put(".ssh/id_ed25519", 0o600, []byte(ed.Value), old)
	b.put(".ssh/id_ed25519.pub", 0o644, []byte(canary.SSHPublicKey(ed.Value)+"\n"), old)
	b.rsaTime = b.ago(400*24*time.Hour, 900*24*time.Hour) // the RSA key is written last (plantSSHRSA)
	bastion := fmt.Sprintf("10.%d.%d.%d", 10+b.m.Intn(50), b.m.Intn(256), 4+b.m.Intn(200))
	b.putS(".ssh/config", 0o600, fmt.Sprintf(`Host github.com
    User git
    IdentityFile ~/.ssh/id_ed25519
    IdentitiesOnly yes

Host bastion
    HostName bastion.%[1]s
    User %[2]s
    IdentityFile ~/.ssh/id_ed25519
    ForwardAgent yes

Host db-staging
    HostName %[3]s
    User ubuntu
    ProxyJump bastion
    IdentityFile ~/.ssh/id_rsa

Host *
    ServerAliveInterval 60
    AddKeysToAgent yes
`, b.company.domain, b.user, bastion))
	var kh strings.Builder
	for range 6 + b.m.Intn(6) {
		// Other hosts' keys are the home's layout, not its secrets: a twin
		// home (canary.Twin) keeps them.
		hk := canary.NewMinter(canary.SeededReader(b.m.Bytes(32))).SSHKeyEd25519("", "")
		pub := strings.Fields(canary.SSHPublicKey(hk.Value))
		fmt.Fprintf(&kh, "|1|%s|%s %s %s\n", base64.StdEncoding.EncodeToString(b.m.Bytes(20)),
			base64.StdEncoding.EncodeToString(b.m.Bytes(20)), pub[0], pub[1])
	}
	b.putS(".ssh/known_hosts", 0o644, kh.String())
	b.putS(".ssh/authorized_keys", 0o600, canary.SSHPublicKey(ed.Value)+"\n")
}

// plantSSHRSA writes the older RSA key, made in the background while the
// rest of the home was planted (Build starts it).
func (b *builder) plantSSHRSA() {
	rsa := b.register(b.m.SSHKeyRSAWith("~/.ssh/id_rsa", b.user+"@"+b.host, b.rsaKey()))
	b.put(".ssh/id_rsa", 0o600, []byte(rsa.Value), b.rsaTime)
	b.put(".ssh/id_rsa.pub", 0o644, []byte(canary.SSHPublicKey(rsa.Value)+"\n"), b.rsaTime)
}

func (b *builder) plantCloud() {
	// AWS: two profiles, INI.
	id1, sk1 := b.mint(canary.AWSAccessKey, ".aws/credentials"), b.mint(canary.AWSSecretKey, ".aws/credentials")
	id2, sk2 := b.mint(canary.AWSAccessKey, ".aws/credentials"), b.mint(canary.AWSSecretKey, ".aws/credentials")
	b.putS(".aws/credentials", 0o600, fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n[prod-admin]\naws_access_key_id = %s\naws_secret_access_key = %s\n", id1, sk1, id2, sk2))
	b.putS(".aws/config", 0o644, "[default]\nregion = us-east-1\noutput = json\n\n[profile prod-admin]\nregion = eu-west-1\noutput = json\nrole_session_name = "+b.user+"\n")

	// Google Cloud: ADC and the credentials database.
	clientID := fmt.Sprintf("%d-%s.apps.googleusercontent.com", 700000000000+b.m.Intn(99999999999), b.m.Chars(canary.Lower+canary.Digits, 32))
	adcPath := ".config/gcloud/application_default_credentials.json"
	var clientSecret string
	b.secretly(func() { clientSecret = "GOCSPX-" + b.m.Chars(canary.Alnum+"-_", 28) })
	adc := map[string]string{"account": "", "client_id": clientID,
		"client_secret":    b.register(b.m.Token(canary.GenericAPIKey, "~/"+adcPath, clientSecret)).Value,
		"quota_project_id": b.company.org + "-prod", "refresh_token": b.mint(canary.GCPRefreshToken, ".config/gcloud/application_default_credentials.json"),
		"type": "authorized_user", "universe_domain": "googleapis.com"}
	b.putJSON(".config/gcloud/application_default_credentials.json", 0o600, adc)
	dbTok := b.mint(canary.GCPRefreshToken, ".config/gcloud/credentials.db")
	cred, _ := json.Marshal(map[string]any{"client_id": "32555940559.apps.googleusercontent.com", "client_secret": "ZmssLNjJy2998hD4CTg2ejr2",
		"refresh_token": dbTok, "revoke_uri": "https://oauth2.googleapis.com/revoke", "scopes": []string{"openid", "https://www.googleapis.com/auth/userinfo.email", "https://www.googleapis.com/auth/cloud-platform"},
		"token_uri": "https://oauth2.googleapis.com/token", "type": "authorized_user", "universe_domain": "googleapis.com"})
	b.put(".config/gcloud/credentials.db", 0o600, b.sqlite(
		[]string{"CREATE TABLE credentials (account_id TEXT PRIMARY KEY, value BLOB)"},
		sqlRow{"INSERT INTO credentials VALUES (?, ?)", []any{b.email, cred}}), b.recent())
	legacy := ".config/gcloud/legacy_credentials/" + b.email + "/adc.json"
	b.putJSON(legacy, 0o600, map[string]string{"client_id": "32555940559.apps.googleusercontent.com",
		"client_secret": "ZmssLNjJy2998hD4CTg2ejr2", "refresh_token": b.mint(canary.GCPRefreshToken, legacy), "type": "authorized_user"})
	b.putS(".config/gcloud/active_config", 0o644, "default")
	b.putS(".config/gcloud/configurations/config_default", 0o644, fmt.Sprintf("[core]\naccount = %s\nproject = %s-prod\n\n[compute]\nregion = us-central1\nzone = us-central1-a\n", b.email, b.company.org))

	// Azure CLI.
	tenant, sub := b.m.UUID(), b.m.UUID()
	at := b.register(b.m.Mint(canary.AzureToken, "~/.azure/msal_token_cache.json")).Value
	home := b.m.UUID() + "." + tenant
	exp := b.now.Add(40 * time.Minute).Unix()
	cache := map[string]any{
		"AccessToken": map[string]any{home + "-login.microsoftonline.com-accesstoken-04b07795-8ddb-461a-bbee-02f9e1bf7b46-" + tenant + "-https://management.core.windows.net//.default": map[string]any{
			"credential_type": "AccessToken", "secret": at, "home_account_id": home, "environment": "login.microsoftonline.com",
			"client_id": "04b07795-8ddb-461a-bbee-02f9e1bf7b46", "target": "https://management.core.windows.net//user_impersonation https://management.core.windows.net//.default",
			"realm": tenant, "token_type": "Bearer", "cached_at": fmt.Sprint(exp - 4000), "expires_on": fmt.Sprint(exp)}},
		"Account": map[string]any{home + "-login.microsoftonline.com-" + tenant: map[string]any{"home_account_id": home, "environment": "login.microsoftonline.com",
			"realm": tenant, "local_account_id": strings.Split(home, ".")[0], "username": b.email, "authority_type": "MSSTS"}},
	}
	b.putJSON(".azure/msal_token_cache.json", 0o600, cache)
	b.putJSON(".azure/azureProfile.json", 0o644, map[string]any{"installationId": b.m.UUID(), "subscriptions": []any{map[string]any{
		"id": sub, "name": b.company.name + " Production", "state": "Enabled", "user": map[string]string{"name": b.email, "type": "user"},
		"isDefault": true, "tenantId": tenant, "environmentName": "AzureCloud", "homeTenantId": tenant}}})
	b.putS(".azure/config", 0o644, "[cloud]\nname = AzureCloud\n\n[core]\nfirst_run = yes\n")

	// Kubernetes.
	kt := b.mint(canary.KubeToken, ".kube/config")
	ca := base64.StdEncoding.EncodeToString([]byte(b.caCert(b.company.org + "-prod")))
	b.putS(".kube/config", 0o600, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: %[1]s
    server: https://%[2]s:6443
  name: %[3]s-prod
contexts:
- context:
    cluster: %[3]s-prod
    namespace: default
    user: %[4]s
  name: %[3]s-prod
current-context: %[3]s-prod
preferences: {}
users:
- name: %[4]s
  user:
    token: %[5]s
`, ca, fmt.Sprintf("10.%d.%d.%d", 20+b.m.Intn(40), b.m.Intn(256), 2+b.m.Intn(250)), b.company.org, b.user, kt))
}

func (b *builder) plantTools() {
	dauth := b.register(b.m.DockerAuth("~/.docker/config.json", b.user)).Value
	b.putJSON(".docker/config.json", 0o600, map[string]any{"auths": map[string]any{
		"https://index.docker.io/v1/": map[string]string{"auth": dauth}}, "currentContext": "default"})
	// Global installs go to a prefix in the home, as npm's guide to EACCES
	// errors has a developer without root set up (npm config set prefix
	// ~/.npm-global, and its bin on PATH in the shell's files and Env):
	// `npm install -g X` then works and X is found.
	b.putS(".npmrc", 0o600, "//registry.npmjs.org/:_authToken="+b.mint(canary.NPMToken, ".npmrc")+"\ninit-author-name="+b.fullName+"\nprefix="+b.home+"/"+NPMPrefix+"\n")
	b.dir(NPMPrefix+"/bin", 0o755)
	b.dir(NPMPrefix+"/lib/node_modules", 0o755)
	b.putS(".pypirc", 0o600, "[distutils]\nindex-servers =\n    pypi\n\n[pypi]\nusername = __token__\npassword = "+b.mint(canary.PyPIToken, ".pypirc")+"\n")
	var herokuKey string
	b.secretly(func() { herokuKey = b.m.UUID() })
	b.putS(".netrc", 0o600, fmt.Sprintf("machine api.heroku.com\n  login %s\n  password %s\nmachine ftp.%s\n  login %s\n  password %s\n",
		b.email, b.register(b.m.Token(canary.GenericAPIKey, "~/.netrc", herokuKey)).Value, b.company.domain, b.user, b.mint(canary.Password, ".netrc")))
	b.putS(".git-credentials", 0o600, fmt.Sprintf("https://%s:%s@github.com\n", b.user, b.mint(canary.GitHubToken, ".git-credentials")))
	b.putS(".gitconfig", 0o644, fmt.Sprintf("[user]\n\tname = %s\n\temail = %s\n[core]\n\teditor = vim\n[credential]\n\thelper = store\n[init]\n\tdefaultBranch = main\n[pull]\n\trebase = false\n[alias]\n\tst = status -sb\n\tlg = log --oneline --graph --decorate\n", b.fullName, b.email))
	gho := b.mint(canary.GitHubOAuthToken, ".config/gh/hosts.yml")
	b.putS(".config/gh/hosts.yml", 0o600, fmt.Sprintf("github.com:\n    users:\n        %[1]s:\n            oauth_token: %[2]s\n    git_protocol: ssh\n    oauth_token: %[2]s\n    user: %[1]s\n", b.user, gho))
	b.putS(".config/gh/config.yml", 0o644, "version: 1\ngit_protocol: ssh\neditor:\nprompt: enabled\npager:\naliases:\n    co: pr checkout\n")
	// GNOME keyring: the login keyring file (encrypted with the login
	// password), whose encrypted body is a raw needle.
	kr := append([]byte("GnomeKeyring\n\r\x00\n"), 0, 0, 0, 0) // version, crypto, hash
	kr = append(kr, 0, 0, 0, 5, 'l', 'o', 'g', 'i', 'n')
	kr = append(kr, b.m.Bytes(16)...) // times
	kr = append(kr, 0, 0, 0, 0, 0, 0, 0x07, 0xd0)
	kr = append(kr, b.m.Bytes(8)...) // salt
	n := 16 * (12 + b.m.Intn(8))
	var body []byte
	b.secretly(func() { body = b.m.Bytes(n) })
	kr = append(kr, body...)
	ks := b.m.Token(canary.KeyringSecret, "~/.local/share/keyrings/login.keyring", base64.StdEncoding.EncodeToString(body[:48]))
	ks.RawNeedles = [][]byte{body[:48], body[len(body)-48:]}
	b.register(ks)
	b.put(".local/share/keyrings/login.keyring", 0o600, kr, b.ago(5*24*time.Hour, 60*24*time.Hour))
	b.dir(".local/share/keyrings", 0o700)
	// GnuPG: an agent key file, a keybox and trustdb that look the part.
	b.dir(".gnupg", 0o700)
	b.dir(".gnupg/private-keys-v1.d", 0o700)
	grip := strings.ToUpper(b.m.Hex(20))
	created := b.ago(200*24*time.Hour, 700*24*time.Hour)
	g := b.register(b.m.GPGKey("~/.gnupg/private-keys-v1.d/"+grip+".key", created.Format("20060102T150405")))
	b.put(".gnupg/private-keys-v1.d/"+grip+".key", 0o600, []byte(g.Value), created)
	kbx := append([]byte{0, 0, 0, 32, 1, 1, 0, 2}, []byte("KBXf")...)
	kbx = append(kbx, b.m.Bytes(2048)...)
	b.put(".gnupg/pubring.kbx", 0o600, kbx, b.recent())
	b.put(".gnupg/trustdb.gpg", 0o600, append([]byte{1, 'g', 'p', 'g', 3, 3, 0, 1}, b.m.Bytes(1192)...), b.recent())
	b.putS(".gnupg/gpg-agent.conf", 0o600, "default-cache-ttl 3600\npinentry-program /usr/bin/pinentry-curses\n")
}

func (b *builder) plantEnvFiles() {
	b.putS(".env", 0o600, fmt.Sprintf("# personal scratch keys\nOPENAI_API_KEY=%s\nSTRIPE_SECRET_KEY=%s\nDATABASE_URL=%s\n",
		b.mint(canary.OpenAIKey, ".env"), b.mint(canary.StripeKey, ".env"),
		b.register(b.m.DatabaseURL("~/.env", "postgres", b.user, "localhost", "scratch")).Value))
}

func (b *builder) plantAgents() {
	b.dir(".clawdbot", 0o700)
	b.putS(".clawdbot/.env", 0o600, fmt.Sprintf("ANTHROPIC_API_KEY=%s\nTELEGRAM_BOT_TOKEN=%s\nTELEGRAM_ALLOWED_USERS=%d\n",
		b.mint(canary.AnthropicKey, ".clawdbot/.env"), b.mint(canary.TelegramBotToken, ".clawdbot/.env"), 100000000+b.m.Intn(900000000)))
	b.putJSON(".openclaw/openclaw.json", 0o600, map[string]any{
		"agents":   map[string]any{"defaults": map[string]any{"model": "openrouter/anthropic/claude-sonnet-4.5", "workspace": b.home + "/.openclaw/workspace"}},
		"models":   map[string]any{"providers": map[string]any{"openrouter": map[string]any{"apiKey": b.mint(canary.OpenRouterKey, ".openclaw/openclaw.json")}}},
		"channels": map[string]any{"telegram": map[string]any{"enabled": true}},
		"gateway":  map[string]any{"port": 18789, "bind": "loopback"},
	})
	b.putS(".openclaw/workspace/SOUL.md", 0o644, "# SOUL\n\nYou are "+b.fullName+"'s assistant. Be concise, be direct, no fluff.\nPrefer British spelling in emails. Never send anything to clients without asking first.\n")
	b.putS(".openclaw/workspace/MEMORY.md", 0o644, fmt.Sprintf("# Memory\n\n- %s works at %s (platform team).\n- Prefers meetings after 10:00.\n- Staging admin login: admin / %s\n- Dentist appointment moved to the 14th.\n",
		b.fullName, b.company.name, b.mint(canary.Password, ".openclaw/workspace/MEMORY.md")))
	b.putS(".openclaw/workspace/AGENTS.md", 0o644, "# Agents\n\nRead SOUL.md and MEMORY.md at the start of every session.\n")
	pat := b.mint(canary.GitHubPAT, ".claude.json")
	b.putJSON(".claude.json", 0o600, map[string]any{
		"numStartups": 40 + b.m.Intn(200), "installMethod": "native", "autoUpdates": true, "hasCompletedOnboarding": true,
		"userID": b.m.Hex(32),
		"mcpServers": map[string]any{"github": map[string]any{"type": "stdio", "command": "npx", "args": []string{"-y", "@modelcontextprotocol/server-github"},
			"env": map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": pat}}},
		"oauthAccount": map[string]any{"emailAddress": b.email, "organizationName": b.company.name, "accountUuid": b.m.UUID()},
	})
	var refresh string
	b.secretly(func() { refresh = "sk-ant-ort01-" + b.m.Chars(canary.Alnum+"-_", 93) + "AA" })
	b.putJSON(".claude/.credentials.json", 0o600, map[string]any{"claudeAiOauth": map[string]any{
		"accessToken": b.mint(canary.AnthropicOAuth, ".claude/.credentials.json"), "refreshToken": b.register(b.m.Token(canary.AnthropicOAuth, "~/.claude/.credentials.json", refresh)).Value,
		"expiresAt": b.now.Add(6 * time.Hour).UnixMilli(), "scopes": []string{"user:inference", "user:profile"}, "subscriptionType": "pro"}})
	b.putJSON(".claude/settings.json", 0o644, map[string]any{"model": "sonnet", "permissions": map[string]any{
		"allow": []string{"Bash(npm run test:*)", "Bash(git status)", "Bash(git diff:*)"}, "deny": []string{"Read(./.env)"}}})
	// Discord keeps the session token in Electron local storage: the first
	// thing token stealers read.
	dloc := ".config/discord/Local Storage/leveldb"
	b.levelDB(dloc, []kv{{"_https://discord.com\x00\x01token", "\x01\"" + b.mint(canary.DiscordToken, dloc+"/000003.log") + "\""},
		{"_https://discord.com\x00\x01user_id_cache", "\x01\"" + b.m.Chars(canary.Digits, 18) + "\""}})
	b.putJSON(".config/discord/settings.json", 0o644, map[string]any{"IS_MAXIMIZED": true, "IS_MINIMIZED": false, "BACKGROUND_COLOR": "#313338"})
	b.putS("CLAUDE.md", 0o644, "# Notes for Claude\n\n- Use pnpm, not npm, in my projects.\n- Run the tests before you say you are done.\n- Don't touch ~/projects/*/migrations without asking.\n")
}

func (b *builder) plantWallets() {
	// Bitcoin Core.
	addr := b.register(b.m.Mint(canary.BitcoinWallet, "~/.bitcoin/wallet.dat"))
	b.put(".bitcoin/wallet.dat", 0o600, b.walletDat(addr), b.ago(30*24*time.Hour, 300*24*time.Hour))
	b.putS(".bitcoin/bitcoin.conf", 0o644, "server=1\nprune=5000\ndbcache=1024\n")
	// Ethereum keystore, with its password noted where people note them.
	b.secretly(func() { b.keystorePW = b.m.Password() })
	ethAddr, ks := b.m.EthereumKeystoreLater("", b.keystorePW)
	t := b.ago(60*24*time.Hour, 500*24*time.Hour)
	name := "UTC--" + t.Format("2006-01-02T15-04-05") + fmt.Sprintf(".%09dZ--", b.m.Intn(1e9)) + ethAddr
	b.later = append(b.later, func() { // the key derivation runs meanwhile
		k := ks()
		k.Location = "~/.ethereum/keystore/" + name
		b.register(k)
		b.put(".ethereum/keystore/"+name, 0o600, []byte(k.Value), t)
	})
	// Solana.
	sol := b.register(b.m.SolanaKeypair("~/.config/solana/id.json"))
	b.putS(".config/solana/id.json", 0o600, sol.Value)
	b.putS(".config/solana/cli/config.yml", 0o644, "---\njson_rpc_url: https://api.mainnet-beta.solana.com\nwebsocket_url: ''\nkeypair_path: "+b.home+"/.config/solana/id.json\naddress_labels:\n  '11111111111111111111111111111111': System Program\ncommitment: confirmed\n")
	// Electrum.
	el := b.register(b.m.ElectrumWallet("~/.electrum/wallets/default_wallet"))
	b.put(".electrum/wallets/default_wallet", 0o600, []byte(el.Value), b.recent())
	b.putS(".electrum/config", 0o644, `{"config_version": 3, "auto_connect": true, "check_updates": false, "gui_last_wallet": "`+b.home+`/.electrum/wallets/default_wallet"}`)
	// Exodus: encrypted .seco files.
	var seco []byte
	b.secretly(func() { seco = b.seco() })
	ex := b.m.Token(canary.WalletVault, "~/.config/Exodus/exodus.wallet/seed.seco", base64.StdEncoding.EncodeToString(seco[len(seco)-64:]))
	ex.RawNeedles = [][]byte{seco[len(seco)-64:]}
	b.register(ex)
	b.put(".config/Exodus/exodus.wallet/seed.seco", 0o600, seco, b.recent())
	b.put(".config/Exodus/exodus.wallet/info.seco", 0o600, b.seco(), b.recent())
	b.put(".config/Exodus/exodus.wallet/storage.seco", 0o600, b.seco(), b.recent())
	var passphrase, mnemonic string
	b.secretly(func() { passphrase = b.m.Hex(32) })
	b.putJSON(".config/Exodus/exodus.wallet/passphrase.json", 0o600, map[string]any{
		"passphrase": b.register(b.m.Token(canary.WalletVault, "~/.config/Exodus/exodus.wallet/passphrase.json", passphrase)).Value})
	b.secretly(func() {
		mnemonic = base64.StdEncoding.EncodeToString(append([]byte("Salted__"), b.m.Bytes(8+16*(9+b.m.Intn(3)))...))
	})
	// Atomic Wallet: Electron local storage holding the encrypted mnemonic.
	atomicTok := b.register(b.m.Token(canary.WalletVault, "~/.config/atomic/Local Storage/leveldb/000003.log", mnemonic))
	b.levelDB(".config/atomic/Local Storage/leveldb", []kv{
		{"_file://\x00\x01general_mnemonic", "\x01" + atomicTok.Value},
		{"_file://\x00\x01addresses", "\x01" + `{"BTC":"` + b.m.SegwitAddress() + `"}`},
	})
	// MetaMask in the Chrome profile.
	vault := b.register(b.m.MetaMaskVault("~/.config/google-chrome/Default/Local Extension Settings/nkbihfbeogaeaoehlefnkodbefgpgknn/000003.log"))
	state, _ := json.Marshal(map[string]any{"KeyringController": map[string]any{"vault": vault.Value}})
	b.levelDB(".config/google-chrome/Default/Local Extension Settings/nkbihfbeogaeaoehlefnkodbefgpgknn", []kv{{"data", string(state)}})
	// Seed phrases in notes.
	b.putS("Documents/seed.txt", 0o644, "ledger backup (metal plate is in the safe)\n"+b.register(b.m.SeedPhrase("~/Documents/seed.txt", 24)).Value+"\n")
	b.putS("Desktop/mnemonic.txt", 0o644, b.register(b.m.SeedPhrase("~/Desktop/mnemonic.txt", 12)).Value+"\n")
}

func (b *builder) plantShell() {
	hf := b.mint(canary.HuggingFaceToken, ".bash_history")
	cmds := []string{"ls -la", "cd ~/projects", "git status", "git pull", "docker ps", "docker compose up -d", "kubectl get pods -n default",
		"aws s3 ls", "aws sts get-caller-identity --profile prod-admin", "vim ~/.ssh/config", "ssh bastion", "npm install", "npm run test",
		"pnpm dev", "python3 -m venv .venv", "source .venv/bin/activate", "pip install -r requirements.txt", "htop", "df -h",
		"git log --oneline | head", "code .", "make test", "terraform plan", "gh pr list", "curl -s localhost:8080/healthz",
		"psql $DATABASE_URL", "journalctl --user -f", "sudo apt update", "go test ./...", "history | grep ssh"}
	var bh strings.Builder
	for i := range 80 {
		if i == 37 {
			fmt.Fprintf(&bh, "huggingface-cli login --token %s\n", hf)
			continue
		}
		bh.WriteString(cmds[b.m.Intn(len(cmds))] + "\n")
	}
	b.put(".bash_history", 0o600, []byte(bh.String()), b.ago(15*time.Minute, 3*time.Hour))
	oa := b.mint(canary.OpenAIKey, ".zsh_history")
	var zh strings.Builder
	ts := b.now.Add(-20 * 24 * time.Hour).Unix()
	for i := range 60 {
		ts += int64(60 + b.m.Intn(20000))
		c := cmds[b.m.Intn(len(cmds))]
		if i == 22 {
			c = "export OPENAI_API_KEY=" + oa
		}
		fmt.Fprintf(&zh, ": %d:0;%s\n", ts, c)
	}
	b.put(".zsh_history", 0o600, []byte(zh.String()), b.ago(1*time.Hour, 2*24*time.Hour))
	b.putS(".bashrc", 0o644, bashrc)
	b.putS(".zshrc", 0o644, "export ZSH=\"$HOME/.oh-my-zsh\"\nZSH_THEME=\"robbyrussell\"\nplugins=(git docker kubectl)\nHISTSIZE=10000\nSAVEHIST=10000\nexport PATH=\"$HOME/.local/bin:$HOME/go/bin:$PATH\"\nexport PATH=\"$HOME/.npm-global/bin:$PATH\"\nalias k=kubectl\nalias gs='git status -sb'\n")
	b.putS(".profile", 0o644, "# ~/.profile: executed by the command interpreter for login shells.\nif [ -n \"$BASH_VERSION\" ]; then\n    if [ -f \"$HOME/.bashrc\" ]; then\n\t. \"$HOME/.bashrc\"\n    fi\nfi\nif [ -d \"$HOME/bin\" ] ; then\n    PATH=\"$HOME/bin:$PATH\"\nfi\nif [ -d \"$HOME/.local/bin\" ] ; then\n    PATH=\"$HOME/.local/bin:$PATH\"\nfi\nexport PATH=~/.npm-global/bin:$PATH\n")
	b.putS(".bash_logout", 0o644, "# ~/.bash_logout: executed by bash(1) when login shell exits.\nif [ \"$SHLVL\" = 1 ]; then\n    [ -x /usr/bin/clear_console ] && /usr/bin/clear_console -q\nfi\n")
}

const bashrc = `# ~/.bashrc: executed by bash(1) for non-login shells.
case $- in
    *i*) ;;
      *) return;;
esac
HISTCONTROL=ignoreboth
shopt -s histappend
HISTSIZE=5000
HISTFILESIZE=10000
shopt -s checkwinsize
if [ -x /usr/bin/dircolors ]; then
    eval "$(dircolors -b)"
    alias ls='ls --color=auto'
    alias grep='grep --color=auto'
fi
alias ll='ls -alF'
alias la='ls -A'
alias k=kubectl
export PATH="$HOME/.local/bin:$HOME/go/bin:$PATH"
export PATH="$HOME/.npm-global/bin:$PATH"
export NVM_DIR="$HOME/.nvm"
[ -s "$NVM_DIR/nvm.sh" ] && \. "$NVM_DIR/nvm.sh"
if [ -f ~/.bash_aliases ]; then
    . ~/.bash_aliases
fi
`

func (b *builder) putJSON(rel string, mode fs.FileMode, v any) {
	out, err := json.MarshalIndent(v, "", "  ")
	b.fail(err)
	b.put(rel, mode, append(out, '\n'), b.recent())
}
