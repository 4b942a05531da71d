package orchestrator

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/mcptools"
	"github.com/sandboxctl/sandboxctl/trace"
)

func TestIdentities(t *testing.T) {
	h := &canaryfs.Home{HomeDir: "/home/jchen", Set: canary.NewSet(
		canary.Token{ID: "aws-1", Kind: canary.AWSAccessKey, Value: "AKIAQSBXCTL7Q2X4ZT3M", Location: "~/.aws/credentials"},
		canary.Token{ID: "gh-1", Kind: canary.GitHubToken, Value: "ghp_x", Location: "env:GITHUB_TOKEN"},
		canary.Token{ID: "npm-1", Kind: canary.NPMToken, Value: "npm_x", Location: "~/.npmrc"},
	)}
	at := func(s int64) time.Time { return time.Unix(s, 0).UTC() }
	setup := "41 100 1 1700000000.5 1800000000.25 /home/jchen/.aws/credentials\n" +
		"41 101 1 1700000000 1800000000 /home/jchen/.npmrc\n" +
		"41 102 1 1700000000 1800000000 /home/jchen/.bashrc\n" +
		"garbage line\n41 x 1 1 1 /home/jchen/bad\n"
	now := at(1800000100)
	planted := plantedEvents(h, parseIdentities(setup), now)
	want := []trace.Event{
		{Time: now, Source: trace.SourceFSDiff, Type: trace.TypeInode, Data: &trace.Inode{Path: "/home/jchen/.aws/credentials",
			Phase: trace.InodePlanted, Dev: 41, Ino: 100, Nlink: 1, Atime: time.Unix(1700000000, 5e8).UTC(), Ctime: time.Unix(1800000000, 25e7).UTC()}},
		{Time: now, Source: trace.SourceFSDiff, Type: trace.TypeInode, Data: &trace.Inode{Path: "/home/jchen/.npmrc",
			Phase: trace.InodePlanted, Dev: 41, Ino: 101, Nlink: 1, Atime: at(1700000000), Ctime: at(1800000000)}},
	}
	if diff := cmp.Diff(want, planted); diff != "" {
		t.Errorf("planted (-want +got):\n%s", diff)
	}
	// At the end: credentials read and hard-linked under another name,
	// .npmrc gone.
	end := "41 100 2 1800000050 1800000040 /home/jchen/.aws/credentials\n" +
		"41 100 2 1800000050 1800000040 /home/jchen/.cache/n\n" +
		"41 102 1 1700000000 1800000000 /home/jchen/.bashrc\n"
	ends := endEvents(planted, parseIdentities(end), now)
	wantEnd := []trace.Event{
		{Time: now, Source: trace.SourceFSDiff, Type: trace.TypeInode, Data: &trace.Inode{Path: "/home/jchen/.aws/credentials",
			Phase: trace.InodeEnd, Dev: 41, Ino: 100, Nlink: 2, Atime: at(1800000050), Ctime: at(1800000040), Aliases: []string{"/home/jchen/.cache/n"}}},
		{Time: now, Source: trace.SourceFSDiff, Type: trace.TypeInode, Data: &trace.Inode{Path: "/home/jchen/.npmrc",
			Phase: trace.InodeEnd, Dev: 41, Ino: 101, Missing: true}},
	}
	if diff := cmp.Diff(wantEnd, ends); diff != "" {
		t.Errorf("end (-want +got):\n%s", diff)
	}
}

func FuzzParseIdentities(f *testing.F) {
	f.Add("41 100 1 1700000000.5 1800000000.25 /home/u/.aws/credentials\n")
	f.Add("1 2 3 4 5 /a b\nc\n9 9 9 9.99999999999 9 /x")
	f.Fuzz(func(t *testing.T, s string) {
		for _, id := range parseIdentities(s) {
			if !strings.HasPrefix(id.path, "/") || strings.Contains(id.path, "\n") {
				t.Fatalf("bad path %q", id.path)
			}
		}
	})
}

// TestSandboxSeccomp: the profile is Docker's default with the
// out-of-sight syscalls given SCMP_ACT_TRACE and nowhere else.
func TestSandboxSeccomp(t *testing.T) {
	b, err := sandboxSeccomp()
	if err != nil {
		t.Fatal(err)
	}
	if b == nil {
		t.Skip("no default profile on this platform")
	}
	var prof struct {
		DefaultAction string `json:"defaultAction"`
		Syscalls      []struct {
			Names  []string `json:"names"`
			Action string   `json:"action"`
		} `json:"syscalls"`
	}
	if err := json.Unmarshal(b, &prof); err != nil {
		t.Fatal(err)
	}
	if prof.DefaultAction != "SCMP_ACT_ERRNO" {
		t.Errorf("default action %s", prof.DefaultAction)
	}
	traced := map[string]int{}
	allowed := map[string]bool{}
	for _, sc := range prof.Syscalls {
		for _, n := range sc.Names {
			if sc.Action == "SCMP_ACT_TRACE" {
				traced[n]++
			} else if sc.Action == "SCMP_ACT_ALLOW" {
				allowed[n] = true
			}
		}
	}
	for _, n := range mcptools.DeniedSyscalls {
		host := slices.Contains(hostOnlyCalls, n)
		if host && traced[n] != 0 || !host && (traced[n] != 1 || allowed[n]) {
			t.Errorf("%s: traced %d, allowed %v", n, traced[n], allowed[n])
		}
	}
	for _, n := range []string{"read", "openat", "clone", "ptrace", "process_vm_readv"} {
		if !allowed[n] {
			t.Errorf("%s is not allowed any more", n)
		}
	}
}
