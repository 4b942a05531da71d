package netcapture

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Certificate policy: the CA is minted per trace (never goproxy's public
// stock CA), with a plausible corporate subject, and lives long enough to
// cover any clock the sandbox is given (3 years back, 20 ahead). Leaves
// look like an ordinary web server's: CN and SAN are the name (or the IP),
// valid around the sandbox's clock for less than 398 days.

const (
	caBack      = 3 * 365 * 24 * time.Hour
	caAhead     = 20 * 365 * 24 * time.Hour
	leafBack    = 45 * 24 * time.Hour
	leafAhead   = 300 * 24 * time.Hour
	maxLeafName = 253
	maxLeaves   = 4096 // cached leaves; past it leaves are minted per handshake
)

// NewCA mints a per-trace certificate authority (ECDSA P-256) and returns
// its certificate and PKCS#8 key as PEM. commonName should look like a
// corporate inspection CA ("Northwind IT Root CA"); empty picks one.
func NewCA(commonName string) (certPEM, keyPEM []byte, err error) {
	if commonName == "" {
		commonName = "Corporate IT Root CA"
	}
	org := strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(commonName, " CA"), " Root"), " IT"))
	if org == "" {
		org = commonName
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate ca key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          randSerial(),
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{org}, OrganizationalUnit: []string{"IT Security"}},
		NotBefore:             now.Add(-caBack),
		NotAfter:              now.Add(caAhead),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create ca certificate: %w", err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode ca key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), nil
}

// certMinter mints leaf certificates from the trace CA. It is safe for
// concurrent use.
type certMinter struct {
	ca      *x509.Certificate
	caKey   crypto.Signer
	leafKey *ecdsa.PrivateKey // one key for every leaf: minting stays cheap
	now     func() time.Time  // the sandbox's clock

	mu    sync.Mutex
	cache map[string]*tls.Certificate
}

func newCertMinter(certPEM, keyPEM []byte, now func() time.Time) (*certMinter, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, errors.New("parse ca certificate: no CERTIFICATE block")
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse ca certificate: %w", err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("parse ca key: no PEM block")
	}
	var key any
	switch kb.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(kb.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(kb.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(kb.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("parse ca key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("parse ca key: %T cannot sign", key)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate leaf key: %w", err)
	}
	return &certMinter{ca: ca, caKey: signer, leafKey: leafKey, now: now, cache: map[string]*tls.Certificate{}}, nil
}

// validLeafName reports whether a name from an SNI can go into a
// certificate as a DNS name.
func validLeafName(name string) bool {
	if name == "" || len(name) > maxLeafName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '*') {
			return false
		}
	}
	return true
}

// leaf returns a certificate for name, an IP address or a DNS name.
func (m *certMinter) leaf(name string) (*tls.Certificate, error) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	m.mu.Lock()
	c, ok := m.cache[name]
	m.mu.Unlock()
	if ok {
		return c, nil
	}
	tmpl := &x509.Certificate{
		SerialNumber: randSerial(),
		Subject:      pkix.Name{CommonName: name},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip.AsSlice())
	} else if validLeafName(name) {
		tmpl.DNSNames = []string{name}
	} else {
		return nil, fmt.Errorf("mint leaf: %q is neither a host name nor an address", name)
	}
	now := m.now()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-leafBack), now.Add(leafAhead)
	if tmpl.NotBefore.Before(m.ca.NotBefore) {
		tmpl.NotBefore = m.ca.NotBefore
	}
	if tmpl.NotAfter.After(m.ca.NotAfter) {
		tmpl.NotAfter = m.ca.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, m.ca, &m.leafKey.PublicKey, m.caKey)
	if err != nil {
		return nil, fmt.Errorf("mint leaf for %s: %w", name, err)
	}
	c = &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: m.leafKey}
	m.mu.Lock()
	if len(m.cache) < maxLeaves {
		m.cache[name] = c
	}
	m.mu.Unlock()
	return c, nil
}

func randSerial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)) // crypto/rand never fails
	return n.Add(n, big.NewInt(1))
}
