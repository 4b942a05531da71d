//go:build linux

package netcapture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// nflogSocket is a netlink socket bound to one NFLOG group.
type nflogSocket struct{ f *os.File }

// openNFLOG binds an NFLOG group for IPv4 and IPv6, copying the first
// bytes of each packet (enough for the IP and TCP headers). It needs
// CAP_NET_ADMIN in the namespace.
func openNFLOG(group uint16) (*nflogSocket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("nflog socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("nflog bind: %w", err)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 1<<20)
	tv := unix.Timeval{Sec: 2}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	cmd := func(seq uint32, family uint8, res uint16, attrType uint16, payload []byte) error {
		msg := nlConfig(seq, family, res, attrType, payload)
		if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
			return err
		}
		return nlAck(fd, seq)
	}
	steps := []struct {
		family uint8
		res    uint16
		typ    uint16
		pl     []byte
		what   string
	}{
		{unix.AF_INET, 0, nfulaCfgCmd, []byte{nfulnlCmdPFBind}, "bind ipv4"},
		{unix.AF_INET6, 0, nfulaCfgCmd, []byte{nfulnlCmdPFBind}, "bind ipv6"},
		{unix.AF_UNSPEC, group, nfulaCfgCmd, []byte{nfulnlCmdBind}, "bind group"},
		{unix.AF_UNSPEC, group, nfulaCfgMode, []byte{0, 0, 0, 128, nfulnlCopyPkt, 0}, "copy mode"},
	}
	for i, s := range steps {
		if err := cmd(uint32(i+1), s.family, s.res, s.typ, s.pl); err != nil {
			// Binding a family is a no-op on recent kernels and may be refused.
			if s.typ == nfulaCfgCmd && s.pl[0] == nfulnlCmdPFBind {
				continue
			}
			unix.Close(fd)
			return nil, fmt.Errorf("nflog %s: %w", s.what, err)
		}
	}
	tv = unix.Timeval{}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("nflog nonblock: %w", err)
	}
	return &nflogSocket{f: os.NewFile(uintptr(fd), "nflog")}, nil
}

func (s *nflogSocket) Read(b []byte) (int, error) {
	n, err := s.f.Read(b)
	if errors.Is(err, os.ErrClosed) {
		return n, errClosedLog
	}
	if errors.Is(err, syscall.ENOBUFS) {
		return 0, nil // the kernel dropped messages: keep reading
	}
	return n, err
}

func (s *nflogSocket) Close() error { return s.f.Close() }

// nlConfig builds one NFULNL_MSG_CONFIG request with one attribute.
func nlConfig(seq uint32, family uint8, res uint16, attrType uint16, payload []byte) []byte {
	alen := 4 + len(payload)
	total := 16 + 4 + (alen+3)&^3
	b := make([]byte, total)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(total))
	ne.PutUint16(b[4:], nflogMsgConfig)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	ne.PutUint32(b[8:], seq)
	b[16] = family
	b[17] = unix.NFNETLINK_V0
	binary.BigEndian.PutUint16(b[18:], res)
	ne.PutUint16(b[20:], uint16(alen))
	ne.PutUint16(b[22:], attrType)
	copy(b[24:], payload)
	return b
}

// nlAck waits for the kernel's answer to request seq.
func nlAck(fd int, seq uint32) error {
	buf := make([]byte, 8192)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return err
		}
		b := buf[:n]
		for len(b) >= 16 {
			l := int(binary.NativeEndian.Uint32(b[0:4]))
			if l < 16 || l > len(b) {
				break
			}
			if binary.NativeEndian.Uint16(b[4:6]) == unix.NLMSG_ERROR && binary.NativeEndian.Uint32(b[8:12]) == seq {
				if l < 20 {
					return errors.New("short netlink ack")
				}
				if code := int32(binary.NativeEndian.Uint32(b[16:20])); code != 0 {
					return syscall.Errno(-code)
				}
				return nil
			}
			b = b[(l+3)&^3:]
		}
	}
}
