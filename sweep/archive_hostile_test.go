package sweep

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
)

// zipWithMode is a zip whose one member has mode m (a link, a FIFO).
func zipWithMode(t *testing.T, name string, m fs.FileMode) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	h := &zip.FileHeader{Name: name}
	h.SetMode(m)
	w, err := zw.CreateHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("/etc/passwd"))
	zw.Close()
	return b.Bytes()
}

// TestExtractHostile is the host side's archive suite: every hostile
// archive is refused with ErrArchive and a reason that names it, leaves
// nothing of itself on disk, writes nothing outside the extraction folder,
// and leaves an archive unpacked before it in the same folder untouched.
func TestExtractHostile(t *testing.T) {
	skill := testenv.Member{Name: "s/SKILL.md", Body: testenv.SkillMD("s")}
	deep := strings.Repeat("d/", 300) + "SKILL.md"
	many := func(n int) []testenv.Member {
		ms := []testenv.Member{skill}
		for i := range n {
			ms = append(ms, testenv.Member{Name: "s/f" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "/" + strings.Repeat("y", i/26+1), Body: "x"})
		}
		return ms
	}
	cases := []struct {
		name string
		file string // its extension is the format
		data func(t *testing.T) []byte
		lim  ArchiveLimits
		want string // in the error
	}{
		{"traversal", "a.tar.gz", func(t *testing.T) []byte {
			return testenv.TarGz(t, skill, testenv.Member{Name: "../../escape", Body: "x"})
		}, ArchiveLimits{}, "leaves the archive"},
		{"traversal through a folder", "a.tar", func(t *testing.T) []byte {
			return testenv.Tar(t, skill, testenv.Member{Name: "s/../../escape", Body: "x"})
		}, ArchiveLimits{}, "leaves the archive"},
		{"backslash traversal", "a.zip", func(t *testing.T) []byte {
			return testenv.Zip(t, skill, testenv.Member{Name: `..\..\escape`, Body: "x"})
		}, ArchiveLimits{}, "leaves the archive"},
		{"absolute path", "a.tar", func(t *testing.T) []byte {
			return testenv.Tar(t, skill, testenv.Member{Name: "/tmp/escape", Body: "x"})
		}, ArchiveLimits{}, "unsafe member name"},
		{"drive letter", "a.zip", func(t *testing.T) []byte {
			return testenv.Zip(t, skill, testenv.Member{Name: "C:/escape", Body: "x"})
		}, ArchiveLimits{}, "unsafe member name"},
		{"symbolic link", "a.tar.gz", func(t *testing.T) []byte {
			return testenv.TarGz(t, skill, testenv.Member{Name: "s/creds", Type: tar.TypeSymlink, Linkname: "/root/.aws/credentials"})
		}, ArchiveLimits{}, "is a symbolic link"},
		{"hard link", "a.tar.gz", func(t *testing.T) []byte {
			return testenv.TarGz(t, skill, testenv.Member{Name: "s/pw", Type: tar.TypeLink, Linkname: "/etc/passwd"})
		}, ArchiveLimits{}, "is a hard link"},
		{"character device", "a.tar", func(t *testing.T) []byte {
			return testenv.Tar(t, skill, testenv.Member{Name: "s/tty", Type: tar.TypeChar})
		}, ArchiveLimits{}, "is a device"},
		{"block device", "a.tar", func(t *testing.T) []byte {
			return testenv.Tar(t, skill, testenv.Member{Name: "s/sda", Type: tar.TypeBlock})
		}, ArchiveLimits{}, "is a device"},
		{"FIFO", "a.tar", func(t *testing.T) []byte {
			return testenv.Tar(t, skill, testenv.Member{Name: "s/pipe", Type: tar.TypeFifo})
		}, ArchiveLimits{}, "is a FIFO"},
		{"zip symbolic link", "a.zip", func(t *testing.T) []byte {
			return zipWithMode(t, "s/creds", fs.ModeSymlink|0o777)
		}, ArchiveLimits{}, "is a symbolic link"},
		{"zip FIFO", "a.zip", func(t *testing.T) []byte {
			return zipWithMode(t, "s/pipe", fs.ModeNamedPipe|0o644)
		}, ArchiveLimits{}, "is a FIFO"},
		{"file bomb", "a.tar.gz", func(t *testing.T) []byte {
			return testenv.TarGz(t, many(60)...)
		}, ArchiveLimits{MaxEntries: 50}, "over 50 entries"},
		{"zip file bomb, refused before a write", "a.zip", func(t *testing.T) []byte {
			return testenv.Zip(t, many(60)...)
		}, ArchiveLimits{MaxEntries: 50}, "over 50 entries"},
		{"directory bomb", "a.tar.gz", func(t *testing.T) []byte {
			return testenv.DirBomb(t, 20_000)
		}, ArchiveLimits{MaxEntries: 2000}, "over 2000 entries (files and folders)"},
		{"directory bomb by default", "a.tar.gz", func(t *testing.T) []byte {
			return testenv.DirBomb(t, 20_000)
		}, ArchiveLimits{}, "over 10000 entries"},
		{"folders implied by one deep path", "a.tar", func(t *testing.T) []byte {
			return testenv.Tar(t, skill, testenv.Member{Name: deep, Body: "x"})
		}, ArchiveLimits{MaxEntries: 100}, "over 100 entries"},
		{"byte bomb, one file", "a.tar.gz", func(t *testing.T) []byte {
			return testenv.TarGz(t, skill, testenv.Member{Name: "s/zeros", Size: 2 << 20})
		}, ArchiveLimits{MaxFileSize: 1 << 20}, "is over 1048576 bytes"},
		{"byte bomb, in all", "a.tar.gz", func(t *testing.T) []byte {
			return testenv.TarGz(t, skill, testenv.Member{Name: "s/z1", Size: 600 << 10}, testenv.Member{Name: "s/z2", Size: 600 << 10})
		}, ArchiveLimits{MaxTotalSize: 1 << 20}, "over 1048576 bytes in all"},
		{"zip byte bomb", "a.zip", func(t *testing.T) []byte {
			return testenv.Zip(t, skill, testenv.Member{Name: "s/zeros", Size: 2 << 20})
		}, ArchiveLimits{MaxFileSize: 1 << 20}, "is over 1048576 bytes"},
		{"long name", "a.tar", func(t *testing.T) []byte {
			return testenv.Tar(t, skill, testenv.Member{Name: "s/" + strings.Repeat("n", 1100), Body: "x"})
		}, ArchiveLimits{}, "is over 1024 bytes"},
		{"long element", "a.tar", func(t *testing.T) []byte {
			return testenv.Tar(t, skill, testenv.Member{Name: "s/" + strings.Repeat("n", 300) + "/x", Body: "x"})
		}, ArchiveLimits{}, "element over 255 bytes"},
		{"escape sequence in a name", "a.tar", func(t *testing.T) []byte {
			return testenv.Tar(t, skill, testenv.Member{Name: "s/\x1b[2J\x1b[31mREADME.md", Body: "x"})
		}, ArchiveLimits{}, "control character"},
		{"newline in a name", "a.zip", func(t *testing.T) []byte {
			return testenv.Zip(t, skill, testenv.Member{Name: "s/a\nb.md", Body: "x"})
		}, ArchiveLimits{}, "control character"},
		{"not UTF-8", "a.tar", func(t *testing.T) []byte {
			return testenv.Tar(t, skill, testenv.Member{Name: "s/\xff\xfe.md", Body: "x"})
		}, ArchiveLimits{}, "not UTF-8"},
		{"a file then a folder of its name", "a.tar", func(t *testing.T) []byte {
			return testenv.Tar(t, skill, testenv.Member{Name: "s/x", Body: "x"}, testenv.Member{Name: "s/x/y", Body: "y"})
		}, ArchiveLimits{}, "is a file and a folder"},
		{"a folder then a file of its name", "a.tar", func(t *testing.T) []byte {
			return testenv.Tar(t, skill, testenv.Member{Name: "s/x/", Type: tar.TypeDir}, testenv.Member{Name: "s/x", Body: "x"})
		}, ArchiveLimits{}, "is a folder and a file"},
		{"corrupt compression", "a.tar.gz", func(t *testing.T) []byte {
			b := testenv.TarGz(t, skill, testenv.Member{Name: "s/big", Body: strings.Repeat("text ", 5000)})
			return b[:len(b)/2]
		}, ArchiveLimits{}, "archive refused"},
		{"not an archive", "a.zip", func(t *testing.T) []byte {
			return []byte("PK\x03\x04 nothing of a zip")
		}, ArchiveLimits{}, "archive refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			x := filepath.Join(root, "x")
			// An archive unpacked before in the same folder: a refusal
			// must not touch it.
			good := filepath.Join(root, "good.tar.gz")
			os.WriteFile(good, testenv.TarGz(t, skill), 0o644)
			gdir, err := Extract(t.Context(), good, x, ArchiveLimits{})
			if err != nil {
				t.Fatal(err)
			}
			src := filepath.Join(root, c.file)
			os.WriteFile(src, c.data(t), 0o644)
			_, err = Extract(t.Context(), src, x, c.lim)
			if !errors.Is(err, ErrArchive) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrArchive with %q", err, c.want)
			}
			ents, _ := os.ReadDir(x)
			if len(ents) != 1 || ents[0].Name() != filepath.Base(filepath.Dir(gdir)) {
				t.Errorf("the refused archive left %v in the extraction folder", ents)
			}
			if _, err := os.Stat(filepath.Join(gdir, "s", "SKILL.md")); err != nil {
				t.Errorf("the archive unpacked before was touched: %v", err)
			}
			all, _ := os.ReadDir(root)
			if len(all) != 3 {
				t.Errorf("something was written beside the extraction folder: %v", all)
			}
		})
	}
}

// TestExtractCountsEveryEntry: an archive at the bound of entries (files
// and the folders they make) unpacks; one more is refused.
func TestExtractCountsEveryEntry(t *testing.T) {
	// s/, s/SKILL.md, s/a/, s/a/b: four entries.
	ms := []testenv.Member{{Name: "s/SKILL.md", Body: testenv.SkillMD("s")}, {Name: "s/a/b", Body: "x"}}
	for _, c := range []struct {
		name string
		max  int
		ok   bool
	}{{"at the bound", 4, true}, {"one over", 3, false}} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			src := filepath.Join(root, "a.tar")
			os.WriteFile(src, testenv.Tar(t, ms...), 0o644)
			_, err := Extract(t.Context(), src, filepath.Join(root, "x"), ArchiveLimits{MaxEntries: c.max})
			if (err == nil) != c.ok {
				t.Fatalf("err %v, want ok=%v", err, c.ok)
			}
		})
	}
}

// TestRemoveExtracted removes only a folder Extract made.
func TestRemoveExtracted(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "a.tar")
	os.WriteFile(src, testenv.Tar(t, testenv.Member{Name: "s/SKILL.md", Body: "x"}), 0o644)
	dir, err := Extract(t.Context(), src, filepath.Join(root, "x"), ArchiveLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := RemoveExtracted(root); err == nil {
		t.Fatal("removed a folder Extract did not make")
	}
	if err := RemoveExtracted(dir); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "x")); len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
}

// TestRefusedBeforeAnyWrite: an archive over a bound is refused by the
// checking pass, before the first member is written: unpacked into a
// folder that does not exist, the error is the bound, not the write.
func TestRefusedBeforeAnyWrite(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "does", "not", "exist")
	for _, c := range []struct {
		name, format string
		data         []byte
		lim          ArchiveLimits
		want         string
	}{
		{"directory bomb", ".tar.gz", testenv.DirBomb(t, 3000), ArchiveLimits{MaxEntries: 2000}, "over 2000 entries"},
		{"a link after good members", ".tar", testenv.Tar(t, testenv.Member{Name: "s/SKILL.md", Body: "x"}, testenv.Member{Name: "s/l", Type: tar.TypeSymlink, Linkname: "/"}), ArchiveLimits{}, "symbolic link"},
		{"a declared size over the bound", ".tar", testenv.Tar(t, testenv.Member{Name: "s/SKILL.md", Body: "x"}, testenv.Member{Name: "s/big", Size: 2 << 20}), ArchiveLimits{MaxFileSize: 1 << 20}, "over 1048576 bytes"},
		{"zip over its total", ".zip", testenv.Zip(t, testenv.Member{Name: "a", Size: 600 << 10}, testenv.Member{Name: "b", Size: 600 << 10}), ArchiveLimits{MaxTotalSize: 1 << 20}, "in all"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := extractFrom(t.Context(), bytes.NewReader(c.data), int64(len(c.data)), c.format, dest, c.lim)
			if !errors.Is(err, ErrArchive) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want the bound %q before any write", err, c.want)
			}
		})
	}
}
