package sweep

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeSkill(t *testing.T, dir, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func skillMD(name string) string {
	return "---\nname: " + name + "\ndescription: test skill " + name + "\n---\n\n# " + name + "\n\n```sh\necho " + name + "\n```\n"
}

func zipOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, n := range sortedKeys(files) {
		f, err := w.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(files[n]))
	}
	w.Close()
	return b.Bytes()
}

func tgzOf(t *testing.T, files map[string]string, links map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	w := tar.NewWriter(gz)
	for _, n := range sortedKeys(files) {
		w.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg})
		w.Write([]byte(files[n]))
	}
	for _, n := range sortedKeys(links) {
		w.WriteHeader(&tar.Header{Name: n, Linkname: links[n], Typeflag: tar.TypeSymlink})
	}
	w.Close()
	gz.Close()
	return b.Bytes()
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	// A registry mirror: publisher/skill.
	writeSkill(t, filepath.Join(root, "mirror", "alice", "weather"), skillMD("weather"))
	writeSkill(t, filepath.Join(root, "mirror", "bob", "notes"), skillMD("notes"))
	writeSkill(t, filepath.Join(root, "mirror", "bob", "broken"), "---\nname: [unclosed\n---\nbody\n")
	// One skill folder.
	writeSkill(t, filepath.Join(root, "single"), skillMD("single"))
	// Archives.
	os.WriteFile(filepath.Join(root, "pack.zip"), zipOf(t, map[string]string{"z1/SKILL.md": skillMD("z1"), "z2/SKILL.md": skillMD("z2")}), 0o644)
	os.WriteFile(filepath.Join(root, "pack.tar.gz"), tgzOf(t, map[string]string{"t1/SKILL.md": skillMD("t1")}, nil), 0o644)
	// A list naming two of the sources, relative to the list.
	os.WriteFile(filepath.Join(root, "list.txt"), []byte("# nightly\nsingle\n\npack.zip\n"), 0o644)

	cases := []struct {
		name    string
		srcs    []string
		wantIDs []string
	}{
		{"mirror", []string{"mirror"}, []string{"mirror/alice/weather", "mirror/bob/broken", "mirror/bob/notes"}},
		{"one skill", []string{"single"}, []string{"single"}},
		{"zip", []string{"pack.zip"}, []string{"pack/z1", "pack/z2"}},
		{"tar.gz", []string{"pack.tar.gz"}, []string{"pack/t1"}},
		{"list", []string{"list.txt"}, []string{"pack/z1", "pack/z2", "single"}},
		{"same name twice", []string{"single", "single"}, []string{"single", "single#2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var srcs []string
			for _, s := range tc.srcs {
				srcs = append(srcs, filepath.Join(root, s))
			}
			got, err := Discover(t.Context(), srcs, DiscoverOptions{ExtractDir: filepath.Join(t.TempDir(), "x")})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, s := range got {
				ids = append(ids, s.ID)
				if strings.Contains(s.ID, "broken") {
					if s.Refused == "" || s.SHA256 != "" {
						t.Errorf("broken skill not refused: %+v", s)
					}
				} else if len(s.SHA256) != 64 || s.Refused != "" {
					t.Errorf("%s: sha %q refused %q", s.ID, s.SHA256, s.Refused)
				}
				if _, err := os.Stat(s.Path); err != nil {
					t.Errorf("%s: path: %v", s.ID, err)
				}
				if strings.HasSuffix(s.ID, "t1") {
					if !strings.HasSuffix(s.Source, "pack.tar.gz!t1") {
						t.Errorf("source %q", s.Source)
					}
				}
			}
			if !slices.Equal(ids, tc.wantIDs) {
				t.Errorf("ids %v, want %v", ids, tc.wantIDs)
			}
		})
	}
}

func TestDiscoverErrors(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "evil.zip"), zipOf(t, map[string]string{"../../escape/SKILL.md": "x"}), 0o644)
	os.WriteFile(filepath.Join(root, "notzip.zip"), []byte("not a zip"), 0o644)
	big := strings.Repeat("a", 2048)
	os.WriteFile(filepath.Join(root, "big.tar.gz"), tgzOf(t, map[string]string{"s/SKILL.md": big}, nil), 0o644)
	cases := []struct {
		name, src, want string
		lim             ArchiveLimits
	}{
		{"missing", "nope", "no such file", ArchiveLimits{}},
		{"traversal", "evil.zip", "leaves the archive", ArchiveLimits{}},
		{"not an archive", "notzip.zip", "archive refused", ArchiveLimits{}},
		{"over the file cap", "big.tar.gz", "over 1024 bytes", ArchiveLimits{MaxFileSize: 1024}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := filepath.Join(t.TempDir(), "x")
			_, err := Discover(t.Context(), []string{filepath.Join(root, tc.src)}, DiscoverOptions{ExtractDir: x, Limits: tc.lim})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(x), "escape")); err == nil {
				t.Fatal("a member escaped the extraction folder")
			}
		})
	}
}

// FuzzExtract feeds arbitrary bytes as each archive format: extraction
// never panics and never writes outside its folder.
func FuzzExtract(f *testing.F) {
	f.Add([]byte("PK\x03\x04"), 0)
	f.Add(zipOf(&testing.T{}, map[string]string{"a/SKILL.md": "x", "../b": "y"}), 0)
	f.Add(tgzOf(&testing.T{}, map[string]string{"a/SKILL.md": "x", "/abs": "y"}, map[string]string{"l": "/"}), 1)
	formats := []string{".zip", ".tar.gz", ".tar", ".tar.xz", ".tar.zst"}
	f.Fuzz(func(t *testing.T, data []byte, format int) {
		root := t.TempDir()
		dest := filepath.Join(root, "out")
		os.MkdirAll(dest, 0o755)
		fm := formats[(format%len(formats)+len(formats))%len(formats)]
		extractFrom(t.Context(), bytes.NewReader(data), int64(len(data)), fm, dest, ArchiveLimits{MaxEntries: 50, MaxFileSize: 1 << 16, MaxTotalSize: 1 << 20})
		entries, _ := os.ReadDir(root)
		if len(entries) != 1 {
			t.Fatalf("wrote outside the folder: %v", entries)
		}
	})
}

func FuzzParseList(f *testing.F) {
	f.Add("# c\nskills/a\n/abs/b\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseList(strings.NewReader(s), "/base", "list")
		if err != nil {
			return
		}
		for _, p := range got {
			if !filepath.IsAbs(p) {
				t.Fatalf("relative path %q", p)
			}
		}
	})
}
