package canary

import (
	"encoding/json"
	"fmt"
)

// Kind names what sort of secret a token imitates.
type Kind string

// The kinds of planted secret. Each has its real-world format (see mint.go).
const (
	AWSAccessKey     Kind = "aws_access_key"     // AKIA/ASIA + 16
	AWSSecretKey     Kind = "aws_secret_key"     // 40 chars
	AWSSessionToken  Kind = "aws_session_token"  // IQoJb3JpZ2luX2Vj...
	GitHubToken      Kind = "github_token"       // ghp_ + 36 (CRC32 checksum)
	GitHubOAuthToken Kind = "github_oauth_token" // gho_ + 36
	GitHubPAT        Kind = "github_pat"         // github_pat_ + 22 + _ + 59
	OpenAIKey        Kind = "openai_api_key"     // sk-proj-...
	AnthropicKey     Kind = "anthropic_api_key"  // sk-ant-api03-...AA
	AnthropicOAuth   Kind = "anthropic_oauth"    // sk-ant-oat01-...AA
	OpenRouterKey    Kind = "openrouter_api_key" // sk-or-v1- + 64 hex
	SlackToken       Kind = "slack_token"        // xoxb-...
	StripeKey        Kind = "stripe_key"         // sk_live_...
	NPMToken         Kind = "npm_token"          // npm_ + 36
	PyPIToken        Kind = "pypi_token"         // pypi-AgEIcHlwaS5vcmc...
	HuggingFaceToken Kind = "huggingface_token"  // hf_ + 34
	TelegramBotToken Kind = "telegram_bot_token" // 123456789:AA...
	DiscordToken     Kind = "discord_token"      // base64(user id).ts.hmac
	KeyringSecret    Kind = "keyring_secret"     // GNOME keyring contents
	GCPRefreshToken  Kind = "gcp_refresh_token"  // 1//0...
	AzureToken       Kind = "azure_token"        // JWT-shaped access token
	KubeToken        Kind = "kube_token"         // service-account JWT
	DockerAuth       Kind = "docker_auth"        // base64(user:password)
	SSHPrivateKey    Kind = "ssh_private_key"    // OpenSSH private key block
	PEMPrivateKey    Kind = "pem_private_key"    // PKCS#8 PEM
	GPGPrivateKey    Kind = "gpg_private_key"    // gpg-agent key file
	DatabaseURL      Kind = "database_url"       // scheme://user:password@host/db
	Password         Kind = "password"           // a password on its own
	BrowserPassword  Kind = "browser_password"   // saved in a browser profile
	BrowserCookie    Kind = "browser_cookie"     // a session cookie value
	EthereumKeystore Kind = "ethereum_keystore"  // keystore v3 JSON
	SolanaKeypair    Kind = "solana_keypair"     // id.json, 64-byte array
	SeedPhrase       Kind = "seed_phrase"        // BIP-39 mnemonic
	BitcoinWallet    Kind = "bitcoin_wallet"     // wallet.dat key material
	WalletVault      Kind = "wallet_vault"       // Electrum/Exodus/Atomic/MetaMask vault
	GenericAPIKey    Kind = "api_key"            // anything else key-shaped
)

// Kinds lists every Kind, in the order above.
var Kinds = []Kind{AWSAccessKey, AWSSecretKey, AWSSessionToken, GitHubToken, GitHubOAuthToken, GitHubPAT,
	OpenAIKey, AnthropicKey, AnthropicOAuth, OpenRouterKey, SlackToken, StripeKey, NPMToken, PyPIToken,
	HuggingFaceToken, TelegramBotToken, DiscordToken, KeyringSecret, GCPRefreshToken, AzureToken, KubeToken, DockerAuth, SSHPrivateKey,
	PEMPrivateKey, GPGPrivateKey, DatabaseURL, Password, BrowserPassword, BrowserCookie, EthereumKeystore,
	SolanaKeypair, SeedPhrase, BitcoinWallet, WalletVault, GenericAPIKey}

// A Token is one planted secret. Value is exactly what was planted (for a
// key file, the whole block). Needles are the substrings detection looks
// for; when empty, Value is the only needle. For multi-line values (keys,
// keystores) the needles are the distinctive parts (the random body lines,
// the address, the ciphertext), so a token is seen even when only part of it
// leaks. Location is where it was planted: a home-relative path such as
// "~/.aws/credentials" or "env:OPENAI_API_KEY". RawNeedles are binary
// needles (base64 in JSON) for secrets planted in binary form, such as a
// password encrypted in a browser's SQLite file: they are searched like the
// others (plain bytes, base64, hex, compressed...).
type Token struct {
	ID         string   `json:"id"`
	Kind       Kind     `json:"kind"`
	Value      string   `json:"value"`
	Location   string   `json:"location"`
	Needles    []string `json:"needles,omitempty"`
	RawNeedles [][]byte `json:"raw_needles,omitempty"`
}

// needles returns what detection looks for.
func (t Token) needles() [][]byte {
	var out [][]byte
	if len(t.Needles) > 0 {
		for _, n := range t.Needles {
			out = append(out, []byte(n))
		}
	} else {
		out = append(out, []byte(t.Value))
	}
	return append(out, t.RawNeedles...)
}

// Encoding says how a token was encoded where it was seen. Nested encodings
// are joined with "+", outermost (as seen in the data) first:
// "base64+tar.gz" is a tar.gz archive, base64-encoded, holding the token in
// plain text.
type Encoding string

// The encodings detection knows.
const (
	Plain      Encoding = "plain"
	Base64     Encoding = "base64"      // standard alphabet, any alignment, padded or not, line breaks allowed
	Base64URL  Encoding = "base64url"   // URL alphabet
	Base32     Encoding = "base32"      // RFC 4648, either case, no padding
	Hex        Encoding = "hex"         // either case
	URL        Encoding = "url"         // percent-encoding, + for space
	Reversed   Encoding = "reversed"    // the needle backwards (rev)
	ROT13      Encoding = "rot13"       // letters rotated by 13 (tr A-Za-z N-ZA-Mn-za-m)
	ROT47      Encoding = "rot47"       // printable ASCII rotated by 47 (tr '!-~' 'P-~!-O')
	Caesar     Encoding = "caesar"      // letters rotated by any of the 24 shifts other than 0 and 13
	Decimal    Encoding = "decimal"     // byte values as numbers with one separator: 115,107 or &#115;&#107; or \163\153 (octal)
	Interleave Encoding = "interleave"  // every other character of a run (the token's characters with filler between)
	UU         Encoding = "uuencode"    // a uuencoded block (begin 644 NAME ... end): mail attachments, uuencode(1)
	JSON       Encoding = "json"        // JSON string escapes (\u0026, \/, \")
	Gzip       Encoding = "gzip"        // gzip stream
	Zlib       Encoding = "zlib"        // zlib stream (git objects, Python zlib)
	Zip        Encoding = "zip"         // a deflated zip entry (stored entries are plain)
	Bzip2      Encoding = "bzip2"       // bzip2 stream
	Tar        Encoding = "tar"         // uncompressed tar archive
	TarGz      Encoding = "tar.gz"      // gzip-compressed tar archive
	TarBz2     Encoding = "tar.bz2"     // bzip2-compressed tar archive
	DNSLabels  Encoding = "dns-labels"  // spread over DNS labels or queries
	CEscape    Encoding = "c-escape"    // \xXX on every byte (printf, Python, JavaScript)
	UTF16LE    Encoding = "utf-16le"    // UTF-16 little-endian (iconv -t UTF-16, PowerShell), BOM or not
	UTF16BE    Encoding = "utf-16be"    // UTF-16 big-endian
	XOR        Encoding = "xor"         // XOR with one byte (any of 255), or with a key seen in the trace
	Ascii85    Encoding = "ascii85"     // Adobe <~ ~>, btoa, Python a85encode
	Base85     Encoding = "base85"      // RFC 1924 alphabet: Python b85encode, git binary patches
	Z85        Encoding = "z85"         // ZeroMQ's base85 alphabet
	Xz         Encoding = "xz"          // xz stream (xz, Python lzma)
	Zstd       Encoding = "zstd"        // Zstandard frame
	Deflate    Encoding = "deflate"     // raw deflate without a header (PHP gzdeflate, Node deflateRaw)
	OpenSSL    Encoding = "openssl-enc" // openssl enc with a password or key seen in the trace
	AES        Encoding = "aes"         // AES with a raw key seen in the trace (ECB, CBC, CTR, GCM, Fernet)
	Split      Encoding = "split"       // spread over several requests or payloads to one destination
)

// Wrap returns the encoding e seen inside outer: Plain inside anything is
// just the outer encoding.
func (e Encoding) wrap(outer Encoding) Encoding {
	if e == Plain || e == "" {
		return outer
	}
	if outer == Plain || outer == "" {
		return e
	}
	return outer + "+" + e
}

// A Hit is one sighting of a token. Offset is the byte offset in the data
// given to Find where the (encoded) token starts; for a token found inside a
// compressed or decoded region it is the offset of that region. For FindDNS
// it is the index of the first name the token was seen in.
type Hit struct {
	Token    Token    `json:"token"`
	Encoding Encoding `json:"encoding"`
	Offset   int      `json:"offset"`
	// Parts are, for FindSplit, the indexes of the parts the token was
	// reassembled from.
	Parts []int `json:"parts,omitempty"`
}

// String is for logs; it never prints the value.
func (h Hit) String() string {
	return fmt.Sprintf("%s(%s) %s at %d", h.Token.ID, h.Token.Kind, h.Encoding, h.Offset)
}

// MarshalJSON writes the set as its token list.
func (s *Set) MarshalJSON() ([]byte, error) {
	toks := s.Tokens()
	if toks == nil {
		toks = []Token{}
	}
	return json.Marshal(toks)
}

// UnmarshalJSON reads a token list and rebuilds the index.
func (s *Set) UnmarshalJSON(b []byte) error {
	var toks []Token
	if err := json.Unmarshal(b, &toks); err != nil {
		return fmt.Errorf("decode canary set: %w", err)
	}
	*s = *NewSet(toks...)
	return nil
}
