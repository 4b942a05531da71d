package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/orchestrator/docker"
)

// hardened is the sandbox shape the orchestrator uses, minus the jail.
func hardened(t *testing.T, image, trace string) orchestrator.Spec {
	return orchestrator.Spec{
		Name:            trace,
		Role:            orchestrator.RoleSandbox,
		Image:           image,
		Labels:          map[string]string{orchestrator.LabelTrace: trace},
		Cmd:             []string{"sleep", "infinity"},
		User:            "0:0",
		Hostname:        "devbox",
		NetworkMode:     "none",
		CapDrop:         []string{"ALL"},
		CapAdd:          []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETUID", "SETGID", "SYS_PTRACE"},
		NoNewPrivileges: true,
		Memory:          256 << 20,
		PIDs:            128,
		NanoCPUs:        1_000_000_000,
	}
}

// start creates and starts spec, and removes it when the test ends.
func start(t *testing.T, rt *docker.Runtime, spec orchestrator.Spec) orchestrator.Sandbox {
	t.Helper()
	sb, err := rt.Create(t.Context(), spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sb.Remove(ctx); err != nil {
			t.Errorf("Remove: %v", err)
		}
	})
	if err := sb.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return sb
}

// run execs argv and returns its stdout, stderr and exit code.
func run(t *testing.T, sb orchestrator.Sandbox, user string, argv ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code, err := sb.Exec(t.Context(), orchestrator.ExecSpec{Argv: argv, User: user, Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatalf("Exec %q: %v", argv, err)
	}
	return out.String(), errb.String(), code
}

func TestExecAsUser(t *testing.T) {
	image := testenv.Image(t)
	rt := testenv.RequireDocker(t)
	t.Logf("engine API %s", rt.APIVersion())
	trace := testenv.TraceID(t)
	testenv.CleanupLabel(t, trace)
	sb := start(t, rt, hardened(t, image, trace))

	out, stderr, code := run(t, sb, "1000:1000", "id", "-un")
	if code != 0 || strings.TrimSpace(out) != "mwalker" {
		t.Errorf("id -un as 1000 = %q (stderr %q, exit %d), want mwalker", out, stderr, code)
	}
	_, _, code = run(t, sb, "", "sh", "-c", "exit 7")
	if code != 7 {
		t.Errorf("exit code = %d, want 7", code)
	}
	_, stderr, _ = run(t, sb, "", "sh", "-c", "echo oops >&2")
	if stderr != "oops\n" {
		t.Errorf("stderr = %q, want %q", stderr, "oops\n")
	}
}

func TestHardenedSandbox(t *testing.T) {
	image := testenv.Image(t)
	rt := testenv.RequireDocker(t)
	trace := testenv.TraceID(t)
	testenv.CleanupLabel(t, trace)
	spec := hardened(t, image, trace)
	spec.Tmpfs = map[string]string{"/home": "rw,nosuid,nodev,size=64m,mode=755", "/tmp": "rw,nosuid,nodev,size=64m,mode=1777"}
	mtime := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	spec.Files = []orchestrator.File{
		{Path: "/etc/sandboxctl-test/motd", Content: []byte("hello\n"), Mode: 0o640, UID: 0, GID: 1000, ModTime: mtime},
		{Path: "/home/mwalker", Dir: true, Mode: 0o750, UID: 1000, GID: 1000},
		{Path: "/home/mwalker/.bashrc", Content: []byte("# rc\n"), Mode: 0o644, UID: 1000, GID: 1000, ModTime: mtime},
	}
	sb := start(t, rt, spec)

	t.Run("files", func(t *testing.T) {
		stamp := strconv.FormatInt(mtime.Unix(), 10)
		for _, tc := range []struct{ path, format, want string }{
			{"/etc/sandboxctl-test/motd", "%a %u:%g %Y", "640 0:1000 " + stamp},
			{"/home/mwalker", "%a %u:%g", "750 1000:1000"},
			{"/home/mwalker/.bashrc", "%a %u:%g %Y", "644 1000:1000 " + stamp},
		} {
			out, stderr, code := run(t, sb, "", "stat", "-c", tc.format, tc.path)
			if code != 0 || strings.TrimSpace(out) != tc.want {
				t.Errorf("stat %s = %q (%s), want %q", tc.path, out, stderr, tc.want)
			}
		}
		out, _, _ := run(t, sb, "1000:1000", "cat", "/home/mwalker/.bashrc")
		if out != "# rc\n" {
			t.Errorf("user reads .bashrc on the tmpfs = %q", out)
		}
	})

	t.Run("capabilities", func(t *testing.T) {
		out, _, _ := run(t, sb, "1000:1000", "cat", "/proc/self/status")
		st := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			k, v, _ := strings.Cut(line, ":")
			st[k] = strings.TrimSpace(v)
		}
		for _, k := range []string{"CapPrm", "CapEff", "CapAmb"} {
			if st[k] != "0000000000000000" {
				t.Errorf("user %s = %s, want none", k, st[k])
			}
		}
		if st["NoNewPrivs"] != "1" {
			t.Errorf("NoNewPrivs = %q, want 1", st["NoNewPrivs"])
		}
		bnd, err := strconv.ParseUint(st["CapBnd"], 16, 64)
		if err != nil {
			t.Fatalf("CapBnd %q: %v", st["CapBnd"], err)
		}
		for name, bit := range map[string]uint{"NET_ADMIN": 12, "NET_RAW": 13, "SYS_ADMIN": 21, "SYS_MODULE": 16} {
			if bnd&(1<<bit) != 0 {
				t.Errorf("bounding set keeps %s", name)
			}
		}
	})

	t.Run("no docker socket", func(t *testing.T) {
		out, _, _ := run(t, sb, "", "sh", "-c", "ls -la /var/run/docker.sock /run/docker.sock 2>&1; grep -c docker.sock /proc/mounts; find / -xdev -name 'docker.sock' 2>/dev/null | head -1")
		if !strings.Contains(out, "No such file") || strings.Contains(out, "srw") || !strings.Contains(out, "\n0\n") {
			t.Errorf("docker socket probe:\n%s", out)
		}
	})

	t.Run("no host loopback", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan struct{}, 1)
		go func() { // ends when ln is closed
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
				accepted <- struct{}{}
			}
		}()
		port := ln.Addr().(*net.TCPAddr).Port
		out, stderr, code := run(t, sb, "1000:1000", "curl", "-sS", "--max-time", "3", fmt.Sprintf("http://127.0.0.1:%d/", port))
		if code == 0 {
			t.Errorf("curl to the host's listener succeeded: %q", out)
		}
		t.Logf("curl exit %d: %s", code, strings.TrimSpace(stderr))
		select {
		case <-accepted:
			t.Error("the host listener accepted a connection from the sandbox")
		case <-time.After(200 * time.Millisecond):
		}
		out, _, _ = run(t, sb, "", "ip", "-o", "link")
		if strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, "lo:") {
			t.Errorf("interfaces besides lo:\n%s", out)
		}
	})

	t.Run("cgroup does not name docker", func(t *testing.T) {
		out, _, _ := run(t, sb, "1000:1000", "cat", "/proc/1/cgroup")
		if strings.Contains(out, "docker") {
			t.Errorf("/proc/1/cgroup names docker:\n%s", out)
		}
	})

	t.Run("stdin", func(t *testing.T) {
		var out bytes.Buffer
		in := strings.Repeat("line of input\n", 20000) // 280 kB: more than a pipe buffer
		code, err := sb.Exec(t.Context(), orchestrator.ExecSpec{Argv: []string{"cat"}, User: "1000:1000", Stdin: strings.NewReader(in), Stdout: &out})
		if err != nil || code != 0 {
			t.Fatalf("cat: %d, %v", code, err)
		}
		if out.String() != in {
			t.Errorf("cat echoed %d bytes, want %d", out.Len(), len(in))
		}
	})

	t.Run("copy roundtrip and diff", func(t *testing.T) {
		var tb bytes.Buffer
		tw := tar.NewWriter(&tb)
		tw.WriteHeader(&tar.Header{Name: "notes.txt", Mode: 0o600, Size: 5, Uid: 1000, Gid: 1000, Typeflag: tar.TypeReg})
		tw.Write([]byte("12345"))
		tw.Close()
		if err := sb.CopyIn(t.Context(), "/opt", &tb); err != nil {
			t.Fatalf("CopyIn: %v", err)
		}
		_, _, code := run(t, sb, "1000:1000", "sh", "-c", "cat /opt/notes.txt >/dev/null")
		if code != 0 {
			t.Errorf("user cannot read the file copied in with uid 1000")
		}
		rc, err := sb.CopyOut(t.Context(), "/opt/notes.txt")
		if err != nil {
			t.Fatalf("CopyOut: %v", err)
		}
		defer rc.Close()
		tr := tar.NewReader(rc)
		h, err := tr.Next()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		if h.Name != "notes.txt" || string(data) != "12345" {
			t.Errorf("CopyOut = %s %q", h.Name, data)
		}

		// The orchestrator removes /.dockerenv as root at start.
		if _, stderr, code := run(t, sb, "", "rm", "/.dockerenv"); code != 0 {
			t.Errorf("root cannot remove /.dockerenv: %s", stderr)
		}
		run(t, sb, "", "sh", "-c", "echo x > /var/written-by-test")
		changes, err := sb.Diff(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, c := range changes {
			got[c.Path] = c.Kind
		}
		for p, want := range map[string]string{"/var/written-by-test": "added", "/.dockerenv": "deleted", "/opt/notes.txt": "added"} {
			if got[p] != want {
				t.Errorf("diff %s = %q, want %q (diff %v)", p, got[p], want, changes)
			}
		}
	})

	t.Run("copy on tmpfs", func(t *testing.T) {
		var tb bytes.Buffer
		tw := tar.NewWriter(&tb)
		tw.WriteHeader(&tar.Header{Name: "drop/", Mode: 0o700, Uid: 1000, Gid: 1000, Typeflag: tar.TypeDir})
		tw.WriteHeader(&tar.Header{Name: "drop/a.txt", Mode: 0o600, Size: 3, Uid: 1000, Gid: 1000, Typeflag: tar.TypeReg})
		tw.Write([]byte("abc"))
		tw.Close()
		if err := sb.CopyIn(t.Context(), "/tmp", &tb); err != nil {
			t.Fatalf("CopyIn: %v", err)
		}
		out, _, _ := run(t, sb, "1000:1000", "sh", "-c", "cat /tmp/drop/a.txt; echo more > /tmp/drop/b.txt")
		if out != "abc" {
			t.Errorf("user reads %q from the file copied onto the tmpfs", out)
		}
		rc, err := sb.CopyOut(t.Context(), "/tmp/drop")
		if err != nil {
			t.Fatalf("CopyOut: %v", err)
		}
		defer rc.Close()
		got := map[string]string{}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("CopyOut tar: %v", err)
			}
			data, _ := io.ReadAll(tr)
			got[h.Name] = fmt.Sprintf("%d:%d %q", h.Uid, h.Gid, data)
		}
		want := map[string]string{"drop/": `1000:1000 ""`, "drop/a.txt": `1000:1000 "abc"`, "drop/b.txt": `1000:1000 "more\n"`}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("CopyOut /tmp/drop (-want +got):\n%s", diff)
		}
		if _, err := sb.CopyOut(t.Context(), "/tmp/absent"); err == nil {
			t.Error("CopyOut of a missing path on a tmpfs succeeded")
		}
	})

	t.Run("stats and state", func(t *testing.T) {
		st, err := sb.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if st.PIDs < 1 || st.Memory <= 0 || st.CPUSeconds <= 0 {
			t.Errorf("Stats = %+v", st)
		}
		state, err := sb.State(t.Context())
		if err != nil || !state.Running {
			t.Errorf("State = %+v, %v; want running", state, err)
		}
	})

	t.Run("exec cancel", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		begin := time.Now()
		_, err := sb.Exec(ctx, orchestrator.ExecSpec{Argv: []string{"sleep", "60"}})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Exec err = %v, want deadline exceeded", err)
		}
		if d := time.Since(begin); d > 5*time.Second {
			t.Errorf("Exec returned %s after its deadline", d)
		}
	})
}

func TestLogsAndExit(t *testing.T) {
	image := testenv.Image(t)
	rt := testenv.RequireDocker(t)
	trace := testenv.TraceID(t)
	testenv.CleanupLabel(t, trace)
	spec := hardened(t, image, trace)
	spec.Cmd = []string{"sh", "-c", "echo out; echo err >&2; exit 3"}
	sb := start(t, rt, spec)
	var out, errb bytes.Buffer
	if err := sb.Logs(t.Context(), &out, &errb); err != nil {
		t.Fatalf("Logs: %v", err)
	}
	if out.String() != "out\n" || errb.String() != "err\n" {
		t.Errorf("Logs = %q, %q", out.String(), errb.String())
	}
	var st orchestrator.State
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var err error
		if st, err = sb.State(t.Context()); err != nil {
			t.Fatal(err)
		}
		if !st.Running {
			break
		}
	}
	if st.Running || st.ExitCode != 3 {
		t.Errorf("State = %+v, want exited 3", st)
	}
}

func TestRefusedSpecs(t *testing.T) {
	rt := testenv.RequireDocker(t)
	trace := testenv.TraceID(t)
	testenv.CleanupLabel(t, trace)
	for _, tc := range []struct {
		name string
		edit func(*orchestrator.Spec)
	}{
		{"host network", func(s *orchestrator.Spec) { s.NetworkMode = "host" }},
		{"bridge network", func(s *orchestrator.Spec) { s.NetworkMode = "bridge" }},
		{"default network", func(s *orchestrator.Spec) { s.NetworkMode = "default" }},
		{"empty network", func(s *orchestrator.Spec) { s.NetworkMode = "" }},
		{"user network", func(s *orchestrator.Spec) { s.NetworkMode = "mynet" }},
		{"container without id", func(s *orchestrator.Spec) { s.NetworkMode = "container:" }},
		{"hostname with container network", func(s *orchestrator.Spec) { s.NetworkMode = "container:abc" }},
		{"no trace label", func(s *orchestrator.Spec) { s.Labels = map[string]string{"x": "y"} }},
		{"relative file", func(s *orchestrator.Spec) { s.Files = []orchestrator.File{{Path: "etc/x"}} }},
		{"file on a read-only root", func(s *orchestrator.Spec) {
			s.ReadOnlyRootfs = true
			s.Tmpfs = map[string]string{"/tmp": ""}
			s.Files = []orchestrator.File{{Path: "/tmp/ok"}, {Path: "/etc/x"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := hardened(t, "sandboxctl-sandbox:none", trace)
			tc.edit(&spec)
			if sb, err := rt.Create(t.Context(), spec); err == nil {
				sb.Remove(context.Background())
				t.Fatalf("Create(%+v) succeeded", spec)
			}
		})
	}
}

func TestReadOnlyRootWithTmpfsFiles(t *testing.T) {
	image := testenv.Image(t)
	rt := testenv.RequireDocker(t)
	trace := testenv.TraceID(t)
	testenv.CleanupLabel(t, trace)
	spec := hardened(t, image, trace)
	spec.ReadOnlyRootfs = true
	spec.Tmpfs = map[string]string{"/tmp": "rw,nosuid,nodev,size=16m,mode=1777"}
	spec.Files = []orchestrator.File{{Path: "/tmp/seed/x", Content: []byte("seeded"), Mode: 0o644, UID: 1000, GID: 1000}}
	sb := start(t, rt, spec)
	if out, stderr, _ := run(t, sb, "1000:1000", "cat", "/tmp/seed/x"); out != "seeded" {
		t.Errorf("cat /tmp/seed/x = %q (%s)", out, stderr)
	}
	if _, _, code := run(t, sb, "", "touch", "/etc/x"); code == 0 {
		t.Error("root wrote to the read-only root file system")
	}
}
