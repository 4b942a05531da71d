package canary_test

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/canary"
)

// TestFindEncodings looks for the token in fixtures made by the real tools
// (testdata/enc/gen.sh: python3, openssl, xz, zstd, iconv, base64).
func TestFindEncodings(t *testing.T) {
	hunter := canary.Key{Password: []byte("hunter2")}
	tests := []struct {
		file string
		keys []canary.Key
		want canary.Encoding
	}{
		{file: "plain.txt", want: canary.Plain},
		{file: "xor1.bin", want: canary.XOR},
		{file: "xor1.b64", want: canary.Base64 + "+" + canary.XOR},
		{file: "xorkey.bin", keys: []canary.Key{{Cipher: "xor", Raw: []byte("k3y!")}}, want: canary.XOR},
		{file: "utf16.txt", want: canary.UTF16LE},
		{file: "utf16be.txt", want: canary.UTF16BE},
		{file: "utf16le.b64", want: canary.Base64 + "+" + canary.UTF16LE},
		{file: "a85-adobe.txt", want: canary.Ascii85},
		{file: "a85.txt", want: canary.Ascii85},
		{file: "btoa.txt", want: canary.Ascii85},
		{file: "b85.txt", want: canary.Base85},
		{file: "plain.xz", want: canary.Xz},
		{file: "python.xz", want: canary.Xz},
		{file: "xz.b64", want: canary.Base64 + "+" + canary.Xz},
		{file: "plain.zst", want: canary.Zstd},
		{file: "raw.deflate", want: canary.Deflate},
		{file: "raw-deflate.b64", want: canary.Base64 + "+" + canary.Deflate},
		{file: "percent-all.txt", want: canary.URL},
		{file: "u-escape.txt", want: canary.JSON},
		{file: "x-escape.txt", want: canary.CEscape},
		{file: "b64-w4.txt", want: canary.Base64},
		{file: "b64-w13-crlf.txt", want: canary.Base64},
		{file: "enc-md5.bin", keys: []canary.Key{hunter}, want: canary.OpenSSL},
		{file: "enc-sha256.b64", keys: []canary.Key{hunter}, want: canary.Base64 + "+" + canary.OpenSSL},
		{file: "enc-pbkdf2.bin", keys: []canary.Key{{Password: []byte("hunter2"), PBKDF2: true, Cipher: "aes-256-cbc"}}, want: canary.OpenSSL},
		{file: "enc-ctr.bin", keys: []canary.Key{{Password: []byte("hunter2"), Iter: 1000, Digest: "sha512", Cipher: "aes-128-ctr"}}, want: canary.OpenSSL},
		{file: "enc-nosalt.bin", keys: []canary.Key{{Password: []byte("hunter2"), NoSalt: true, Cipher: "aes-256-cbc"}}, want: canary.OpenSSL},
		{file: "enc-raw.bin", keys: []canary.Key{{Cipher: "aes-128-cbc", Raw: mustHex("000102030405060708090a0b0c0d0e0f"), IV: mustHex("0f0e0d0c0b0a09080706050403020100")}}, want: canary.OpenSSL},
		{file: "aesgcm.bin", keys: []canary.Key{{Raw: []byte("0123456789abcdef0123456789abcdef")}}, want: canary.AES},
		{file: "fernet.txt", keys: []canary.Key{{Raw: []byte("bXkgc2VjcmV0IGZlcm5ldCBrZXkgb2YgMzIgYnl0ZXM=")}}, want: canary.Base64URL + "+" + canary.AES},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data := readFile(t, filepath.Join("testdata/enc", tt.file))
			set := canary.NewSet(tokAWS, tokGH)
			if tt.keys != nil {
				// Without the key the token is not there to see.
				for _, h := range set.Find(data) {
					t.Errorf("found without the key: %v", h)
				}
				set = set.WithKeys(tt.keys)
			}
			var got []string
			found := false
			for _, h := range set.Find(data) {
				got = append(got, h.String())
				found = found || h.Token.ID == tokAWS.ID && h.Encoding == tt.want
			}
			if !found {
				t.Errorf("no %s hit; got %v", tt.want, got)
			}
		})
	}
}

func mustHex(s string) []byte { return must(hex.DecodeString(s)) }

// TestFindAESModes covers what one-liners do with a raw AES key and no
// command to say how: ECB, CBC with the IV sent first, CTR with the
// counter block first.
func TestFindAESModes(t *testing.T) {
	key := []byte("Sixteen byte key")
	plain := []byte("token=" + tokGH.Value + "&x=" + strings.Repeat("y", 20))
	plain = append(plain, make([]byte, 16-len(plain)%16)...)
	blk, _ := aes.NewCipher(key)
	iv := []byte("0123456789abcdef")
	ecb := make([]byte, len(plain))
	for i := 0; i < len(plain); i += 16 {
		blk.Encrypt(ecb[i:], plain[i:])
	}
	cbc := make([]byte, len(plain))
	cipher.NewCBCEncrypter(blk, iv).CryptBlocks(cbc, plain)
	ctr := make([]byte, len(plain))
	cipher.NewCTR(blk, iv).XORKeyStream(ctr, plain)
	set := canary.NewSet(tokGH).WithKeys([]canary.Key{{Raw: key}})
	for name, data := range map[string][]byte{
		"ecb":           ecb,
		"cbc iv first":  append(append([]byte{}, iv...), cbc...),
		"ctr iv first":  append(append([]byte{}, iv...), ctr...),
		"http body ecb": append([]byte("POST /u HTTP/1.1\r\nHost: x\r\n\r\n"), ecb...),
	} {
		t.Run(name, func(t *testing.T) {
			hits := set.Find(data)
			if len(hits) == 0 || hits[0].Encoding != canary.AES {
				t.Errorf("hits %v, want one aes hit", hits)
			}
		})
	}
}

func TestFindSplit(t *testing.T) {
	set := canary.NewSet(tokAWS, tokGH)
	v := tokGH.Value
	tests := []struct {
		name  string
		parts []string
		want  []canary.Hit
	}{
		{name: "two halves", parts: []string{"x", v[:20], v[20:], "y"},
			want: []canary.Hit{{Token: tokGH, Encoding: canary.Split, Offset: 1, Parts: []int{1, 2}}}},
		{name: "base64 in four", parts: chunks(b64("t="+v), 15),
			want: []canary.Hit{{Token: tokGH, Encoding: canary.Split + "+" + canary.Base64, Offset: 0, Parts: []int{0, 1, 2, 3}}}},
		{name: "whole in one part", parts: []string{v, "x"}},
		{name: "nothing", parts: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var parts [][]byte
			for _, p := range tt.parts {
				parts = append(parts, []byte(p))
			}
			if diff := cmp.Diff(tt.want, set.FindSplit(parts)); diff != "" {
				t.Errorf("FindSplit (-want +got):\n%s", diff)
			}
		})
	}
}
