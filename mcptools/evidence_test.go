//go:build linux

package mcptools_test

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandboxctl/sandboxctl/mcptools"
)

// readArchive returns the archive's entries, name → content, in order.
func readArchive(t *testing.T, b []byte) (names []string, files map[string]string) {
	t.Helper()
	files = map[string]string{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names, files
		}
		if err != nil {
			t.Fatalf("read archive: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		files[hdr.Name] = string(data)
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEvidence: the archive lists the home's identities first, then what
// changed on the scanned places after the stamp, the call logs, and the
// changed files with their content; what changed before the stamp is not
// there, and a path longer than PATH_MAX is reached.
func TestEvidence(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home", "u")
	etc := filepath.Join(root, "etc")
	logs := filepath.Join(root, "calls")
	write(t, filepath.Join(home, ".aws", "credentials"), "planted")
	write(t, filepath.Join(etc, "old.conf"), "before")
	write(t, filepath.Join(home, ".bashrc"), "before")
	// ctime cannot be set: the stamp is written between the two moments.
	time.Sleep(50 * time.Millisecond)
	stamp := filepath.Join(root, "stamp")
	write(t, stamp, "")
	time.Sleep(50 * time.Millisecond)

	write(t, filepath.Join(home, ".bashrc"), "before\nalias x=y\n")
	write(t, filepath.Join(etc, "new.conf"), "new")
	write(t, filepath.Join(logs, "t001.log"), "1 execve(...)\n")
	deep := home
	for len(deep) < 5000 {
		deep = filepath.Join(deep, strings.Repeat("d", 200))
	}
	if err := mkdirAllLong(deep); err != nil {
		t.Fatalf("make a deep folder: %v", err)
	}
	if err := writeLong(filepath.Join(deep, "deep.txt"), "deep"); err != nil {
		t.Fatalf("write a deep file: %v", err)
	}
	list := filepath.Join(root, "writable")
	write(t, list, etc+"\n")
	// A cgroup v1 layout: two counters of the list and one that is not.
	cg := filepath.Join(root, "cgroup")
	write(t, filepath.Join(cg, "pids", "pids.events"), "max 3\n")
	write(t, filepath.Join(cg, "memory", "memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
	write(t, filepath.Join(cg, "memory", "memory.stat"), "cache 1\n")

	var out bytes.Buffer
	warn, err := mcptools.Evidence(t.Context(), mcptools.EvidenceConfig{LogDir: logs, Home: home, Stamp: stamp,
		Writable: list, Changed: []string{filepath.Join(root, "home"), filepath.Join(root, "absent")}, MaxFiles: 10,
		Cgroup: cg, Places: []string{root, filepath.Join(root, "absent")}}, &out)
	if err != nil || warn != nil {
		t.Fatalf("Evidence() = %v, %v", warn, err)
	}
	names, files := readArchive(t, out.Bytes())
	want := []string{mcptools.EvidenceCgroup, mcptools.EvidenceDisk, mcptools.EvidenceIdentity, mcptools.EvidenceRootfs}
	if len(names) < len(want) || !slices.Equal(names[:len(want)], want) {
		t.Fatalf("entries %q: want %q first", names, want)
	}
	if got, want := files[mcptools.EvidenceCgroup], "pids/pids.events max 3\nmemory/memory.oom_control oom_kill_disable 0 under_oom 0 oom_kill 1\n"; got != want {
		t.Errorf("cgroup counters = %q, want %q", got, want)
	}
	if disk := strings.Fields(files[mcptools.EvidenceDisk]); len(disk) != 6 || disk[5] != root || disk[1] == "0" {
		t.Errorf("disk use = %q, want one df -P line for %s", files[mcptools.EvidenceDisk], root)
	}
	if !strings.Contains(files[mcptools.EvidenceIdentity], " "+filepath.Join(home, ".aws", "credentials")+"\n") {
		t.Errorf("identities lack the planted file:\n%s", files[mcptools.EvidenceIdentity])
	}
	if got := files[mcptools.EvidenceRootfs]; !strings.Contains(got, "f 3 "+filepath.Join(etc, "new.conf")+"\n") ||
		strings.Contains(got, "old.conf") {
		t.Errorf("root scan:\n%s\nwant new.conf (3 bytes) and not old.conf", got)
	}
	if files["calls/t001.log"] != "1 execve(...)\n" {
		t.Errorf("call log = %q", files["calls/t001.log"])
	}
	rel := func(p string) string { return mcptools.EvidenceFiles + strings.TrimPrefix(p, "/") }
	if files[rel(filepath.Join(home, ".bashrc"))] != "before\nalias x=y\n" {
		t.Errorf("changed .bashrc = %q; entries %q", files[rel(filepath.Join(home, ".bashrc"))], names)
	}
	if _, ok := files[rel(filepath.Join(home, ".aws", "credentials"))]; ok {
		t.Errorf("a file unchanged since the stamp was copied out")
	}
	if files[rel(filepath.Join(deep, "deep.txt"))] != "deep" {
		t.Errorf("the file under a %d-byte path was not copied out", len(deep))
	}
	if !slices.Contains(names, rel(filepath.Join(deep, "deep.txt"))) {
		t.Errorf("no entry for the deep file")
	}
}

// TestEvidenceCaps: at most MaxFiles changed files; a missing stamp lists
// no change but still sends the identities, and says why.
func TestEvidenceCaps(t *testing.T) {
	root := t.TempDir()
	stamp := filepath.Join(root, "stamp")
	write(t, stamp, "")
	empty := filepath.Join(root, "writable")
	write(t, empty, "")
	time.Sleep(50 * time.Millisecond)
	for i := range 5 {
		write(t, filepath.Join(root, "tmp", strings.Repeat("f", i+1)), "x")
	}
	var out bytes.Buffer
	if _, err := mcptools.Evidence(t.Context(), mcptools.EvidenceConfig{Stamp: stamp, Writable: empty,
		Changed: []string{filepath.Join(root, "tmp")}, MaxFiles: 3}, &out); err != nil {
		t.Fatal(err)
	}
	names, _ := readArchive(t, out.Bytes())
	n := 0
	for _, name := range names {
		if strings.HasPrefix(name, mcptools.EvidenceFiles) {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d changed files copied out, want the cap of 3: %q", n, names)
	}

	out.Reset()
	warn, err := mcptools.Evidence(t.Context(), mcptools.EvidenceConfig{Home: root, Stamp: filepath.Join(root, "absent"),
		Changed: []string{filepath.Join(root, "tmp")}, MaxFiles: 3}, &out)
	if err != nil || warn == nil || !strings.Contains(warn.Error(), "no stamp") {
		t.Errorf("Evidence() without a stamp = %v, %v; want a warning about it", warn, err)
	}
	names, files := readArchive(t, out.Bytes())
	if len(names) != 4 || !strings.Contains(files[mcptools.EvidenceIdentity], "/tmp/fffff\n") || files[mcptools.EvidenceRootfs] != "" {
		t.Errorf("without a stamp: entries %q, identities %q", names, files[mcptools.EvidenceIdentity])
	}
}

// TestSettle: every file and folder under the home gets an access time
// between its modification time and now, not all the same; links are left
// alone; the identities are listed after.
func TestSettle(t *testing.T) {
	home := t.TempDir()
	old := time.Now().Add(-30 * 24 * time.Hour).Truncate(time.Second)
	var paths []string
	for i := range 20 {
		p := filepath.Join(home, "d", strings.Repeat("f", i+1))
		write(t, p, "x")
		os.Chtimes(p, old, old)
		paths = append(paths, p)
	}
	os.Chtimes(filepath.Join(home, "d"), old, old)
	os.Symlink("d/f", filepath.Join(home, "link"))

	var out bytes.Buffer
	mcptools.Settle(&out, home)
	seen := map[int64]bool{}
	for _, p := range append(paths, filepath.Join(home, "d")) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		at := atime(fi)
		if at.Before(old) || at.After(time.Now()) {
			t.Errorf("%s: access time %v not between its modification time %v and now", p, at, old)
		}
		if !fi.ModTime().Equal(old) {
			t.Errorf("%s: modification time changed to %v", p, fi.ModTime())
		}
		seen[at.Unix()] = true
	}
	if len(seen) < 10 {
		t.Errorf("only %d distinct access times for 21 entries", len(seen))
	}
	if fi, err := os.Lstat(filepath.Join(home, "link")); err != nil || !fi.ModTime().After(old) {
		t.Errorf("the link was given the times of what it points to: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 20 {
		t.Errorf("%d identity lines, want one per regular file (20):\n%s", len(lines), out.String())
	}
}

func atime(fi os.FileInfo) time.Time {
	st := fi.Sys().(*syscall.Stat_t)
	return time.Unix(st.Atim.Sec, st.Atim.Nsec)
}

// mkdirAllLong makes p, however long, one component at a time.
func mkdirAllLong(p string) error {
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	for _, c := range strings.Split(strings.Trim(p, "/"), "/") {
		if err := unix.Mkdirat(fd, c, 0o755); err != nil && err != unix.EEXIST {
			unix.Close(fd)
			return err
		}
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			return err
		}
		fd = next
	}
	return unix.Close(fd)
}

// writeLong writes content at p, however long, whose folder exists.
func writeLong(p, content string) error {
	dir, name := filepath.Split(p)
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	for _, c := range strings.Split(strings.Trim(dir, "/"), "/") {
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			return err
		}
		fd = next
	}
	defer unix.Close(fd)
	f, err := unix.Openat(fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer unix.Close(f)
	_, err = unix.Write(f, []byte(content))
	return err
}
