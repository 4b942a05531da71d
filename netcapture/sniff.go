package netcapture

import (
	"bytes"
	"encoding/binary"
	"strings"
)

// sniffProtocol names the protocol a client spoke from the first bytes it
// sent on a raw flow ("" when nothing fits). It looks at a few hundred
// bytes at most and never fails: the bytes are the skill's.
func sniffProtocol(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > 512 {
		b = b[:512]
	}
	up := bytes.ToUpper(b)
	hasPrefix := func(p string) bool { return bytes.HasPrefix(b, []byte(p)) }
	upPrefix := func(ps ...string) bool {
		for _, p := range ps {
			if bytes.HasPrefix(up, []byte(p)) {
				return true
			}
		}
		return false
	}
	switch {
	case len(b) >= 3 && b[0] == recordHandshake && b[1] == 3:
		return "tls"
	case hasPrefix("SSH-"):
		return "ssh"
	case hasPrefix("PRI * HTTP/2.0"):
		return "http2"
	case startsHTTP(b):
		return "http"
	case hasPrefix("\x13BitTorrent protocol"):
		return "bittorrent"
	case b[0] == 0xff && len(b) >= 2 && b[1] >= 0xfb && b[1] <= 0xfe:
		return "telnet"
	case b[0] == 0x05 && len(b) >= 3 && int(b[1]) >= 1 && int(b[1]) <= len(b)-2:
		return "socks5"
	case b[0] == 0x04 && len(b) >= 8 && (b[1] == 1 || b[1] == 2):
		return "socks4"
	case b[0] == 0x10 && len(b) >= 10 && (bytes.Contains(b[2:min(len(b), 14)], []byte("MQTT")) || bytes.Contains(b[2:min(len(b), 14)], []byte("MQIsdp"))):
		return "mqtt"
	case len(b) >= 8 && binary.BigEndian.Uint32(b[4:8]) == 196608 || len(b) >= 8 && binary.BigEndian.Uint32(b[4:8]) == 80877103:
		return "postgres"
	case len(b) >= 16 && (binary.LittleEndian.Uint32(b[12:16]) == 2013 || binary.LittleEndian.Uint32(b[12:16]) == 2004):
		return "mongodb"
	case b[0] == 0x03 && len(b) >= 4 && b[1] == 0 && int(binary.BigEndian.Uint16(b[2:4])) >= 7:
		return "rdp"
	case len(b) >= 8 && (bytes.Equal(b[4:8], []byte("\xffSMB")) || bytes.Equal(b[4:8], []byte("\xfeSMB"))):
		return "smb"
	case len(b) >= 8 && isHex4(b[:4]) && bytes.HasPrefix(b[4:], []byte("git-")):
		return "git"
	case b[0] == '*' && len(b) >= 4 && bytes.Contains(b[:min(len(b), 16)], []byte("\r\n$")):
		return "redis"
	case upPrefix("EHLO ", "HELO ", "EHLO\r", "HELO\r"):
		return "smtp"
	case upPrefix("NICK ", "CAP LS") || upPrefix("PASS ") && bytes.Contains(up, []byte("\nNICK ")) ||
		upPrefix("USER ") && bytes.Contains(up, []byte("NICK ")):
		return "irc"
	case upPrefix("PING\r\n", "PING\n", "INFO\r\n", "INFO\n", "AUTH ", "CONFIG ", "SLAVEOF ", "REPLICAOF ", "FLUSHALL", "MODULE ", "HELLO 2", "HELLO 3"):
		return "redis"
	case upPrefix("STATS\r\n", "VERSION\r\n"):
		return "memcached"
	case upPrefix("USER ", "FEAT\r\n", "SYST\r\n") && !bytes.Contains(up, []byte("NICK")):
		return "ftp"
	case isIMAP(up):
		return "imap"
	case b[0] == '{' && (bytes.Contains(b, []byte(`"mining.`)) || bytes.Contains(b, []byte(`"login"`)) && bytes.Contains(b, []byte(`"agent"`))):
		return "stratum"
	case b[0] == '{' || b[0] == '[':
		return "json"
	case looksLikeShell(b):
		return "shell"
	}
	return ""
}

func startsHTTP(b []byte) bool {
	for _, m := range httpMethods {
		if bytes.HasPrefix(b, []byte(m)) {
			return true
		}
	}
	return false
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// isIMAP reports "a001 LOGIN ..." and "A1 CAPABILITY".
func isIMAP(up []byte) bool {
	tag, rest, ok := bytes.Cut(up, []byte(" "))
	if !ok || len(tag) == 0 || len(tag) > 12 {
		return false
	}
	for _, c := range []string{"LOGIN ", "CAPABILITY", "AUTHENTICATE ", "STARTTLS", "SELECT ", "LIST "} {
		if bytes.HasPrefix(rest, []byte(c)) {
			return true
		}
	}
	return false
}

// shellTells are what an interactive shell sends first on a reverse shell:
// its job-control warnings, a prompt, or the output of id/whoami/uname.
var shellTells = []string{
	"cannot set terminal process group", "no job control in this shell", "sh-", "bash-", "uid=", "root@",
	"microsoft windows [version", "ps c:\\", "/bin/sh:", "/bin/bash:", "linux ",
}

func looksLikeShell(b []byte) bool {
	low := strings.ToLower(string(b[:min(len(b), 256)]))
	for _, t := range shellTells {
		if strings.Contains(low, t) {
			return true
		}
	}
	trimmed := strings.TrimRight(low, " ")
	if strings.HasSuffix(trimmed, "$") || strings.HasSuffix(trimmed, "#") || strings.HasSuffix(trimmed, ">") {
		// A prompt: "user@host:~$ ", "$ ", "# ".
		last := trimmed[strings.LastIndexByte(trimmed, '\n')+1:]
		return len(last) <= 64 && (strings.Contains(last, "@") || strings.Contains(last, ":") || len(last) <= 2)
	}
	return false
}
