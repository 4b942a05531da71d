package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/moby/moby/api/types/container"

	"github.com/sandboxctl/sandboxctl/orchestrator"
)

func TestParseOneLineSources(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []AptSource
	}{
		{name: "empty"},
		{
			name: "plain",
			in:   "deb http://deb.debian.org/debian bookworm main contrib\n",
			want: []AptSource{{URI: "http://deb.debian.org/debian", Suites: []string{"bookworm"}, Components: []string{"main", "contrib"}}},
		},
		{
			name: "options, comments, deb-src",
			in: "# a comment\ndeb-src http://src.example/debian bookworm main\n" +
				"deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] https://mirror.example/debian/ bookworm main # trailing\n",
			want: []AptSource{{URI: "https://mirror.example/debian/", Suites: []string{"bookworm"}, Components: []string{"main"}}},
		},
		{
			name: "unterminated options and short lines are skipped",
			in:   "deb [arch=amd64 http://x/debian bookworm main\ndeb http://y/debian\ndeb\n",
		},
		{
			name: "flat repository",
			in:   "deb file:/srv/repo ./\n",
			want: []AptSource{{URI: "file:/srv/repo", Suites: []string{"./"}, Components: []string{}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseOneLineSources([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseOneLineSources mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseDeb822Sources(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []AptSource
	}{
		{
			name: "debian.sources of this machine",
			in: "Types: deb\n# http://snapshot.debian.org/archive/debian/20250520T000000Z\nURIs: http://deb.debian.org/debian\n" +
				"Suites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n" +
				"Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\nComponents: main\n",
			want: []AptSource{
				{URI: "http://deb.debian.org/debian", Suites: []string{"bookworm", "bookworm-updates"}, Components: []string{"main"}},
				{URI: "http://deb.debian.org/debian-security", Suites: []string{"bookworm-security"}, Components: []string{"main"}},
			},
		},
		{
			name: "case, several URIs, continuation, CRLF",
			in:   "types: deb deb-src\r\nuris: http://a.example/debian\r\n http://b.example/debian\r\nsuites: bookworm\r\ncomponents: main\r\n",
			want: []AptSource{
				{URI: "http://a.example/debian", Suites: []string{"bookworm"}, Components: []string{"main"}},
				{URI: "http://b.example/debian", Suites: []string{"bookworm"}, Components: []string{"main"}},
			},
		},
		{
			name: "disabled, source-only and suite-less stanzas are skipped",
			in: "Types: deb\nURIs: http://off.example/debian\nSuites: bookworm\nEnabled: no\n\n" +
				"Types: deb-src\nURIs: http://src.example/debian\nSuites: bookworm\n\n" +
				"Types: deb\nURIs: http://nosuite.example/debian\n\n\n\n",
		},
		{
			name: "garbage",
			in:   "no colon here\n:\n  continuation without field\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseDeb822Sources([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseDeb822Sources mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPickMirror(t *testing.T) {
	src := func(uri string, suites ...string) AptSource { return AptSource{URI: uri, Suites: suites} }
	tests := []struct {
		name    string
		in      []AptSource
		want    string
		wantErr bool
	}{
		{name: "none", wantErr: true},
		{name: "security only", in: []AptSource{src("http://deb.debian.org/debian-security", "bookworm-security")}, wantErr: true},
		{name: "first serving bookworm", in: []AptSource{
			src("https://packages.cloud.example/apt", "cloud-sdk-bookworm"),
			src("http://deb.debian.org/debian/", "bookworm", "bookworm-updates"),
			src("http://other.example/debian", "bookworm"),
		}, want: "http://deb.debian.org/debian"},
		{name: "odd schemes skipped", in: []AptSource{src("cdrom:[Debian]/", "bookworm"), src("tor+http://x/debian", "bookworm"), src("ftp://y/debian", "bookworm")}, wantErr: true},
		{name: "file mirror", in: []AptSource{src("file:///srv/debian", "bookworm")}, want: "file:///srv/debian"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PickMirror(tt.in, "bookworm")
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("PickMirror = %q, %v; want %q, error %t", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestReadAptSources(t *testing.T) {
	root := t.TempDir()
	d := filepath.Join(root, "etc", "apt", "sources.list.d")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(root, "etc", "apt", name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sources.list.d/z.sources", "Types: deb\nURIs: http://z.example/debian\nSuites: bookworm\n")
	write("sources.list.d/a.list", "deb http://a.example/debian bookworm main\n")
	write("sources.list.d/google.list.disabled", "deb http://disabled.example/debian bookworm main\n")
	got, err := ReadAptSources(root) // no sources.list: skipped
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, s := range got {
		uris = append(uris, s.URI)
	}
	if diff := cmp.Diff([]string{"http://a.example/debian", "http://z.example/debian"}, uris); diff != "" {
		t.Errorf("ReadAptSources (-want +got):\n%s", diff)
	}
}

func FuzzParseSources(f *testing.F) {
	f.Add([]byte("deb [arch=amd64] http://deb.debian.org/debian bookworm main\n"))
	f.Add([]byte("Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\n\n"))
	f.Add([]byte("types: deb\nuris: a\n b\nsuites:\n bookworm\nenabled: No\n"))
	f.Add([]byte("deb [ x ] \x00 \xff\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, srcs := range [][]AptSource{ParseOneLineSources(data), ParseDeb822Sources(data)} {
			for _, s := range srcs {
				if s.URI == "" || strings.ContainsAny(s.URI, " \t\n") || len(s.Suites) == 0 {
					t.Fatalf("bad source %+v from %q", s, data)
				}
			}
			m, err := PickMirror(srcs, "bookworm")
			if err == nil && (m == "" || strings.HasPrefix(m, "-") || strings.ContainsAny(m, " \t\n")) {
				t.Fatalf("PickMirror = %q from %q", m, data)
			}
		}
	})
}

func TestContextHash(t *testing.T) {
	files := map[string][]byte{"Dockerfile.sandbox": []byte("FROM x\n"), "setup.sh": []byte("echo\n")}
	h := ContextHash(files, DefaultBase)
	if len(h) != 64 {
		t.Fatalf("hash %q", h)
	}
	if h2 := ContextHash(map[string][]byte{"setup.sh": []byte("echo\n"), "Dockerfile.sandbox": []byte("FROM x\n")}, DefaultBase); h2 != h {
		t.Error("same inputs gave another hash")
	}
	changed := map[string]map[string][]byte{
		"content":       {"Dockerfile.sandbox": []byte("FROM x\n"), "setup.sh": []byte("echo!\n")},
		"name":          {"Dockerfile.sandbox": []byte("FROM x\n"), "setup2.sh": []byte("echo\n")},
		"added":         {"Dockerfile.sandbox": []byte("FROM x\n"), "setup.sh": []byte("echo\n"), "x": nil},
		"boundary move": {"Dockerfile.sandbox": []byte("FROM x\nsetup.sh"), "": []byte("echo\n")},
	}
	for name, f := range changed {
		if ContextHash(f, DefaultBase) == h {
			t.Errorf("changed %s, same hash", name)
		}
	}
	if ContextHash(files, "debian:bookworm-slim") == h {
		t.Error("changed base, same hash")
	}
	ctx, err := BuildContext()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Dockerfile.sandbox", "setup.sh", "toolset", "install-ca", "bootstrap-base.sh"} {
		if _, ok := ctx[want]; !ok {
			t.Errorf("embedded context lacks %s", want)
		}
	}
	ref, err := ImageRef(DefaultBase)
	if err != nil || ref != ImageRepo+":"+ContextHash(ctx, DefaultBase)[:12] {
		t.Errorf("ImageRef = %q, %v", ref, err)
	}
}

func TestWriteFilesTar(t *testing.T) {
	host := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(host, []byte("ELF..."), 0o755); err != nil {
		t.Fatal(err)
	}
	mt := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	files := []orchestrator.File{
		{Path: "/home/u/.ssh", Dir: true, Mode: 0o700, UID: 1000, GID: 1000, ModTime: mt},
		{Path: "/home/u/.ssh/id_rsa", Content: []byte("KEY"), Mode: 0o600, UID: 1000, GID: 1000, ModTime: mt},
		{Path: "/usr/local/lib/agent/agentd", HostPath: host, Mode: 0o755, ModTime: mt},
		{Path: "/etc/d", Dir: true, ModTime: mt},
	}
	var buf bytes.Buffer
	if err := writeFilesTar(&buf, files); err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Name     string
		Type     byte
		Mode     int64
		UID, GID int
		MTime    time.Time
		Data     string
	}
	var got []entry
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		got = append(got, entry{h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.ModTime.UTC(), string(data)})
	}
	want := []entry{
		{"home/u/.ssh/", tar.TypeDir, 0o700, 1000, 1000, mt, ""},
		{"home/u/.ssh/id_rsa", tar.TypeReg, 0o600, 1000, 1000, mt, "KEY"},
		{"usr/local/lib/agent/agentd", tar.TypeReg, 0o755, 0, 0, mt, "ELF..."},
		{"etc/d/", tar.TypeDir, 0o755, 0, 0, mt, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("writeFilesTar (-want +got):\n%s", diff)
	}
	if err := writeFilesTar(io.Discard, []orchestrator.File{{Path: "/x", HostPath: t.TempDir()}}); err == nil {
		t.Error("a folder as HostPath was accepted")
	}
}

func TestSplitFiles(t *testing.T) {
	files := []orchestrator.File{{Path: "/home/u/.bashrc"}, {Path: "/homework"}, {Path: "/tmp"}, {Path: "/etc/passwd"}, {Path: "/var/lib/agentd/calls", Dir: true}}
	layer, later := splitFiles(files, map[string]string{"/home": "", "/tmp/": "", "/var/lib/agentd": ""})
	paths := func(fs []orchestrator.File) (out []string) {
		for _, f := range fs {
			out = append(out, f.Path)
		}
		return out
	}
	if diff := cmp.Diff([]string{"/homework", "/etc/passwd"}, paths(layer)); diff != "" {
		t.Errorf("layer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/home/u/.bashrc", "/tmp", "/var/lib/agentd/calls"}, paths(later)); diff != "" {
		t.Errorf("later (-want +got):\n%s", diff)
	}
}

func TestHostConfig(t *testing.T) {
	spec := orchestrator.Spec{
		NetworkMode:     "container:abc",
		CapDrop:         []string{"ALL"},
		CapAdd:          []string{"SYS_PTRACE"},
		NoNewPrivileges: true,
		Memory:          1 << 30,
		PIDs:            256,
		NanoCPUs:        1e9,
		Tmpfs:           map[string]string{"/tmp": "size=1m"},
		ReadOnlyRootfs:  true,
		Sysctls:         map[string]string{"net.ipv6.conf.all.disable_ipv6": "1"},
		LogConfig:       orchestrator.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "64k", "max-file": "1"}},
	}
	pids := int64(256)
	want := &container.HostConfig{
		NetworkMode:    "container:abc",
		CapDrop:        []string{"ALL"},
		CapAdd:         []string{"SYS_PTRACE"},
		SecurityOpt:    []string{"no-new-privileges:true"},
		ReadonlyRootfs: true,
		Tmpfs:          map[string]string{"/tmp": "size=1m"},
		Sysctls:        map[string]string{"net.ipv6.conf.all.disable_ipv6": "1"},
		CgroupnsMode:   container.CgroupnsModePrivate,
		IpcMode:        container.IPCModePrivate,
		RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyDisabled},
		Resources:      container.Resources{Memory: 1 << 30, MemorySwap: 1 << 30, PidsLimit: &pids, NanoCPUs: 1e9},
		LogConfig:      container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "64k", "max-file": "1"}},
	}
	if diff := cmp.Diff(want, hostConfig(spec)); diff != "" {
		t.Errorf("hostConfig (-want +got):\n%s", diff)
	}
	// Without one in the spec, the log is still bounded.
	spec.LogConfig = orchestrator.LogConfig{}
	if lc := hostConfig(spec).LogConfig; lc.Type != "json-file" || lc.Config["max-size"] == "" || lc.Config["max-file"] == "" {
		t.Errorf("default LogConfig = %+v, want a bounded json-file log", lc)
	}
	hc := hostConfig(spec)
	if len(hc.Binds) != 0 || len(hc.Mounts) != 0 || hc.Privileged || hc.PidMode != "" || hc.UsernsMode != "" {
		t.Errorf("hostConfig has binds, mounts or shared namespaces: %+v", hc)
	}
}

func TestReadJSONMessages(t *testing.T) {
	in := `{"stream":"Step 1/2 : FROM x\n"}{"status":"Downloading","progressDetail":{"current":1},"id":"a"}{"status":"Done","id":"a"}` +
		`{"errorDetail":{"message":"boom"},"error":"boom"}{"stream":"never\n"}`
	var out bytes.Buffer
	err := readJSONMessages(t.Context(), strings.NewReader(in), &out)
	if err == nil || err.Error() != "boom" {
		t.Errorf("err = %v, want boom", err)
	}
	if diff := cmp.Diff("Step 1/2 : FROM x\na: Done\n", out.String()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	if err := readJSONMessages(t.Context(), strings.NewReader(`{"stream":"x"`), io.Discard); err == nil {
		t.Error("truncated stream accepted")
	}
}

func TestVersionLess(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{{"1.41", "1.41", false}, {"1.40", "1.41", true}, {"1.9", "1.41", true}, {"1.56", "1.41", false}, {"2.0", "1.99", false}} {
		if got := versionLess(tc.a, tc.b); got != tc.want {
			t.Errorf("versionLess(%s, %s) = %t", tc.a, tc.b, got)
		}
	}
}

func TestLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := lockFile(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := lockFile(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second lock while held: %v, want deadline exceeded", err)
	}
	got := make(chan error, 1)
	go func() { // ends when the lock is taken or the test's context ends
		u, err := lockFile(t.Context(), path)
		if err == nil {
			u()
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Errorf("lock after release: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("lock not taken after release")
	}
}

func TestNewNoEngine(t *testing.T) {
	sock := "unix://" + filepath.Join(t.TempDir(), "docker.sock")
	_, err := New(t.Context(), WithHost(sock))
	if !errors.Is(err, ErrNoEngine) {
		t.Fatalf("New(%s) = %v, want ErrNoEngine", sock, err)
	}
	for _, want := range []string{"DOCKER_HOST", sock} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestBootstrapCancelKillsTree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("bootstrapBase refuses to run without root")
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		t.Skip("bootstrapBase refuses to run without debootstrap")
	}
	root, scratch, pids := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc", "apt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "apt", "sources.list"), []byte("deb http://mirror.invalid/debian bookworm main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A stand-in for debootstrap's process tree; it contacts nothing.
	pidFile := filepath.Join(pids, "child")
	script := "sleep 300 &\necho $! > " + pidFile + "\nwait\n"
	r := &Runtime{cfg: config{aptRoot: root, scratch: scratch}}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	begin := time.Now()
	var progress bytes.Buffer
	err := r.bootstrapBase(ctx, &progress, []byte(script), nil)
	if err == nil {
		t.Fatal("bootstrapBase succeeded with a script that never ends")
	}
	if d := time.Since(begin); d > 15*time.Second {
		t.Errorf("bootstrapBase returned %s after cancel", d)
	}
	if !strings.Contains(progress.String(), "from http://mirror.invalid/debian") {
		t.Errorf("progress does not name the mirror: %q", progress.String())
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if pid <= 0 || syscall.Kill(pid, 0) != nil {
			break
		}
		if stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); strings.Contains(string(stat), ") Z ") {
			break // killed, waiting for its reaper
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the script's child %d outlived the cancel", pid)
		}
	}
	if left, _ := os.ReadDir(scratch); len(left) != 0 {
		t.Errorf("scratch folder keeps %v", left)
	}
}

// TestParsePrepLists: the lists prepare.sh wrote, read back from the
// container's output; output cut short or with an unknown list is refused
// (the agent image is then built the slow way).
func TestParsePrepLists(t *testing.T) {
	m := prepMark
	tests := []struct {
		name string
		out  string
		want map[string]string // name → content; nil: refused
	}{
		{name: "both", out: m + "certifi-bundles\n/a/cacert.pem\n" + m + "writable\n/run/lock\n/var/lock\n" + m + "end\n",
			want: map[string]string{"certifi-bundles": "/a/cacert.pem\n", "writable": "/run/lock\n/var/lock\n"}},
		{name: "no setpriv", out: m + "certifi-bundles\n" + m + "end\n", want: map[string]string{"certifi-bundles": ""}},
		{name: "cut short", out: m + "certifi-bundles\n/a/cacert.pem\n" + m + "writable\n/run/lock\n"},
		{name: "unknown list", out: m + "certifi-bundles\n" + m + "passwd\nroot\n" + m + "end\n"},
		{name: "no certifi list", out: m + "writable\n/run/lock\n" + m + "end\n"},
		{name: "empty", out: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, ok := parsePrepLists([]byte(tt.out))
			if ok != (tt.want != nil) {
				t.Fatalf("parsePrepLists ok = %v, want %v", ok, tt.want != nil)
			}
			got := map[string]string{}
			for _, f := range files {
				if !strings.HasPrefix(f.name, agentDir) || f.mode != 0o600 {
					t.Errorf("file %s mode %o, want under %s, 0600", f.name, f.mode, agentDir)
				}
				got[strings.TrimPrefix(f.name, agentDir)] = string(f.data)
			}
			if ok && !maps.Equal(got, tt.want) {
				t.Errorf("lists %q, want %q", got, tt.want)
			}
		})
	}
}
