package skill_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/skill"
)

type fileSummary struct {
	Path     string
	Doc      bool
	Binary   bool
	BodyLine int
}

func summarize(s *skill.Skill) []fileSummary {
	var out []fileSummary
	for _, f := range s.Files {
		out = append(out, fileSummary{Path: f.Path, Doc: f.Doc, Binary: f.Binary, BodyLine: f.BodyLine})
	}
	return out
}

func TestLoadFormats(t *testing.T) {
	tests := []struct {
		name      string
		path      string
		wantName  string
		wantDesc  string
		wantTools []string
		wantFiles []fileSummary
		wantFM    map[string]any
	}{
		{
			name: "single SKILL.md", path: "testdata/single/SKILL.md",
			wantName: "weather", wantDesc: "Get the weather for a city.", wantTools: []string{"Bash", "Read"},
			wantFiles: []fileSummary{{Path: "SKILL.md", Doc: true, BodyLine: 10}},
			wantFM: map[string]any{"name": "weather", "description": "Get the weather for a city.",
				"allowed-tools": "Bash, Read", "license": "MIT", "metadata": map[string]any{"version": "1.2"}, "x-custom": "kept"},
		},
		{
			name: "folder with SKILL.md", path: "testdata/single",
			wantName: "weather", wantDesc: "Get the weather for a city.", wantTools: []string{"Bash", "Read"},
			wantFiles: []fileSummary{{Path: "SKILL.md", Doc: true, BodyLine: 10}},
			wantFM: map[string]any{"name": "weather", "description": "Get the weather for a city.",
				"allowed-tools": "Bash, Read", "license": "MIT", "metadata": map[string]any{"version": "1.2"}, "x-custom": "kept"},
		},
		{
			name: "any md without frontmatter", path: "testdata/plain.md", wantName: "plain",
			wantFiles: []fileSummary{{Path: "plain.md", Doc: true, BodyLine: 1}},
		},
		{
			name: "folder with supporting files", path: "testdata/folder",
			wantName: "setup-helper", wantDesc: "Sets up a project.", wantTools: []string{"Bash(git:*)", "Read"},
			wantFiles: []fileSummary{
				{Path: "SKILL.md", Doc: true, BodyLine: 8},
				{Path: "logo.png", Binary: true},
				{Path: "references/details.md"},
				{Path: "scripts/setup.sh"},
			},
			wantFM: map[string]any{"name": "setup-helper", "description": "Sets up a project.", "allowed-tools": []any{"Bash(git:*)", "Read"}},
		},
		{
			name: "folder of md files in name order", path: "testdata/multi", wantName: "multi",
			wantFiles: []fileSummary{{Path: "01-intro.md", Doc: true, BodyLine: 1}, {Path: "02-usage.md", Doc: true, BodyLine: 4}},
			wantFM:    map[string]any{"name": "multi"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := skill.Load(tt.path, skill.Options{})
			if err != nil {
				t.Fatalf("Load(%q): %v", tt.path, err)
			}
			if s.Name != tt.wantName || s.Description != tt.wantDesc {
				t.Errorf("name, description = %q, %q; want %q, %q", s.Name, s.Description, tt.wantName, tt.wantDesc)
			}
			if diff := cmp.Diff(tt.wantTools, s.AllowedTools); diff != "" {
				t.Errorf("AllowedTools (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantFiles, summarize(s)); diff != "" {
				t.Errorf("Files (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantFM, s.Frontmatter); diff != "" {
				t.Errorf("Frontmatter (-want +got):\n%s", diff)
			}
			if len(s.SHA256) != 64 {
				t.Errorf("SHA256 = %q", s.SHA256)
			}
			for _, f := range s.Files {
				if len(f.SHA256) != 64 || f.Size != int64(len(f.Content)) {
					t.Errorf("file %s: sha %q size %d content %d", f.Path, f.SHA256, f.Size, len(f.Content))
				}
			}
		})
	}
}

func TestLinesAndBody(t *testing.T) {
	s, err := skill.Load("testdata/single", skill.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lines := s.Lines("SKILL.md")
	if got, want := lines[14], "curl -s https://wttr.in/London"; got != want {
		t.Errorf("Lines[14] = %q, want %q", got, want)
	}
	f := s.File("SKILL.md")
	if !strings.HasPrefix(f.Body(), "# Weather\n") {
		t.Errorf("Body() = %q", f.Body())
	}
	if s.Lines("nope") != nil {
		t.Error("Lines of unknown path not nil")
	}
}

func TestDigestStable(t *testing.T) {
	a, err := skill.Load("testdata/folder", skill.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyTree(t, "testdata/folder", dir)
	b, err := skill.Load(dir, skill.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.SHA256 != b.SHA256 {
		t.Errorf("same content, different digests %s %s", a.SHA256, b.SHA256)
	}
	write(t, filepath.Join(dir, "scripts/setup.sh"), "#!/bin/bash\necho changed\n")
	c, err := skill.Load(dir, skill.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.SHA256 == a.SHA256 {
		t.Error("digest did not change with a script's content")
	}
}

func TestLoadRefusals(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) string // returns the path to load
		opts  skill.Options
		check func(t *testing.T, err error)
	}{
		{
			name:  "invalid frontmatter names the line",
			setup: func(t *testing.T) string { return "testdata/badyaml" },
			check: func(t *testing.T, err error) {
				var me *skill.ManifestError
				if !errors.As(err, &me) || me.Line != 4 || me.Path != "SKILL.md" {
					t.Errorf("err = %v (%#v), want ManifestError at SKILL.md line 4", err, me)
				}
			},
		},
		{
			name: "unclosed frontmatter",
			setup: func(t *testing.T) string {
				return write(t, filepath.Join(t.TempDir(), "x.md"), "---\nname: x\nbody\n")
			},
			check: wantAs[*skill.ManifestError],
		},
		{
			name: "name of the wrong type",
			setup: func(t *testing.T) string {
				return write(t, filepath.Join(t.TempDir(), "x.md"), "---\ndescription: d\nname:\n  - a\n---\nbody\n")
			},
			check: func(t *testing.T, err error) {
				var me *skill.ManifestError
				if !errors.As(err, &me) || me.Line != 4 {
					t.Errorf("err = %v, want ManifestError line 4", err)
				}
			},
		},
		{
			name: "frontmatter not a mapping",
			setup: func(t *testing.T) string {
				return write(t, filepath.Join(t.TempDir(), "x.md"), "---\n- a\n- b\n---\nbody\n")
			},
			check: wantAs[*skill.ManifestError],
		},
		{
			name:  "empty skill",
			setup: func(t *testing.T) string { return "testdata/empty" },
			check: wantIs(skill.ErrEmpty),
		},
		{
			name:  "folder without markdown",
			setup: func(t *testing.T) string { return "testdata/nomd" },
			check: wantIs(skill.ErrNoManifest),
		},
		{
			name: "empty folder",
			setup: func(t *testing.T) string {
				return t.TempDir()
			},
			check: wantIs(skill.ErrNoManifest),
		},
		{
			name: "binary instruction file (NUL)",
			setup: func(t *testing.T) string {
				return write(t, filepath.Join(t.TempDir(), "SKILL.md"), "# hi\x00\x01\x02")
			},
			check: func(t *testing.T, err error) {
				var be *skill.BinaryError
				if !errors.As(err, &be) || !strings.Contains(err.Error(), "NUL byte at offset 4") {
					t.Errorf("err = %v, want BinaryError NUL at 4", err)
				}
			},
		},
		{
			name: "binary instruction file (invalid UTF-8)",
			setup: func(t *testing.T) string {
				d := t.TempDir()
				write(t, filepath.Join(d, "SKILL.md"), "# ok \xff\xfe")
				return d
			},
			check: wantAs[*skill.BinaryError],
		},
		{
			name: "file over the cap names the file and cap",
			setup: func(t *testing.T) string {
				d := t.TempDir()
				write(t, filepath.Join(d, "SKILL.md"), "# ok\n")
				write(t, filepath.Join(d, "big.txt"), strings.Repeat("a", 2000))
				return d
			},
			opts: skill.Options{MaxFileSize: 1000},
			check: func(t *testing.T, err error) {
				var se *skill.SizeError
				if !errors.As(err, &se) || !strings.Contains(err.Error(), "big.txt is 2000 bytes, over the per-file cap of 1000 bytes") {
					t.Errorf("err = %v", err)
				}
			},
		},
		{
			name: "total over the cap",
			setup: func(t *testing.T) string {
				d := t.TempDir()
				write(t, filepath.Join(d, "SKILL.md"), "# ok\n")
				for _, n := range []string{"a", "b", "c"} {
					write(t, filepath.Join(d, n), strings.Repeat("a", 900))
				}
				return d
			},
			opts:  skill.Options{MaxFileSize: 1000, MaxTotalSize: 2000},
			check: wantAs[*skill.SizeError],
		},
		{
			name: "too many files",
			setup: func(t *testing.T) string {
				d := t.TempDir()
				write(t, filepath.Join(d, "SKILL.md"), "# ok\n")
				for _, n := range []string{"a", "b", "c"} {
					write(t, filepath.Join(d, n), "x")
				}
				return d
			},
			opts:  skill.Options{MaxFiles: 3},
			check: wantAs[*skill.SizeError],
		},
		{
			name: "symlink to an absolute path outside",
			setup: func(t *testing.T) string {
				d := t.TempDir()
				write(t, filepath.Join(d, "SKILL.md"), "# ok\n")
				symlink(t, "/etc/shadow", filepath.Join(d, "shadow"))
				return d
			},
			check: func(t *testing.T, err error) {
				var se *skill.SymlinkError
				if !errors.As(err, &se) || se.Path != "shadow" || se.Target != "/etc/shadow" {
					t.Errorf("err = %v, want SymlinkError shadow -> /etc/shadow", err)
				}
			},
		},
		{
			name: "relative symlink escaping the folder",
			setup: func(t *testing.T) string {
				outer := t.TempDir()
				write(t, filepath.Join(outer, "secret"), "s3cret")
				d := filepath.Join(outer, "skill")
				write(t, filepath.Join(d, "SKILL.md"), "# ok\n")
				symlink(t, "../secret", filepath.Join(d, "refs", "s"))
				return d
			},
			check: wantAs[*skill.SymlinkError],
		},
		{
			name: "symlinked folder outside (home)",
			setup: func(t *testing.T) string {
				outer := t.TempDir()
				write(t, filepath.Join(outer, "home", ".ssh", "id_rsa"), "KEY")
				d := filepath.Join(outer, "skill")
				write(t, filepath.Join(d, "SKILL.md"), "# ok\n")
				symlink(t, filepath.Join(outer, "home"), filepath.Join(d, "home"))
				return d
			},
			check: wantAs[*skill.SymlinkError],
		},
		{
			name: "dangling symlink",
			setup: func(t *testing.T) string {
				d := t.TempDir()
				write(t, filepath.Join(d, "SKILL.md"), "# ok\n")
				symlink(t, "nowhere", filepath.Join(d, "gone"))
				return d
			},
			check: wantAs[*skill.SymlinkError],
		},
		{
			name:  "missing path",
			setup: func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") },
			check: wantIs(os.ErrNotExist),
		},
		{
			name: "unreadable file",
			setup: func(t *testing.T) string {
				if os.Geteuid() == 0 {
					t.Skip("root reads everything")
				}
				d := t.TempDir()
				write(t, filepath.Join(d, "SKILL.md"), "# ok\n")
				p := write(t, filepath.Join(d, "locked.sh"), "echo")
				if err := os.Chmod(p, 0); err != nil {
					t.Fatal(err)
				}
				return d
			},
			check: wantIs(os.ErrPermission),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.setup(t)
			s, err := skill.Load(p, tt.opts)
			if err == nil {
				t.Fatalf("Load(%q) = %+v, want an error", p, s)
			}
			tt.check(t, err)
		})
	}
}

func TestSymlinkInsideFolderAllowed(t *testing.T) {
	d := t.TempDir()
	write(t, filepath.Join(d, "SKILL.md"), "# ok\nrun scripts/run.sh\n")
	write(t, filepath.Join(d, "scripts", "real.sh"), "echo real\n")
	symlink(t, "real.sh", filepath.Join(d, "scripts", "run.sh"))
	symlink(t, ".", filepath.Join(d, "loop")) // a link back to the root is not followed twice
	s, err := skill.Load(d, skill.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := s.File("scripts/run.sh")
	if f == nil || string(f.Content) != "echo real\n" {
		t.Errorf("scripts/run.sh = %+v", f)
	}
}

func TestListCorpus(t *testing.T) {
	got, err := skill.ListCorpus("testdata/corpus")
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ Path, Name, Error string }
	var rows []row
	for _, e := range got {
		r := row{Path: filepath.ToSlash(e.Path), Name: e.Name}
		if e.Err != nil {
			r.Error = "refused"
		}
		if (e.Err == nil) != (e.SHA256 != "") {
			t.Errorf("%s: sha %q with err %v", e.Path, e.SHA256, e.Err)
		}
		rows = append(rows, r)
	}
	want := []row{
		{Path: "testdata/corpus/alpha", Name: "weather"},
		{Path: "testdata/corpus/broken.md", Error: "refused"},
		{Path: "testdata/corpus/group/beta", Name: "beta"},
		{Path: "testdata/corpus/group/notes.md", Name: "notes"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("ListCorpus (-want +got):\n%s", diff)
	}
	if got, err := skill.ListCorpus("testdata/folder"); err != nil || len(got) != 1 || got[0].Name != "setup-helper" {
		t.Errorf("ListCorpus(a skill folder) = %+v, %v; want the one skill", got, err)
	}
	if _, err := skill.ListCorpus(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("ListCorpus of a missing dir: no error")
	}
}

func TestSplitTools(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{in: "Bash, Read", want: []string{"Bash", "Read"}},
		{in: "Bash(git:*) Bash(jq:*) Read", want: []string{"Bash(git:*)", "Bash(jq:*)", "Read"}},
		{in: "Bash(git add:*), Write", want: []string{"Bash(git add:*)", "Write"}},
		{in: "  ", want: nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, skill.SplitTools(tt.in)); diff != "" {
			t.Errorf("SplitTools(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func wantAs[T error](t *testing.T, err error) {
	t.Helper()
	var target T
	if !errors.As(err, &target) {
		t.Errorf("err = %v (%T), want %T", err, err, target)
	}
}

func wantIs(target error) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, target) {
			t.Errorf("err = %v, want %v", err, target)
		}
	}
}

func write(t *testing.T, p, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		write(t, filepath.Join(dst, rel), string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSkillMDPathLoadsItsFolder(t *testing.T) {
	s, err := skill.Load("testdata/folder/SKILL.md", skill.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.File("scripts/setup.sh") == nil || s.Path != "testdata/folder/SKILL.md" || filepath.Base(s.Dir) != "folder" {
		t.Errorf("Load(SKILL.md) = path %q dir %q files %+v", s.Path, s.Dir, summarize(s))
	}
	// Any other .md file is loaded alone.
	s, err = skill.Load("testdata/folder/references/details.md", skill.Options{})
	if err != nil || len(s.Files) != 1 || s.Name != "details" {
		t.Errorf("Load(details.md) = %+v, %v", s, err)
	}
}
