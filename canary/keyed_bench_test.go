package canary_test

import (
	"testing"

	"github.com/sandboxctl/sandboxctl/canary"
)

// BenchmarkFindKeyed is BenchmarkFindMixed with keys a trace showed: an
// openssl password, a raw AES key, a XOR key.
func BenchmarkFindKeyed(b *testing.B) {
	benchFind(b, mixNew, func(s *canary.Set) *canary.Set {
		return s.WithKeys([]canary.Key{{Password: []byte("hunter2"), Cipher: "aes-256-cbc"},
			{Raw: []byte("0123456789abcdef")}, {Cipher: "xor", Raw: []byte("k3y!")}})
	})
}
