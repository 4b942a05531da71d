package orchestrator

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

func TestWriteRestoreTar(t *testing.T) {
	home, err := canaryfs.Build(canaryfs.Options{User: "jdoe", Hostname: "jdoe-laptop", Seed: []byte("restore"), Now: time.Unix(1_700_000_000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	var link string
	for _, f := range home.Files {
		if f.Symlink != "" {
			link = f.Path
			break
		}
	}
	type entry struct {
		name string
		dir  bool
		mode int64
		body string
	}
	tests := []struct {
		name    string
		files   []traceplan.RestoreFile
		want    []entry // every entry, in order
		wantErr string
	}{
		{name: "none", files: nil, want: nil},
		{name: "file in a new folder of the home", files: []traceplan.RestoreFile{{Path: "/home/jdoe/.cache/x/n", Mode: 0o600, Content: []byte("3")}},
			want: []entry{{name: "home/jdoe/.cache/x/", dir: true, mode: 0o755}, {name: "home/jdoe/.cache/x/n", mode: 0o600, body: "3"}}},
		{name: "replaces a planted file", files: []traceplan.RestoreFile{{Path: "/home/jdoe/.bashrc", Content: []byte("alias x=y\n")}},
			want: []entry{{name: "home/jdoe/.bashrc", mode: 0o644, body: "alias x=y\n"}}},
		{name: "temp folders, a folder made once", files: []traceplan.RestoreFile{{Path: "/tmp/a/1", Mode: 0o755, Content: []byte("1")}, {Path: "/tmp/a/2", Content: []byte("2")}, {Path: "/dev/shm/s", Content: nil}},
			want: []entry{{name: "tmp/a/", dir: true, mode: 0o755}, {name: "tmp/a/1", mode: 0o755, body: "1"}, {name: "tmp/a/2", mode: 0o644, body: "2"}, {name: "dev/shm/s", mode: 0o644}}},
		{name: "outside the home", files: []traceplan.RestoreFile{{Path: "/etc/passwd", Content: []byte("x")}}, wantErr: "not a clean path"},
		{name: "another user's home", files: []traceplan.RestoreFile{{Path: "/home/jdoe2/x", Content: []byte("x")}}, wantErr: "not a clean path"},
		{name: "unclean", files: []traceplan.RestoreFile{{Path: "/home/jdoe/../../etc/passwd", Content: []byte("x")}}, wantErr: "not a clean path"},
		{name: "the root itself", files: []traceplan.RestoreFile{{Path: "/tmp", Content: []byte("x")}}, wantErr: "not a clean path"},
		{name: "through a planted link", files: []traceplan.RestoreFile{{Path: link + "/x", Content: []byte("x")}}, wantErr: "not a folder of the home"},
		{name: "over a planted folder", files: []traceplan.RestoreFile{{Path: "/home/jdoe/.ssh", Content: []byte("x")}}, wantErr: "folder or link"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if link == "" && strings.Contains(tc.name, "link") {
				t.Skip("this home has no symbolic link")
			}
			var buf bytes.Buffer
			err := writeRestoreTar(&buf, home, tc.files)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []entry
			tr := tar.NewReader(&buf)
			for {
				h, err := tr.Next()
				if err == io.EOF || (err != nil && buf.Len() == 0 && len(tc.files) == 0) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if h.Uid != UserUID || h.Gid != UserGID {
					t.Errorf("%s owned by %d:%d, want the user's", h.Name, h.Uid, h.Gid)
				}
				b, _ := io.ReadAll(tr)
				got = append(got, entry{name: h.Name, dir: h.Typeflag == tar.TypeDir, mode: h.Mode, body: string(b)})
			}
			if len(got) != len(tc.want) {
				t.Fatalf("entries %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("entry %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestRestoreSkipsPool: a plan with files to restore, or another time
// zone than the pool's, never takes a warm pair (the pair's home and
// system files are made before the plan is known).
func TestRestoreSkipsPool(t *testing.T) {
	p := &Pool{tmpl: traceplan.Plan{}, done: make(chan struct{})} // no pair ready: a claim would wait
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	for _, plan := range []traceplan.Plan{{Restore: []traceplan.RestoreFile{{Path: "/tmp/x"}}}, {TimeZone: "Asia/Tokyo"}} {
		st, err := p.claim(ctx, plan)
		if st != nil || err != nil {
			t.Fatalf("claim = %v, %v; want a cold trace", st, err)
		}
	}
}

// FuzzWriteRestoreTar: whatever paths a run's changed files name
// (untrusted: the skill chose them), the archive unpacked as root holds
// only entries under the home or a temp folder, never a link, and never
// a path through one of the home's links.
func FuzzWriteRestoreTar(f *testing.F) {
	home, err := canaryfs.Build(canaryfs.Options{User: "jdoe", Hostname: "jdoe-laptop", Seed: []byte("fuzz"), Now: time.Unix(1_700_000_000, 0)})
	if err != nil {
		f.Fatal(err)
	}
	links := map[string]bool{}
	for _, hf := range home.Files {
		if hf.Symlink != "" {
			links[strings.TrimPrefix(hf.Path, "/")] = true
		}
	}
	for _, s := range []string{"/home/jdoe/.cache/n", "/tmp/a/b", "/home/jdoe/../../etc/shadow", "/tmp/../etc/x", "/dev/shm/./x", "//tmp/x", "/home/jdoe/.ssh/id_rsa", "/var/tmp"} {
		f.Add(s, s+"2")
	}
	f.Fuzz(func(t *testing.T, p1, p2 string) {
		var buf bytes.Buffer
		if err := writeRestoreTar(&buf, home, []traceplan.RestoreFile{{Path: p1, Content: []byte("x")}, {Path: p2}}); err != nil {
			return
		}
		tr := tar.NewReader(&buf)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimSuffix(h.Name, "/")
			if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeDir {
				t.Fatalf("entry %q of type %c", h.Name, h.Typeflag)
			}
			if name != path.Clean(name) || strings.HasPrefix(name, "/") {
				t.Fatalf("unclean entry %q", h.Name)
			}
			ok := false
			for _, r := range []string{"home/jdoe/", "tmp/", "var/tmp/", "dev/shm/"} {
				ok = ok || strings.HasPrefix(name, r)
			}
			if !ok {
				t.Fatalf("entry %q outside the home and temp folders", h.Name)
			}
			for d := path.Dir(name); d != "."; d = path.Dir(d) {
				if links[d] {
					t.Fatalf("entry %q goes through the home's link %s", h.Name, d)
				}
			}
		}
	})
}
