package canaryfs_test

import (
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/canaryfs"
)

func TestSmoke(t *testing.T) {
	start := time.Now()
	h, err := canaryfs.Build(canaryfs.Options{Seed: []byte("smoke"), Now: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built in %v: %s@%s %d files %d tokens", time.Since(start), h.User, h.Hostname, len(h.Files), h.Set.Len())
	if err := h.WriteDir("/tmp/cfs/root"); err != nil {
		t.Fatal(err)
	}
}
