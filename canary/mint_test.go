package canary_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"golang.org/x/crypto/ssh"
)

var formats = map[canary.Kind]string{
	canary.AWSAccessKey:     `^AKIA[A-Z2-7]{16}$`,
	canary.AWSSecretKey:     `^[A-Za-z0-9+/]{40}$`,
	canary.AWSSessionToken:  `^IQoJb3JpZ2luX2Vj[A-Za-z0-9+/]{300,}=*$`,
	canary.GitHubToken:      `^ghp_[A-Za-z0-9]{36}$`,
	canary.GitHubOAuthToken: `^gho_[A-Za-z0-9]{36}$`,
	canary.GitHubPAT:        `^github_pat_11[A-Z0-9]{20}_[A-Za-z0-9]{59}$`,
	canary.OpenAIKey:        `^sk-proj-[A-Za-z0-9_-]{74}T3BlbkFJ[A-Za-z0-9_-]{74}$`,
	canary.AnthropicKey:     `^sk-ant-api03-[A-Za-z0-9_-]{93}AA$`,
	canary.AnthropicOAuth:   `^sk-ant-oat01-[A-Za-z0-9_-]{93}AA$`,
	canary.OpenRouterKey:    `^sk-or-v1-[0-9a-f]{64}$`,
	canary.SlackToken:       `^xoxb-[1-9][0-9]{11}-[1-9][0-9]{12}-[A-Za-z0-9]{24}$`,
	canary.StripeKey:        `^sk_live_51[A-Za-z0-9]{97}$`,
	canary.NPMToken:         `^npm_[A-Za-z0-9]{36}$`,
	canary.PyPIToken:        `^pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{150,}$`,
	canary.HuggingFaceToken: `^hf_[A-Za-z]{34}$`,
	canary.TelegramBotToken: `^[5-8][0-9]{9}:AA[A-Za-z0-9_-]{33}$`,
	canary.DiscordToken:     `^[MNO][A-Za-z0-9]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{38}$`,
	canary.GCPRefreshToken:  `^1//0[A-Za-z0-9_-]{99}$`,
	canary.AzureToken:       `^eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{342}$`,
	canary.KubeToken:        `^eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{342}$`,
	canary.DockerAuth:       `^[A-Za-z0-9+/]+=*$`,
	canary.DatabaseURL:      `^postgres://app:[A-Za-z0-9]{24}@db\.internal:5432/app$`,
	canary.Password:         `^[A-Za-z0-9!@#$%^&*=+_-]{16,20}$`,
	canary.BrowserPassword:  `^[A-Za-z0-9!@#$%^&*=+_-]{16,20}$`,
	canary.BrowserCookie:    `^[A-Za-z0-9_.-]{72}$`,
	canary.SolanaKeypair:    `^\[(\d{1,3},){63}\d{1,3}\]$`,
	canary.SeedPhrase:       `^([a-z]+ ){11}[a-z]+$`,
	canary.BitcoinWallet:    `^bc1q[qpzry9x8gf2tvdw0s3jn54khce6mua7l]{38}$`,
	canary.GenericAPIKey:    `^[A-Za-z0-9]{32}$`,
}

func TestMintFormats(t *testing.T) {
	m := canary.NewMinter(canary.SeededReader([]byte("formats")))
	for kind, re := range formats {
		t.Run(string(kind), func(t *testing.T) {
			for range 20 {
				tok := m.Mint(kind, "~/x")
				if !regexp.MustCompile(re).MatchString(tok.Value) {
					t.Fatalf("Mint(%s) = %q, does not match %s", kind, tok.Value, re)
				}
				if strings.Contains(strings.ToLower(tok.Value), "canary") {
					t.Fatalf("Mint(%s) = %q contains the word canary", kind, tok.Value)
				}
				for _, n := range append(tok.Needles, tok.Value) {
					if len(n) < canary.MinNeedle {
						t.Fatalf("Mint(%s): needle %q shorter than %d", kind, n, canary.MinNeedle)
					}
				}
			}
		})
	}
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestGitHubChecksum(t *testing.T) {
	m := canary.NewMinter(nil)
	for _, k := range []canary.Kind{canary.GitHubToken, canary.GitHubOAuthToken, canary.NPMToken} {
		v := m.Mint(k, "env:X").Value
		if !canary.ValidGitHubChecksum(v) {
			t.Errorf("%s %q: checksum invalid", k, v)
		}
		bad := v[:10] + string(rune('A'+(v[10]-'A'+1)%26)) + v[11:]
		if bad != v && canary.ValidGitHubChecksum(bad) {
			t.Errorf("%q: altered token still validates", bad)
		}
	}
}

func TestMintDeterministic(t *testing.T) {
	mint := func(seed string) []canary.Token {
		m := canary.NewMinter(canary.SeededReader([]byte(seed)))
		return []canary.Token{m.Mint(canary.AWSAccessKey, "a"), m.SSHKeyEd25519("b", "c"), m.Mint(canary.SeedPhrase, "d"),
			m.EthereumKeystore("e", "pw")}
	}
	a, b, c := mint("one"), mint("one"), mint("two")
	for i := range a {
		if a[i].Value != b[i].Value {
			t.Errorf("same seed, token %d differs", i)
		}
		if a[i].Value == c[i].Value {
			t.Errorf("different seeds, token %d equal", i)
		}
	}
}

func TestMintRandomUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 2 {
		m := canary.NewMinter(nil)
		for kind := range formats {
			v := m.Mint(kind, "x").Value
			if seen[v] {
				t.Errorf("%s minted twice: %q", kind, v)
			}
			seen[v] = true
		}
	}
}

func TestSSHKeys(t *testing.T) {
	m := canary.NewMinter(canary.SeededReader([]byte("ssh")))
	keys := []canary.Token{m.SSHKeyEd25519("~/.ssh/id_ed25519", "mwalker@thinkpad"), m.SSHKeyRSA("~/.ssh/id_rsa", "mwalker@thinkpad", 2048)}
	for _, tok := range keys {
		k, err := ssh.ParseRawPrivateKey([]byte(tok.Value))
		if err != nil {
			t.Fatalf("ParseRawPrivateKey(%s): %v", tok.Location, err)
		}
		switch k := k.(type) {
		case *ed25519.PrivateKey:
		case *rsa.PrivateKey:
			if k.N.BitLen() != 2048 {
				t.Errorf("rsa key of %d bits", k.N.BitLen())
			}
			if err := k.Validate(); err != nil {
				t.Errorf("rsa key invalid: %v", err)
			}
		default:
			t.Errorf("unexpected key type %T", k)
		}
		signer, err := ssh.ParsePrivateKey([]byte(tok.Value))
		if err != nil {
			t.Fatal(err)
		}
		pub := canary.SSHPublicKey(tok.Value)
		want := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))) + " mwalker@thinkpad"
		if pub != want {
			t.Errorf("SSHPublicKey = %q, want %q", pub, want)
		}
		if len(tok.Needles) < 2 {
			t.Errorf("%s: only %d needles", tok.Location, len(tok.Needles))
		}
		// Every needle is a line of the key and no needle is shared with
		// another key of the same type (they are distinctive).
		other := m.SSHKeyEd25519("x", "mwalker@thinkpad")
		if tok.Location == "~/.ssh/id_rsa" {
			other = m.SSHKeyRSA("x", "mwalker@thinkpad", 2048)
		}
		for _, n := range tok.Needles {
			if !strings.Contains(tok.Value, n+"\n") {
				t.Errorf("needle %q is not a line of the key", n)
			}
			if strings.Contains(other.Value, n) {
				t.Errorf("needle %q is shared by another key", n)
			}
		}
		if path, err := exec.LookPath("ssh-keygen"); err == nil {
			f := filepath.Join(t.TempDir(), "key")
			if err := os.WriteFile(f, []byte(tok.Value), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(path, "-y", "-f", f).CombinedOutput()
			if err != nil {
				t.Fatalf("ssh-keygen -y: %v: %s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != pub {
				t.Errorf("ssh-keygen -y = %q, want %q", got, pub)
			}
		} else {
			t.Log("ssh-keygen not found; skipped its check")
		}
	}
}

func TestPEMAndGPG(t *testing.T) {
	m := canary.NewMinter(nil)
	tok := m.PEMKey("~/projects/api/certs/server.key")
	k, err := ssh.ParseRawPrivateKey([]byte(tok.Value))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := k.(*ecdsa.PrivateKey); !ok {
		t.Errorf("PEM key is %T", k)
	}
	g := m.GPGKey("~/.gnupg/private-keys-v1.d/X.key", "")
	if len(g.Needles) != 1 || len(g.Needles[0]) != 64 || !strings.Contains(g.Value, g.Needles[0]) {
		t.Errorf("gpg needles %q", g.Needles)
	}
}

func TestEthereum(t *testing.T) {
	one := make([]byte, 32)
	one[31] = 1
	if got, want := canary.EthereumAddress(one), "7e5f4552091a69125d5dfcb7b8c2659029395bdf"; got != want {
		t.Errorf("EthereumAddress(1) = %s, want %s", got, want)
	}
	m := canary.NewMinter(nil)
	tok := m.EthereumKeystore("~/.ethereum/keystore/x", "hunter2hunter2")
	var ks canary.Keystore
	if err := json.Unmarshal([]byte(tok.Value), &ks); err != nil {
		t.Fatal(err)
	}
	if ks.Version != 3 || ks.Crypto.Cipher != "aes-128-ctr" || ks.Crypto.KDF != "scrypt" || len(ks.Address) != 40 ||
		len(ks.Crypto.Ciphertext) != 64 || len(ks.Crypto.MAC) != 64 || ks.ID == "" {
		t.Errorf("keystore fields: %+v", ks)
	}
	if _, ok := testenv.DecryptKeystore(tok.Value, "hunter2hunter2"); !ok {
		t.Error("keystore does not decrypt to its address")
	}
	if _, ok := testenv.DecryptKeystore(tok.Value, "wrong"); ok {
		t.Error("keystore decrypts with a wrong password")
	}
	if diff := strings.Join(tok.Needles, ","); diff != ks.Address+","+ks.Crypto.Ciphertext+","+canary.EIP55(ks.Address) {
		t.Errorf("needles = %s", diff)
	}
	// The EIP-55 test vector.
	if got, want := canary.EIP55("5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"), "5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"; got != want {
		t.Errorf("EIP55 = %s, want %s", got, want)
	}
}

func TestBIP39(t *testing.T) {
	if len(canary.BIP39Words) != 2048 {
		t.Fatalf("%d words", len(canary.BIP39Words))
	}
	// Test vectors from BIP-39.
	vectors := map[string]string{
		"00000000000000000000000000000000":                                 "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about",
		"7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f":                                 "legal winner thank year wave sausage worth useful legal winner thank yellow",
		"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff": "zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo vote",
	}
	for e, want := range vectors {
		ent, _ := hex.DecodeString(e)
		if got := canary.Mnemonic(ent); got != want {
			t.Errorf("Mnemonic(%s) = %q, want %q", e, got, want)
		}
		if !testenv.ValidMnemonic(want) {
			t.Errorf("ValidMnemonic(%q) = false", want)
		}
	}
	m := canary.NewMinter(nil)
	for _, n := range []int{12, 24} {
		p := m.SeedPhrase("~/seed.txt", n).Value
		if len(strings.Fields(p)) != n || !testenv.ValidMnemonic(p) {
			t.Errorf("SeedPhrase(%d) = %q: invalid", n, p)
		}
	}
	if testenv.ValidMnemonic("abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon") {
		t.Error("bad checksum accepted")
	}
}

func TestSolanaAndWallets(t *testing.T) {
	m := canary.NewMinter(nil)
	tok := m.SolanaKeypair("~/.config/solana/id.json")
	var arr []byte
	if err := json.Unmarshal([]byte(tok.Value), &arr); err != nil || len(arr) != 64 {
		t.Fatalf("id.json: %v, %d bytes", err, len(arr))
	}
	priv := ed25519.PrivateKey(arr)
	if !bytes.Equal(ed25519.NewKeyFromSeed(priv.Seed()), priv) {
		t.Error("id.json is not seed||public key")
	}
	if tok.Needles[2] != canary.Base58(arr) {
		t.Error("base58 needle")
	}
	xprv, xpub := m.BIP32Keys()
	if !strings.HasPrefix(xprv, "xprv") || len(xprv) != 111 || !strings.HasPrefix(xpub, "xpub") || len(xpub) != 111 {
		t.Errorf("BIP32Keys = %s, %s", xprv, xpub)
	}
	e := m.ElectrumWallet("~/.electrum/wallets/default_wallet")
	var w map[string]any
	if err := json.Unmarshal([]byte(e.Value), &w); err != nil {
		t.Fatal(err)
	}
	if !testenv.ValidMnemonic(e.Needles[0]) {
		t.Errorf("electrum seed %q invalid", e.Needles[0])
	}
	v := m.MetaMaskVault("x")
	var vault struct{ Data, IV, Salt string }
	if err := json.Unmarshal([]byte(v.Value), &vault); err != nil {
		t.Fatal(err)
	}
	if _, err := base64.StdEncoding.DecodeString(vault.Data); err != nil || vault.Data != v.Needles[0] {
		t.Errorf("vault data: %v", err)
	}
}

func TestFindMinted(t *testing.T) {
	m := canary.NewMinter(nil)
	var toks []canary.Token
	for kind := range formats {
		toks = append(toks, m.Mint(kind, "x"))
	}
	toks = append(toks, m.SSHKeyRSA("k", "a@b", 2048), m.EthereumKeystore("ks", "pw-pw-pw-pw"), m.ElectrumWallet("el"))
	set := canary.NewSet(toks...)
	for _, tok := range toks {
		// A docker auth is base64 of user:password and its password is a
		// needle too: more than one hit, all of the same token.
		got := set.Find([]byte("x " + tok.Value + " y"))
		if len(got) == 0 || got[0].Token.ID != tok.ID || got[0].Encoding != canary.Plain || got[len(got)-1].Token.ID != tok.ID {
			t.Errorf("Find(%s) = %v, want a plain hit first", tok.ID, got)
		}
		enc := base64.StdEncoding.EncodeToString([]byte(tok.Value))
		got = set.Find([]byte(enc))
		if len(got) == 0 || got[0].Token.ID != tok.ID || got[0].Encoding != canary.Base64 || got[len(got)-1].Token.ID != tok.ID {
			t.Errorf("Find(base64 %s) = %v, want a base64 hit first", tok.ID, got)
		}
	}
}

func TestMintEveryKind(t *testing.T) {
	m := canary.NewMinter(canary.SeededReader([]byte("kinds")))
	seen := map[canary.Kind]bool{}
	for _, k := range canary.Kinds {
		if seen[k] {
			t.Errorf("%s listed twice", k)
		}
		seen[k] = true
		tok := m.Mint(k, "~/x")
		if tok.Kind != k || tok.ID == "" || len(tok.Value) < canary.MinNeedle {
			t.Errorf("Mint(%s) = %+v", k, tok)
		}
		if hits := canary.NewSet(tok).Find([]byte(tok.Value)); len(hits) == 0 {
			t.Errorf("Mint(%s): its value is not found", k)
		}
	}
	if len(canary.Kinds) < len(formats) {
		t.Errorf("Kinds has %d entries, formats %d", len(canary.Kinds), len(formats))
	}
}

// A twin Minter mints other secrets, longer where they are runs of
// characters, and draws the same bytes for everything else.
func TestTwinMinter(t *testing.T) {
	seed := []byte("twin minter")
	orig, twin := canary.NewMinter(canary.SeededReader(seed)), canary.NewMinter(canary.SeededReader(seed))
	twin.SetTwin(&canary.Twin{Key: []byte("k"), Grow: 5})
	for _, tc := range []struct {
		name string
		mint func(m *canary.Minter) canary.Token
		grow bool
	}{
		{"aws secret key", func(m *canary.Minter) canary.Token { return m.Mint(canary.AWSSecretKey, "~/.aws/credentials") }, true},
		{"password (retries)", func(m *canary.Minter) canary.Token { return m.MintPassword(canary.Password, "~/p") }, true},
		{"github token", func(m *canary.Minter) canary.Token { return m.Mint(canary.GitHubToken, "env:GITHUB_TOKEN") }, true},
		{"ssh key", func(m *canary.Minter) canary.Token { return m.SSHKeyEd25519("~/.ssh/id_ed25519", "u@h") }, false},
		{"seed phrase", func(m *canary.Minter) canary.Token { return m.SeedPhrase("~/seed.txt", 12) }, false},
		{"jwt", func(m *canary.Minter) canary.Token { return m.Mint(canary.KubeToken, "~/.kube/config") }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.mint(orig), tc.mint(twin)
			if a.Value == b.Value || a.ID != b.ID {
				t.Errorf("original %s %q, twin %s %q: want the same id, other values", a.ID, a.Value, b.ID, b.Value)
			}
			if tc.grow != (len(b.Value) > len(a.Value)) {
				t.Errorf("original %d bytes, twin %d: want grown %v", len(a.Value), len(b.Value), tc.grow)
			}
			// What is drawn after the secret is the same in both.
			if x, y := orig.Hex(8), twin.Hex(8); x != y {
				t.Errorf("the stream after the secret differs: %s, twin %s", x, y)
			}
		})
	}
}

// TestSessionTokenStructure (issue 30, item 6): the planted
// AWS_SESSION_TOKEN decodes to the structure real ones have after their
// prefix: origin_ec, a region, a DER ECDSA signature.
func TestSessionTokenStructure(t *testing.T) {
	for seed := range 8 {
		m := canary.NewMinter(canary.SeededReader([]byte{byte(seed)}))
		tok := m.Mint(canary.AWSSessionToken, "env:AWS_SESSION_TOKEN")
		raw, err := base64.StdEncoding.DecodeString(tok.Value)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !bytes.HasPrefix(raw, []byte("!\n\torigin_ec")) || !regexp.MustCompile(`\x1a[\x09\x0c](us|eu)-[a-z]+-[12]`).Match(raw) || !bytes.Contains(raw, []byte("\"G0E\x02!\x00")) {
			t.Errorf("seed %d: token does not decode to an STS structure: %q", seed, raw[:min(len(raw), 80)])
		}
	}
}
