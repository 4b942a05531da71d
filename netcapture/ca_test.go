package netcapture

import (
	"crypto/x509"
	"encoding/pem"
	"slices"
	"testing"
	"time"
)

// TestCertificatesLookIssued checks what a skill inspecting the chain
// sees: a root issued years ago, an intermediate under it, leaves whose
// lifetime is one real issuers use, issued a while ago, and long random
// serials, none of it the same from one trace to the next.
func TestCertificatesLookIssued(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Hour) // NewCA dates the root from the real clock
	seenBefore := map[time.Time]bool{}
	seenLife := map[time.Duration]bool{}
	for range 6 {
		caPEM, keyPEM, err := NewCA("Northwind IT Root CA")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := pem.Decode(caPEM)
		root, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		age := time.Since(root.NotBefore)
		if age < 2*365*day-time.Minute || age > 6*365*day || root.NotBefore.Nanosecond() != 0 {
			t.Errorf("root issued %v ago", age)
		}
		if y := root.NotAfter.Year() - root.NotBefore.Year(); !slices.Contains([]int{20, 25, 30}, y) {
			t.Errorf("root valid %d years", y)
		}
		seenBefore[root.NotBefore] = true
		m, err := newCertMinter(caPEM, keyPEM, func() time.Time { return now })
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := m.leaf("api.github.com")
		if err != nil {
			t.Fatal(err)
		}
		if len(leaf.Certificate) != 2 {
			t.Fatalf("chain of %d certificates, want leaf and intermediate", len(leaf.Certificate))
		}
		lc, _ := x509.ParseCertificate(leaf.Certificate[0])
		ic, _ := x509.ParseCertificate(leaf.Certificate[1])
		roots, inters := x509.NewCertPool(), x509.NewCertPool()
		roots.AddCert(root)
		inters.AddCert(ic)
		if _, err := lc.Verify(x509.VerifyOptions{DNSName: "api.github.com", Roots: roots, Intermediates: inters, CurrentTime: now}); err != nil {
			t.Errorf("chain does not verify: %v", err)
		}
		life := lc.NotAfter.Sub(lc.NotBefore) + time.Second
		if !slices.Contains(leafLifetimes, life) {
			t.Errorf("leaf lifetime %v", life)
		}
		seenLife[life] = true
		if issued := now.Sub(lc.NotBefore); issued < day || issued > life {
			t.Errorf("leaf issued %v before the clock", issued)
		}
		for _, c := range []*x509.Certificate{root, ic, lc} {
			if n := len(c.SerialNumber.Bytes()); n < 16 || n > 20 {
				t.Errorf("%s: serial of %d bytes", c.Subject.CommonName, n)
			}
		}
		if ic.Issuer.CommonName != root.Subject.CommonName || ic.Subject.CommonName == root.Subject.CommonName {
			t.Errorf("intermediate %q issued by %q", ic.Subject.CommonName, ic.Issuer.CommonName)
		}
	}
	if len(seenBefore) < 2 {
		t.Error("every root has the same issue time")
	}
}
