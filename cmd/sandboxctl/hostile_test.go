package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs the CLI in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), args, env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr,
		getenv: func(string) string { return "" }})
	return code, stdout.String(), stderr.String()
}

// TestHostileSkillInputs: inputs refused before anything runs end with a
// clear message and the usage exit code, and start no container (no engine
// is needed for these; the Docker-backed cases are in e2e_test.go).
func TestHostileSkillInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	binary := write("bin/SKILL.md", []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00"))
	big := write("big/SKILL.md", bytes.Repeat([]byte("padding line of a very large skill\n"), 50<<20/35))
	badFM := write("badfm/SKILL.md", []byte("---\nname: x\ndescription: [unclosed\n---\n# body\n"))
	shadow := filepath.Join(dir, "shadow")
	os.MkdirAll(shadow, 0o755)
	write("shadow/SKILL.md", []byte("# reads\n\nSee notes.txt\n"))
	if err := os.Symlink("/etc/shadow", filepath.Join(shadow, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	homeLink := filepath.Join(dir, "homelink")
	os.MkdirAll(homeLink, 0o755)
	write("homelink/SKILL.md", []byte("# x\n"))
	realHome, _ := os.UserHomeDir()
	if err := os.Symlink(realHome, filepath.Join(homeLink, "home")); err != nil {
		t.Fatal(err)
	}
	empty := write("empty/SKILL.md", nil)

	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{name: "path does not exist", args: []string{"trace", filepath.Join(dir, "nope")}, want: "no such file"},
		{name: "binary file", args: []string{"trace", binary}, want: "not a text"},
		{name: "50 MB skill", args: []string{"trace", big}, want: "cap"},
		{name: "symlink to /etc/shadow", args: []string{"trace", shadow}, want: "symlink"},
		{name: "symlink to the real home", args: []string{"trace", homeLink}, want: "symlink"},
		{name: "invalid frontmatter", args: []string{"trace", badFM}, want: "line"},
		{name: "empty skill", args: []string{"trace", empty}, want: "empty"},
		{name: "two paths", args: []string{"trace", badFM, big}, want: "exactly one"},
		{name: "bad fail-on", args: []string{"trace", "--fail-on", "severe", badFM}, want: "fail-on"},
		{name: "bad format", args: []string{"trace", "--format", "pdf", badFM}, want: "format"},
		{name: "llm without key", args: []string{"trace", "--driver", "llm", "--model", "m", badFM}, want: "OPENAI_API_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitUsage, stderr)
			}
			if !strings.HasPrefix(stderr, "sandboxctl: error: ") || !strings.Contains(strings.ToLower(stderr), strings.ToLower(tt.want)) {
				t.Errorf("stderr = %q, want a sandboxctl error mentioning %q", stderr, tt.want)
			}
			if strings.Contains(stderr, "panic") {
				t.Errorf("panic: %s", stderr)
			}
		})
	}
}

// TestDryRun validates without running: no engine needed.
func TestDryRun(t *testing.T) {
	code, stdout, stderr := runCLI(t, "trace", "--dry-run", "../../examples/skills/hello-world")
	if code != exitClean {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{`"kind": "literal"`, `"skill": "hello-world"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestSilentAsAgentd: run under its in-sandbox name, the binary answers no
// help, usage or unknown command with anything that names it.
func TestSilentAsAgentd(t *testing.T) {
	for _, args := range [][]string{nil, {"--help"}, {"-h"}, {"help"}, {"version"}, {"trace", "x"}, {"nope"}, {"__nope"}} {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), args, env{name: inSandboxName, stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr,
			getenv: func(string) string { return "" }})
		if code != exitUsage || stdout.Len()+stderr.Len() > 0 {
			t.Errorf("agentd %q: exit %d, stdout %q, stderr %q; want exit %d and silence", args, code, stdout.String(), stderr.String(), exitUsage)
		}
	}
}
