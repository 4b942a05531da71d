package canary

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	mrand "math/rand/v2"
	"strings"
)

// Token minting. Every token is drawn from the Minter's random source
// (crypto/rand by default, or a seeded ChaCha8 stream for reproducible
// homes) in the real format of its kind: real prefixes, real lengths and
// alphabets, real checksums where the format has one (GitHub and npm CRC32,
// BIP-39, Base58Check). Nothing else marks a token.

// A Minter mints tokens from one random source. It is not safe for
// concurrent use. Read errors are sticky: after one, tokens are empty and
// Err reports it.
type Minter struct {
	r     io.Reader
	err   error
	count map[Kind]int
	twin  *Twin // the secrets of a twin home; nil for an original
	grow  int   // characters every Chars draw adds (a twin's secret only)
}

// A Twin makes a seeded home's secrets differ from those of the home the
// same seed makes, and nothing else: twin traces (docs/sandbox.md, "Twin
// traces") compare what left two sandboxes that differ only in their
// secrets. Every secret is minted from a stream of its own (Secret), keyed
// by bytes drawn from the home's stream; a Twin mixes its Key into those
// keys, so the home's layout (names, times, files, their order) draws the
// same bytes and stays the same, while every secret takes other values.
// Grow characters are added to every run of characters a secret draws, so
// that a text secret is longer than the original's too: its length shows
// through ciphers and compression that hide its bytes.
type Twin struct {
	Key  []byte
	Grow int
}

// SetTwin makes m mint t's secrets from now on (nil: the original's).
func (m *Minter) SetTwin(t *Twin) { m.twin = t }

// Secret returns a Minter for one secret's material. It draws 32 bytes from
// m, whatever the secret then draws from its own stream (retries, prime
// searches), so that what m mints next does not depend on the secret; for a
// twin (SetTwin) those bytes are mixed with the twin's key, and the
// secret's runs of characters grow. Secrets minted from the returned
// Minter share m's token ids.
func (m *Minter) Secret() *Minter {
	seed := m.Bytes(32)
	s := &Minter{count: m.count, err: m.err, grow: m.grow}
	if m.twin != nil {
		mac := hmac.New(sha256.New, m.twin.Key)
		mac.Write(seed)
		seed = mac.Sum(nil)
		s.grow = max(m.twin.Grow, 0)
	}
	s.r = SeededReader(seed)
	return s
}

// NewMinter returns a Minter reading r; nil means crypto/rand.
func NewMinter(r io.Reader) *Minter {
	if r == nil {
		r = rand.Reader
	}
	return &Minter{r: r, count: map[Kind]int{}}
}

// SeededReader returns a deterministic random stream for seed: ChaCha8 keyed
// by SHA-256(seed). Same seed, same stream.
func SeededReader(seed []byte) io.Reader {
	return mrand.NewChaCha8(sha256.Sum256(seed))
}

// Err returns the first error the random source gave.
func (m *Minter) Err() error { return m.err }

// Read fills p from the Minter's source, so that callers draw everything
// else (names, times) from the same, possibly seeded, stream.
func (m *Minter) Read(p []byte) (int, error) {
	if m.err != nil {
		clear(p)
		return 0, m.err
	}
	if _, err := io.ReadFull(m.r, p); err != nil {
		m.err = fmt.Errorf("read random source: %w", err)
		clear(p)
		return 0, m.err
	}
	return len(p), nil
}

// Bytes returns n random bytes.
func (m *Minter) Bytes(n int) []byte {
	b := make([]byte, n)
	m.Read(b) // a failure is sticky and reported by Err
	return b
}

// Uint64 returns a random uint64.
func (m *Minter) Uint64() uint64 { return binary.LittleEndian.Uint64(m.Bytes(8)) }

// Intn returns a uniform int in [0, n); n must be positive.
func (m *Minter) Intn(n int) int {
	if n <= 0 {
		panic("canary: Intn of non-positive n")
	}
	limit := ^uint64(0) - ^uint64(0)%uint64(n)
	for {
		v := m.Uint64()
		if v < limit || m.err != nil {
			return int(v % uint64(n))
		}
	}
}

// Pick returns one of choices.
func (m *Minter) Pick(choices ...string) string { return choices[m.Intn(len(choices))] }

// Chars returns n characters drawn uniformly from alphabet (n plus the
// twin's growth, in a twin's secret).
func (m *Minter) Chars(alphabet string, n int) string {
	n += m.grow
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[m.Intn(len(alphabet))]
	}
	return string(b)
}

// Hex returns 2n lower-case hex digits.
func (m *Minter) Hex(n int) string { return hex.EncodeToString(m.Bytes(n)) }

// UUID returns a random version-4 UUID.
func (m *Minter) UUID() string {
	b := m.Bytes(16)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Alphabets of the formats.
const (
	Upper      = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	Lower      = "abcdefghijklmnopqrstuvwxyz"
	Digits     = "0123456789"
	Alnum      = Upper + Lower + Digits
	base62     = Digits + Upper + Lower // GitHub's checksum alphabet order
	b64Chars   = Alnum + "+/"
	b64URLChar = Alnum + "-_"
	awsIDChars = Upper + "234567"
	symbols    = "!@#$%^&*-_=+"
)

// Token makes a token of kind at location from a value minted elsewhere
// (a file's ciphertext, say), with the Minter's next id for that kind.
func (m *Minter) Token(kind Kind, location, value string, needles ...string) Token {
	return m.token(kind, location, value, needles...)
}

// token registers a new token of kind at location.
func (m *Minter) token(kind Kind, location, value string, needles ...string) Token {
	m.count[kind]++
	return Token{ID: fmt.Sprintf("%s-%d", kind, m.count[kind]), Kind: kind, Value: value,
		Location: location, Needles: needles}
}

// Mint mints a token of a kind that is a single string. Kinds that need more
// (keys, keystores, database URLs, docker auths) have their own methods;
// Mint mints them with defaults.
func (m *Minter) Mint(kind Kind, location string) Token {
	s := m.Secret()
	var v string
	switch kind {
	case AWSAccessKey:
		v = "AKIA" + s.Chars(awsIDChars, 16)
	case AWSSecretKey:
		v = s.Chars(b64Chars, 40)
	case AWSSessionToken:
		v = sessionToken(s)
	case GitHubToken:
		v = checksummed("ghp_", s.Chars(Alnum, 30))
	case GitHubOAuthToken:
		v = checksummed("gho_", s.Chars(Alnum, 30))
	case GitHubPAT:
		v = "github_pat_11" + s.Chars(Upper+Digits, 20) + "_" + s.Chars(Alnum, 59)
	case OpenAIKey:
		v = "sk-proj-" + s.Chars(b64URLChar, 74) + "T3BlbkFJ" + s.Chars(b64URLChar, 74)
	case AnthropicKey:
		v = "sk-ant-api03-" + s.Chars(b64URLChar, 93) + "AA"
	case AnthropicOAuth:
		v = "sk-ant-oat01-" + s.Chars(b64URLChar, 93) + "AA"
	case OpenRouterKey:
		v = "sk-or-v1-" + s.Hex(32)
	case SlackToken:
		v = "xoxb-" + s.Chars("123456789", 1) + s.Chars(Digits, 11) + "-" + s.Chars("123456789", 1) +
			s.Chars(Digits, 12) + "-" + s.Chars(Alnum, 24)
	case StripeKey:
		v = "sk_live_51" + s.Chars(Alnum, 97)
	case NPMToken:
		v = checksummed("npm_", s.Chars(Alnum, 30))
	case PyPIToken:
		v = "pypi-AgEIcHlwaS5vcmcCJD" + s.Chars(b64URLChar, 155)
	case HuggingFaceToken:
		v = "hf_" + s.Chars(Upper+Lower, 34)
	case TelegramBotToken:
		v = s.Chars("5678", 1) + s.Chars(Digits, 9) + ":AA" + s.Chars(b64URLChar, 33)
	case DiscordToken:
		// A user token: base64 of the 18-19 digit snowflake id, a
		// timestamp part and an HMAC part.
		id := s.Chars("123456789", 1) + s.Chars(Digits, 17+s.Intn(2))
		v = base64.RawStdEncoding.EncodeToString([]byte(id)) + "." + s.Chars(b64URLChar, 6) + "." + s.Chars(b64URLChar, 38)
	case KeyringSecret:
		v = s.Chars(Alnum, 32)
	case GCPRefreshToken:
		v = "1//0" + s.Chars(Alnum, 2) + s.Chars(b64URLChar, 97)
	case AzureToken:
		return s.JWT(kind, location, "https://sts.windows.net/"+s.UUID()+"/", "https://management.core.windows.net/")
	case KubeToken:
		return s.JWT(kind, location, "https://kubernetes.default.svc.cluster.local", "https://kubernetes.default.svc.cluster.local")
	case DockerAuth:
		return s.DockerAuth(location, "deploy")
	case SSHPrivateKey:
		return s.SSHKeyEd25519(location, "")
	case PEMPrivateKey:
		return s.PEMKey(location)
	case GPGPrivateKey:
		return s.GPGKey(location, "")
	case DatabaseURL:
		return s.DatabaseURL(location, "postgres", "app", "db.internal", "app")
	case Password, BrowserPassword:
		v = s.Password()
	case BrowserCookie:
		v = s.Chars(b64URLChar, 2) + s.Chars(b64URLChar+".", 70)
	case EthereumKeystore:
		return s.EthereumKeystore(location, s.Password())
	case SolanaKeypair:
		return s.SolanaKeypair(location)
	case SeedPhrase:
		return s.SeedPhrase(location, 12)
	case BitcoinWallet:
		v = s.SegwitAddress()
	case WalletVault:
		return s.MetaMaskVault(location)
	default: // GenericAPIKey and anything new
		v = s.Chars(Alnum, 32)
	}
	return m.token(kind, location, v)
}

// checksummed appends GitHub's checksum to prefix+body: the CRC32 of the
// body in base62, left-padded to 6 characters. npm's granular tokens use the
// same scheme.
func checksummed(prefix, body string) string {
	return prefix + body + base62Pad(uint64(crc32.ChecksumIEEE([]byte(body))), 6)
}

func base62Pad(v uint64, n int) string {
	b := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		b[i] = base62[v%62]
		v /= 62
	}
	return string(b)
}

// Password returns a password as people and password managers make them:
// 16 to 20 characters of letters, digits and a few symbols.
func (m *Minter) Password() string {
	n := 16 + m.Intn(5)
	for {
		p := m.Chars(Alnum+symbols, n)
		if strings.ContainsAny(p, Digits) && strings.ContainsAny(p, Upper) && strings.ContainsAny(p, Lower) || m.err != nil {
			return p
		}
	}
}

// MintPassword mints a password token of kind (Password or BrowserPassword).
func (m *Minter) MintPassword(kind Kind, location string) Token {
	s := m.Secret()
	return m.token(kind, location, s.Password())
}

// DatabaseURL mints scheme://user:password@host/db; the password alone is a
// needle too, since a skill may parse the URL.
func (m *Minter) DatabaseURL(location, scheme, user, host, db string) Token {
	s := m.Secret()
	pw := s.Chars(Alnum, 24)
	port := map[string]string{"postgres": "5432", "postgresql": "5432", "mysql": "3306", "mongodb": "27017", "redis": "6379"}[scheme]
	if port != "" {
		host += ":" + port
	}
	u := fmt.Sprintf("%s://%s:%s@%s/%s", scheme, user, pw, host, db)
	return m.token(DatabaseURL, location, u, u, pw)
}

// DockerAuth mints the "auth" field of ~/.docker/config.json:
// base64(user:password), with the password as a second needle.
func (m *Minter) DockerAuth(location, user string) Token {
	s := m.Secret()
	pw := "dckr_pat_" + s.Chars(b64URLChar, 27)
	a := base64.StdEncoding.EncodeToString([]byte(user + ":" + pw))
	return m.token(DockerAuth, location, a, a, pw)
}

// JWT mints a JWT-shaped bearer token (RS256 header, plausible claims, a
// random 2048-bit signature). Its needles are the whole token and the
// signature, which alone is enough to identify it.
func (m *Minter) JWT(kind Kind, location, iss, aud string) Token {
	s := m.Secret()
	enc := base64.RawURLEncoding
	hdr := fmt.Sprintf(`{"alg":"RS256","kid":"%s","typ":"JWT"}`, s.Chars(b64URLChar, 43))
	iat := 1_760_000_000 + s.Intn(5_000_000)
	claims := fmt.Sprintf(`{"aud":%q,"iss":%q,"iat":%d,"nbf":%d,"exp":%d,"oid":%q,"sub":%q}`,
		aud, iss, iat, iat, iat+3600*24*365, s.UUID(), s.UUID())
	sig := enc.EncodeToString(s.Bytes(256))
	v := enc.EncodeToString([]byte(hdr)) + "." + enc.EncodeToString([]byte(claims)) + "." + sig
	return m.token(kind, location, v, v, sig)
}

// MetaMaskVault mints the encrypted vault MetaMask keeps in its extension
// storage: {"data","iv","keyMetadata","salt"}. The ciphertext is the needle.
func (m *Minter) MetaMaskVault(location string) Token {
	s := m.Secret()
	data := base64.StdEncoding.EncodeToString(s.Bytes(352 + 16*s.Intn(8)))
	v := fmt.Sprintf(`{"data":"%s","iv":"%s","keyMetadata":{"algorithm":"PBKDF2","params":{"iterations":600000}},"salt":"%s"}`,
		data, base64.StdEncoding.EncodeToString(s.Bytes(16)), base64.StdEncoding.EncodeToString(s.Bytes(32)))
	return m.token(WalletVault, location, v, data)
}

// sessionToken is an STS session token as AWS issues them: base64 of a
// length-prefixed structure that starts "!\n\torigin_ec", then a small
// number, the issuing region, an ECDSA signature (DER, two 32-byte
// integers) and the sealed body. A skill that decodes the token and looks
// for that structure finds it (a token of random base64 after the
// prefix did not decode to it).
func sessionToken(m *Minter) string {
	b := []byte("!\n\torigin_ec")
	b = append(b, 0x10, byte(1+m.Intn(120)), 0x1a)
	region := m.Pick("us-east-1", "us-west-2", "eu-west-1", "eu-central-1")
	b = append(b, byte(len(region)))
	b = append(b, region...)
	b = append(b, '"', 'G', '0', 'E', 0x02, 0x21, 0x00)
	b = append(b, m.Bytes(32)...)
	b = append(b, 0x02, 0x20)
	b = append(b, m.Bytes(32)...)
	body := m.Bytes(480 + m.Intn(160))
	b = append(b, '*')
	for n := len(body); ; n >>= 7 { // varint length
		if n < 0x80 {
			b = append(b, byte(n))
			break
		}
		b = append(b, byte(n&0x7f|0x80))
	}
	b = append(b, body...)
	return base64.StdEncoding.EncodeToString(b)
}
