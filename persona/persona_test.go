package persona_test

import (
	"bytes"
	"database/sql"
	"encoding/base64"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/persona"
	_ "modernc.org/sqlite"
)

func TestShims(t *testing.T) {
	if persona.Shims(persona.Linux) != nil || persona.Shims("") != nil {
		t.Error("the Linux persona installs shims")
	}
	shims := persona.Shims(persona.MacOS)
	seen := map[string]bool{}
	for _, f := range shims {
		cmd, ok := persona.IsShim(f.Path)
		if !ok || cmd != path.Base(f.Path) {
			t.Errorf("IsShim(%s) = %q, %v", f.Path, cmd, ok)
		}
		if f.Mode != 0o755 || !bytes.HasPrefix(f.Content, []byte("#!/")) {
			t.Errorf("%s: mode %o, starts %q", f.Path, f.Mode, f.Content[:min(10, len(f.Content))])
		}
		if bytes.Contains(bytes.ToLower(f.Content), []byte("sandbox")) || bytes.Contains(bytes.ToLower(f.Content), []byte("canary")) {
			t.Errorf("%s names what it is", f.Path)
		}
		seen[path.Base(f.Path)] = true
	}
	for _, want := range []string{"security", "osascript", "sw_vers", "base64", "uname", "xattr", "open", "pbcopy",
		"pbpaste", "launchctl", "defaults", "ditto", "dscl", "system_profiler", "brew"} {
		if !seen[want] {
			t.Errorf("no %s shim", want)
		}
	}
	for _, p := range []string{"/usr/bin/curl", "/bin/sh", "/usr/bin/base64"} {
		if _, ok := persona.IsShim(p); ok {
			t.Errorf("%s is called a shim", p)
		}
	}
	if !persona.Valid("") || !persona.Valid("macos") || persona.Valid("windows") || persona.Check("win") == nil {
		t.Error("Valid/Check")
	}
}

// mac is a macOS home on the host's disk with the shims in a bin folder,
// for running the shims as a skill would.
type mac struct {
	t    *testing.T
	home *canaryfs.Home
	dir  string // the home on disk
	bin  string
	log  string // what the fake curl was asked
}

// macHome is the home the shim tests run in: built once (most of a test's
// time is the build's key search and keystore derivation), and written to a
// folder of its own for each test.
var macHome = sync.OnceValues(func() (*canaryfs.Home, error) {
	return canaryfs.Build(canaryfs.Options{User: "mwalker", Seed: []byte("shims"), Persona: persona.MacOS,
		Now: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)})
})

func newMac(t *testing.T) *mac {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	h, err := macHome()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "Users"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := h.WriteDir(root); err != nil {
		t.Fatal(err)
	}
	m := &mac{t: t, home: h, dir: filepath.Join(root, h.HomeDir), bin: filepath.Join(root, "bin"), log: filepath.Join(root, "curl.log")}
	if err := os.MkdirAll(m.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range persona.Shims(persona.MacOS) {
		if err := os.WriteFile(filepath.Join(m.bin, path.Base(f.Path)), f.Content, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing leaves this machine: curl records what it was asked.
	if err := os.WriteFile(filepath.Join(m.bin, "curl"), []byte("#!/bin/sh\necho \"$@\" >>"+m.log+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return m
}

// run runs a shell command line with the shims first on PATH.
func (m *mac) run(stdin, script string) (stdout, stderr string, code int) {
	m.t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = m.dir
	cmd.Env = []string{"HOME=" + m.dir, "USER=mwalker", "PATH=" + m.bin + ":/usr/bin:/bin", "LANG=C.UTF-8"}
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		m.t.Fatalf("%s: %v", script, err)
	}
	return o.String(), e.String(), code
}

func (m *mac) token(kind canary.Kind) string {
	m.t.Helper()
	tok, ok := m.home.Token("~/"+canaryfs.KeychainPath, kind)
	if !ok {
		m.t.Fatalf("no %s in the keychain", kind)
	}
	return tok.Value
}

func TestSecurity(t *testing.T) {
	m := newMac(t)
	safe, gh, login := m.token(canary.KeyringSecret), m.token(canary.GitHubToken), m.token(canary.Password)
	tests := []struct {
		name, script string
		code         int
		stdout       []string // substrings
		stderr       []string
		notOut       []string
	}{
		{name: "chrome key", script: `security find-generic-password -wa "Chrome"`, stdout: []string{safe + "\n"}},
		{name: "chrome key by service", script: `security find-generic-password -s "Chrome Safe Storage" -w`, stdout: []string{safe}},
		{name: "attributes without the secret", script: `security find-generic-password -s "Chrome Safe Storage"`,
			stdout: []string{`class: "genp"`, `"svce"<blob>="Chrome Safe Storage"`, `keychain: "` + m.dir + `/Library/Keychains/login.keychain-db"`}, notOut: []string{safe}},
		{name: "-g prints the password on stderr", script: `security find-generic-password -ga Chrome`, stderr: []string{`password: "` + safe + `"`}, notOut: []string{safe}},
		{name: "internet password", script: `security find-internet-password -s github.com -w`, stdout: []string{gh}},
		{name: "missing item", script: `security find-generic-password -s nothing-here -w`, code: 44,
			stderr: []string{"could not be found in the keychain"}},
		{name: "dump with data", script: `security dump-keychain -d`, stdout: []string{safe, gh, `class: "inet"`}},
		{name: "dump without data", script: `security dump-keychain`, notOut: []string{safe, gh}},
		{name: "unlock with the login password", script: `security unlock-keychain -p '` + login + `' login.keychain`},
		{name: "unlock with a wrong one", script: `security unlock-keychain -p wrong`, code: 51, stderr: []string{"not correct"}},
		{name: "list", script: `security list-keychains`, stdout: []string{"login.keychain-db", "System.keychain"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := m.run("", tt.script)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(out, s) {
					t.Errorf("stdout %q lacks %q", out, s)
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr %q lacks %q", errOut, s)
				}
			}
			for _, s := range tt.notOut {
				if strings.Contains(out, s) {
					t.Errorf("stdout holds %q", s)
				}
			}
		})
	}

	// What a stealer does next: Chrome's saved passwords decrypt with the
	// key the keychain gave.
	db, err := sql.Open("sqlite", filepath.Join(m.dir, "Library/Application Support/Google/Chrome/Default/Login Data"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var enc []byte
	if err := db.QueryRow(`SELECT password_value FROM logins LIMIT 1`).Scan(&enc); err != nil {
		t.Fatal(err)
	}
	out, _, _ := m.run("", `security find-generic-password -wa Chrome`)
	pw, ok := testenv.ChromeDecryptMac(enc, strings.TrimSpace(out))
	if !ok || len(m.home.Set.Find(pw)) == 0 {
		t.Error("Login Data does not decrypt with the key security printed")
	}
}

func TestOsascript(t *testing.T) {
	m := newMac(t)
	login := m.token(canary.Password)
	amos := `set u to short user name of (system info)
repeat
	set r to display dialog "To launch the application, you need to update the system settings" & return & "Please enter your password." default answer "" with icon caution buttons {"Continue"} default button "Continue" giving up after 150 with title "System Preferences" with hidden answer
	set pw to text returned of r
	try
		do shell script "dscl . -authonly " & quoted form of u & space & quoted form of pw
		exit repeat
	end try
end repeat
do shell script "printf %s " & quoted form of pw & " > pw.txt"
return "done"`
	tests := []struct {
		name, stdin, script, want string
		code                      int
	}{
		{name: "password dialog", script: `osascript -e 'display dialog "Enter your password:" default answer "" with hidden answer'`,
			want: "button returned:OK, text returned:" + login + "\n"},
		{name: "text returned of", script: `osascript -e 'text returned of (display dialog "Password" default answer "" with hidden answer)'`, want: login + "\n"},
		{name: "two -e lines", script: `osascript -e 'set r to display dialog "Login password" default answer ""' -e 'text returned of r'`, want: login + "\n"},
		{name: "ordinary question keeps its default", script: `osascript -e 'display dialog "Project name?" default answer "demo"'`,
			want: "button returned:OK, text returned:demo\n"},
		{name: "buttons", script: `osascript -e 'display dialog "Go?" buttons {"No", "Yes"} default button 2'`, want: "button returned:Yes\n"},
		{name: "shell script", script: `osascript -e 'do shell script "echo one; echo two"'`, want: "one\rtwo\n"},
		{name: "failing shell script", script: `osascript -e 'do shell script "exit 3"'`, code: 1},
		{name: "notification prints nothing", script: `osascript -e 'display notification "hi" with title "x"'`, want: ""},
		{name: "clipboard", script: `echo -n copied | pbcopy; osascript -e 'the clipboard'`, want: "copied\n"},
		{name: "system version", script: `osascript -e 'system version of (system info)'`, want: "14.6.1\n"},
		{name: "home path", script: `osascript -e 'POSIX path of (path to home folder)'`, want: m.dir + "/\n"},
		{name: "script on stdin", stdin: "display dialog \"Keychain password\" default answer \"\" with hidden answer\ntext returned of result\n",
			script: `osascript`, want: login + "\n"},
		{name: "stealer loop", stdin: amos, script: `osascript -`, want: "done\n"},
		{name: "javascript is recorded, not run", script: `osascript -l JavaScript -e 'Application("Finder")'`, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := m.run(tt.stdin, tt.script)
			if code != tt.code || (tt.code == 0 && out != tt.want) {
				t.Errorf("got %q exit %d (stderr %q), want %q exit %d", out, code, errOut, tt.want, tt.code)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(m.dir, "pw.txt")); err != nil || string(b) != login {
		t.Errorf("the stealer loop wrote %q (%v), want the login password", b, err)
	}
}

// waitFor is shell that waits, up to 5 s, until a background process has
// written the file at path (one write: once it is not empty, it is whole).
func waitFor(path string) string {
	return "for i in $(seq 500); do [ -s " + path + " ] && break; sleep 0.01; done; "
}

func TestShellShims(t *testing.T) {
	m := newMac(t)
	if err := os.WriteFile(filepath.Join(m.dir, "plain.txt"), []byte("hello mac"), 0o644); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte("hello mac"))
	long := strings.Repeat("x", 100)
	plist := `<?xml version="1.0" encoding="UTF-8"?><plist version="1.0"><dict><key>Label</key><string>com.x</string>` +
		`<key>ProgramArguments</key><array><string>/bin/sh</string><string>-c</string><string>echo ran > agent.out</string></array>` +
		`<key>RunAtLoad</key><true/></dict></plist>`
	if err := os.WriteFile(filepath.Join(m.dir, "Library/LaunchAgents/com.x.plist"), []byte(plist), 0o644); err != nil {
		t.Fatal(err)
	}
	clip, _ := m.home.Token("~/"+canaryfs.PasteboardPath, canary.Password)
	tests := []struct {
		name, script, want string
		code               int
	}{
		{name: "base64 -D", script: "echo " + b64 + " | base64 -D", want: "hello mac"},
		{name: "base64 --decode -i", script: "echo " + b64 + " > in.b64; base64 --decode -i in.b64", want: "hello mac"},
		{name: "base64 does not wrap", script: "printf " + long + " | base64 | wc -l", want: "1\n"},
		{name: "base64 -b", script: "printf " + long + " | base64 -b 76 | wc -l", want: "2\n"},
		{name: "base64 -o", script: "base64 -i plain.txt -o out.b64 && cat out.b64", want: b64 + "\n"},
		{name: "base64 bad option", script: "base64 -q", code: 64},
		{name: "uname", script: "uname", want: "Darwin\n"},
		{name: "uname -sm", script: "uname -sm", want: "Darwin x86_64\n"},
		{name: "uname -a", script: "uname -a | cut -d' ' -f1,3", want: "Darwin 23.6.0\n"},
		{name: "sw_vers", script: "sw_vers -productVersion", want: "14.6.1\n"},
		{name: "sw_vers all", script: "sw_vers | head -1", want: "ProductName:\t\tmacOS\n"},
		{name: "dscl right password", script: "dscl . -authonly mwalker '" + m.token(canary.Password) + "'"},
		{name: "dscl wrong password", script: "dscl . -authonly mwalker nope", code: 1},
		{name: "dscl read", script: "dscl . -read /Users/mwalker NFSHomeDirectory", want: "NFSHomeDirectory: " + m.dir + "\n"},
		{name: "defaults roundtrip", script: "defaults write com.acme.tool token -string abc && defaults read com.acme.tool token", want: "abc\n"},
		{name: "defaults planted", script: "defaults read -g AppleLocale", want: "en_US\n"},
		{name: "defaults missing", script: "defaults read com.acme.none key", code: 1},
		{name: "pbpaste the planted clipboard", script: "pbpaste", want: clip.Value},
		{name: "ditto zip and back", script: "mkdir -p d/e && echo z > d/e/f && ditto -c -k --sequesterRsrc --keepParent d d.zip && ditto -x -k d.zip out && cat out/d/e/f", want: "z\n"},
		{name: "xattr quarantine removed", script: "xattr -d com.apple.quarantine plain.txt && xattr -cr plain.txt"},
		{name: "xattr read finds nothing", script: "xattr -p com.apple.quarantine plain.txt", code: 1},
		{name: "xattr missing file", script: "xattr -d com.apple.quarantine nope", code: 1},
		{name: "launchctl load starts a RunAtLoad agent", script: "launchctl load -w Library/LaunchAgents/com.x.plist; " + waitFor("agent.out") + "cat agent.out", want: "ran\n"},
		{name: "launchctl list", script: "launchctl list | head -1", want: "PID\tStatus\tLabel\n"},
		{name: "open a url fetches it", script: "open https://example.test/x && " + waitFor(m.log) + "cat " + m.log, want: ""},
		{name: "open a missing file", script: "open nope.pdf", code: 1},
		{name: "brew install asks the formula api", script: "brew install jq >/dev/null && cat " + m.log, want: "-fsS -m 15 -o /dev/null https://formulae.brew.sh/api/formula/jq.json\n"},
		{name: "system_profiler", script: "system_profiler SPHardwareDataType | grep -c 'Hardware UUID'", want: "1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(m.log)
			out, errOut, code := m.run("", tt.script)
			if tt.name == "open a url fetches it" {
				if !strings.Contains(out, "https://example.test/x") {
					t.Errorf("open did not fetch: %q", out)
				}
				return
			}
			if code != tt.code || (tt.code == 0 && out != tt.want) {
				t.Errorf("got %q exit %d (stderr %q), want %q exit %d", out, code, errOut, tt.want, tt.code)
			}
		})
	}
}

func TestIsVendorStub(t *testing.T) {
	tests := []struct {
		name, path, want string
		ok               bool
	}{
		{"a stub", "/usr/local/bin/vercel", "vercel", true},
		{"uncleaned path", "/usr/local/bin/../bin/terraform", "terraform", true},
		{"same name elsewhere", "/usr/bin/docker", "", false},
		{"a real CLI of the image", "/usr/local/bin/kubectl", "", false},
		{"not a vendor CLI", "/usr/local/bin/curl", "", false},
		{"a macOS shim", "/usr/local/bin/brew", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := persona.IsVendorStub(tc.path)
			if got != tc.want || ok != tc.ok {
				t.Errorf("IsVendorStub(%q) = %q, %v; want %q, %v", tc.path, got, ok, tc.want, tc.ok)
			}
		})
	}
	for _, n := range persona.VendorCLIs {
		if _, mac := persona.IsShim("/usr/local/bin/" + n); mac {
			t.Errorf("%s is both a vendor stub and a macOS shim", n)
		}
	}
}

func TestStandIn(t *testing.T) {
	tests := []struct {
		name   string
		path   string
		argv   []string
		want   []string
		wantOK bool
	}{
		{name: "with the separator", path: "/usr/lib/command-not-found", argv: []string{"/usr/lib/command-not-found", "--", "cargo", "build"}, want: []string{"cargo", "build"}, wantOK: true},
		{name: "without it", path: "/usr/lib/command-not-found", argv: []string{"command-not-found", "aspire"}, want: []string{"aspire"}, wantOK: true},
		{name: "no command", path: "/usr/lib/command-not-found", argv: []string{"/usr/lib/command-not-found", "--"}},
		{name: "another program", path: "/usr/bin/cargo", argv: []string{"cargo", "build"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := persona.StandIn(tt.path, tt.argv)
			if ok != tt.wantOK || !slices.Equal(got, tt.want) {
				t.Errorf("StandIn = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
