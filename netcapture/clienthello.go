package netcapture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ClientHello parsing. The bytes come from the sandbox and are untrusted:
// every length is checked against what is left, and the total read is
// capped, so a hostile hello can only make parsing fail.

const (
	recordHandshake  = 22
	maxHelloBytes    = 64 << 10 // records read while reassembling one hello
	maxRecordPayload = 1<<14 + 2048
)

// clientHello is what the sinks keep of a TLS ClientHello.
type clientHello struct {
	SNI      string
	ALPN     []string
	Versions []string
}

// readClientHello reads TLS records from r until one whole ClientHello
// handshake message is in, returning every byte consumed (to replay into a
// TLS server) and the handshake message itself.
func readClientHello(r io.Reader) (raw, msg []byte, err error) {
	var hdr [5]byte
	need := -1 // bytes of the handshake message, once its header is in
	for need < 0 || len(msg) < need {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return raw, nil, fmt.Errorf("read tls record header: %w", err)
		}
		raw = append(raw, hdr[:]...)
		if hdr[0] != recordHandshake {
			return raw, nil, fmt.Errorf("tls record type %d, want handshake", hdr[0])
		}
		if hdr[1] != 3 {
			return raw, nil, fmt.Errorf("tls record version %#04x", binary.BigEndian.Uint16(hdr[1:3]))
		}
		n := int(binary.BigEndian.Uint16(hdr[3:5]))
		if n == 0 || n > maxRecordPayload {
			return raw, nil, fmt.Errorf("tls record length %d", n)
		}
		if len(raw)+n > maxHelloBytes {
			return raw, nil, errors.New("tls client hello too large")
		}
		start := len(raw)
		raw = append(raw, make([]byte, n)...)
		if _, err := io.ReadFull(r, raw[start:]); err != nil {
			return raw[:start], nil, fmt.Errorf("read tls record: %w", err)
		}
		msg = append(msg, raw[start:]...)
		if need < 0 && len(msg) >= 4 {
			if msg[0] != 1 {
				return raw, nil, fmt.Errorf("tls handshake type %d, want client hello", msg[0])
			}
			need = 4 + (int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3]))
			if need > maxHelloBytes {
				return raw, nil, fmt.Errorf("tls client hello length %d", need)
			}
		}
	}
	return raw, msg[:need], nil
}

// parseClientHello parses a handshake message holding a ClientHello.
func parseClientHello(msg []byte) (clientHello, error) {
	var h clientHello
	p := parser(msg)
	typ, ok1 := p.u8()
	n, ok2 := p.u24()
	if !ok1 || !ok2 || typ != 1 {
		return h, errors.New("not a client hello")
	}
	body, ok := p.bytes(int(n))
	if !ok {
		return h, errors.New("client hello truncated")
	}
	p = parser(body)
	legacy, ok := p.u16()
	if !ok {
		return h, errors.New("client hello: no version")
	}
	if _, ok := p.bytes(32); !ok {
		return h, errors.New("client hello: no random")
	}
	if _, ok := p.vec8(); !ok {
		return h, errors.New("client hello: bad session id")
	}
	if _, ok := p.vec16(); !ok {
		return h, errors.New("client hello: bad cipher suites")
	}
	if _, ok := p.vec8(); !ok {
		return h, errors.New("client hello: bad compression methods")
	}
	var supported []string
	if len(p) > 0 {
		exts, ok := p.vec16()
		if !ok {
			return h, errors.New("client hello: bad extensions")
		}
		for len(exts) > 0 {
			typ, ok1 := exts.u16()
			data, ok2 := exts.vec16()
			if !ok1 || !ok2 {
				return h, errors.New("client hello: bad extension")
			}
			switch typ {
			case 0: // server_name
				list, ok := data.vec16()
				if !ok {
					return h, errors.New("client hello: bad server_name")
				}
				for len(list) > 0 {
					nt, ok1 := list.u8()
					name, ok2 := list.vec16()
					if !ok1 || !ok2 {
						return h, errors.New("client hello: bad server_name entry")
					}
					if nt == 0 && h.SNI == "" {
						h.SNI = string(name)
					}
				}
			case 16: // application_layer_protocol_negotiation
				list, ok := data.vec16()
				if !ok {
					return h, errors.New("client hello: bad alpn")
				}
				for len(list) > 0 {
					proto, ok := list.vec8()
					if !ok {
						return h, errors.New("client hello: bad alpn entry")
					}
					h.ALPN = append(h.ALPN, string(proto))
				}
			case 43: // supported_versions
				list, ok := data.vec8()
				if !ok || len(list)%2 != 0 {
					return h, errors.New("client hello: bad supported_versions")
				}
				for len(list) > 0 {
					v, _ := list.u16()
					if !isGREASE(v) {
						supported = append(supported, tlsVersion(v))
					}
				}
			}
		}
	}
	h.Versions = supported
	if len(h.Versions) == 0 {
		h.Versions = []string{tlsVersion(legacy)}
	}
	return h, nil
}

func isGREASE(v uint16) bool { return v&0x0f0f == 0x0a0a && v>>8 == v&0xff }

func tlsVersion(v uint16) string {
	switch v {
	case 0x0300:
		return "SSL 3.0"
	case 0x0301:
		return "TLS 1.0"
	case 0x0302:
		return "TLS 1.1"
	case 0x0303:
		return "TLS 1.2"
	case 0x0304:
		return "TLS 1.3"
	}
	return fmt.Sprintf("0x%04x", v)
}

// parser reads big-endian fields off the front of a byte slice; every
// method reports false (and consumes nothing useful) when too few bytes are
// left.
type parser []byte

func (p *parser) bytes(n int) (parser, bool) {
	if n < 0 || len(*p) < n {
		*p = nil
		return nil, false
	}
	b := (*p)[:n]
	*p = (*p)[n:]
	return b, true
}

func (p *parser) u8() (uint8, bool) {
	b, ok := p.bytes(1)
	if !ok {
		return 0, false
	}
	return b[0], true
}

func (p *parser) u16() (uint16, bool) {
	b, ok := p.bytes(2)
	if !ok {
		return 0, false
	}
	return binary.BigEndian.Uint16(b), true
}

func (p *parser) u24() (uint32, bool) {
	b, ok := p.bytes(3)
	if !ok {
		return 0, false
	}
	return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]), true
}

func (p *parser) vec8() (parser, bool) {
	n, ok := p.u8()
	if !ok {
		return nil, false
	}
	return p.bytes(int(n))
}

func (p *parser) vec16() (parser, bool) {
	n, ok := p.u16()
	if !ok {
		return nil, false
	}
	return p.bytes(int(n))
}
