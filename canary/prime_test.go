package canary

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"testing"
)

// plainPrime is prime without the sieve: every candidate goes through
// ProbablyPrime.
func (m *Minter) plainPrime(bits int) *big.Int {
	nb := (bits + 7) / 8
	for {
		b := m.Bytes(nb)
		if extra := nb*8 - bits; extra > 0 {
			b[0] &= 0xff >> extra
		}
		p := new(big.Int).SetBytes(b)
		p.SetBit(p, bits-1, 1)
		p.SetBit(p, bits-2, 1)
		p.SetBit(p, 0, 1)
		two := big.NewInt(2)
		for range primeWalk {
			if p.BitLen() != bits {
				break
			}
			if p.ProbablyPrime(20) {
				return p
			}
			p.Add(p, two)
		}
	}
}

// TestPrimeSieveSamePrimes: the sieve only skips candidates that cannot be
// prime, so the search stops at the prime the plain walk stops at, and a
// seed mints the same RSA keys as before it. Small sizes reach the edges
// (a walk that leaves the size, primes below the sieve's).
func TestPrimeSieveSamePrimes(t *testing.T) {
	sizes := map[int]int{3: 50, 5: 50, 8: 100, 17: 100, 20: 100, 64: 50, 256: 20, 1024: 2}
	if testing.Short() {
		sizes[256], sizes[1024] = 5, 1
	}
	for bits, seeds := range sizes {
		for i := range seeds {
			seed := fmt.Sprintf("prime-%d-%d", bits, i)
			got := NewMinter(SeededReader([]byte(seed))).prime(bits)
			want := NewMinter(SeededReader([]byte(seed))).plainPrime(bits)
			if got.Cmp(want) != 0 {
				t.Errorf("%s: sieved search found %v, the plain walk %v", seed, got, want)
			}
		}
	}
}

// TestRSAKeyPinned: the seed "rsa-pin" mints the 2048-bit key it minted
// before the sieve (the SHA-256 of its modulus, taken then).
func TestRSAKeyPinned(t *testing.T) {
	k := NewMinter(SeededReader([]byte("rsa-pin"))).RSAKey(2048)
	sum := sha256.Sum256(k.N.Bytes())
	if got, want := hex.EncodeToString(sum[:]), "546c535076827af22e2d1300eabc4b977f00c22787c70bb668d77b6bd5fe3edc"; got != want {
		t.Errorf("modulus SHA-256 %s, want %s", got, want)
	}
}

// TestSieveMarksOnlyMultiples: sieve marks a candidate exactly when one of
// the small primes divides it.
func TestSieveMarksOnlyMultiples(t *testing.T) {
	start := new(big.Int).Lsh(big.NewInt(3), 60) // 3·2^60, even: the walk's candidates are start+1, ...
	start.Add(start, big.NewInt(1))
	composite := sieve(start, 62, 2000)
	c := new(big.Int)
	for i, marked := range composite {
		c.Add(start, big.NewInt(int64(2*i)))
		divided := false
		for _, q := range smallPrimes() {
			if new(big.Int).Mod(c, big.NewInt(int64(q))).Sign() == 0 {
				divided = true
				break
			}
		}
		if marked != divided {
			t.Fatalf("candidate %v: marked %v, a small prime divides it: %v", c, marked, divided)
		}
	}
}

// BenchmarkPrime1024 compares the sieved search with the plain walk
// (46 and 78 ms a prime on the 2-core development machine).
func BenchmarkPrime1024(b *testing.B) {
	for _, bc := range []struct {
		name  string
		prime func(*Minter, int) *big.Int
	}{{"sieve", (*Minter).prime}, {"plain", (*Minter).plainPrime}} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				bc.prime(NewMinter(SeededReader(fmt.Appendf(nil, "bench-%d", i))), 1024)
			}
		})
	}
}
