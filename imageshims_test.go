package sandboxctl_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestPnpmYarnShims runs the image's pnpm, pnpx and yarn as a skill would:
// each command goes to npm or npx with its arguments (stand-ins that print
// what they were asked).
func TestPnpmYarnShims(t *testing.T) {
	dir := t.TempDir()
	for _, tool := range []string{"npm", "npx"} {
		if err := os.WriteFile(filepath.Join(dir, tool), []byte("#!/bin/sh\necho "+tool+" \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, shim := range []string{"pnpm", "yarn"} {
		src, err := sandboxctl.ImageContext.ReadFile("sandbox-image/" + shim)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, shim), src, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("pnpm", filepath.Join(dir, "pnpx")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "node_modules/.bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "node_modules/.bin/eslint"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"pnpm", "--version"}, "9.15.0"},
		{[]string{"pnpm", "install"}, "npm install"},
		{[]string{"pnpm", "add", "-g", "@acme/cli"}, "npm install -g @acme/cli"},
		{[]string{"pnpm", "add", "-D", "vitest"}, "npm install -D vitest"},
		{[]string{"pnpm", "dlx", "create-vite", "app"}, "npx --yes create-vite app"},
		{[]string{"pnpx", "prettier", "--check", "."}, "npx --yes prettier --check ."},
		{[]string{"pnpm", "run", "build"}, "npm run build"},
		{[]string{"pnpm", "dev", "--port", "3000"}, "npm run dev --port 3000"},
		{[]string{"pnpm", "exec", "tsc"}, "npx --no-install tsc"},
		{[]string{"yarn"}, "npm install"},
		{[]string{"yarn", "--version"}, "1.22.22"},
		{[]string{"yarn", "add", "axios"}, "npm install axios"},
		{[]string{"yarn", "global", "add", "@acme/cli"}, "npm install -g @acme/cli"},
		{[]string{"yarn", "build"}, "npm run build"},
		{[]string{"yarn", "eslint", "src"}, "npx --no-install eslint src"},
		{[]string{"yarn", "dlx", "create-expo-app"}, "npx --yes create-expo-app"},
		{[]string{"yarn", "remove", "left-pad"}, "npm uninstall left-pad"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.argv, " "), func(t *testing.T) {
			cmd := exec.Command(filepath.Join(dir, tc.argv[0]), tc.argv[1:]...)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin"}
			b, err := cmd.CombinedOutput()
			if err != nil || strings.TrimSpace(string(b)) != tc.want {
				t.Errorf("%q: %v, output %q, want %q", tc.argv, err, b, tc.want)
			}
		})
	}
}

// TestCommandNotFound runs the image's stand-in for missing programs as
// bash's command_not_found_handle calls it: a program's name exits 0 with
// no output; what is not a program (another language's words, prose,
// options, script names, Windows programs) gets bash's answer and 127.
func TestCommandNotFound(t *testing.T) {
	src, err := sandboxctl.ImageContext.ReadFile("sandbox-image/command-not-found")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cnf := filepath.Join(dir, "command-not-found")
	if err := os.WriteFile(cnf, src, 0o755); err != nil {
		t.Fatal(err)
	}
	handler := "command_not_found_handle() { " + cnf + " -- \"$@\"; }\n"
	tests := []struct {
		line   string
		status int
	}{
		{"cargo fuzz init", 0},
		{"dotnet build -c Release", 0},
		{"afl-fuzz -i in -o out ./target", 0},
		{"llvm-symbolizer --obj=lib.so 0x1234", 0},
		{"import os", 127},
		{"from pathlib import Path", 127},
		{"SELECT 1", 127},
		{"Traceback x", 127},
		{"setup.sh --all", 127},
		{"SharpHound.exe -c All", 127},
		{"const x = 1", 127},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			cmd := exec.Command("bash", "-c", handler+tc.line)
			cmd.Env = []string{"PATH=/nonexistent"}
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			status := 0
			if ee, ok := err.(*exec.ExitError); ok {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			name, _, _ := strings.Cut(tc.line, " ")
			if status != tc.status || stdout.Len() > 0 {
				t.Errorf("status %d, stdout %q; want %d and no output", status, stdout.String(), tc.status)
			}
			if tc.status == 127 && stderr.String() != "bash: "+name+": command not found\n" {
				t.Errorf("stderr %q", stderr.String())
			}
		})
	}
}

// TestSystemctlShim runs the image's systemctl and journalctl on a user
// unit as a skill would: enable --now makes the [Install] link and runs
// ExecStart= with the unit's environment, working folder and specifiers;
// the state verbs answer from what ran; stop and disable undo it; starting
// a timer runs its service once; unknown units fail as systemd fails.
func TestSystemctlShim(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 (the shim runs on the image's)")
	}
	dir := t.TempDir()
	bin, home, tmp := filepath.Join(dir, "bin"), filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	units := filepath.Join(home, ".config/systemd/user")
	for _, d := range []string{bin, filepath.Join(home, "work"), tmp, units} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, shim := range []string{"systemctl", "journalctl"} {
		src, err := sandboxctl.ImageContext.ReadFile("sandbox-image/" + shim)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, shim), src, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"upd.service": "[Unit]\nDescription=Updater\n\n[Service]\nEnvironment=\"GREETING=hi there\" OTHER=1\n" +
			"WorkingDirectory=%h/work\nExecStart=/bin/sh -c 'echo \"$GREETING\" > %h/out; pwd >> %h/out; exec sleep 30'\n" +
			"Restart=always\n\n[Install]\nWantedBy=default.target\n",
		"tick.timer":       "[Timer]\nOnCalendar=hourly\nUnit=tick-job.service\n\n[Install]\nWantedBy=timers.target\n",
		"tick-job.service": "[Service]\nType=oneshot\nExecStart=/bin/sh -c 'echo ticked > %h/ticked; echo tick'\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(units, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(argv ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, argv[0]), argv[1:]...)
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + tmp, "USER=dev"}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%q: %v", argv, err)
		}
		return out.String(), errb.String(), code
	}
	t.Cleanup(func() { run("systemctl", "--user", "stop", "upd") })

	unit := filepath.Join(units, "upd.service")
	link := filepath.Join(units, "default.target.wants/upd.service")
	_, stderr, code := run("systemctl", "--user", "enable", "--now", "upd")
	if code != 0 || !strings.Contains(stderr, "Created symlink "+link+" \u2192 "+unit+".") {
		t.Fatalf("enable --now: exit %d, stderr %q", code, stderr)
	}
	if got, err := os.Readlink(link); err != nil || got != unit {
		t.Errorf("link %s -> %q (%v), want %s", link, got, err, unit)
	}
	want := "hi there\n" + filepath.Join(home, "work") + "\n"
	var got []byte
	for range 100 {
		if got, _ = os.ReadFile(filepath.Join(home, "out")); string(got) == want {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if string(got) != want {
		t.Errorf("ExecStart wrote %q, want %q", got, want)
	}
	checks := []struct {
		name     string
		argv     []string
		stdout   string // contained
		exitCode int
	}{
		{"is-active while running", []string{"systemctl", "--user", "is-active", "upd"}, "active\n", 0},
		{"is-enabled", []string{"systemctl", "--user", "is-enabled", "upd.service"}, "enabled\n", 0},
		{"status", []string{"systemctl", "--user", "status", "upd"}, "Active: active (running)", 0},
		{"list-units", []string{"systemctl", "--user", "list-units", "--no-legend"}, "upd.service", 0},
		{"version", []string{"systemctl", "--version"}, "systemd 252", 0},
		{"timer runs its service", []string{"systemctl", "--user", "start", "tick.timer"}, "", 0},
		{"journal of the oneshot", []string{"journalctl", "--user", "-u", "tick-job", "--no-pager"}, "tick\n", 0},
		{"stop", []string{"systemctl", "--user", "stop", "upd"}, "", 0},
		{"is-active after stop", []string{"systemctl", "--user", "is-active", "upd"}, "inactive\n", 3},
		{"disable", []string{"systemctl", "--user", "disable", "upd"}, "", 0},
		{"is-enabled after disable", []string{"systemctl", "--user", "is-enabled", "upd"}, "disabled\n", 1},
		{"start of a missing unit", []string{"systemctl", "--user", "start", "nope"}, "", 5},
		{"enable of a missing unit", []string{"systemctl", "--user", "enable", "nope"}, "", 1},
		{"unknown verb", []string{"systemctl", "frobnicate"}, "", 1},
		{"journal of a unit that printed nothing", []string{"journalctl", "-u", "nope"}, "-- No entries --", 0},
	}
	for _, c := range checks {
		stdout, stderr, code := run(c.argv...)
		if code != c.exitCode || !strings.Contains(stdout, c.stdout) {
			t.Errorf("%s: %q exit %d stdout %q stderr %q; want exit %d and %q", c.name, c.argv, code, stdout, stderr, c.exitCode, c.stdout)
		}
		if c.name == "timer runs its service" {
			if b, err := os.ReadFile(filepath.Join(home, "ticked")); err != nil || string(b) != "ticked\n" {
				t.Errorf("the timer's oneshot service wrote %q (%v)", b, err)
			}
		}
	}
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Errorf("disable left %s (%v)", link, err)
	}
}

// TestSetupFilesCopied: every file setup.sh takes from its own folder
// ("$here/NAME") is one the Dockerfile copies there (the image build fails
// at that line otherwise, after minutes).
func TestSetupFilesCopied(t *testing.T) {
	setup, err := sandboxctl.ImageContext.ReadFile("sandbox-image/setup.sh")
	if err != nil {
		t.Fatal(err)
	}
	docker, err := sandboxctl.ImageContext.ReadFile("Dockerfile.sandbox")
	if err != nil {
		t.Fatal(err)
	}
	var copied []string
	for _, l := range strings.Split(string(docker), "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] == "COPY" {
			copied = append(copied, f[1:len(f)-1]...)
		}
	}
	used := regexp.MustCompile(`"\$here/([A-Za-z0-9._-]+)"`).FindAllStringSubmatch(string(setup), -1)
	if len(used) == 0 {
		t.Fatal("setup.sh names no file of its folder: the pattern is out of date")
	}
	for _, m := range used {
		if _, err := sandboxctl.ImageContext.ReadFile("sandbox-image/" + m[1]); err != nil {
			t.Errorf("setup.sh uses %s, which sandbox-image/ does not have", m[1])
		}
		if !slices.Contains(copied, m[1]) {
			t.Errorf("setup.sh uses %s, which Dockerfile.sandbox does not copy (COPY %v)", m[1], copied)
		}
	}
}
