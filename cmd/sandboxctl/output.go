package main

import (
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/sandboxctl/sandboxctl/agent/llm"
	"github.com/sandboxctl/sandboxctl/internal/fsutil"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/safetext"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

func validFormat(f string) bool {
	switch f {
	case "text", "json", "sarif", "html":
		return true
	}
	return false
}

// textStyle is how the text format is written: in colour (a terminal),
// verbose (every finding, not only the incidents).
type textStyle struct{ color, verbose bool }

// writeFormat writes the report to w in the chosen format.
func writeFormat(w io.Writer, r *reports.Report, format string, style textStyle) error {
	switch format {
	case "json":
		return reports.WriteJSON(w, r)
	case "sarif":
		return reports.WriteSARIF(w, r)
	case "html":
		return reports.WriteHTML(w, r)
	}
	return reports.WriteText(w, r, reports.TextOptions{Color: style.color, Verbose: style.verbose})
}

// failOn is a severity, or nil for "never".
func parseFailOn(s string) (*rules.Severity, error) {
	if s == "never" || s == "none" {
		return nil, nil
	}
	sev, err := rules.ParseSeverity(s)
	if err != nil {
		return nil, fmt.Errorf("--fail-on: %w", err)
	}
	return &sev, nil
}

func reportFails(r *reports.Report, failOn *rules.Severity) bool {
	return failOn != nil && rules.FailsAt(r.Findings, *failOn)
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}

// selfBinary is this program's own binary, which is copied into the
// containers. It must run there: a static binary always does; a dynamically
// linked one (go run with cgo) only against the image's libc
// (sandboxBinary builds a static copy then).
func selfBinary() (exe string, dynamic bool, err error) {
	exe, err = os.Executable()
	if err != nil {
		return "", false, fmt.Errorf("find own binary: %w", err)
	}
	return elfInfo(exe)
}

// elfInfo checks that the binary at exe is for a sandbox's architecture and
// says whether it is dynamically linked.
func elfInfo(exe string) (string, bool, error) {
	f, err := elf.Open(exe)
	if err != nil {
		return "", false, fmt.Errorf("own binary %s: %w", exe, err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 && f.Machine != elf.EM_AARCH64 {
		return "", false, fmt.Errorf("own binary %s is for %v; the sandbox needs linux/amd64 or arm64", exe, f.Machine)
	}
	dynamic := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			dynamic = true
		}
	}
	return exe, dynamic, nil
}

// skillHint explains the usual reasons a skill is refused.
func skillHint(e env, err error) {
	var se *skill.SymlinkError
	var me *skill.ManifestError
	switch {
	case errors.As(err, &se):
		e.hintf("a skill may not carry links to files outside its folder; copy the file in instead")
	case errors.As(err, &me):
		e.hintf("the frontmatter is the YAML between the first two --- lines")
	case errors.Is(err, os.ErrNotExist):
		e.hintf("give the path of a SKILL.md, a .md file, or a skill folder")
	}
}

// callSummary is a one-line view of a tool call's arguments.
func callSummary(args json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return ""
	}
	for _, k := range []string{"command", "url", "path", "pattern"} {
		if v, ok := m[k].(string); ok {
			return oneLine(v)
		}
	}
	return ""
}

// dryRun validates everything a trace needs without running anything.
func dryRun(ctx context.Context, e env, p traceplan.Plan, sk *skill.Skill) int {
	if p.Driver.Kind == traceplan.DriverLLM {
		cfg := llm.Config{Provider: p.Driver.Provider, BaseURL: p.Driver.BaseURL, Model: p.Driver.Model, APIKey: p.Driver.APIKey, Skill: sk}
		if err := cfg.Validate(); err != nil {
			e.errorf("llm settings: %v", err)
			return exitUsage
		}
	}
	out := struct {
		Plan   traceplan.Plan `json:"plan"`
		Skill  string         `json:"skill"`
		SHA256 string         `json:"sha256"`
		Files  int            `json:"files"`
		Hidden int            `json:"hidden_content"`
	}{p, sk.Name, sk.SHA256, len(sk.Files), len(sk.Hidden)}
	sw := safetext.NewJSONWriter(e.stdout)
	enc := json.NewEncoder(sw)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	if err := sw.Flush(); err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	fmt.Fprintln(e.stderr, "sandboxctl: dry run: skill, plan and provider settings are valid; nothing was run")
	return exitClean
}

// debugLog logs the orchestrator's debug lines to stderr when
// SANDBOXCTL_DEBUG=1, and nothing otherwise.
func debugLog(e env) *slog.Logger {
	if e.getenv("SANDBOXCTL_DEBUG") != "1" {
		return nil
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// devVersion reports whether v is a development build's version: "devel",
// Go's "(devel)" for a build it could not stamp from version control (go
// build of a work tree without its VCS data, go run), or a dirty tree's.
func devVersion(v string) bool {
	return v == "devel" || v == "(devel)" || strings.Contains(v, "dirty")
}

// judgeVersion is the version that enters a result key (sweep.PlanHash):
// version() for a build of a clean tree, whose version names its commit;
// for a development build ("devel", or a tree with uncommitted changes,
// whose version stays the same across edits) the sha256 of this binary
// too, so that a rule edited and rebuilt judges again instead of reusing
// the verdicts of the rules before it.
func judgeVersion() string {
	v := version()
	if !devVersion(v) {
		return v
	}
	exe, err := os.Executable()
	if err != nil {
		return v
	}
	sum, err := fsutil.SHA256(exe)
	if err != nil {
		return v
	}
	return v + "+bin." + sum[:16]
}
