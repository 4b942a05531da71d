//go:build !linux

package netcapture

import "errors"

type nflogSocket struct{}

func openNFLOG(uint16) (*nflogSocket, error) { return nil, errors.New("nflog: linux only") }

func (s *nflogSocket) Read([]byte) (int, error) { return 0, errClosedLog }

func (s *nflogSocket) Close() error { return nil }
