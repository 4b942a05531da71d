package docker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/internal/fsutil"
)

// TestDiskSum: the binary's hash is kept in the cache folder under its key
// and read back from there; a malformed entry is computed again; with no
// cache folder nothing is kept.
func TestDiskSum(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agentd")
	if err := os.WriteFile(bin, []byte("a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	want, err := fsutil.SHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	r := &Runtime{cfg: config{cache: cache}}
	key, err := binaryKey(bin)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.diskSum(key, bin); err != nil || got != want {
		t.Fatalf("first diskSum = %q, %v; want %q", got, err, want)
	}
	entries, _ := filepath.Glob(filepath.Join(cache, "binsum", "*"))
	if len(entries) != 1 {
		t.Fatalf("cache holds %v, want one entry", entries)
	}
	// The entry is what is read: a different (well-formed) sum under the
	// key comes back as is.
	other := strings.Repeat("ab", 32)
	os.WriteFile(entries[0], []byte(other+"\n"), 0o600)
	if got, _ := r.diskSum(key, bin); got != other {
		t.Errorf("diskSum did not read the cache: %q", got)
	}
	for name, content := range map[string]string{"short": "abc", "not hex": strings.Repeat("zz", 32), "empty": ""} {
		os.WriteFile(entries[0], []byte(content), 0o600)
		if got, _ := r.diskSum(key, bin); got != want {
			t.Errorf("%s entry: diskSum = %q, want the computed %q", name, got, want)
		}
	}
	none := &Runtime{}
	if got, err := none.diskSum(key, bin); err != nil || got != want {
		t.Errorf("no cache: diskSum = %q, %v", got, err)
	}
}
