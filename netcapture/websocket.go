package netcapture

import (
	"bufio"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// WebSocket policy: the upgrade request is an exchange like any other
// (status 101, response "websocket"); then every message the client sends
// is read (frames unmasked, fragments joined, control frames too) and
// recorded as a ws_message event, its payload cut to BodyCap in the event
// and spooled whole past it. Frames the client sent before our 101 are
// already buffered and count the same. Pings are answered, a close is
// echoed; nothing else is sent. A frame stream that breaks the protocol is
// recorded from there on as a raw flow.

const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// wsOpcodes names frame opcodes.
var wsOpcodes = map[byte]string{0: "continuation", 1: "text", 2: "binary", 8: "close", 9: "ping", 10: "pong"}

// serveWebSocket answers the upgrade in req on c and records the client's
// messages, read through r, until the connection ends. It owns c.
func (ss *session) serveWebSocket(c net.Conn, r *bufio.Reader, req *http.Request, m connMeta) {
	if !ss.track(c) {
		c.Close()
		return
	}
	defer func() {
		ss.untrack(c)
		c.Close()
	}()
	s := ss.s
	url := "ws://" + req.Host + req.URL.RequestURI()
	if m.tls {
		url = "wss://" + req.Host + req.URL.RequestURI()
	}
	key := req.Header.Get("Sec-WebSocket-Key")
	sum := sha1.Sum([]byte(key + wsGUID))
	headers, _ := trimHeaders(req.Header, len(url))
	s.emitEvent(trace.SourceHTTP, trace.TypeHTTP, &trace.HTTPExchange{
		Method: req.Method, URL: cutNote(url, maxURLInEvent), Host: req.Host, Proto: req.Proto, TLS: m.tls, SNI: m.sni,
		Client: m.client, DstIP: m.dstIP(), DstPort: m.dstPort(), Headers: headers,
		Status: http.StatusSwitchingProtocols, Response: "websocket",
	})
	_ = c.SetWriteDeadline(time.Now().Add(handshakeTimeout))
	hs := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		base64.StdEncoding.EncodeToString(sum[:]) + "\r\n"
	if p := req.Header.Get("Sec-WebSocket-Protocol"); p != "" {
		// Echo the first protocol offered so strict clients go on.
		for i := 0; i < len(p); i++ {
			if p[i] == ',' {
				p = p[:i]
				break
			}
		}
		hs += "Sec-WebSocket-Protocol: " + p + "\r\n"
	}
	if _, err := io.WriteString(c, hs+"\r\n"); err != nil {
		return
	}
	ws := &wsReader{r: r, s: s, url: url, m: m}
	for {
		_ = c.SetReadDeadline(time.Now().Add(httpIdle))
		op, err := ws.message()
		if err != nil {
			if !errors.Is(err, io.EOF) && !isTimeout(err) && !errors.Is(err, net.ErrClosed) && ws.malformed != "" {
				// The rest of the stream is not WebSocket: keep it raw.
				m.protocol = "websocket-malformed"
				ss.catchAllBytes(c, nil, r, m, "")
			}
			return
		}
		_ = c.SetWriteDeadline(time.Now().Add(handshakeTimeout))
		switch op {
		case 8: // close: echo it and end
			_, _ = c.Write([]byte{0x88, 0x00})
			return
		case 9: // ping: pong with the same payload
			_, _ = c.Write(wsFrame(10, ws.lastPing))
		}
	}
}

// wsReader reads the client's frames and emits one event per message.
type wsReader struct {
	r         *bufio.Reader
	s         *Sink
	url       string
	m         connMeta
	lastPing  []byte
	malformed string
}

// message reads frames up to the end of one message (or one control
// frame), emits it, and returns its opcode.
func (w *wsReader) message() (byte, error) {
	var (
		opcode byte
		spool  *SpoolFile
		kept   []byte
		size   int64
		capN   = w.s.cfg.BodyCap
		sum    = sha256.New()
	)
	add := func(p []byte) {
		size += int64(len(p))
		sum.Write(p)
		if room := capN - int64(len(kept)); room > 0 && spool == nil {
			n := min(int64(len(p)), room)
			kept = append(kept, p[:n]...)
			p = p[n:]
		}
		if len(p) == 0 {
			return
		}
		if spool == nil {
			spool = w.s.spool.Create("ws")
			_, _ = spool.Write(kept)
		}
		_, _ = spool.Write(p)
	}
	emit := func(op byte, malformed string) {
		msg := &trace.WSMessage{URL: cutNote(w.url, maxURLInEvent), Client: w.m.client, DstIP: w.m.dstIP(), DstPort: w.m.dstPort(),
			Opcode: wsOpcodes[op], Payload: kept, Size: size, Truncated: size > int64(len(kept)), Malformed: malformed,
			Digest: hex.EncodeToString(sum.Sum(nil))}
		if msg.Opcode == "" {
			msg.Opcode = fmt.Sprintf("opcode-%d", op)
		}
		if spool != nil {
			msg.Spool, msg.SpoolTruncated = spool.Close()
		}
		w.s.emitEvent(trace.SourceHTTP, trace.TypeWSMessage, msg)
	}
	first := true
	for {
		var h [2]byte
		if _, err := io.ReadFull(w.r, h[:]); err != nil {
			if !first || size > 0 {
				emit(opcode, "message cut short: "+err.Error())
			}
			return 0, err
		}
		fin, op, masked := h[0]&0x80 != 0, h[0]&0x0f, h[1]&0x80 != 0
		n := int64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(w.r, b[:]); err != nil {
				return 0, err
			}
			n = int64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(w.r, b[:]); err != nil {
				return 0, err
			}
			n = int64(binary.BigEndian.Uint64(b[:]) & (1<<63 - 1))
		}
		var mask [4]byte
		if masked {
			if _, err := io.ReadFull(w.r, mask[:]); err != nil {
				return 0, err
			}
		}
		control := op >= 8
		if control && (n > 125 || !fin) || op > 10 || op > 2 && op < 8 {
			w.malformed = fmt.Sprintf("bad frame: opcode %d, length %d, fin %t", op, n, fin)
			emit(op, w.malformed)
			return 0, errors.New(w.malformed)
		}
		if control {
			// A control frame may come between fragments: record it on
			// its own.
			ctl := &wsReader{r: w.r, s: w.s, url: w.url, m: w.m}
			p, err := readMasked(w.r, n, mask, masked)
			if err != nil {
				return 0, err
			}
			if op == 9 {
				w.lastPing = p
			}
			ctl.emitControl(op, p)
			if op == 8 || first {
				return op, nil
			}
			continue
		}
		if first {
			opcode = op
			first = false
		}
		// Read the payload in chunks, so a huge length costs no memory.
		var off int64
		buf := make([]byte, 32<<10)
		for off < n {
			k := min(int64(len(buf)), n-off)
			if _, err := io.ReadFull(w.r, buf[:k]); err != nil {
				if masked {
					unmask(buf[:k], mask, off)
				}
				emit(opcode, "message cut short: "+err.Error())
				return 0, err
			}
			if masked {
				unmask(buf[:k], mask, off)
			}
			add(buf[:k])
			off += k
		}
		if fin {
			emit(opcode, "")
			return opcode, nil
		}
	}
}

func (w *wsReader) emitControl(op byte, p []byte) {
	w.s.emitEvent(trace.SourceHTTP, trace.TypeWSMessage, &trace.WSMessage{URL: cutNote(w.url, maxURLInEvent), Client: w.m.client,
		DstIP: w.m.dstIP(), DstPort: w.m.dstPort(), Opcode: wsOpcodes[op], Payload: p, Size: int64(len(p))})
}

func readMasked(r io.Reader, n int64, mask [4]byte, masked bool) ([]byte, error) {
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, err
	}
	if masked {
		unmask(p, mask, 0)
	}
	return p, nil
}

func unmask(p []byte, mask [4]byte, off int64) {
	for i := range p {
		p[i] ^= mask[(off+int64(i))%4]
	}
}

// wsFrame is an unmasked server frame (control payloads are short).
func wsFrame(op byte, p []byte) []byte {
	return append([]byte{0x80 | op, byte(len(p))}, p...)
}
