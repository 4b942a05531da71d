package trace_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sandboxctl/sandboxctl/trace"
)

func TestCutPath(t *testing.T) {
	deep := "/tmp" + strings.Repeat("/d", 20000) + "/secret.txt"
	tests := []struct {
		name string
		in   string
		max  int
		same bool
	}{
		{name: "short path kept", in: "/home/u/.aws/credentials", max: trace.MaxPath, same: true},
		{name: "exactly the cap", in: strings.Repeat("a", 64), max: 64, same: true},
		{name: "deep path cut", in: deep, max: trace.MaxPath},
		{name: "multibyte", in: "/" + strings.Repeat("é", 5000), max: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := trace.CutPath(tt.in, tt.max)
			if tt.same {
				if got != tt.in {
					t.Errorf("CutPath changed %q to %q", tt.in, got)
				}
				return
			}
			if len(got) > tt.max || !utf8.ValidString(got) || !strings.Contains(got, "bytes]") {
				t.Errorf("CutPath = %q (%d bytes), want at most %d valid bytes with a note", got, len(got), tt.max)
			}
			if !strings.HasPrefix(got, tt.in[:4]) || !strings.HasSuffix(tt.in, got[len(got)-4:]) {
				t.Errorf("CutPath = %q, want the head and tail of the path kept", got)
			}
		})
	}
	if got := trace.CutPath(deep, trace.MaxPath); !strings.HasSuffix(got, "/secret.txt") {
		t.Errorf("the file name of a deep path was lost: ...%q", got[len(got)-20:])
	}
}

func TestCapPathsAndSize(t *testing.T) {
	deep := "/tmp" + strings.Repeat("/d", 5000)
	e := trace.Event{Type: trace.TypeRename, Data: &trace.File{Path: deep, NewPath: deep + "/x"}}
	before := trace.Size(e)
	if n := trace.CapPaths(&e, trace.MaxPath); n != len(deep)+2 {
		t.Fatalf("CapPaths = %d, want the longest path's length %d", n, len(deep)+2)
	}
	f := e.Data.(*trace.File)
	if len(f.Path) > trace.MaxPath || len(f.NewPath) > trace.MaxPath {
		t.Errorf("paths of %d and %d bytes after CapPaths", len(f.Path), len(f.NewPath))
	}
	if after := trace.Size(e); after >= before || after > 2*trace.MaxPath+512 {
		t.Errorf("Size %d before, %d after the cut", before, after)
	}
	short := trace.Event{Type: trace.TypeExec, Data: &trace.Exec{Path: "/bin/ls", Argv: []string{"ls", "-la"}}}
	if trace.CapPaths(&short, trace.MaxPath) != 0 {
		t.Error("CapPaths cut a short exec")
	}
	if n := trace.Size(short); n < int64(len("/bin/ls")+len("ls-la")) {
		t.Errorf("Size of an exec = %d", n)
	}
}
