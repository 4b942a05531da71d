//go:build !linux

package netcapture

import (
	"errors"
	"net"
	"net/netip"
)

// OriginalDst needs Linux conntrack; elsewhere the destination is unknown.
func OriginalDst(c net.Conn) (netip.AddrPort, error) {
	return netip.AddrPort{}, errors.New("original destination: needs linux")
}

func udpOriginalDst(client netip.AddrPort, port uint16) (netip.AddrPort, error) {
	return netip.AddrPort{}, errors.New("udp original destination: needs linux")
}

func udpDstAvailable() error { return errors.New("needs linux") }
