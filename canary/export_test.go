package canary

import "strings"

// Helpers only the tests use.

// SSHKeyRSA mints an unencrypted OpenSSH RSA private key of bits bits.
func (m *Minter) SSHKeyRSA(location, comment string, bits int) Token {
	s := m.Secret()
	return s.SSHKeyRSAWith(location, comment, s.RSAKey(bits))
}

// ValidGitHubChecksum reports whether a ghp_/gho_/npm_ token's last six
// characters are the CRC32 of the rest of its body.
func ValidGitHubChecksum(tok string) bool {
	i := strings.IndexByte(tok, '_')
	if i < 0 || len(tok)-i-1 != 36 {
		return false
	}
	body := tok[i+1 : len(tok)-6]
	return checksummed(tok[:i+1], body) == tok
}
