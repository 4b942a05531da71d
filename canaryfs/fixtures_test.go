package canaryfs_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"encoding/xml"
	"errors"
	"image/jpeg"
	"image/png"
	"io"
	"path"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/canaryfs"
)

func withFixtures(t *testing.T, seed string) (*canaryfs.Home, canaryfs.Fixtures) {
	t.Helper()
	h := build(t, seed)
	fx, err := h.AddFixtures()
	if err != nil {
		t.Fatal(err)
	}
	return h, fx
}

func TestFixturesDeterministic(t *testing.T) {
	h1, fx1 := withFixtures(t, "fx")
	h2, fx2 := withFixtures(t, "fx")
	if !equalMaps(fx1.Paths, fx2.Paths) || fx1.Email != fx2.Email {
		t.Fatalf("fixtures differ: %v %v", fx1, fx2)
	}
	if !bytes.Equal(tarBytes(t, h1), tarBytes(t, h2)) {
		t.Error("same seed, different homes after AddFixtures")
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestFixturesAddNoSecretAndKeepTheHome(t *testing.T) {
	before := build(t, "fx")
	h, fx := withFixtures(t, "fx")
	if len(h.Set.Tokens()) != len(before.Set.Tokens()) {
		t.Errorf("AddFixtures changed the canary set: %d → %d tokens", len(before.Set.Tokens()), len(h.Set.Tokens()))
	}
	for _, f := range before.Files {
		g, ok := h.File(f.Path)
		if !ok || !bytes.Equal(g.Content, f.Content) || g.Mode != f.Mode || (!f.Dir && !g.ModTime.Equal(f.ModTime)) {
			t.Errorf("%s changed or vanished", f.Path)
		}
	}
	for kind, p := range fx.Paths {
		f, ok := h.File(p)
		if !ok {
			t.Errorf("%s: %s not in the home", kind, p)
			continue
		}
		if hits := h.Set.Find(f.Content); len(hits) > 0 {
			t.Errorf("%s: %s holds a canary", kind, p)
		}
		if !strings.HasPrefix(p, h.HomeDir+"/") {
			t.Errorf("%s: %s outside the home", kind, p)
		}
	}
	if fx.Email == "" || !strings.HasSuffix(fx.Email, "@"+fx.Domain) {
		t.Errorf("email %q domain %q", fx.Email, fx.Domain)
	}
	// Parents come before children, and every parent exists.
	seen := map[string]bool{h.HomeDir: true}
	for _, f := range h.Files {
		if f.Path != h.HomeDir && !seen[path.Dir(f.Path)] {
			t.Errorf("%s listed before its parent", f.Path)
		}
		seen[f.Path] = true
	}
}

// TestFixturesValid opens each fixture the way a reader of its format
// would: every zip part that is XML parses, every relationship points at a
// part that exists and has a content type; images decode; JSON parses.
func TestFixturesValid(t *testing.T) {
	h, fx := withFixtures(t, "valid")
	content := func(kind string) []byte {
		f, ok := h.File(fx.Paths[kind])
		if !ok {
			t.Fatalf("no %s fixture", kind)
		}
		return f.Content
	}
	for _, kind := range []string{canaryfs.FixturePPTX, canaryfs.FixtureDOCX, canaryfs.FixtureXLSX} {
		t.Run(kind, func(t *testing.T) {
			parts := checkOOXML(t, content(kind))
			main := map[string]string{"pptx": "ppt/slides/slide1.xml", "docx": "word/document.xml", "xlsx": "xl/worksheets/sheet1.xml"}[kind]
			if !bytes.Contains(parts[main], []byte("<")) {
				t.Errorf("no %s", main)
			}
			want := map[string]string{"pptx": "Q3 Roadmap", "docx": "Master Services Agreement", "xlsx": "North America"}[kind]
			if !bytes.Contains(parts[main], []byte(want)) {
				t.Errorf("%s lacks %q", main, want)
			}
		})
	}
	t.Run("pdf", func(t *testing.T) {
		b := content(canaryfs.FixturePDF)
		if !bytes.HasPrefix(b, []byte("%PDF-1.")) || !bytes.Contains(b, []byte("startxref")) || !bytes.HasSuffix(b, []byte("%%EOF\n")) {
			t.Errorf("not a PDF: %.40q", b)
		}
	})
	t.Run("images", func(t *testing.T) {
		if _, err := png.Decode(bytes.NewReader(content(canaryfs.FixturePNG))); err != nil {
			t.Errorf("png: %v", err)
		}
		if _, err := jpeg.Decode(bytes.NewReader(content(canaryfs.FixtureJPG))); err != nil {
			t.Errorf("jpeg: %v", err)
		}
		checkXML(t, "svg", content(canaryfs.FixtureSVG))
	})
	t.Run("text", func(t *testing.T) {
		for _, kind := range []string{canaryfs.FixtureJSON, canaryfs.FixtureIPYNB} {
			if !json.Valid(content(kind)) {
				t.Errorf("%s: invalid JSON", kind)
			}
		}
		checkXML(t, "xml", content(canaryfs.FixtureXML))
		if lines := strings.Split(strings.TrimSpace(string(content(canaryfs.FixtureCSV))), "\n"); len(lines) < 3 || strings.Count(lines[0], ",") != strings.Count(lines[1], ",") {
			t.Errorf("csv: %q", lines)
		}
	})
	t.Run("zip", func(t *testing.T) {
		b := content(canaryfs.FixtureZIP)
		if _, err := zip.NewReader(bytes.NewReader(b), int64(len(b))); err != nil {
			t.Error(err)
		}
	})
	t.Run("media and binaries", func(t *testing.T) {
		if b := content(canaryfs.FixtureMP4); len(b) < 16 || string(b[4:12]) != "ftypisom" {
			t.Errorf("mp4: %.16q", b)
		}
		if b := content(canaryfs.FixtureWAV); len(b) < 44 || string(b[:4]) != "RIFF" || string(b[8:16]) != "WAVEfmt " ||
			int(binary.LittleEndian.Uint32(b[40:])) != len(b)-44 {
			t.Errorf("wav: %.16q, %d bytes", b, len(b))
		}
		ef, err := elf.NewFile(bytes.NewReader(content(canaryfs.FixtureELF)))
		if err != nil || ef.Type != elf.ET_EXEC || ef.Machine != elf.EM_X86_64 || len(ef.Progs) != 1 {
			t.Errorf("elf: %v %+v", err, ef)
		}
		if f, _ := h.File(fx.Paths[canaryfs.FixtureELF]); f.Mode&0o100 == 0 {
			t.Errorf("elf mode %v: not executable", f.Mode)
		}
		for _, k := range []string{canaryfs.FixtureAPK, canaryfs.FixtureJAR} {
			b := content(k)
			zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
			if err != nil || len(zr.File) < 2 {
				t.Errorf("%s: %v", k, err)
			}
		}
		zr, err := gzip.NewReader(bytes.NewReader(content(canaryfs.FixtureTGZ)))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for tr := tar.NewReader(zr); ; n++ {
			if _, err := tr.Next(); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Error(err)
				}
				break
			}
		}
		if n != 2 {
			t.Errorf("tar.gz holds %d files", n)
		}
		if b := content(canaryfs.FixturePCAP); len(b) < 24+16+42 || binary.LittleEndian.Uint32(b) != 0xa1b2c3d4 ||
			int(binary.LittleEndian.Uint32(b[32:])) != len(b)-40 {
			t.Errorf("pcap: %d bytes", len(b))
		}
	})
	t.Run("projects", func(t *testing.T) {
		for kind, files := range map[string][]string{
			canaryfs.FixtureNode:   {"package.json", "index.js", ".git/HEAD", ".git/index", ".git/refs/heads/main"},
			canaryfs.FixturePython: {"pyproject.toml", "invoice_tools/cli.py", ".git/HEAD", ".git/index"},
		} {
			for _, f := range files {
				if _, ok := h.File(fx.Paths[kind] + "/" + f); !ok {
					t.Errorf("%s: no %s", kind, f)
				}
			}
		}
		pj, _ := h.File(fx.Paths[canaryfs.FixtureNode] + "/package.json")
		if !json.Valid(pj.Content) {
			t.Error("package.json is not JSON")
		}
		for _, k := range []string{canaryfs.FixtureJS, canaryfs.FixturePY, canaryfs.FixtureGit, canaryfs.FixtureDir} {
			if fx.Paths[k] == "" {
				t.Errorf("no %s fixture", k)
			}
		}
	})
}

func checkXML(t *testing.T, name string, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
	}
}

// checkOOXML checks an Office Open XML package and returns its parts.
func checkOOXML(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		parts[f.Name], _ = io.ReadAll(rc)
		rc.Close()
		checkXML(t, f.Name, parts[f.Name])
	}
	if zr.File[0].Name != "[Content_Types].xml" {
		t.Errorf("first part %s", zr.File[0].Name)
	}
	var types struct {
		Override []struct {
			PartName string `xml:"PartName,attr"`
		}
	}
	if err := xml.Unmarshal(parts["[Content_Types].xml"], &types); err != nil {
		t.Fatal(err)
	}
	typed := map[string]bool{}
	for _, o := range types.Override {
		typed[strings.TrimPrefix(o.PartName, "/")] = true
		if parts[strings.TrimPrefix(o.PartName, "/")] == nil {
			t.Errorf("content type for missing part %s", o.PartName)
		}
	}
	for name, data := range parts {
		if !strings.HasSuffix(name, ".rels") {
			if name != "[Content_Types].xml" && !typed[name] {
				t.Errorf("part %s has no content type", name)
			}
			continue
		}
		var r struct {
			Rel []struct {
				Target string `xml:"Target,attr"`
			} `xml:"Relationship"`
		}
		if err := xml.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		// "a/_rels/b.xml.rels" describes "a/b.xml"; targets are relative to "a".
		base := path.Dir(path.Dir(name))
		for _, rel := range r.Rel {
			target := path.Clean(path.Join(base, rel.Target))
			if parts[target] == nil {
				t.Errorf("%s points at missing %s", name, target)
			}
		}
	}
	return parts
}
