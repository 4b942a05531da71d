//go:build !linux

package mcptools

import (
	"context"
	"io"
)

// Evidence runs in the Linux sandbox only.
func Evidence(ctx context.Context, cfg EvidenceConfig, w io.Writer) (warn, err error) {
	return nil, errNotLinux
}

// Settle runs in the Linux sandbox only.
func Settle(w io.Writer, home string) {}
