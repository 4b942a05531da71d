package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/userrules"
)

func init() {
	register(command{name: "rules", short: "list the detection rules, or explain one", run: runRules})
}

const rulesSynopsis = `[flags] list | explain ID | check DIR...

list prints every rule: id, severity, confidence, harm class and title, the
built-in ones, then the user's (~/.config/sandboxctl/rules and --rules DIR).
explain prints one built-in rule: what it looks for, the evidence it reads,
the rules it builds on, the harm it can prove and the benign look-alikes it
is tested on. check validates rule files (docs/rules.md) and prints every
problem as FILE:LINE: what is wrong. Verdict policy: docs/verdicts.md.

Examples:
  sandboxctl rules list
  sandboxctl rules list --format json
  sandboxctl rules explain SBX-EXEC-001
  sandboxctl rules check examples/rules`

func runRules(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "rules", rulesSynopsis)
	format := fs.String("format", "text", "text or json")
	rulesDir := fs.String("rules", "", "list: also the user rules of DIR (*.yaml)")
	if code, ok := parseFlags(fs, interspersed(fs, args)); !ok {
		return code
	}
	if *format != "text" && *format != "json" {
		e.errorf("unknown format %q (want text or json)", *format)
		return exitUsage
	}
	switch {
	case fs.NArg() >= 2 && fs.Arg(0) == "check":
		set, err := userrules.LoadDirs(fs.Args()[1:], false)
		if err != nil {
			var errs userrules.Errors
			if errors.As(err, &errs) {
				for _, x := range errs {
					e.errorf("%v", x)
				}
			} else {
				e.errorf("%v", err)
			}
			return exitFindings
		}
		for _, r := range set.Rules {
			fmt.Fprintf(e.stdout, "%s:%d: %s (%s, on %s) ok\n", r.File, r.Line, r.ID, r.Severity, r.On)
		}
		fmt.Fprintf(e.stderr, "sandboxctl: %d rule(s), all valid\n", len(set.Rules))
		return exitClean
	case fs.NArg() == 1 && fs.Arg(0) == "list":
		cat := rules.Catalog()
		urules, ok := loadUserRules(e, *rulesDir)
		if !ok {
			return exitUsage
		}
		for _, r := range urules.Rules {
			cat = append(cat, rules.Rule{ID: r.ID, Title: r.Title, Family: "user", Severity: r.Severity, Confidence: r.Confidence,
				Technique: r.Technique, Help: r.Description, Harm: r.Harm, Needs: []string{fmt.Sprintf("%s:%d", r.File, r.Line)}})
		}
		if *format == "json" {
			return writeRulesJSON(e, cat)
		}
		for _, r := range cat {
			harm := string(r.Harm)
			if harm == "" {
				harm = "-"
			}
			fmt.Fprintf(e.stdout, "%-16s %-8s %-6s %-19s %s\n", r.ID, r.Severity, r.Confidence, harm, r.Title)
		}
		return exitClean
	case fs.NArg() == 2 && fs.Arg(0) == "explain":
		r, ok := rules.Lookup(strings.ToUpper(fs.Arg(1)))
		if !ok {
			e.errorf("unknown rule %q", fs.Arg(1))
			e.hintf("sandboxctl rules list shows every rule id")
			return exitUsage
		}
		if *format == "json" {
			return writeRulesJSON(e, r)
		}
		explainRule(e.stdout, r)
		return exitClean
	}
	e.errorf("rules needs list, explain and a rule id, or check and a folder")
	return exitUsage
}

func writeRulesJSON(e env, v any) int {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		e.errorf("write rules: %v", err)
		return exitFailed
	}
	return exitClean
}

func explainRule(w io.Writer, r rules.Rule) {
	harm := "none: at most suspicious"
	if r.Harm != rules.HarmNone {
		harm = string(r.Harm) + ": can make a trace malicious"
	}
	fmt.Fprintf(w, "%s  %s\n\n", r.ID, r.Title)
	fmt.Fprintf(w, "  family      %s\n  severity    %s (confidence %s)\n  harm        %s\n  ATT&CK      %s\n",
		r.Family, r.Severity, r.Confidence, harm, r.Technique)
	if len(r.Needs) > 0 {
		fmt.Fprintf(w, "  evidence    %s\n", strings.Join(r.Needs, "; "))
	}
	if len(r.After) > 0 {
		fmt.Fprintf(w, "  builds on   %s\n", strings.Join(r.After, ", "))
	}
	fmt.Fprintf(w, "\n%s\n", wrap(r.Help, 78, ""))
	if len(r.Twins) > 0 {
		fmt.Fprintf(w, "\nBenign look-alikes it is tested on:\n")
		for _, t := range r.Twins {
			fmt.Fprintf(w, "%s\n", wrap(t, 78, "  - "))
		}
	}
}

// wrap fills text to width, the first line after prefix and the others
// indented to match.
func wrap(text string, width int, prefix string) string {
	indent := strings.Repeat(" ", len(prefix))
	var b strings.Builder
	line, empty := prefix, true
	for _, w := range strings.Fields(text) {
		if !empty && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line, empty = line+w, false
	}
	b.WriteString(line)
	return b.String()
}
