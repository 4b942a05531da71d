package netcapture

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net"
	"net/mail"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// SMTP sink policy, as a relay that accepts everything: connections to
// 25, 587 and 2525 are greeted at once (a mail client waits for the
// server's 220), 465 after its implicit TLS; EHLO offers STARTTLS (with a
// leaf from the trace CA) and AUTH PLAIN and LOGIN; any credentials are
// accepted, every sender and recipient too, and DATA is queued. Each
// message, and each session that ends without one (a credential check),
// is a mail event with the envelope, the decoded credentials and the
// message (capped by Config.BodyCap; the size is exact), so the canary
// scan reads them. Nothing is relayed anywhere.

const (
	smtpIdle       = 30 * time.Second
	smtpMax        = 5 * time.Minute
	smtpMaxLine    = 4096
	smtpMaxErrors  = 20
	smtpMaxCmdsLog = 64
)

// smtpPorts are the ports the SMTP sink answers; true means implicit TLS.
var smtpPorts = map[int]bool{25: false, 587: false, 2525: false, 465: true}

// isSMTP reports whether a connection is for the SMTP sink: a plaintext
// submission port, or 465 once its TLS is terminated.
func isSMTP(m connMeta) bool {
	implicit, ok := smtpPorts[m.dstPort()]
	return ok && m.dst.IsValid() && implicit == m.tls
}

// smtpAction is what the connection must do after a reply.
type smtpAction int

const (
	smtpNone smtpAction = iota
	smtpStartTLS
	smtpQuit
)

type smtpPhase int

const (
	phaseCmd smtpPhase = iota
	phaseAuthPlain
	phaseAuthLoginUser
	phaseAuthLoginPass
	phaseAuthOther
	phaseData
)

// smtpState is one SMTP session as a state machine over lines, apart from
// the network so that it can be fuzzed.
type smtpState struct {
	host    string
	capN    int64
	tls     bool
	phase   smtpPhase
	errors  int
	cur     *trace.Mail
	helo    string
	auth    [3]string // mechanism, user, secret
	done    []*trace.Mail
	sent    int // messages completed
	dataBuf bytes.Buffer
	dataSum hash.Hash // of the whole message, past the cap
}

func newSMTPState(host string, capN int64, tls bool) *smtpState {
	return &smtpState{host: host, capN: capN, tls: tls}
}

// mail returns the message being built, starting one if needed.
func (s *smtpState) mail() *trace.Mail {
	if s.cur == nil {
		s.cur = &trace.Mail{TLS: s.tls, Helo: s.helo, AuthMechanism: s.auth[0], AuthUser: s.auth[1], AuthSecret: s.auth[2]}
	}
	return s.cur
}

// finish moves the current message to done.
func (s *smtpState) finish(completed bool) {
	if s.cur == nil {
		return
	}
	s.cur.Completed = completed
	s.done = append(s.done, s.cur)
	s.cur = nil
}

func (s *smtpState) logCmd(c string) {
	m := s.mail()
	if len(m.Commands) < smtpMaxCmdsLog {
		m.Commands = append(m.Commands, capString(c, 512))
	}
}

// greeting is the server's first line.
func (s *smtpState) greeting() string {
	return "220 " + s.host + " ESMTP Postfix (Debian/GNU)\r\n"
}

// line handles one line from the client (without its line ending) and
// returns the reply to send ("" for none) and what to do next.
func (s *smtpState) line(l []byte) (string, smtpAction) {
	switch s.phase {
	case phaseData:
		return s.dataLine(l)
	case phaseAuthPlain:
		s.phase = phaseCmd
		return s.authPlain(string(l))
	case phaseAuthLoginUser:
		s.auth[1] = decodeB64(string(l))
		s.phase = phaseAuthLoginPass
		return "334 UGFzc3dvcmQ6\r\n", smtpNone
	case phaseAuthLoginPass:
		s.auth[2] = decodeB64(string(l))
		s.phase = phaseCmd
		return s.authOK()
	case phaseAuthOther:
		s.auth[2] = decodeB64(string(l))
		s.phase = phaseCmd
		return s.authOK()
	}
	text := strings.TrimSpace(string(l))
	verb, arg, _ := strings.Cut(text, " ")
	verb = strings.ToUpper(verb)
	switch {
	case verb == "AUTH":
		s.logCmd("AUTH " + strings.ToUpper(strings.Fields(arg + " x")[0]))
	case s.cur != nil || verb == "EHLO" || verb == "HELO" || verb == "MAIL" || verb == "RCPT":
		s.logCmd(text)
	}
	switch verb {
	case "EHLO":
		s.helo = capString(strings.TrimSpace(arg), 256)
		s.mail().Helo = s.helo
		var b strings.Builder
		b.WriteString("250-" + s.host + "\r\n250-PIPELINING\r\n250-SIZE 52428800\r\n250-VRFY\r\n250-ETRN\r\n")
		if !s.tls {
			b.WriteString("250-STARTTLS\r\n")
		}
		b.WriteString("250-AUTH PLAIN LOGIN\r\n250-AUTH=PLAIN LOGIN\r\n250-ENHANCEDSTATUSCODES\r\n250-8BITMIME\r\n250-DSN\r\n250 SMTPUTF8\r\n")
		return b.String(), smtpNone
	case "HELO":
		s.helo = capString(strings.TrimSpace(arg), 256)
		s.mail().Helo = s.helo
		return "250 " + s.host + "\r\n", smtpNone
	case "STARTTLS":
		if s.tls {
			return "554 5.5.1 Error: TLS already active\r\n", smtpNone
		}
		return "220 2.0.0 Ready to start TLS\r\n", smtpStartTLS
	case "AUTH":
		f := strings.Fields(arg)
		if len(f) == 0 {
			return "501 5.5.4 Syntax: AUTH mechanism\r\n", smtpNone
		}
		s.auth = [3]string{strings.ToUpper(f[0]), "", ""}
		switch s.auth[0] {
		case "PLAIN":
			if len(f) > 1 {
				return s.authPlain(f[1])
			}
			s.phase = phaseAuthPlain
			return "334 \r\n", smtpNone
		case "LOGIN":
			if len(f) > 1 {
				s.auth[1] = decodeB64(f[1])
				s.phase = phaseAuthLoginPass
				return "334 UGFzc3dvcmQ6\r\n", smtpNone
			}
			s.phase = phaseAuthLoginUser
			return "334 VXNlcm5hbWU6\r\n", smtpNone
		default: // XOAUTH2, CRAM-MD5...: take whatever comes as the secret
			if len(f) > 1 {
				s.auth[2] = decodeB64(f[1])
				return s.authOK()
			}
			s.phase = phaseAuthOther
			return "334 \r\n", smtpNone
		}
	case "MAIL":
		m := s.mail()
		m.From = capString(envelopeAddr(arg, "FROM:"), 320)
		return "250 2.1.0 Ok\r\n", smtpNone
	case "RCPT":
		m := s.mail()
		if len(m.To) < 100 {
			m.To = append(m.To, capString(envelopeAddr(arg, "TO:"), 320))
		}
		return "250 2.1.5 Ok\r\n", smtpNone
	case "DATA":
		if s.cur == nil || len(s.cur.To) == 0 {
			return "554 5.5.1 Error: no valid recipients\r\n", smtpNone
		}
		s.phase = phaseData
		s.dataBuf.Reset()
		s.dataSum = sha256.New()
		return "354 End data with <CR><LF>.<CR><LF>\r\n", smtpNone
	case "RSET":
		if s.cur != nil && (s.cur.From != "" || len(s.cur.To) > 0) {
			s.finish(false)
		}
		return "250 2.0.0 Ok\r\n", smtpNone
	case "NOOP":
		return "250 2.0.0 Ok\r\n", smtpNone
	case "VRFY":
		return "252 2.0.0 " + capString(arg, 256) + "\r\n", smtpNone
	case "HELP":
		return "214 2.0.0 Help: see RFC 5321\r\n", smtpNone
	case "QUIT":
		return "221 2.0.0 Bye\r\n", smtpQuit
	}
	s.errors++
	if s.errors > smtpMaxErrors {
		return "421 4.7.0 " + s.host + " Error: too many errors\r\n", smtpQuit
	}
	return "502 5.5.2 Error: command not recognized\r\n", smtpNone
}

func (s *smtpState) authPlain(b64 string) (string, smtpAction) {
	parts := strings.SplitN(decodeB64(b64), "\x00", 3)
	switch len(parts) {
	case 3:
		s.auth[1], s.auth[2] = parts[1], parts[2]
		if s.auth[1] == "" {
			s.auth[1] = parts[0]
		}
	default:
		s.auth[2] = strings.Join(parts, "\x00")
	}
	return s.authOK()
}

func (s *smtpState) authOK() (string, smtpAction) {
	m := s.mail()
	m.AuthMechanism, m.AuthUser, m.AuthSecret = s.auth[0], capString(s.auth[1], 512), capString(s.auth[2], 4096)
	return "235 2.7.0 Authentication successful\r\n", smtpNone
}

// dataLine adds one line of the message, ending it at a lone ".".
func (s *smtpState) dataLine(l []byte) (string, smtpAction) {
	m := s.mail()
	if len(l) == 1 && l[0] == '.' {
		s.phase = phaseCmd
		m.Data = append([]byte(nil), s.dataBuf.Bytes()...)
		m.Truncated = m.Size > int64(len(m.Data))
		if s.dataSum != nil {
			m.Digest = hex.EncodeToString(s.dataSum.Sum(nil))
		}
		if msg, err := mail.ReadMessage(bytes.NewReader(m.Data)); err == nil {
			m.Subject = capString(msg.Header.Get("Subject"), 512)
		}
		s.finish(true)
		s.sent++
		return "250 2.0.0 Ok: queued as " + strings.ToUpper(randHex(5)) + "\r\n", smtpNone
	}
	if len(l) > 1 && l[0] == '.' {
		l = l[1:] // dot-stuffing
	}
	m.Size += int64(len(l)) + 2
	if s.dataSum != nil {
		s.dataSum.Write(l)
		s.dataSum.Write([]byte("\r\n"))
	}
	if room := s.capN - int64(s.dataBuf.Len()); room > 0 {
		s.dataBuf.Write(l[:min(int64(len(l)), room)])
		if int64(s.dataBuf.Len()) < s.capN {
			s.dataBuf.WriteString("\r\n")
		}
	}
	return "", smtpNone
}

// end closes the session: a message in progress, or credentials without
// a message, are recorded as not completed.
func (s *smtpState) end() {
	if s.phase == phaseData && s.cur != nil {
		s.cur.Data = append([]byte(nil), s.dataBuf.Bytes()...)
		s.cur.Truncated = true
	}
	if s.cur != nil && (s.cur.From != "" || len(s.cur.To) > 0 || len(s.cur.Data) > 0 ||
		s.sent == 0 && (s.cur.AuthSecret != "" || s.cur.AuthUser != "")) {
		s.finish(false)
	}
	s.cur = nil
}

// envelopeAddr reads the address of "FROM:<a@b> SIZE=1".
func envelopeAddr(arg, prefix string) string {
	a := strings.TrimSpace(arg)
	if len(a) >= len(prefix) && strings.EqualFold(a[:len(prefix)], prefix) {
		a = strings.TrimSpace(a[len(prefix):])
	}
	if i := strings.IndexByte(a, '>'); strings.HasPrefix(a, "<") && i > 0 {
		return a[1:i]
	}
	f := strings.Fields(a)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func decodeB64(s string) string {
	s = strings.TrimSpace(s)
	if s == "=" {
		return ""
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return string(b)
	}
	if b, err := base64.RawStdEncoding.DecodeString(s); err == nil {
		return string(b)
	}
	return s // not base64: keep what was sent
}

// smtp serves one SMTP session on c until the client quits, stays idle
// for smtpIdle, or smtpMax passes.
func (ss *session) smtp(c net.Conn, br *bufio.Reader, m connMeta) {
	s := ss.s
	host := "mail." + registered(firstNonEmpty(m.name, m.sni, m.connectHost, "mail.localdomain"))
	if !validLeafName(host) {
		host = "mail.localdomain"
	}
	st := newSMTPState(host, s.cfg.BodyCap, m.tls)
	emit := func() {
		for _, ml := range st.done {
			ml.Client, ml.DstIP, ml.DstPort, ml.Name = m.client, m.dstIP(), m.dstPort(), firstNonEmpty(m.name, m.sni, m.connectHost)
			s.emitEvent(trace.SourceTCP, trace.TypeMail, ml)
		}
		st.done = nil
	}
	defer func() {
		st.end()
		emit()
	}()
	end := time.Now().Add(smtpMax)
	var conn net.Conn = c
	r := br
	write := func(reply string) bool {
		_ = conn.SetWriteDeadline(time.Now().Add(handshakeTimeout))
		_, err := io.WriteString(conn, reply)
		return err == nil
	}
	if !write(st.greeting()) {
		return
	}
	for {
		_ = conn.SetReadDeadline(minTime(time.Now().Add(smtpIdle), end))
		l, err := readLine(r, smtpMaxLine)
		if errors.Is(err, errLineTooLong) {
			if st.phase == phaseData {
				st.dataLine(l) // keep the data; long lines are legal enough here
				continue
			}
			if !write("500 5.5.2 Error: line too long\r\n") {
				return
			}
			continue
		}
		if err != nil {
			return
		}
		reply, act := st.line(l)
		if reply != "" && !write(reply) {
			return
		}
		emit()
		switch act {
		case smtpQuit:
			return
		case smtpStartTLS:
			tc := tls.Server(&metaConn{Conn: conn, r: r}, &tls.Config{
				MinVersion: tls.VersionTLS10,
				GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
					return s.minter.leaf(host)
				},
			})
			hctx, cancel := context.WithTimeout(ss.ctx, handshakeTimeout)
			err := tc.HandshakeContext(hctx)
			cancel()
			if err != nil {
				return
			}
			conn, r = tc, bufio.NewReaderSize(tc, 4096)
			st.tls, st.helo, st.phase = true, "", phaseCmd
			if st.cur != nil {
				st.cur.TLS = true
			}
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line without its CRLF or LF. A line longer than max
// is returned in parts with errLineTooLong.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var out []byte
	for {
		frag, err := r.ReadSlice('\n')
		out = append(out, frag...)
		if err == nil {
			out = bytes.TrimSuffix(bytes.TrimSuffix(out, []byte("\n")), []byte("\r"))
			return out, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if len(out) > 0 && errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		if len(out) >= max {
			return out, errLineTooLong
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
