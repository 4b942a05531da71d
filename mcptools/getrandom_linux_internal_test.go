package mcptools

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestPlantDevices(t *testing.T) {
	dir := t.TempDir()
	urandom, random := filepath.Join(dir, "urandom"), filepath.Join(dir, "random")
	old := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, p := range []string{urandom, random} {
		if err := os.WriteFile(p, []byte("device"), 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := plantDevices([]byte("seed"), []string{urandom, random}, 4096, false); err != nil {
		t.Fatal(err)
	}
	want := deviceBytes([]byte("seed"), 4096)
	var inodes []uint64
	for _, p := range []string{urandom, random} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, want) {
			t.Errorf("%s does not hold the seed's bytes", p)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != 0o444 {
			t.Errorf("%s mode %v, want -r--r--r--", p, fi.Mode())
		}
		if !fi.ModTime().Equal(old) {
			t.Errorf("%s mtime %v, want the device's %v", p, fi.ModTime(), old)
		}
		inodes = append(inodes, fi.Sys().(*syscall.Stat_t).Ino)
	}
	if inodes[0] != inodes[1] {
		t.Error("the two devices are two files: the bytes are in memory twice")
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".entropy-*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	// Again (a second server in the same container): the same bytes.
	if err := plantDevices([]byte("seed"), []string{urandom, random}, 4096, false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(random); !bytes.Equal(b, want) {
		t.Error("planting twice changed the bytes")
	}
}

// TestPlantDevicesOnlyOnTmpfs: with tmpfsOnly, a folder that is not on a
// tmpfs (a host's devtmpfs /dev; here /proc, which nothing can write) is
// refused before anything is written.
func TestPlantDevicesOnlyOnTmpfs(t *testing.T) {
	fs, err := mountType("/proc/self")
	if err != nil {
		t.Fatal(err)
	}
	if fs != "proc" {
		t.Fatalf("mountType(/proc/self) = %q", fs)
	}
	err = plantDevices([]byte("seed"), []string{"/proc/sys/urandom"}, 16, true)
	if err == nil || !strings.Contains(err.Error(), "on proc, not a container's tmpfs") {
		t.Errorf("plantDevices under /proc: %v", err)
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), " /dev ") && strings.Contains(string(b), " - devtmpfs ") {
		if fs, _ := mountType("/dev"); fs != "devtmpfs" {
			t.Errorf("mountType(/dev) = %q on a host whose /dev is devtmpfs", fs)
		}
		err := plantDevices([]byte("seed"), []string{"/dev/.entropy-test-never-written"}, 16, true)
		if err == nil || !strings.Contains(err.Error(), "devtmpfs") {
			t.Errorf("plantDevices on the host's /dev: %v", err)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/plain`:          "/plain",
		`/with\040space`:  "/with space",
		`/tab\011x`:       "/tab\tx",
		`/back\134slash`:  `/back\slash`,
		`/short\04`:       `/short\04`,
		`/not\9990octal`:  `/not\9990octal`,
		`/end\`:           `/end\`,
		`\040lead\040end`: " lead end",
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}
