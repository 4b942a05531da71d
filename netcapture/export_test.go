package netcapture

import (
	"crypto/x509"
	"encoding/pem"
	"io"
	"time"
)

// MintLeafPEM mints a leaf for name from the CA, as the sink would (the
// PEM holds the leaf and its intermediate), for
// tests that need a server of their own trusted through the same CA.
func MintLeafPEM(caCert, caKey []byte, name string) (certPEM, keyPEM []byte, err error) {
	m, err := newCertMinter(caCert, caKey, time.Now)
	if err != nil {
		return nil, nil, err
	}
	leaf, err := m.leaf(name)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalPKCS8PrivateKey(m.leafKey)
	if err != nil {
		return nil, nil, err
	}
	for _, der := range leaf.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), nil
}

// newEventWriter returns an EventWriter on w with the default budgets.
func newEventWriter(w io.Writer) *EventWriter { return NewEventLog(w, LogOptions{}, nil) }

// flush waits until every queued event is written, and returns the first
// write error.
func (ew *EventWriter) flush() error {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	for ew.writing {
		ew.cond.Wait()
	}
	return ew.err
}

// Err returns the first write error.
func (ew *EventWriter) Err() error {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	return ew.err
}

// Seq returns the sequence number of the last event queued.
func (ew *EventWriter) Seq() int64 {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	return ew.seq
}
