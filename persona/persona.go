package persona

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
)

// The personas.
const (
	Linux = "linux" // the image as built: a Debian developer workstation
	MacOS = "macos" // a Mac: macOS home layout, macOS tools as recording shims
)

// Names lists the personas, the default first.
var Names = []string{Linux, MacOS}

// Valid reports whether name is a persona ("" is the default, Linux).
func Valid(name string) bool {
	return name == "" || slices.Contains(Names, name)
}

// Check returns an error naming the personas when name is not one.
func Check(name string) error {
	if Valid(name) {
		return nil
	}
	return fmt.Errorf("unknown persona %q (want %s or %s)", name, Linux, MacOS)
}

// A File is one file a persona installs in the system (outside the home),
// owned by root.
type File struct {
	Path    string      // absolute path in the sandbox
	Mode    fs.FileMode // permission bits
	Content []byte
}

//go:embed macos
var macFS embed.FS

// macShims maps where macOS keeps each command to the embedded shim that
// stands in for it. The commands that also exist on Debian (base64, uname)
// go to /usr/local/bin, ahead of the Debian ones on the persona's PATH, and
// hand GNU options through, so that the toolchain keeps working. tools.py
// is one program for the commands that read the keychain or run AppleScript;
// it acts on the name it was called by.
var macShims = map[string]string{
	"/usr/local/bin/base64":     "base64",
	"/usr/local/bin/uname":      "uname",
	"/usr/local/bin/brew":       "brew",
	"/usr/bin/sw_vers":          "sw_vers",
	"/usr/bin/xattr":            "xattr",
	"/usr/bin/open":             "open",
	"/usr/bin/pbcopy":           "pbcopy",
	"/usr/bin/pbpaste":          "pbpaste",
	"/bin/launchctl":            "tools.py",
	"/usr/sbin/system_profiler": "system_profiler",
	"/usr/bin/security":         "tools.py",
	"/usr/bin/osascript":        "tools.py",
	"/usr/bin/dscl":             "tools.py",
	"/usr/bin/defaults":         "tools.py",
	"/usr/bin/ditto":            "tools.py",
}

// Shims returns the files the persona installs, sorted by path: nothing for
// Linux.
func Shims(name string) []File {
	if name != MacOS {
		return nil
	}
	var out []File
	for dst, src := range macShims {
		b, err := macFS.ReadFile("macos/" + src)
		if err != nil {
			panic(fmt.Sprintf("persona: embedded shim %s: %v", src, err)) // a build defect
		}
		out = append(out, File{Path: dst, Mode: 0o755, Content: b})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// IsShim reports whether an executed path is one of a persona's recording
// shims, and the command it stands for. Rules use it to tell a macOS tool
// emulated by the sandbox from anything else.
func IsShim(execPath string) (command string, ok bool) {
	if _, ok := macShims[path.Clean(execPath)]; !ok {
		return "", false
	}
	return path.Base(execPath), true
}

// Env returns the persona's environment defaults for the user's processes
// (PATH, SHELL, and variables the system sets). Linux returns nil:
// canaryfs's defaults stand.
func Env(name string) []string {
	if name != MacOS {
		return nil
	}
	return []string{
		"SHELL=/bin/zsh",
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		"__CF_USER_TEXT_ENCODING=0x1F5:0x0:0x0",
		"COMMAND_MODE=unix2003",
		"XPC_FLAGS=0x0",
	}
}
