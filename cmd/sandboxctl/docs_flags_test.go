package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// commandFlags returns each visible command's flags, read from its -h
// output (the hidden commands run inside the containers and are not
// documented).
func commandFlags(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	flagLine := regexp.MustCompile(`(?m)^  -([a-z0-9][a-z0-9-]*)`)
	for name, c := range commands {
		if c.hidden {
			continue
		}
		var stderr bytes.Buffer
		run(t.Context(), []string{name, "-h"}, env{stdout: &bytes.Buffer{}, stderr: &stderr})
		out[name] = nil
		for _, m := range flagLine.FindAllStringSubmatch(stderr.String(), -1) {
			out[name] = append(out[name], m[1])
		}
	}
	// Subcommands with flags of their own.
	for _, sc := range [][2]string{{"sweep", "export"}, {"sweep", "merge"}} {
		var stderr bytes.Buffer
		run(t.Context(), []string{sc[0], sc[1], "-h"}, env{stdout: &bytes.Buffer{}, stderr: &stderr})
		name := sc[0] + " " + sc[1]
		out[name] = []string{}
		for _, m := range flagLine.FindAllStringSubmatch(stderr.String(), -1) {
			out[name] = append(out[name], m[1])
		}
		if len(out[name]) == 0 {
			t.Fatalf("sandboxctl %s -h lists no flags:\n%s", name, stderr.String())
		}
	}
	return out
}

// otherTools are flags the docs name that belong to other programs, each
// with where: they are not sandboxctl's.
var otherTools = map[string]string{
	"network":         "docker run --network none (docs/sandbox.md)",
	"cap-drop":        "docker run --cap-drop ALL (docs/sandbox.md)",
	"seccomp-bpf":     "strace --seccomp-bpf (docs/performance.md, docs/sandbox.md)",
	"output":          "a skill's own -o/--output (docs/drivers.md)",
	"cluster-name":    "a placeholder in a skill's command (docs/drivers.md)",
	"version":         "a vendor CLI stub answers --version (docs/sandbox.md, docs/verdicts.md)",
	"help":            "a vendor CLI stub answers --help (docs/sandbox.md)",
	"force-unsafe-io": "dpkg --force-unsafe-io in the image build (docs/performance.md)",
}

var (
	codeSpan  = regexp.MustCompile("`([^`\n]+)`")
	flagRe    = regexp.MustCompile(`(?:^|\s)--([a-z][a-z0-9-]*)`)
	invokeRe  = regexp.MustCompile(`(?:^|[\s(/])sandboxctl\s+([a-z]+(?:\s+(?:export|merge)\b)?)`)
	fenceRe   = regexp.MustCompile("(?ms)^```[a-z]*\n(.*?)^```")
	lineJoins = strings.NewReplacer("\\\n", " ")
)

// TestDocsFlagsExist: every flag the README and docs/*.md name exists. A
// flag in a command line (sandboxctl CMD ... --flag, in a code span or a
// code block) must be one of CMD's; a flag alone in a code span (the flag
// tables) must be one of some command's, or another program's listed in
// otherTools.
func TestDocsFlagsExist(t *testing.T) {
	flags := commandFlags(t)
	all := map[string]bool{}
	for _, fs := range flags {
		for _, f := range fs {
			all[f] = true
		}
	}
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../README.md", "../../examples/skills/README.md")
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		var snippets []string
		for _, m := range fenceRe.FindAllStringSubmatch(text, -1) {
			snippets = append(snippets, strings.Split(lineJoins.Replace(m[1]), "\n")...)
		}
		for _, m := range codeSpan.FindAllStringSubmatch(fenceRe.ReplaceAllString(text, ""), -1) {
			snippets = append(snippets, m[1])
		}
		for _, s := range snippets {
			if i := strings.Index(s, " #"); i >= 0 { // a shell comment
				s = s[:i]
			}
			inv := invokeRe.FindAllStringSubmatchIndex(s, -1)
			for _, fm := range flagRe.FindAllStringSubmatchIndex(s, -1) {
				name := s[fm[2]:fm[3]]
				// the command this flag follows, if any
				cmd := ""
				for _, iv := range inv {
					if iv[1] <= fm[0] {
						cmd = strings.Join(strings.Fields(s[iv[2]:iv[3]]), " ")
					}
				}
				checked++
				switch {
				case cmd != "":
					fs, ok := flags[cmd]
					if !ok {
						t.Errorf("%s: `%s` runs sandboxctl %s, which is not a command", file, s, cmd)
					} else if !slices.Contains(fs, name) {
						t.Errorf("%s: `%s` names --%s, which sandboxctl %s does not have (it has %s)", file, s, name, cmd, strings.Join(fs, ", "))
					}
				case len(inv) == 0 && strings.HasPrefix(strings.TrimSpace(s), "--"):
					if !all[name] && otherTools[name] == "" {
						t.Errorf("%s: `%s` names --%s, which no sandboxctl command has", file, s, name)
					}
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d flags found in the docs: the scan is broken", checked)
	}
}

// TestDocsFlagsCatches: the scan finds a made-up flag in each form.
func TestDocsFlagsCatches(t *testing.T) {
	flags := commandFlags(t)
	names := make([]string, 0, len(flags))
	for n := range flags {
		names = append(names, n)
	}
	sort.Strings(names)
	if !slices.Contains(names, "trace") || !slices.Contains(flags["trace"], "format") || slices.Contains(flags["trace"], "include-canary-values") {
		t.Errorf("commands %v, trace flags %v: -h output not read as expected", names, flags["trace"])
	}
	s := "sandboxctl trace --include-canary-values ./x"
	inv := invokeRe.FindStringSubmatch(s)
	fm := flagRe.FindStringSubmatch(s)
	if inv == nil || inv[1] != "trace" || fm == nil || fm[1] != "include-canary-values" {
		t.Errorf("scan of %q: command %v flag %v", s, inv, fm)
	}
}
