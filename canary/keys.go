package canary

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"sync"
)

// Key material. Go 1.26's crypto packages ignore the random source they are
// given, so keys that must come out of a seeded stream are derived here from
// the Minter's bytes: ed25519 from a 32-byte seed, P-256 from a scalar, RSA
// from primes searched from random starting points. The OpenSSH container is
// written by hand for the same reason (x/crypto/ssh draws its check integers
// from crypto/rand).

// SSHKeyEd25519 mints an unencrypted OpenSSH ed25519 private key, as
// ssh-keygen writes it, with comment (e.g. "mwalker@thinkpad").
func (m *Minter) SSHKeyEd25519(location, comment string) Token {
	s := m.Secret()
	priv := ed25519.NewKeyFromSeed(s.Bytes(ed25519.SeedSize))
	pub := priv.Public().(ed25519.PublicKey)
	pubBlob := sshString(nil, []byte("ssh-ed25519"))
	pubBlob = sshString(pubBlob, pub)
	var p []byte
	p = sshString(p, []byte("ssh-ed25519"))
	p = sshString(p, pub)
	p = sshString(p, priv)
	return s.openSSH(location, pubBlob, p, comment)
}

// RSAKeyLater starts making an RSA key of bits bits in the background and
// returns a func that waits for it (and returns it again on every call).
// The key's random stream is drawn from m now, so a seeded Minter stays
// deterministic whatever else it mints meanwhile; a prime search takes
// about a tenth of a second, which a caller can spend on other work. The
// background work ends once the key is made, waited for or not.
func (m *Minter) RSAKeyLater(bits int) func() *rsa.PrivateKey {
	sub := m.Secret()
	ch := make(chan *rsa.PrivateKey, 1)
	go func() { ch <- sub.RSAKey(bits) }()
	return sync.OnceValue(func() *rsa.PrivateKey { return <-ch })
}

// SSHKeyRSAWith mints an OpenSSH private key holding k.
func (m *Minter) SSHKeyRSAWith(location, comment string, k *rsa.PrivateKey) Token {
	pubBlob := sshString(nil, []byte("ssh-rsa"))
	pubBlob = sshMPInt(pubBlob, big.NewInt(int64(k.E)))
	pubBlob = sshMPInt(pubBlob, k.N)
	var p []byte
	p = sshString(p, []byte("ssh-rsa"))
	p = sshMPInt(p, k.N)
	p = sshMPInt(p, big.NewInt(int64(k.E)))
	p = sshMPInt(p, k.D)
	p = sshMPInt(p, k.Precomputed.Qinv)
	p = sshMPInt(p, k.Primes[0])
	p = sshMPInt(p, k.Primes[1])
	return m.openSSH(location, pubBlob, p, comment)
}

func (m *Minter) openSSH(location string, pubBlob, privKey []byte, comment string) Token {
	check := m.Bytes(4)
	var sec []byte
	sec = append(sec, check...)
	sec = append(sec, check...)
	sec = append(sec, privKey...)
	sec = sshString(sec, []byte(comment))
	for i := byte(1); len(sec)%8 != 0; i++ {
		sec = append(sec, i)
	}
	b := []byte("openssh-key-v1\x00")
	b = sshString(b, []byte("none"))
	b = sshString(b, []byte("none"))
	b = sshString(b, nil)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = sshString(b, pubBlob)
	b = sshString(b, sec)
	text := "-----BEGIN OPENSSH PRIVATE KEY-----\n" + wrap(base64.StdEncoding.EncodeToString(b), 70) +
		"-----END OPENSSH PRIVATE KEY-----\n"
	return m.token(SSHPrivateKey, location, text, blockNeedles(text)...)
}

// SSHPublicKey returns the authorized_keys line of an OpenSSH private key
// minted here ("ssh-ed25519 AAAA... comment"), or "" if it does not parse.
func SSHPublicKey(privateKey string) string {
	blk, _ := pem.Decode([]byte(privateKey))
	if blk == nil || blk.Type != "OPENSSH PRIVATE KEY" {
		return ""
	}
	b, ok := strings.CutPrefix(string(blk.Bytes), "openssh-key-v1\x00")
	if !ok {
		return ""
	}
	rest := []byte(b)
	var fields [][]byte
	for range 5 { // cipher, kdf, kdfopts, (count), pubkey, private section
		var f []byte
		if f, rest, ok = readSSHString(rest); !ok {
			return ""
		}
		fields = append(fields, f)
		if len(fields) == 3 {
			if len(rest) < 4 {
				return ""
			}
			rest = rest[4:]
		}
	}
	pubBlob, sec := fields[3], fields[4]
	typ, _, ok := readSSHString(pubBlob)
	if !ok || len(sec) < 8 {
		return ""
	}
	// The comment follows the private key fields: skip them by type.
	r := sec[8:]
	n := map[string]int{"ssh-ed25519": 3, "ssh-rsa": 7}[string(typ)]
	for range n {
		if _, r, ok = readSSHString(r); !ok {
			return ""
		}
	}
	comment, _, ok := readSSHString(r)
	if !ok {
		return ""
	}
	line := string(typ) + " " + base64.StdEncoding.EncodeToString(pubBlob)
	if len(comment) > 0 {
		line += " " + string(comment)
	}
	return line
}

func readSSHString(b []byte) (s, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, false
	}
	return b[4 : 4+n], b[4+n:], true
}

func sshString(b, s []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

func sshMPInt(b []byte, n *big.Int) []byte {
	v := n.Bytes()
	if len(v) > 0 && v[0]&0x80 != 0 {
		v = append([]byte{0}, v...)
	}
	return sshString(b, v)
}

// wrap breaks s into lines of n characters, each ending in "\n".
func wrap(s string, n int) string {
	var sb strings.Builder
	for len(s) > n {
		sb.WriteString(s[:n])
		sb.WriteByte('\n')
		s = s[n:]
	}
	if s != "" {
		sb.WriteString(s)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// blockNeedles returns the distinctive lines of a PEM-style block: every
// body line but the first (which holds the format's fixed header) and any
// shorter than 40 characters.
func blockNeedles(text string) []string {
	var out []string
	body := false
	first := true
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "-----BEGIN"):
			body = true
			continue
		case strings.HasPrefix(l, "-----END"):
			body = false
			continue
		case !body || strings.Contains(l, ":"):
			continue
		}
		if first {
			first = false
			continue
		}
		if len(l) >= 40 {
			out = append(out, l)
		}
	}
	return out
}

// RSAKey derives an RSA key (e = 65537) of bits bits from the Minter's
// stream.
func (m *Minter) RSAKey(bits int) *rsa.PrivateKey {
	e := big.NewInt(65537)
	one := big.NewInt(1)
	for {
		p := m.prime(bits / 2)
		q := m.prime(bits - bits/2)
		if p.Cmp(q) == 0 {
			continue
		}
		if p.Cmp(q) < 0 {
			p, q = q, p
		}
		n := new(big.Int).Mul(p, q)
		if n.BitLen() != bits {
			continue
		}
		phi := new(big.Int).Mul(new(big.Int).Sub(p, one), new(big.Int).Sub(q, one))
		d := new(big.Int).ModInverse(e, phi)
		if d == nil {
			continue
		}
		k := &rsa.PrivateKey{PublicKey: rsa.PublicKey{N: n, E: 65537}, D: d, Primes: []*big.Int{p, q}}
		k.Precompute()
		if err := k.Validate(); err != nil && m.err == nil {
			continue
		}
		return k
	}
}

// prime returns a random prime of exactly bits bits with the top two bits
// set (so that two of them make a full-length modulus).
func (m *Minter) prime(bits int) *big.Int {
	nb := (bits + 7) / 8
	for {
		b := m.Bytes(nb)
		if m.err != nil {
			return big.NewInt(3)
		}
		if extra := nb*8 - bits; extra > 0 {
			b[0] &= 0xff >> extra
		}
		p := new(big.Int).SetBytes(b)
		p.SetBit(p, bits-1, 1)
		p.SetBit(p, bits-2, 1)
		p.SetBit(p, 0, 1)
		// Walk up from the random start to the next prime, as OpenSSL does,
		// skipping the candidates that a small prime divides: they are
		// composite, so the walk stops at the same prime, after far fewer
		// Miller-Rabin tests (about 40 instead of 100 per 1024-bit prime).
		two := big.NewInt(2)
		composite := sieve(p, bits, primeWalk)
		for i := range primeWalk {
			if p.BitLen() != bits {
				break
			}
			if !composite[i] && p.ProbablyPrime(20) {
				return p
			}
			p.Add(p, two)
		}
	}
}

// primeWalk is how many odd candidates prime tries from one random start.
const primeWalk = 4096

// sieve reports which of the n odd numbers start, start+2, ... a small odd
// prime divides. Only primes below 2^(bits-2) are used: every candidate of
// bits bits with its top two bits set is larger than they are, so a marked
// candidate is composite.
func sieve(start *big.Int, bits, n int) []bool {
	composite := make([]bool, n)
	r := new(big.Int)
	for _, q := range smallPrimes() {
		if bits-2 < 32 && uint64(q) >= 1<<(bits-2) {
			break
		}
		rem := r.Mod(start, big.NewInt(int64(q))).Uint64()
		// The first i with start+2i ≡ 0 (mod q): i ≡ (q-rem)/2, where the
		// halving is mod q (q is odd).
		i := q - uint32(rem)
		if i == q {
			i = 0
		}
		if i%2 == 1 {
			i += q
		}
		for j := int(i / 2); j < n; j += int(q) {
			composite[j] = true
		}
	}
	return composite
}

// smallPrimes are the odd primes below 2^16.
var smallPrimes = sync.OnceValue(func() []uint32 {
	const limit = 1 << 16
	notPrime := make([]bool, limit)
	var ps []uint32
	for i := 3; i < limit; i += 2 {
		if notPrime[i] {
			continue
		}
		ps = append(ps, uint32(i))
		for j := i * i; j < limit; j += 2 * i {
			notPrime[j] = true
		}
	}
	return ps
})

// PEMKey mints a PKCS#8 "PRIVATE KEY" PEM block holding a P-256 key, as
// openssl genpkey and most TLS tooling write it.
func (m *Minter) PEMKey(location string) Token {
	s := m.Secret()
	var k *ecdsa.PrivateKey
	for k == nil {
		d := s.Bytes(32)
		var err error
		if k, err = ecdsa.ParseRawPrivateKey(elliptic.P256(), d); err != nil {
			if s.err != nil {
				return m.token(PEMPrivateKey, location, "")
			}
			k = nil
		}
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return m.token(PEMPrivateKey, location, "")
	}
	text := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	return m.token(PEMPrivateKey, location, text, blockNeedles(text)...)
}

// GPGKey mints a gpg-agent private key file (extended key format) for an
// Ed25519 key; created is its "Created:" stamp (e.g. "20250314T101502").
// The secret scalar, in hex, is the needle.
func (m *Minter) GPGKey(location, created string) Token {
	s := m.Secret()
	priv := ed25519.NewKeyFromSeed(s.Bytes(ed25519.SeedSize))
	pub := priv.Public().(ed25519.PublicKey)
	if created == "" {
		created = "20250314T101502"
	}
	d := strings.ToUpper(hex.EncodeToString(priv.Seed()))
	text := fmt.Sprintf("Created: %s\nKey: (private-key (ecc (curve Ed25519)(flags eddsa)(q\n #40%s#)\n (d #%s#)))\n",
		created, strings.ToUpper(hex.EncodeToString(pub)), d)
	return m.token(GPGPrivateKey, location, text, d)
}
