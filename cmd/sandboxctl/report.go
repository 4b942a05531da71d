package main

import (
	"context"
	"fmt"

	"github.com/sandboxctl/sandboxctl/reports"
)

func init() {
	register(command{name: "report", short: "show a run's report, or rerun the rules on its stored events", run: runReport})
}

const reportSynopsis = `[flags] RUN

Prints the report of the run folder RUN. With --reprocess, reruns the rules on
the run's stored events (events.jsonl) without running anything, and rewrites
the run's reports.

Examples:
  sandboxctl report runs/20261123-101500-ab12cd-hello-world
  sandboxctl report --format html runs/X > report.html
  sandboxctl report --reprocess runs/X`

func runReport(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "report", reportSynopsis)
	format := fs.String("format", "text", "text, json, sarif or html")
	reprocess := fs.Bool("reprocess", false, "rerun the rules on the stored events and rewrite the reports")
	failOnS := fs.String("fail-on", "high", "exit 1 on findings at or above this severity, or never")
	verbose := fs.Bool("verbose", false, "text format: every finding with its evidence and every token, not only the incidents")
	rulesDir := fs.String("rules", "", "with --reprocess: also run the rule files (*.yaml) of DIR, besides the built-in rules and those of ~/.config/sandboxctl/rules")
	if code, ok := parseFlags(fs, interspersed(fs, args)); !ok {
		return code
	}
	if fs.NArg() != 1 {
		e.errorf("report needs exactly one run folder")
		return exitUsage
	}
	if !validFormat(*format) {
		e.errorf("unknown format %q (want text, json, sarif or html)", *format)
		return exitUsage
	}
	failOn, err := parseFailOn(*failOnS)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	dir := fs.Arg(0)
	var rep *reports.Report
	if *rulesDir != "" && !*reprocess {
		e.errorf("--rules needs --reprocess: the stored report holds the rules it ran with")
		return exitUsage
	}
	if *reprocess {
		urules, ok := loadUserRules(e, *rulesDir)
		if !ok {
			return exitUsage
		}
		rep, err = reports.Reprocess(dir, reports.ReprocessOptions{Options: reports.Options{Extra: urules.Extra()}})
		if err == nil {
			err = reports.WriteRunDir(dir, rep, nil)
		}
	} else {
		rep, err = reports.Load(dir)
	}
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	if err := writeFormat(e.stdout, rep, *format, textStyle{color: e.isTerminal != nil && e.isTerminal(), verbose: *verbose}); err != nil {
		e.errorf("write report: %v", err)
		return exitFailed
	}
	if *reprocess {
		fmt.Fprintf(e.stderr, "sandboxctl: reprocessed %s: %d findings, verdict %s\n", dir, len(rep.Findings), rep.Verdict)
	}
	if reportFails(rep, failOn) {
		return exitFindings
	}
	return exitClean
}
