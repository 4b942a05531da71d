package testenv

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"strings"

	"github.com/sandboxctl/sandboxctl/canary"
	"golang.org/x/crypto/scrypt"
	"golang.org/x/crypto/sha3"
)

// Checks of minted wallet secrets, done as a wallet would.

// ValidMnemonic reports whether phrase is a BIP-39 English mnemonic with a
// correct checksum.
func ValidMnemonic(phrase string) bool {
	words := strings.Fields(phrase)
	if len(words)%3 != 0 || len(words) < 12 || len(words) > 24 {
		return false
	}
	index := make(map[string]int, len(canary.BIP39Words))
	for i, w := range canary.BIP39Words {
		index[w] = i
	}
	bits := new(big.Int)
	for _, w := range words {
		i, ok := index[w]
		if !ok {
			return false
		}
		bits.Lsh(bits, 11)
		bits.Or(bits, big.NewInt(int64(i)))
	}
	cs := len(words) / 3
	entLen := (len(words)*11 - cs) / 8
	check := new(big.Int).And(bits, big.NewInt(int64(1<<cs-1))).Int64()
	bits.Rsh(bits, uint(cs))
	ent := bits.FillBytes(make([]byte, entLen))
	sum := sha256.Sum256(ent)
	return int64(sum[0]>>(8-cs)) == check
}

// DecryptKeystore returns the private key of a keystore v3 JSON minted by
// canary.Minter.EthereumKeystore, checking its MAC.
func DecryptKeystore(js, password string) ([]byte, bool) {
	var ks canary.Keystore
	if json.Unmarshal([]byte(js), &ks) != nil || ks.Version != 3 || ks.Crypto.KDF != "scrypt" {
		return nil, false
	}
	salt, _ := hex.DecodeString(ks.Crypto.KDFParams.Salt)
	iv, _ := hex.DecodeString(ks.Crypto.CipherParams.IV)
	ct, _ := hex.DecodeString(ks.Crypto.Ciphertext)
	p := ks.Crypto.KDFParams
	dk, err := scrypt.Key([]byte(password), salt, p.N, p.R, p.P, p.DKLen)
	if err != nil || len(iv) != 16 {
		return nil, false
	}
	h := sha3.NewLegacyKeccak256()
	h.Write(dk[16:32])
	h.Write(ct)
	if hex.EncodeToString(h.Sum(nil)) != ks.Crypto.MAC {
		return nil, false
	}
	blk, _ := aes.NewCipher(dk[:16])
	d := make([]byte, len(ct))
	cipher.NewCTR(blk, iv).XORKeyStream(d, ct)
	return d, canary.EthereumAddress(d) == ks.Address
}
