package netcapture

import (
	"bytes"
	"compress/zlib"
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

func TestReadPktLines(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantLines []string
		wantRest  string
		wantErr   bool
	}{
		{name: "commands then pack", in: pkt("a b refs/heads/main\x00report-status\n") + pkt("c d refs/tags/v1\n") + "0000PACK...",
			wantLines: []string{"a b refs/heads/main\x00report-status\n", "c d refs/tags/v1\n"}, wantRest: "PACK..."},
		{name: "flush only", in: "0000", wantRest: ""},
		{name: "delimiter ends the section", in: pkt("x") + "0001rest", wantLines: []string{"x"}, wantRest: "rest"},
		{name: "short", in: "00", wantErr: true},
		{name: "length past the end", in: "00ffabc", wantErr: true},
		{name: "not hex", in: "zzzz", wantErr: true},
		{name: "length 3", in: "0003", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, rest, err := readPktLines([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			var got []string
			for _, l := range lines {
				got = append(got, string(l))
			}
			if diff := cmp.Diff(tt.wantLines, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			if !tt.wantErr && string(rest) != tt.wantRest {
				t.Errorf("rest = %q, want %q", rest, tt.wantRest)
			}
		})
	}
}

func FuzzReadPktLines(f *testing.F) {
	f.Add([]byte(pkt("0000 1111 refs/heads/main\x00report-status\n") + "0000PACK"))
	f.Add([]byte("0000"))
	f.Add([]byte("0004"))
	f.Add([]byte("ffff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		lines, rest, _ := readPktLines(b)
		n := len(rest)
		for _, l := range lines {
			n += len(l) + 4
		}
		if n > len(b) {
			t.Fatalf("read %d bytes out of %d", n, len(b))
		}
	})
}

func TestWalkPackInflatesObjects(t *testing.T) {
	g := gitRepo("/acme/tool.git")
	ps := walkPack(g.pack[:len(g.pack)-20], 1<<20)
	if ps.Err != nil || ps.Objects != 3 || ps.Declared != 3 || ps.Truncated {
		t.Fatalf("walk = %+v", ps)
	}
	if !bytes.Contains(ps.Content, []byte("# tool")) || !bytes.Contains(ps.Content, []byte("Initial commit")) {
		t.Errorf("content lacks the README or the commit: %q", ps.Content)
	}
	// A cap keeps the start and says it cut.
	if ps := walkPack(g.pack, 10); !ps.Truncated || len(ps.Content) > 10 {
		t.Errorf("capped walk = %+v", ps)
	}
	// A damaged pack is read as far as it goes.
	if ps := walkPack(g.pack[:40], 1<<20); ps.Err == nil || !ps.Truncated {
		t.Errorf("damaged walk = %+v", ps)
	}
	if ps := walkPack([]byte("nope"), 100); ps.Err == nil {
		t.Errorf("no header: %+v", ps)
	}
}

func TestWalkPackBoundsABomb(t *testing.T) {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(make([]byte, 64<<20))
	zw.Close()
	pack := append([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x01"), packObjectHeader(objBlob, 64<<20)...)
	pack = append(pack, z.Bytes()...)
	ps := walkPack(pack, 1<<10)
	if !ps.Truncated || len(ps.Content) > 1<<10 || ps.Err == nil {
		t.Errorf("bomb walk: objects %d, content %d, truncated %v, err %v", ps.Objects, len(ps.Content), ps.Truncated, ps.Err)
	}
}

func FuzzWalkPack(f *testing.F) {
	g := gitRepo("/x/y.git")
	f.Add(g.pack)
	f.Add([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x05"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ps := walkPack(b, 4096)
		if len(ps.Content) > 4096 {
			t.Fatalf("content %d bytes past the cap", len(ps.Content))
		}
		if uint32(ps.Objects) > ps.Declared {
			t.Fatalf("%d objects read of %d declared", ps.Objects, ps.Declared)
		}
	})
}

func TestGitReceivePackAsksForCredentials(t *testing.T) {
	r := newResponder(testConfig(t).withDefaults(), time.Now)
	req := httptest.NewRequest("GET", "https://github.com/acme/tool.git/info/refs?service=git-receive-pack", nil)
	resp := r.respond(req, "github.com", nil)
	if resp.Status != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Basic realm="GitHub"` {
		t.Fatalf("unauthenticated discovery = %d %v", resp.Status, resp.Header)
	}
	req.SetBasicAuth("x-access-token", "ghp_secret")
	resp = r.respond(req, "github.com", nil)
	if resp.Status != 200 || resp.Header.Get("Content-Type") != "application/x-git-receive-pack-advertisement" ||
		!bytes.HasPrefix(resp.Body, []byte("001f# service=git-receive-pack\n0000")) {
		t.Fatalf("authenticated discovery = %d %v %q", resp.Status, resp.Header, resp.Body)
	}
	ev := resp.Extra[0].Data.(*trace.GitExchange)
	if ev.User != "x-access-token" || !ev.Authorized || ev.Repo != "github.com/acme/tool.git" || ev.Phase != "discovery" {
		t.Errorf("event = %+v", ev)
	}
	// Upload-pack needs no credentials.
	resp = r.respond(httptest.NewRequest("GET", "https://github.com/acme/tool.git/info/refs?service=git-upload-pack", nil), "github.com", nil)
	if resp.Status != 200 || !bytes.Contains(resp.Body, []byte("refs/heads/main")) {
		t.Errorf("upload-pack discovery = %d %q", resp.Status, resp.Body)
	}
	// A probe (a lone flush) is answered 200 with nothing to report.
	post := httptest.NewRequest("POST", "https://github.com/acme/tool.git/git-receive-pack", nil)
	post.SetBasicAuth("u", "p")
	if resp := r.respond(post, "github.com", []byte("0000")); resp.Status != 200 || len(resp.Body) != 0 {
		t.Errorf("probe = %d %q", resp.Status, resp.Body)
	}
}

// TestGitReceivePackElsewhere: a host that is not a code host advertises
// to anyone and reads a push before it asks for credentials: the push is
// on record even when git has none to give.
func TestGitReceivePackElsewhere(t *testing.T) {
	r := newResponder(testConfig(t).withDefaults(), time.Now)
	for _, host := range []string{"deploy.example-builds.io", "10.1.2.3:8443"} {
		req := httptest.NewRequest("GET", "https://"+host+"/repos/app.git/info/refs?service=git-receive-pack", nil)
		resp := r.respond(req, host, nil)
		if resp.Status != 200 || !bytes.HasPrefix(resp.Body, []byte("001f# service=git-receive-pack\n0000")) {
			t.Errorf("%s: unauthenticated discovery = %d %q", host, resp.Status, resp.Body)
		}
		cmd := pkt(zeroID + " 7b463312be7e8d249fe2cd931147c20a0b273e42 refs/heads/main\x00report-status\n")
		post := httptest.NewRequest("POST", "https://"+host+"/repos/app.git/git-receive-pack", nil)
		resp = r.respond(post, host, []byte(cmd+pktFlush))
		ev := resp.Extra[0].Data.(*trace.GitExchange)
		if resp.Status != http.StatusUnauthorized || len(ev.Refs) != 1 || ev.Authorized {
			t.Errorf("%s: unauthenticated push = %d, event %+v: want 401 with the refs on record", host, resp.Status, ev)
		}
	}
	for _, host := range []string{"github.com", "gitlab.example-corp.gitlab.com", "api.GitHub.com"} {
		if !forgeHost(host) {
			t.Errorf("%s is a code host", host)
		}
	}
	if forgeHost("github.com.evil.io") || forgeHost("notgithub.com") {
		t.Error("a look-alike is a code host")
	}
	// The rule on pushes elsewhere (SBX-EXFIL-008) knows the same hosts.
	if !slices.Equal(forgeSuffixes, rules.GitHosts) {
		t.Errorf("forge hosts %q, rules.GitHosts %q: the sink asks who pushes where the rule takes a push for use", forgeSuffixes, rules.GitHosts)
	}
}

// gitEnv is an environment for the real git that reads no config of the
// machine's and never prompts.
func gitEnv(home string) []string {
	return []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0", "GIT_AUTHOR_NAME=Dev", "GIT_AUTHOR_EMAIL=dev@example.org",
		"GIT_COMMITTER_NAME=Dev", "GIT_COMMITTER_EMAIL=dev@example.org", "LC_ALL=C"}
}

// TestRealGitPushAndClone runs the real git against the sink on loopback
// (not a code host): a push to a credential URL sends its pack, then the
// token (after the 401), and is accepted with the pushed file's content on
// record; a clone succeeds.
func TestRealGitPushAndClone(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	addr, col := startTransparent(t, testConfig(t), nil, netip.MustParseAddrPort("140.82.112.4:80"))
	home := t.TempDir()
	run := func(dir string, argv ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "git", argv...)
		cmd.Dir, cmd.Env = dir, gitEnv(home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(argv, " "), err, out)
		}
		return string(out)
	}
	repo := filepath.Join(home, "work")
	os.MkdirAll(repo, 0o755)
	run(repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("AWS_SECRET=canary-value-7f3a9c2b\n"), 0o644)
	run(repo, "add", ".")
	run(repo, "commit", "-q", "-m", "sync")
	run(repo, "push", "http://x-access-token:ghp_tok3n7f3a9c@"+addr+"/acme/backup.git", "main")

	push := col.waitFor(t, "push rpc", func(e trace.Event) bool {
		g, ok := e.Data.(*trace.GitExchange)
		return ok && g.Service == svcReceive && g.Phase == "rpc" && g.Authorized
	}).Data.(*trace.GitExchange)
	if push.User != "x-access-token" || len(push.Refs) != 1 || !strings.HasSuffix(push.Refs[0], " refs/heads/main") ||
		push.Objects != 3 || !bytes.Contains(push.Content, []byte("canary-value-7f3a9c2b")) {
		t.Errorf("push = %+v", push)
	}

	out := run(home, "clone", "http://"+addr+"/acme/tool.git", "cloned")
	readme, err := os.ReadFile(filepath.Join(home, "cloned", "README.md"))
	if err != nil || !strings.Contains(string(readme), "# tool") {
		t.Errorf("clone: %v %q\n%s", err, readme, out)
	}
}
