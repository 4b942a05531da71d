package testenv

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"sync"
	"testing"
)

// A Member is one entry of a hostile test archive.
type Member struct {
	Name     string
	Type     byte // a tar type flag; 0: a regular file
	Body     string
	Size     int64 // of a file made of zeros, when Body is ""
	Linkname string
}

// SkillMD is a small valid SKILL.md named name.
func SkillMD(name string) string {
	return "---\nname: " + name + "\ndescription: test skill " + name + "\n---\n\n# " + name + "\n"
}

// TarGz packs members as a .tar.gz.
func TarGz(t testing.TB, ms ...Member) []byte {
	t.Helper()
	var b bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	b2 := tarOf(t, ms...)
	if _, err := gz.Write(b2); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func tarOf(t testing.TB, ms ...Member) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, m := range ms {
		h := &tar.Header{Name: m.Name, Typeflag: m.Type, Mode: 0o644, Linkname: m.Linkname, Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		body := []byte(m.Body)
		if h.Typeflag == tar.TypeReg {
			if m.Body == "" {
				body = make([]byte, m.Size)
			}
			h.Size = int64(len(body))
		}
		if h.Typeflag == tar.TypeDir {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("tar header %q: %v", m.Name, err)
		}
		if h.Size > 0 {
			tw.Write(body)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Tar packs members as an uncompressed .tar.
func Tar(t testing.TB, ms ...Member) []byte { return tarOf(t, ms...) }

// Zip packs regular files and folders (a name ending in "/") as a .zip.
func Zip(t testing.TB, ms ...Member) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, m := range ms {
		w, err := zw.Create(m.Name)
		if err != nil {
			t.Fatal(err)
		}
		if m.Body != "" {
			w.Write([]byte(m.Body))
		} else if m.Size > 0 {
			w.Write(make([]byte, m.Size))
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var bombs struct {
	sync.Mutex
	m map[int][]byte
}

// DirBomb is a .tar.gz holding a valid skill and n empty folders: a
// directory bomb (20,000 folders pack into about 150 KB). It is made once
// per n and process (under the race detector that takes seconds).
func DirBomb(t testing.TB, n int) []byte {
	t.Helper()
	bombs.Lock()
	defer bombs.Unlock()
	if b, ok := bombs.m[n]; ok {
		return b
	}
	ms := []Member{{Name: "bomb/SKILL.md", Body: SkillMD("bomb")}}
	for i := range n {
		ms = append(ms, Member{Name: fmt.Sprintf("bomb/d/%05d/", i), Type: tar.TypeDir})
	}
	b := TarGz(t, ms...)
	if bombs.m == nil {
		bombs.m = map[int][]byte{}
	}
	bombs.m[n] = b
	return b
}
