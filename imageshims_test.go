package sandboxctl_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl"
	"github.com/sandboxctl/sandboxctl/orchestrator"
)

// TestHarnessDirs: each working folder the image makes for skills written
// for an agent harness is absolute and says which skills use it.
func TestHarnessDirs(t *testing.T) {
	b, err := sandboxctl.ImageContext.ReadFile("sandbox-image/harness-dirs.tsv")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for i, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != 3 || !filepath.IsAbs(f[0]) || filepath.Clean(f[0]) != f[0] || f[2] == "" ||
			strings.HasPrefix(f[0], "/home") || strings.HasPrefix(f[0], "/tmp") {
			t.Errorf("harness-dirs.tsv:%d: want PATH<TAB>SKILLS<TAB>EVIDENCE with a clean absolute path outside the tmpfs mounts (/home, /tmp), got %q", i+1, l)
		}
		dirs = append(dirs, f[0])
	}
	if len(dirs) == 0 {
		t.Error("harness-dirs.tsv lists no folder")
	}
	// Each is a sized tmpfs of the user's at trace time: on the root file
	// system it would be the host's disk.
	if !slices.Equal(dirs, orchestrator.HarnessDirs) {
		t.Errorf("harness-dirs.tsv lists %q, orchestrator.HarnessDirs (the tmpfs mounts) %q", dirs, orchestrator.HarnessDirs)
	}
}

// TestUVShim runs the image's uv as a skill would: scripts and commands
// run on python3, the packages a script names are installed first, and
// what needs nothing succeeds.
func TestUVShim(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 (the shim runs the image's)")
	}
	src, err := sandboxctl.ImageContext.ReadFile("sandbox-image/uv")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	home := filepath.Join(dir, "home")
	for _, d := range []string{bin, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "uv"), src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("uv", filepath.Join(bin, "uvx")); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain.py", "import sys\nprint('ran', sys.argv[1:])\n")
	inline := write("inline.py", "# /// script\n# dependencies = [\n#   \"acme-geo>=2\",\n# ]\n# ///\nprint('never')\n")
	env := []string{"HOME=" + home, "PATH=" + bin + ":/usr/bin:/bin",
		// no index answers: an install is attempted and fails at once
		"PIP_INDEX_URL=http://127.0.0.1:9/simple", "PIP_RETRIES=0", "PIP_TIMEOUT=2", "PIP_NO_CACHE_DIR=1"}
	tests := []struct {
		name     string
		argv     []string
		want     string
		wantCode int
	}{
		{name: "version", argv: []string{"uv", "--version"}, want: "uv 0."},
		{name: "run a script with its arguments", argv: []string{"uv", "run", plain, "--to", "x@y.example"}, want: "ran ['--to', 'x@y.example']"},
		{name: "run after options", argv: []string{"uv", "run", "--no-project", "--python", "3.11", plain, "a"}, want: "ran ['a']"},
		{name: "run python", argv: []string{"uv", "run", "python", "-c", "print(6*7)"}, want: "42"},
		{name: "run a module", argv: []string{"uv", "run", "-m", "json.tool", "--help"}, want: "usage"},
		{name: "inline dependencies are installed first", argv: []string{"uv", "run", inline}, want: "acme-geo", wantCode: 1},
		{name: "--with installs first", argv: []string{"uv", "run", "--with", "acme-geo", plain}, want: "Failed to install", wantCode: 1},
		{name: "uvx installs the tool", argv: []string{"uvx", "acme-lint", "check"}, want: "acme-lint", wantCode: 1},
		{name: "python find", argv: []string{"uv", "python", "find"}, want: "/usr/bin/python3"},
		{name: "lock needs nothing", argv: []string{"uv", "lock"}, want: "Resolved"},
		{name: "unknown subcommand", argv: []string{"uv", "frobnicate"}, want: "unrecognized subcommand", wantCode: 2},
		{name: "a missing script", argv: []string{"uv", "run", "nowhere.py"}, want: "Failed to spawn", wantCode: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// pip's start and its refused index are most of the time; the
			// failed installs write to folders of their own and remove them.
			t.Parallel()
			cmd := exec.Command(filepath.Join(bin, tt.argv[0]), tt.argv[1:]...)
			cmd.Env, cmd.Dir = env, dir
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode || !strings.Contains(string(out), tt.want) {
				t.Errorf("%v: exit %d, %q; want exit %d and %q", tt.argv, code, out, tt.wantCode, tt.want)
			}
		})
	}
	t.Run("venv", func(t *testing.T) {
		if testing.Short() {
			// python3 -m venv installs pip into it: 3 to 6 s, most of this
			// test's time. The shim only hands it the folder.
			t.Skip("python3 -m venv takes seconds: run without -short")
		}
		cmd := exec.Command(filepath.Join(bin, "uv"), "venv")
		cmd.Env, cmd.Dir = env, dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("uv venv: %v\n%s", err, out)
		}
		if _, err := os.Stat(filepath.Join(dir, ".venv", "bin", "python")); err != nil {
			t.Errorf("no .venv: %v", err)
		}
	})
}

// TestSudoShim runs the image's sudo as a skill would: what it is asked
// runs as the user, options are taken as sudo takes them, and the
// questions sudo answers itself are answered.
func TestSudoShim(t *testing.T) {
	src, err := sandboxctl.ImageContext.ReadFile("sandbox-image/sudo")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sudo := filepath.Join(dir, "sudo")
	if err := os.WriteFile(sudo, src, 0o755); err != nil {
		t.Fatal(err)
	}
	uid, err := exec.Command("id", "-u").Output()
	if err != nil {
		t.Skip("no id")
	}
	out := filepath.Join(dir, "out")
	tests := []struct {
		name     string
		argv     []string
		stdin    string
		want     string
		wantCode int
	}{
		{name: "runs as the user", argv: []string{"id", "-u"}, want: strings.TrimSpace(string(uid))},
		{name: "options and a target user", argv: []string{"-E", "-H", "-u", "root", "--", "echo", "ran"}, want: "ran"},
		{name: "a variable assignment", argv: []string{"DEBIAN_FRONTEND=noninteractive", "sh", "-c", "echo $DEBIAN_FRONTEND"}, want: "noninteractive"},
		{name: "tee from a pipe", argv: []string{"tee", out}, stdin: "line\n", want: "line"},
		{name: "a shell with a command", argv: []string{"-s", "echo", "from", "shell"}, want: "from shell"},
		{name: "validate", argv: []string{"-v"}},
		{name: "list", argv: []string{"-l"}, want: "(ALL : ALL) ALL"},
		{name: "version", argv: []string{"--version"}, want: "Sudo version"},
		{name: "no command", argv: []string{"-E"}, want: "usage: sudo", wantCode: 1},
		{name: "the command's exit status", argv: []string{"sh", "-c", "exit 7"}, wantCode: 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(sudo, tc.argv...)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "SHELL=/bin/sh"}
			cmd.Stdin = strings.NewReader(tc.stdin)
			b, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode || !strings.Contains(string(b), tc.want) {
				t.Errorf("sudo %q: exit %d, output %q; want exit %d and %q", tc.argv, code, b, tc.wantCode, tc.want)
			}
		})
	}
}

// TestBunShim runs the image's bun and bunx as a skill would: each command
// goes to npm, npx or node with its arguments (here, stand-ins that print
// what they were asked).
func TestBunShim(t *testing.T) {
	src, err := sandboxctl.ImageContext.ReadFile("sandbox-image/bun")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tool := range []string{"npm", "npx", "node"} {
		if err := os.WriteFile(filepath.Join(dir, tool), []byte("#!/bin/sh\necho "+tool+" \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "bun"), src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("bun", filepath.Join(dir, "bunx")); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "server.js")
	if err := os.WriteFile(script, []byte("console.log(1)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"bun", "--version"}, "1.1.38"},
		{[]string{"bun", "install"}, "npm install"},
		{[]string{"bun", "add", "-g", "@acme/cli"}, "npm install -g @acme/cli"},
		{[]string{"bun", "run", "dev", "--port", "3000"}, "npm run dev --port 3000"},
		{[]string{"bun", "run", script}, "node " + script},
		{[]string{"bun", script, "--x"}, "node " + script + " --x"},
		{[]string{"bun", "build"}, "npm run build"},
		{[]string{"bun", "create", "expo-app", "my-app"}, "npm create --yes expo-app my-app"},
		{[]string{"bun", "x", "prettier", "--write", "."}, "npx --yes prettier --write ."},
		{[]string{"bunx", "create-expo-module", "--local"}, "npx --yes create-expo-module --local"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.argv, " "), func(t *testing.T) {
			cmd := exec.Command(filepath.Join(dir, tc.argv[0]), tc.argv[1:]...)
			cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin"}
			b, err := cmd.CombinedOutput()
			if err != nil || strings.TrimSpace(string(b)) != tc.want {
				t.Errorf("%q: %v, output %q, want %q", tc.argv, err, b, tc.want)
			}
		})
	}
}
