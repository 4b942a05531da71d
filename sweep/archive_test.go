package sweep

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExtractSpecialAndCorrupt: links and devices are refused; a corrupt
// member is an archive refusal, never a file half-written.
func TestExtractSpecialAndCorrupt(t *testing.T) {
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "SKILL.md", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	tw.Write([]byte("hi"))
	tw.WriteHeader(&tar.Header{Name: "creds", Linkname: "/root/.aws/credentials", Typeflag: tar.TypeSymlink})
	tw.WriteHeader(&tar.Header{Name: "tty", Typeflag: tar.TypeChar})
	tw.Close()

	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	w, _ := zw.Create("SKILL.md")
	w.Write(bytes.Repeat([]byte("skill text "), 200))
	zw.Close()
	corrupt := zb.Bytes()
	// Flip a byte of the compressed data: the checksum no longer holds.
	i := bytes.Index(corrupt, []byte("SKILL.md")) + len("SKILL.md") + 4
	corrupt[i] ^= 0xff

	cases := []struct {
		name, file string
		data       []byte
		err        string // "" when it unpacks
		files      []string
	}{
		{name: "links refused", file: "s.tar", data: tb.Bytes(), err: "symbolic link"},
		{name: "corrupt member", file: "c.zip", data: corrupt, err: "archive refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, c.file)
			os.WriteFile(src, c.data, 0o644)
			out, err := Extract(t.Context(), src, filepath.Join(dir, "x"), ArchiveLimits{})
			if c.err != "" {
				if !errors.Is(err, ErrArchive) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want ErrArchive with %q", err, c.err)
				}
				if ents, _ := os.ReadDir(filepath.Join(dir, "x")); len(ents) != 0 {
					t.Fatalf("a refused archive left %v", ents)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ents, _ := os.ReadDir(out)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if strings.Join(names, ",") != strings.Join(c.files, ",") {
				t.Fatalf("unpacked %v, want %v", names, c.files)
			}
		})
	}
}
