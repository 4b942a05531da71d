package canary

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"strconv"
	"strings"

	"golang.org/x/crypto/scrypt"
	"golang.org/x/crypto/sha3"
)

//go:embed bip39_english.txt
var bip39Text string

// BIP39Words is the BIP-39 English wordlist (2048 words, in order).
var BIP39Words = strings.Fields(bip39Text)

// SeedPhrase mints a BIP-39 mnemonic of words words (12, 15, 18, 21 or 24)
// with a valid checksum. The needle is the phrase with single spaces.
func (m *Minter) SeedPhrase(location string, words int) Token {
	s := m.Secret()
	if words%3 != 0 || words < 12 || words > 24 {
		words = 12
	}
	ent := s.Bytes(words * 4 / 3)
	return m.token(SeedPhrase, location, Mnemonic(ent))
}

// Mnemonic encodes entropy (16 to 32 bytes, a multiple of 4) as a BIP-39
// English mnemonic.
func Mnemonic(entropy []byte) string {
	sum := sha256.Sum256(entropy)
	bits := new(big.Int).SetBytes(entropy)
	cs := len(entropy) / 4 // checksum bits
	bits.Lsh(bits, uint(cs))
	bits.Or(bits, big.NewInt(int64(sum[0]>>(8-cs))))
	n := (len(entropy)*8 + cs) / 11
	out := make([]string, n)
	mask := big.NewInt(2047)
	for i := n - 1; i >= 0; i-- {
		out[i] = BIP39Words[new(big.Int).And(bits, mask).Int64()]
		bits.Rsh(bits, 11)
	}
	return strings.Join(out, " ")
}

// SolanaKeypair mints ~/.config/solana/id.json: the 64-byte ed25519 keypair
// (seed then public key) as a compact JSON array, as solana-keygen writes
// it. Needles: the array text, its first 24 numbers (a partial leak), and
// the Base58 form wallets import.
func (m *Minter) SolanaKeypair(location string) Token {
	s := m.Secret()
	priv := ed25519.NewKeyFromSeed(s.Bytes(ed25519.SeedSize))
	nums := make([]string, len(priv))
	for i, b := range priv {
		nums[i] = strconv.Itoa(int(b))
	}
	v := "[" + strings.Join(nums, ",") + "]"
	return m.token(SolanaKeypair, location, v, v, "["+strings.Join(nums[:24], ",")+",", Base58(priv))
}

const b58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// Base58 encodes b in Bitcoin's Base58 alphabet.
func Base58(b []byte) string {
	x := new(big.Int).SetBytes(b)
	var out []byte
	mod := new(big.Int)
	b58 := big.NewInt(58)
	for x.Sign() > 0 {
		x.DivMod(x, b58, mod)
		out = append(out, b58Alphabet[mod.Int64()])
	}
	for _, c := range b {
		if c != 0 {
			break
		}
		out = append(out, '1')
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}

// Base58Check appends the 4-byte double-SHA-256 checksum and encodes.
func Base58Check(payload []byte) string {
	h1 := sha256.Sum256(payload)
	h2 := sha256.Sum256(h1[:])
	return Base58(append(append([]byte{}, payload...), h2[:4]...))
}

// secp256k1, for Ethereum addresses and BIP-32 public keys. Affine
// arithmetic on math/big: slow (milliseconds), used a few times per home.
var (
	secpP, _  = new(big.Int).SetString("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F", 16)
	secpN, _  = new(big.Int).SetString("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141", 16)
	secpGx, _ = new(big.Int).SetString("79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798", 16)
	secpGy, _ = new(big.Int).SetString("483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8", 16)
)

func secpAdd(x1, y1, x2, y2 *big.Int) (*big.Int, *big.Int) {
	if x1 == nil {
		return x2, y2
	}
	if x2 == nil {
		return x1, y1
	}
	p := secpP
	var l *big.Int
	if x1.Cmp(x2) == 0 {
		if new(big.Int).Add(y1, y2).Mod(new(big.Int).Add(y1, y2), p).Sign() == 0 {
			return nil, nil
		}
		// l = 3x²/2y
		num := new(big.Int).Mul(x1, x1)
		num.Mul(num, big.NewInt(3))
		den := new(big.Int).Lsh(y1, 1)
		l = num.Mul(num, den.ModInverse(den.Mod(den, p), p))
	} else {
		num := new(big.Int).Sub(y2, y1)
		den := new(big.Int).Sub(x2, x1)
		den.Mod(den, p)
		l = num.Mul(num, den.ModInverse(den, p))
	}
	l.Mod(l, p)
	x3 := new(big.Int).Mul(l, l)
	x3.Sub(x3, x1).Sub(x3, x2).Mod(x3, p)
	y3 := new(big.Int).Sub(x1, x3)
	y3.Mul(y3, l).Sub(y3, y1).Mod(y3, p)
	return x3, y3
}

// secpPub returns the public point of scalar d.
func secpPub(d []byte) (x, y *big.Int) {
	k := new(big.Int).SetBytes(d)
	gx, gy := secpGx, secpGy
	for i := 0; i < k.BitLen(); i++ {
		if k.Bit(i) == 1 {
			x, y = secpAdd(x, y, gx, gy)
		}
		gx, gy = secpAdd(gx, gy, gx, gy)
	}
	return x, y
}

// secpScalar draws a valid secp256k1 private key.
func (m *Minter) secpScalar() []byte {
	for {
		d := m.Bytes(32)
		k := new(big.Int).SetBytes(d)
		if (k.Sign() > 0 && k.Cmp(secpN) < 0) || m.err != nil {
			return d
		}
	}
}

// EthereumAddress returns the lower-case hex address (no 0x) of private key d.
func EthereumAddress(d []byte) string {
	x, y := secpPub(d)
	pub := append(x.FillBytes(make([]byte, 32)), y.FillBytes(make([]byte, 32))...)
	h := sha3.NewLegacyKeccak256()
	h.Write(pub)
	return hex.EncodeToString(h.Sum(nil)[12:])
}

// Keystore is the Web3 Secret Storage (keystore v3) JSON layout.
type Keystore struct {
	Address string `json:"address"`
	Crypto  struct {
		Cipher       string `json:"cipher"`
		Ciphertext   string `json:"ciphertext"`
		CipherParams struct {
			IV string `json:"iv"`
		} `json:"cipherparams"`
		KDF       string `json:"kdf"`
		KDFParams struct {
			DKLen int    `json:"dklen"`
			N     int    `json:"n"`
			P     int    `json:"p"`
			R     int    `json:"r"`
			Salt  string `json:"salt"`
		} `json:"kdfparams"`
		MAC string `json:"mac"`
	} `json:"crypto"`
	ID      string `json:"id"`
	Version int    `json:"version"`
}

// EthereumKeystore mints a keystore v3 file (scrypt with geth's "light"
// parameters, aes-128-ctr, Keccak MAC) for a fresh secp256k1 key encrypted
// with password. It decrypts with geth and eth-keyfile. Needles: the
// address and the ciphertext.
func (m *Minter) EthereumKeystore(location, password string) Token {
	_, ks := m.EthereumKeystoreLater(location, password)
	return ks()
}

// EthereumKeystoreLater is EthereumKeystore with the key derivation (scrypt,
// tens of milliseconds) done in the background: everything random is drawn
// from m now, and the address is known at once (a keystore's file name holds
// it). The returned func waits for the keystore and mints its token; call it
// once. The background work ends once the derivation is done.
func (m *Minter) EthereumKeystoreLater(location, password string) (address string, keystore func() Token) {
	s := m.Secret()
	d := s.secpScalar()
	var ks Keystore
	ks.Address = EthereumAddress(d)
	salt, iv := s.Bytes(32), s.Bytes(16)
	ks.Crypto.Cipher = "aes-128-ctr"
	ks.Crypto.KDF = "scrypt"
	ks.Crypto.KDFParams.DKLen, ks.Crypto.KDFParams.N, ks.Crypto.KDFParams.P, ks.Crypto.KDFParams.R = 32, 4096, 6, 8
	ks.Crypto.KDFParams.Salt = hex.EncodeToString(salt)
	ks.Crypto.CipherParams.IV = hex.EncodeToString(iv)
	ks.ID = s.UUID()
	ks.Version = 3
	type derived struct {
		dk  []byte
		err error
	}
	ch := make(chan derived, 1)
	go func() {
		dk, err := scrypt.Key([]byte(password), salt, 4096, 8, 6, 32)
		ch <- derived{dk, err}
	}()
	return ks.Address, func() Token {
		r := <-ch
		if r.err != nil {
			return m.token(EthereumKeystore, location, "")
		}
		blk, _ := aes.NewCipher(r.dk[:16])
		ct := make([]byte, len(d))
		cipher.NewCTR(blk, iv).XORKeyStream(ct, d)
		h := sha3.NewLegacyKeccak256()
		h.Write(r.dk[16:32])
		h.Write(ct)
		ks.Crypto.Ciphertext = hex.EncodeToString(ct)
		ks.Crypto.MAC = hex.EncodeToString(h.Sum(nil))
		b, _ := json.Marshal(ks)
		return m.token(EthereumKeystore, location, string(b), ks.Address, ks.Crypto.Ciphertext, EIP55(ks.Address))
	}
}

// EIP55 returns the mixed-case checksummed form of a lower-case hex
// address (no 0x), as wallets and explorers print it.
func EIP55(addr string) string {
	h := sha3.NewLegacyKeccak256()
	h.Write([]byte(addr))
	sum := h.Sum(nil)
	out := []byte(addr)
	for i, c := range out {
		if c >= 'a' && c <= 'f' && (sum[i/2]>>(4*(1-i%2)))&0xf >= 8 {
			out[i] = c - 'a' + 'A'
		}
	}
	return string(out)
}

// BIP32Keys mints a BIP-32 master key pair and returns its xprv and xpub
// (Base58Check, mainnet versions), as Electrum stores them.
func (m *Minter) BIP32Keys() (xprv, xpub string) {
	chain := m.Bytes(32)
	d := m.secpScalar()
	x, y := secpPub(d)
	pub := append([]byte{2 + byte(y.Bit(0))}, x.FillBytes(make([]byte, 32))...)
	head := func(version string) []byte {
		v, _ := hex.DecodeString(version)
		b := append(v, 0, 0, 0, 0, 0, 0, 0, 0, 0) // depth, parent fingerprint, child number
		return append(b, chain...)
	}
	xprv = Base58Check(append(append(head("0488ade4"), 0), d...))
	xpub = Base58Check(append(head("0488b21e"), pub...))
	return xprv, xpub
}

const bech32Charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

// SegwitAddress returns a random native segwit (P2WPKH, bech32) mainnet
// address with a valid checksum.
func (m *Minter) SegwitAddress() string {
	prog := m.Bytes(20)
	data := []byte{0}
	acc, nbits := 0, 0
	for _, b := range prog {
		acc = acc<<8 | int(b)
		nbits += 8
		for nbits >= 5 {
			nbits -= 5
			data = append(data, byte(acc>>nbits&31))
		}
	}
	if nbits > 0 {
		data = append(data, byte(acc<<(5-nbits)&31))
	}
	hrp := "bc"
	values := []byte{}
	for _, c := range []byte(hrp) {
		values = append(values, c>>5)
	}
	values = append(values, 0)
	for _, c := range []byte(hrp) {
		values = append(values, c&31)
	}
	values = append(values, data...)
	values = append(values, 0, 0, 0, 0, 0, 0)
	pm := bech32Polymod(values) ^ 1
	var sb strings.Builder
	sb.WriteString(hrp + "1")
	for _, d := range data {
		sb.WriteByte(bech32Charset[d])
	}
	for i := range 6 {
		sb.WriteByte(bech32Charset[(pm>>(5*(5-i)))&31])
	}
	return sb.String()
}

func bech32Polymod(values []byte) uint32 {
	gen := [5]uint32{0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3}
	chk := uint32(1)
	for _, v := range values {
		top := chk >> 25
		chk = (chk&0x1ffffff)<<5 ^ uint32(v)
		for i := range 5 {
			if (top>>i)&1 == 1 {
				chk ^= gen[i]
			}
		}
	}
	return chk
}

// ElectrumWallet mints an unencrypted Electrum standard wallet file (JSON)
// holding a seed phrase and its BIP-32 keys. Needles: the seed phrase and
// the xprv.
func (m *Minter) ElectrumWallet(location string) Token {
	s := m.Secret()
	seed := Mnemonic(s.Bytes(16))
	xprv, xpub := s.BIP32Keys()
	var recv []string
	for range 5 {
		recv = append(recv, s.SegwitAddress())
	}
	w := map[string]any{
		"addr_history": map[string]any{recv[0]: []any{}, recv[1]: []any{}},
		"addresses":    map[string]any{"change": []string{}, "receiving": recv},
		"keystore": map[string]any{"pw_hash_version": 1, "seed": seed, "seed_type": "segwit",
			"type": "bip32", "xprv": xprv, "xpub": xpub},
		"seed_version":   59,
		"use_encryption": false,
		"wallet_type":    "standard",
	}
	b, _ := json.MarshalIndent(w, "", "    ")
	return m.token(WalletVault, location, string(b), seed, xprv)
}
