//go:build linux

package netcapture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// soOriginalDst is SO_ORIGINAL_DST (linux/netfilter_ipv4.h), and
// IP6T_SO_ORIGINAL_DST has the same value at SOL_IPV6.
const soOriginalDst = 80

// OriginalDst returns the destination a REDIRECTed TCP connection was
// first sent to, read from conntrack with SO_ORIGINAL_DST (IPv4, then IPv6).
func OriginalDst(c net.Conn) (netip.AddrPort, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("original destination: %T has no socket", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("original destination: %w", err)
	}
	var dst netip.AddrPort
	var gerr error
	err = rc.Control(func(fd uintptr) {
		if m, err := unix.GetsockoptIPv6Mreq(int(fd), unix.SOL_IP, soOriginalDst); err == nil {
			// struct sockaddr_in: family, port (big endian), address.
			b := m.Multiaddr
			dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:4]))
			return
		} else {
			gerr = err
		}
		if m, err := unix.GetsockoptIPv6MTUInfo(int(fd), unix.SOL_IPV6, soOriginalDst); err == nil {
			a := m.Addr
			port := uint16(a.Port>>8 | a.Port<<8) // network order in a host-order field
			dst = netip.AddrPortFrom(netip.AddrFrom16(a.Addr), port)
			gerr = nil
		}
	})
	if err == nil {
		err = gerr
	}
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("original destination: %w", err)
	}
	return dst, nil
}

// conntrackPath is where the namespace's conntrack table is readable
// (with NET_ADMIN). UDP has no SO_ORIGINAL_DST and IP_ORIGDSTADDR reports
// the address after REDIRECT, so the UDP catch-all looks its flows up here.
const conntrackPath = "/proc/net/nf_conntrack"

// udpOriginalDst finds the original destination of a UDP flow that
// REDIRECT sent from client to the catch-all's port.
func udpOriginalDst(client netip.AddrPort, port uint16) (netip.AddrPort, error) {
	f, err := os.Open(conntrackPath)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("udp original destination: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), 1<<16)
	for sc.Scan() {
		if dst, ok := matchConntrack(sc.Text(), client, port); ok {
			return dst, nil
		}
	}
	if err := sc.Err(); err != nil {
		return netip.AddrPort{}, fmt.Errorf("udp original destination: %w", err)
	}
	return netip.AddrPort{}, errors.New("udp original destination: no conntrack entry")
}

// udpDstAvailable reports whether UDP original destinations can be read.
func udpDstAvailable() error {
	f, err := os.Open(conntrackPath)
	if err != nil {
		return err
	}
	return f.Close()
}
