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
// cover any clock the sandbox is given. Nothing in a chain should look
// minted a moment ago by a tool: the root was issued some years back (2 to
// 6, varied per trace, at a random time of day) for 20, 25 or 30 years;
// leaves are issued by an intermediate ("<org> TLS Inspection CA" and the
// like, minted per jail) the way inspection proxies do, with a lifetime
// that varies per trace as real issuers' do (90, 180, 365 or 397 days),
// each issued a random while before the sandbox's clock. Serials are 16
// to 20 random bytes, as public CAs use.

const (
	maxLeafName = 253
	maxLeaves   = 4096 // cached leaves; past it leaves are minted per handshake
	day         = 24 * time.Hour
)

// leafLifetimes are the validity periods real issuers give, one picked per
// jail.
var leafLifetimes = []time.Duration{90 * day, 180 * day, 365 * day, 397 * day}

// randBetween is a random duration in [lo, hi), to the second.
func randBetween(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(randIntn(int((hi-lo)/time.Second)))*time.Second
}

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
	notBefore := time.Now().Add(-randBetween(2*365*day, 6*365*day)).UTC().Truncate(time.Second)
	years := []int{20, 25, 30}[randIntn(3)]
	tmpl := &x509.Certificate{
		SerialNumber:          randSerial(),
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{org}, OrganizationalUnit: []string{"IT Security"}, Country: []string{"US"}},
		NotBefore:             notBefore,
		NotAfter:              notBefore.AddDate(years, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            1, // the intermediate that issues leaves
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

// certMinter mints leaf certificates from an intermediate it mints from
// the trace CA. It is safe for concurrent use.
type certMinter struct {
	ca       *x509.Certificate // the intermediate that issues leaves
	caKey    crypto.Signer
	chain    [][]byte          // DER of the intermediate, sent after each leaf
	leafKey  *ecdsa.PrivateKey // one key for every leaf: minting stays cheap
	lifetime time.Duration     // of every leaf of this jail
	now      func() time.Time  // the sandbox's clock

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
	inter, interKey, err := mintIntermediate(ca, signer, now())
	if err != nil {
		return nil, err
	}
	return &certMinter{ca: inter, caKey: interKey, chain: [][]byte{inter.Raw}, leafKey: leafKey,
		lifetime: leafLifetimes[randIntn(len(leafLifetimes))], now: now, cache: map[string]*tls.Certificate{}}, nil
}

// intermediateNames are what inspection proxies call the CA that issues
// their leaves; the organisation of the root is put in front.
var intermediateNames = []string{"TLS Inspection CA", "SSL Inspection CA 2", "Issuing CA 01", "Forward Trust CA", "Secure Web Gateway CA"}

// mintIntermediate mints the CA that issues leaves, under the root, valid
// from a year or two before now for ten years (within the root).
func mintIntermediate(root *x509.Certificate, rootKey crypto.Signer, now time.Time) (*x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate intermediate key: %w", err)
	}
	org := firstNonEmpty(append(root.Subject.Organization, root.Subject.CommonName)...)
	nb := now.Add(-randBetween(200*day, 2*365*day)).UTC().Truncate(time.Second)
	if nb.Before(root.NotBefore) {
		nb = root.NotBefore
	}
	na := nb.AddDate(10, 0, 0)
	if na.After(root.NotAfter) {
		na = root.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          randSerial(),
		Subject:               pkix.Name{CommonName: org + " " + intermediateNames[randIntn(len(intermediateNames))], Organization: root.Subject.Organization, Country: root.Subject.Country},
		NotBefore:             nb,
		NotAfter:              na,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, root, &key.PublicKey, rootKey)
	if err != nil {
		return nil, nil, fmt.Errorf("create intermediate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parse intermediate: %w", err)
	}
	return cert, key, nil
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
	now := m.now().UTC()
	tmpl.NotBefore = now.Add(-randBetween(day, m.lifetime*2/3)).Truncate(time.Second)
	if tmpl.NotBefore.Before(m.ca.NotBefore) {
		// Never issued before its issuer, and still of the whole lifetime:
		// a shortened leaf would be a lifetime no real issuer uses.
		tmpl.NotBefore = m.ca.NotBefore
	}
	tmpl.NotAfter = tmpl.NotBefore.Add(m.lifetime - time.Second)
	if tmpl.NotAfter.After(m.ca.NotAfter) {
		tmpl.NotAfter = m.ca.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, m.ca, &m.leafKey.PublicKey, m.caKey)
	if err != nil {
		return nil, fmt.Errorf("mint leaf for %s: %w", name, err)
	}
	c = &tls.Certificate{Certificate: append([][]byte{der}, m.chain...), PrivateKey: m.leafKey}
	m.mu.Lock()
	if len(m.cache) < maxLeaves {
		m.cache[name] = c
	}
	m.mu.Unlock()
	return c, nil
}

// randSerial is a positive serial of 16 to 20 bytes with no leading zero
// byte, as public CAs issue them.
func randSerial() *big.Int {
	b := make([]byte, 16+randIntn(5))
	_, _ = rand.Read(b) // crypto/rand never fails
	b[0] = b[0]&0x7f | 0x01
	if b[0] < 0x10 {
		b[0] |= 0x10
	}
	return new(big.Int).SetBytes(b)
}
