package canary

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/md5"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"slices"
	"strconv"
	"strings"
)

// A Key is a secret a trace showed being used to encrypt or obfuscate: the
// password of an `openssl enc -k`, a raw key given with -K, a literal in a
// python or node one-liner that XORs or AES-encrypts. WithKeys makes a Set
// that tries them: XOR keys become patterns (the needles XORed with the
// key, at every phase), the others decrypt opaque blobs (openssl's
// Salted__ ciphertext, and binary regions) before searching them.
type Key struct {
	// Cipher is how the key is used: an openssl cipher name
	// ("aes-256-cbc", "aes-128-ctr", ...), "xor" (repeated-key XOR), or ""
	// when the trace did not say (the usual ones are tried).
	Cipher string `json:"cipher,omitempty"`
	// Password is an openssl enc password (-k, -pass pass:): the key and
	// IV are derived from it and the salt (EVP_BytesToKey, or PBKDF2).
	Password []byte `json:"password,omitempty"`
	// Raw is a raw key: openssl -K, an AES key literal, a XOR key.
	Raw []byte `json:"raw,omitempty"`
	// IV is openssl's -iv, when given.
	IV []byte `json:"iv,omitempty"`
	// Digest is openssl's -md ("md5", "sha1", "sha256", "sha512"); ""
	// tries sha256 (OpenSSL 1.1 and later) and md5 (before).
	Digest string `json:"digest,omitempty"`
	// PBKDF2 and Iter are openssl's -pbkdf2 and -iter (0: 10000).
	PBKDF2 bool `json:"pbkdf2,omitempty"`
	Iter   int  `json:"iter,omitempty"`
	// NoSalt is openssl's -nosalt: no Salted__ header, no salt.
	NoSalt bool `json:"nosalt,omitempty"`
}

// Caps on what keys may cost: each XOR key adds a pattern per needle and
// phase, each other key a decryption per blob.
const (
	maxXORKeys   = 16
	maxXORKeyLen = 64
	maxXORPhases = 128 // key bytes of all XOR keys together
	maxCryptKeys = 16
	maxBlob      = 1 << 20 // bytes of one blob decrypted per key and mode
	maxIter      = 1 << 20 // PBKDF2 iterations accepted from a command line
)

// WithKeys returns a Set with the same tokens that also finds them
// obfuscated or encrypted with keys. Keys beyond the caps (16 XOR keys of
// 2 to 64 bytes and 128 bytes in all, 16 others) are ignored; duplicates
// count once. With no usable key it returns s.
func (s *Set) WithKeys(keys []Key) *Set {
	if s == nil {
		return nil
	}
	var use []Key
	nx, nc, phases := 0, 0, 0
	seen := map[string]bool{}
	for _, k := range append(slices.Clone(s.keys), keys...) {
		id := k.Cipher + "\x00" + string(k.Password) + "\x00" + string(k.Raw) + "\x00" + string(k.IV) + "\x00" +
			k.Digest + "\x00" + strconv.FormatBool(k.PBKDF2) + strconv.Itoa(k.Iter) + strconv.FormatBool(k.NoSalt)
		if seen[id] || len(k.Password) == 0 && len(k.Raw) == 0 {
			continue
		}
		seen[id] = true
		if k.Cipher == "xor" {
			if len(k.Raw) < 2 || len(k.Raw) > maxXORKeyLen || nx >= maxXORKeys || phases+len(k.Raw) > maxXORPhases {
				continue // one byte: every key is tried anyway
			}
			nx++
			phases += len(k.Raw)
		} else {
			if nc >= maxCryptKeys {
				continue
			}
			nc++
		}
		use = append(use, k)
	}
	if len(use) == len(s.keys) {
		return s
	}
	out := &Set{tokens: s.tokens}
	out.index(use)
	return out
}

// Keys returns the keys the set tries (see WithKeys).
func (s *Set) Keys() []Key {
	if s == nil {
		return nil
	}
	return slices.Clone(s.keys)
}

// keyedVariants returns needle n XORed with each XOR key, at every phase
// of the key.
func keyedVariants(n []byte, keys []Key) []variant {
	var out []variant
	for _, k := range keys {
		if k.Cipher != "xor" || len(k.Raw) == 0 {
			continue
		}
		for ph := range k.Raw {
			b := make([]byte, len(n))
			for i, c := range n {
				b[i] = c ^ k.Raw[(ph+i)%len(k.Raw)]
			}
			out = append(out, variant{s: b, enc: XOR, bin: true})
		}
	}
	return out
}

func (s *Set) hasPasswords() bool {
	for _, k := range s.keys {
		if len(k.Password) > 0 && !k.NoSalt {
			return true
		}
	}
	return false
}

// An evpCipher is an openssl enc cipher: AES with a key size and a mode.
type evpCipher struct {
	name   string
	keyLen int
	mode   string // "cbc", "ecb", "ctr", "cfb", "ofb"
}

func (c evpCipher) ivLen() int {
	if c.mode == "ecb" {
		return 0
	}
	return aes.BlockSize
}

// cipherByName reads an openssl cipher name (with or without its leading
// '-', aliases such as aes256 included); ok is false for others.
func cipherByName(name string) (evpCipher, bool) {
	name = strings.ToLower(strings.TrimPrefix(name, "-"))
	switch name {
	case "aes128", "aes192", "aes256":
		name = "aes-" + name[3:] + "-cbc"
	}
	rest, ok := strings.CutPrefix(name, "aes-")
	if !ok {
		return evpCipher{}, false
	}
	b, mode, _ := strings.Cut(rest, "-")
	bits, err := strconv.Atoi(b)
	if err != nil {
		return evpCipher{}, false
	}
	switch mode {
	case "cfb128":
		mode = "cfb"
	case "cbc", "ecb", "ctr", "cfb", "ofb":
	default:
		return evpCipher{}, false
	}
	if bits != 128 && bits != 192 && bits != 256 {
		return evpCipher{}, false
	}
	return evpCipher{name: name, keyLen: bits / 8, mode: mode}, true
}

// The ciphers tried when the command did not name one (the command was
// not seen, only the key).
var defaultCiphers = []string{"aes-256-cbc", "aes-128-cbc", "aes-256-ctr", "aes-192-cbc"}

func (k Key) ciphers() []evpCipher {
	var out []evpCipher
	if c, ok := cipherByName(k.Cipher); ok {
		return append(out, c)
	}
	for _, n := range defaultCiphers {
		c, _ := cipherByName(n)
		out = append(out, c)
	}
	return out
}

func (k Key) digests() []func() hash.Hash {
	switch k.Digest {
	case "md5":
		return []func() hash.Hash{md5.New}
	case "sha1":
		return []func() hash.Hash{sha1.New}
	case "sha256":
		return []func() hash.Hash{sha256.New}
	case "sha512":
		return []func() hash.Hash{sha512.New}
	}
	if k.PBKDF2 || k.Iter > 0 {
		return []func() hash.Hash{sha256.New}
	}
	return []func() hash.Hash{sha256.New, md5.New}
}

// derive returns openssl enc's key and IV for password, salt (nil with
// -nosalt), cipher c and digest md: EVP_BytesToKey with one round, or
// PBKDF2 with -pbkdf2/-iter.
func (k Key) derive(c evpCipher, md func() hash.Hash, salt []byte) (key, iv []byte) {
	n := c.keyLen + c.ivLen()
	var out []byte
	if k.PBKDF2 || k.Iter > 0 {
		iter := k.Iter
		if iter <= 0 {
			iter = 10000
		}
		var err error
		out, err = pbkdf2.Key(md, string(k.Password), salt, min(iter, maxIter), n)
		if err != nil {
			return nil, nil
		}
	} else {
		var prev []byte
		for len(out) < n {
			h := md()
			h.Write(prev)
			h.Write(k.Password)
			h.Write(salt)
			prev = h.Sum(nil)
			out = append(out, prev...)
		}
	}
	return out[:c.keyLen], out[c.keyLen:n]
}

// keyCache remembers derived keys: PBKDF2 is slow by design and the same
// salt comes back in every copy of a blob.
type keyCache map[string][2][]byte

// decryptSalted decrypts openssl enc's output at the start of b ("Salted__",
// an 8-byte salt, the ciphertext) with every password of the set, and
// searches what each gives.
func (f *finder) decryptSalted(b []byte, outer Encoding, at, depth int) {
	if len(b) < 16+aes.BlockSize {
		return
	}
	salt, ct := b[8:16], b[16:]
	for _, k := range f.s.keys {
		if len(k.Password) == 0 || k.NoSalt {
			continue
		}
		for _, c := range k.ciphers() {
			for _, md := range k.digests() {
				key, iv := f.derived(k, c, md, salt)
				if key != nil {
					f.decrypted(c, key, iv, ct, OpenSSL, outer, at, depth)
				}
			}
		}
	}
}

func (f *finder) derived(k Key, c evpCipher, md func() hash.Hash, salt []byte) (key, iv []byte) {
	if f.keys == nil {
		f.keys = &keyCache{}
	}
	id := string(k.Password) + "\x00" + string(salt) + "\x00" + c.name + "\x00" + string(md().Sum(nil)[:4]) +
		"\x00" + strconv.FormatBool(k.PBKDF2) + strconv.Itoa(k.Iter)
	if v, ok := (*f.keys)[id]; ok {
		return v[0], v[1]
	}
	key, iv = k.derive(c, md, salt)
	(*f.keys)[id] = [2][]byte{key, iv}
	return key, iv
}

// decryptBlob tries the set's headerless keys on the opaque blob at the
// start of b: openssl -nosalt passwords and -K keys, and raw AES keys from
// one-liners (ECB; CBC with the IV given, zero or sent first; CTR and GCM
// with the nonce sent first; Fernet tokens).
func (f *finder) decryptBlob(b []byte, outer Encoding, at, depth int) {
	if len(f.s.keys) == 0 || len(b) < aes.BlockSize {
		return
	}
	b = b[:min(len(b), maxBlob)]
	for _, k := range f.s.keys {
		if k.Cipher == "xor" || f.guesses <= 0 || f.budget <= 0 {
			continue
		}
		f.guesses--
		switch {
		case len(k.Password) > 0 && k.NoSalt:
			for _, c := range k.ciphers() {
				for _, md := range k.digests() {
					if key, iv := f.derived(k, c, md, nil); key != nil {
						f.decrypted(c, key, iv, b, OpenSSL, outer, at, depth)
					}
				}
			}
		case len(k.Raw) > 0:
			f.rawAES(k, b, outer, at, depth)
		}
	}
}

// rawAES tries a raw key on blob b in the modes one-liners use.
func (f *finder) rawAES(k Key, b []byte, outer Encoding, at, depth int) {
	enc := AES
	if c, ok := cipherByName(k.Cipher); ok {
		// openssl enc -K: the mode is known, the IV given (or zero).
		if len(k.Raw) != c.keyLen {
			return
		}
		iv := k.IV
		if len(iv) != c.ivLen() {
			iv = make([]byte, c.ivLen())
		}
		f.decrypted(c, k.Raw, iv, b, OpenSSL, outer, at, depth)
		return
	}
	for _, key := range aesKeys(k.Raw) {
		bits := strconv.Itoa(len(key) * 8)
		ecb, _ := cipherByName("aes-" + bits + "-ecb")
		cbc, _ := cipherByName("aes-" + bits + "-cbc")
		ctr, _ := cipherByName("aes-" + bits + "-ctr")
		zero := make([]byte, aes.BlockSize)
		iv := zero
		if len(k.IV) == aes.BlockSize {
			iv = k.IV
		}
		f.decrypted(ecb, key, nil, b, enc, outer, at, depth)
		// CBC with an unknown IV sent first: decrypting the whole blob
		// with a zero IV spoils the first block only.
		f.decrypted(cbc, key, iv, b, enc, outer, at, depth)
		if len(b) > aes.BlockSize {
			f.decrypted(ctr, key, b[:aes.BlockSize], b[aes.BlockSize:], enc, outer, at, depth)
			// PyCryptodome's CTR: an 8-byte nonce, then a 64-bit counter
			// from zero.
			f.decrypted(ctr, key, append(slices.Clone(b[:8]), 0, 0, 0, 0, 0, 0, 0, 0), b[8:], enc, outer, at, depth)
			// GCM (cryptography's AESGCM): a 12-byte nonce first; the
			// payload is CTR from counter 2, the tag trails.
			f.decrypted(ctr, key, append(slices.Clone(b[:12]), 0, 0, 0, 2), b[12:], enc, outer, at, depth)
		}
	}
	if fk := fernetKey(k.Raw); fk != nil && b[0] == 0x80 && len(b) >= 57+aes.BlockSize {
		// Fernet: 0x80, a timestamp, the IV, AES-128-CBC, an HMAC; the
		// key's second half encrypts.
		cbc, _ := cipherByName("aes-128-cbc")
		f.decrypted(cbc, fk, b[9:25], b[25:len(b)-32], enc, outer, at, depth)
	}
}

// fernetKey is the encryption half of a Fernet key (base64 of 32 bytes).
func fernetKey(raw []byte) []byte {
	for _, e := range []*base64.Encoding{base64.URLEncoding, base64.StdEncoding} {
		if d, err := e.DecodeString(string(raw)); err == nil && len(d) == 32 {
			return d[16:]
		}
	}
	return nil
}

// aesKeys returns the AES keys a raw key can stand for: itself when it has
// an AES size, its hex or base64 decoding when that has one.
func aesKeys(raw []byte) [][]byte {
	var out [][]byte
	okLen := func(b []byte) bool { return len(b) == 16 || len(b) == 24 || len(b) == 32 }
	if okLen(raw) {
		out = append(out, raw)
	}
	if d, err := hex.DecodeString(string(raw)); err == nil && okLen(d) {
		out = append(out, d)
	}
	for _, e := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		if d, err := e.DecodeString(string(raw)); err == nil && okLen(d) {
			out = append(out, d)
		}
	}
	return out
}

// decrypted decrypts ct with cipher c, key and iv, and searches the result.
func (f *finder) decrypted(c evpCipher, key, iv, ct []byte, enc, outer Encoding, at, depth int) {
	if f.budget <= 0 || depth >= maxDepth {
		return
	}
	blk, err := aes.NewCipher(key)
	if err != nil || len(iv) != c.ivLen() {
		return
	}
	ct = ct[:min(len(ct), maxBlob)]
	var out []byte
	switch c.mode {
	case "ecb", "cbc":
		ct = ct[:len(ct)/aes.BlockSize*aes.BlockSize]
		if len(ct) == 0 {
			return
		}
		out = make([]byte, len(ct))
		if c.mode == "cbc" {
			cipher.NewCBCDecrypter(blk, iv).CryptBlocks(out, ct)
		} else {
			for i := 0; i < len(ct); i += aes.BlockSize {
				blk.Decrypt(out[i:], ct[i:])
			}
		}
	case "ctr":
		out = make([]byte, len(ct))
		cipher.NewCTR(blk, iv).XORKeyStream(out, ct)
	case "ofb":
		out = make([]byte, len(ct))
		//lint:ignore SA1019 the format read is openssl enc -aes-*-ofb
		cipher.NewOFB(blk, iv).XORKeyStream(out, ct)
	case "cfb":
		out = make([]byte, len(ct))
		//lint:ignore SA1019 the format read is openssl enc -aes-*-cfb
		cipher.NewCFBDecrypter(blk, iv).XORKeyStream(out, ct)
	}
	if len(out) < MinNeedle {
		return
	}
	f.budget -= len(out)
	// A wrong key gives noise; the needles and what a decoder makes of
	// the output decide, as for any region.
	f.find(out, enc.wrap(outer), at, depth+1)
}
