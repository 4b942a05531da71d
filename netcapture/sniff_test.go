package netcapture

import (
	"encoding/binary"
	"testing"
)

func TestSniffProtocol(t *testing.T) {
	pgStartup := make([]byte, 8)
	binary.BigEndian.PutUint32(pgStartup, 8)
	binary.BigEndian.PutUint32(pgStartup[4:], 196608)
	mongo := make([]byte, 16)
	binary.LittleEndian.PutUint32(mongo[12:], 2013)
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "ssh", in: "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n", want: "ssh"},
		{name: "irc", in: "NICK bot123\r\nUSER bot 0 * :bot\r\n", want: "irc"},
		{name: "irc user first", in: "USER bot 0 * :bot\r\nNICK bot\r\n", want: "irc"},
		{name: "redis resp", in: "*1\r\n$4\r\nPING\r\n", want: "redis"},
		{name: "redis inline", in: "CONFIG SET dir /root/.ssh\r\n", want: "redis"},
		{name: "http", in: "GET / HTTP/1.1\r\nHost: x\r\n\r\n", want: "http"},
		{name: "h2c", in: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", want: "http2"},
		{name: "tls", in: "\x16\x03\x01\x02\x00\x01", want: "tls"},
		{name: "smtp client", in: "EHLO box\r\n", want: "smtp"},
		{name: "bash reverse shell", in: "bash: cannot set terminal process group (1): Inappropriate ioctl for device\nbash: no job control in this shell\n", want: "shell"},
		{name: "prompt", in: "dev@devbox-7:~$ ", want: "shell"},
		{name: "id output", in: "uid=1000(dev) gid=1000(dev) groups=1000(dev)\n", want: "shell"},
		{name: "socks5", in: "\x05\x01\x00", want: "socks5"},
		{name: "postgres", in: string(pgStartup), want: "postgres"},
		{name: "mongodb", in: string(mongo), want: "mongodb"},
		{name: "mqtt", in: "\x10\x10\x00\x04MQTT\x04\x02\x00\x3c\x00\x04abcd", want: "mqtt"},
		{name: "stratum", in: `{"id":1,"method":"mining.subscribe","params":[]}` + "\n", want: "stratum"},
		{name: "xmrig login", in: `{"id":1,"jsonrpc":"2.0","method":"login","params":{"login":"4A","agent":"XMRig/6.21"}}`, want: "stratum"},
		{name: "json", in: `{"op":"hello"}`, want: "json"},
		{name: "ftp", in: "USER anonymous\r\n", want: "ftp"},
		{name: "imap", in: "a001 LOGIN dev pass\r\n", want: "imap"},
		{name: "git daemon", in: "0032git-upload-pack /project.git\x00host=x\x00", want: "git"},
		{name: "telnet", in: "\xff\xfd\x18", want: "telnet"},
		{name: "random bytes", in: "\x8a\x11\x93\x00\x7f", want: ""},
		{name: "plain text", in: "hello there\n", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sniffProtocol([]byte(tt.in)); got != tt.want {
				t.Errorf("sniffProtocol(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzSniffProtocol(f *testing.F) {
	for _, s := range []string{"SSH-2.0-x\r\n", "*1\r\n$4\r\nPING\r\n", "\x10\x0c\x00\x04MQTT", "\x05\x01", "a1 LOGIN", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = sniffProtocol(b)
	})
}
