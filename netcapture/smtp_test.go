package netcapture

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"net"
	"net/netip"
	"net/smtp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/trace"
)

// converse feeds lines to a state machine and returns the replies.
func converse(st *smtpState, lines ...string) []string {
	var out []string
	for _, l := range lines {
		r, _ := st.line([]byte(l))
		out = append(out, strings.TrimRight(strings.SplitN(r, "\r\n", 2)[0], " "))
	}
	return out
}

func TestSMTPStateMachine(t *testing.T) {
	tests := []struct {
		name        string
		lines       []string
		wantReplies []string
		want        []*trace.Mail
	}{
		{name: "auth plain, one message with dot-stuffing",
			lines: []string{"EHLO laptop", "AUTH PLAIN AGRldkBjb3JwLmNvbQBodW50ZXIy", "MAIL FROM:<dev@corp.com> SIZE=120", "RCPT TO:<drop@mailbox.org>",
				"DATA", "Subject: keys", "", "AKIA1234", "..hidden", ".", "QUIT"},
			wantReplies: []string{"250-mail.x.com", "235 2.7.0 Authentication successful", "250 2.1.0 Ok", "250 2.1.5 Ok",
				"354 End data with <CR><LF>.<CR><LF>", "", "", "", "", "250 2.0.0 Ok: queued as", "221 2.0.0 Bye"},
			want: []*trace.Mail{{Helo: "laptop", AuthMechanism: "PLAIN", AuthUser: "dev@corp.com", AuthSecret: "hunter2",
				From: "dev@corp.com", To: []string{"drop@mailbox.org"}, Subject: "keys",
				Data: []byte("Subject: keys\r\n\r\nAKIA1234\r\n.hidden\r\n"), Size: 36, Completed: true,
				Digest:   sha256Hex("Subject: keys\r\n\r\nAKIA1234\r\n.hidden\r\n"),
				Commands: []string{"EHLO laptop", "AUTH PLAIN", "MAIL FROM:<dev@corp.com> SIZE=120", "RCPT TO:<drop@mailbox.org>", "DATA"}}}},
		{name: "auth login in steps, then quit without a message",
			lines:       []string{"HELO box", "AUTH LOGIN", "ZGV2", "czNjcjN0", "QUIT"},
			wantReplies: []string{"250 mail.x.com", "334 VXNlcm5hbWU6", "334 UGFzc3dvcmQ6", "235 2.7.0 Authentication successful", "221 2.0.0 Bye"},
			want: []*trace.Mail{{Helo: "box", AuthMechanism: "LOGIN", AuthUser: "dev", AuthSecret: "s3cr3t",
				Commands: []string{"HELO box", "AUTH LOGIN", "QUIT"}}}},
		{name: "data without recipients is refused", lines: []string{"EHLO a", "DATA"},
			wantReplies: []string{"250-mail.x.com", "554 5.5.1 Error: no valid recipients"}},
		{name: "unknown commands", lines: []string{"FOO", "STARTTLS"},
			wantReplies: []string{"502 5.5.2 Error: command not recognized", "220 2.0.0 Ready to start TLS"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newSMTPState("mail.x.com", 1<<20, false)
			got := converse(st, tt.lines...)
			for i := range got {
				if !strings.HasPrefix(got[i], tt.wantReplies[i]) || (tt.wantReplies[i] == "" && got[i] != "") {
					t.Errorf("reply to %q = %q, want %q", tt.lines[i], got[i], tt.wantReplies[i])
				}
			}
			st.end()
			if diff := cmp.Diff(tt.want, st.done); diff != "" {
				t.Errorf("mails (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSMTPDataCap(t *testing.T) {
	st := newSMTPState("m", 10, false)
	converse(st, "EHLO a", "MAIL FROM:<a@b>", "RCPT TO:<c@d>", "DATA", strings.Repeat("x", 40), ".")
	if len(st.done) != 1 || len(st.done[0].Data) != 10 || st.done[0].Size != 42 || !st.done[0].Truncated {
		t.Fatalf("capped mail = %+v", st.done)
	}
	// The digest covers the whole message, past the cap.
	if got, want := st.done[0].Digest, sha256Hex(strings.Repeat("x", 40)+"\r\n"); got != want {
		t.Errorf("digest %s, want %s", got, want)
	}
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func FuzzSMTPState(f *testing.F) {
	f.Add([]byte("EHLO a\nAUTH PLAIN AGEAYg==\nMAIL FROM:<a@b>\nRCPT TO:<c@d>\nDATA\nhi\n.\nQUIT\n"))
	f.Add([]byte("AUTH LOGIN\nx\ny\nAUTH XOAUTH2\n=\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st := newSMTPState("m", 64, false)
		for _, l := range bytes.Split(b, []byte("\n")) {
			st.line(l)
		}
		st.end()
		for _, m := range st.done {
			if len(m.Data) > 64 || len(m.Commands) > smtpMaxCmdsLog {
				t.Fatalf("caps broken: %d data bytes, %d commands", len(m.Data), len(m.Commands))
			}
		}
	})
}

// TestSMTPSinkWithARealClient sends mail with Go's net/smtp through the
// transparent sink: STARTTLS on 587 with the trace CA trusted, AUTH PLAIN,
// and implicit TLS on 465.
func TestSMTPSinkWithARealClient(t *testing.T) {
	cfg := testConfig(t)
	for _, tc := range []struct {
		name     string
		port     uint16
		implicit bool
	}{{"starttls on 587", 587, false}, {"implicit tls on 465", 465, true}} {
		t.Run(tc.name, func(t *testing.T) {
			names := NewNames()
			v4, _ := names.Addrs("smtp.mailbox.org")
			addr, col := startTransparent(t, cfg, names, netip.AddrPortFrom(v4, tc.port))
			tlsConf := &tls.Config{RootCAs: caPool(t, cfg), ServerName: "mail.mailbox.org"}
			var c *smtp.Client
			if tc.implicit {
				conn, err := tls.Dial("tcp", addr, tlsConf)
				if err != nil {
					t.Fatal(err)
				}
				if c, err = smtp.NewClient(conn, "mail.mailbox.org"); err != nil {
					t.Fatal(err)
				}
			} else {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				if c, err = smtp.NewClient(conn, "mail.mailbox.org"); err != nil {
					t.Fatal(err)
				}
				if err := c.StartTLS(tlsConf); err != nil {
					t.Fatalf("starttls: %v", err)
				}
			}
			if err := c.Auth(smtp.PlainAuth("", "me@mailbox.org", "app-password-91c2", "mail.mailbox.org")); err != nil {
				t.Fatalf("auth: %v", err)
			}
			if err := c.Mail("me@mailbox.org"); err != nil {
				t.Fatal(err)
			}
			if err := c.Rcpt("drop@proton.me"); err != nil {
				t.Fatal(err)
			}
			w, err := c.Data()
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte("Subject: backup\r\n\r\naws_secret_access_key=wJalrXUtnFEMI/K7MDENG\r\n"))
			if err := w.Close(); err != nil {
				t.Fatalf("data: %v", err)
			}
			c.Quit()
			m := col.waitFor(t, "mail", isType(trace.TypeMail)).Data.(*trace.Mail)
			if !m.Completed || !m.TLS || m.AuthUser != "me@mailbox.org" || m.AuthSecret != "app-password-91c2" ||
				m.From != "me@mailbox.org" || strings.Join(m.To, ",") != "drop@proton.me" || m.Subject != "backup" ||
				!bytes.Contains(m.Data, []byte("wJalrXUtnFEMI/K7MDENG")) || m.Name != "smtp.mailbox.org" || m.DstPort != int(tc.port) {
				t.Errorf("mail = %+v", m)
			}
		})
	}
}
