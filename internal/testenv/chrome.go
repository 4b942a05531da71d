package testenv

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
)

// ChromeDecrypt reverses Chrome's Linux encryption without a keyring ("v10",
// AES-128-CBC, key PBKDF2-SHA1("peanuts", "saltysalt", 1 iteration)): what
// an infostealer does.
func ChromeDecrypt(v []byte) ([]byte, bool) {
	k, _ := pbkdf2.Key(sha1.New, "peanuts", []byte("saltysalt"), 1, 16)
	return chromeDecrypt(v, k)
}

// ChromeDecryptMac reverses Chrome's macOS encryption ("v10", AES-128-CBC,
// key PBKDF2-SHA1(the keychain's Chrome Safe Storage password, "saltysalt",
// 1003 iterations)): what an infostealer does after asking the keychain.
func ChromeDecryptMac(v []byte, safeStorage string) ([]byte, bool) {
	k, _ := pbkdf2.Key(sha1.New, safeStorage, []byte("saltysalt"), 1003, 16)
	return chromeDecrypt(v, k)
}

func chromeDecrypt(v, key []byte) ([]byte, bool) {
	if !bytes.HasPrefix(v, []byte("v10")) || (len(v)-3)%16 != 0 || len(v) < 19 {
		return nil, false
	}
	blk, _ := aes.NewCipher(key)
	out := make([]byte, len(v)-3)
	cipher.NewCBCDecrypter(blk, bytes.Repeat([]byte(" "), 16)).CryptBlocks(out, v[3:])
	pad := int(out[len(out)-1])
	if pad < 1 || pad > 16 {
		return nil, false
	}
	return out[:len(out)-pad], true
}
