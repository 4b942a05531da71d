package main

// Output policy (after age): results go to stdout; diagnostics go to stderr,
// prefixed "sandboxctl: error:", "sandboxctl: warning:" or "sandboxctl:
// hint:", lowercase, with no final period. Only this package prints, reads
// flags and the environment, and exits.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/sandboxctl/sandboxctl/safetext"
)

// Exit codes (README "Exit codes").
const (
	exitClean    = 0 // ran, nothing at or above --fail-on
	exitFindings = 1 // findings at or above --fail-on
	exitUsage    = 2
	exitFailed   = 3 // sandboxctl itself failed; the report may be partial
)

// inSandboxName is the binary's name inside the containers
// (orchestrator.AgentBin).
const inSandboxName = "agentd"

// env is everything run may take from the process: tests pass their own.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	// isTerminal reports whether stdout is a terminal (nil: never).
	isTerminal func() bool
	// name is the base name the program was run as. As "agentd" (its name
	// inside the sandbox) it runs only the hidden commands and says nothing
	// about itself: no usage, no help, no hint naming sandboxctl.
	name string
}

// Diagnostics often quote what the skill or the sandbox said (a file name,
// a tool server's last words): they are escaped like every report.

func (e env) errorf(format string, a ...any) {
	fmt.Fprintln(e.stderr, "sandboxctl: error: "+safetext.Block(fmt.Sprintf(format, a...), 0))
}

func (e env) warnf(format string, a ...any) {
	fmt.Fprintln(e.stderr, "sandboxctl: warning: "+safetext.Block(fmt.Sprintf(format, a...), 0))
}

func (e env) hintf(format string, a ...any) {
	fmt.Fprintln(e.stderr, "sandboxctl: hint: "+safetext.Block(fmt.Sprintf(format, a...), 0))
}

// A command is one subcommand. Hidden ones run inside the containers.
type command struct {
	name   string
	short  string
	hidden bool
	run    func(ctx context.Context, e env, args []string) int
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

const usageHead = `sandboxctl finds out what an AI-agent skill really does: it runs the skill
under an agent in a throwaway sandbox with a seeded fake home and a network
jail, records every tool call, process, file access and connection, and
reports findings and a verdict.

Usage:
  sandboxctl <command> [flags] [args]

Commands:
`

const usageTail = `
Examples:
  sandboxctl trace examples/skills/hello-world
  sandboxctl trace --driver llm --provider openai --model gpt-4o-mini ./SKILL.md
  sandboxctl report runs/20261123-101500-hello-world --format html > report.html
  sandboxctl gc

Run "sandboxctl <command> -h" for a command's flags.
`

func usage(w io.Writer) {
	io.WriteString(w, usageHead)
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].short)
	}
	io.WriteString(w, usageTail)
}

func run(ctx context.Context, args []string, e env) int {
	if e.getenv == nil {
		e.getenv = func(string) string { return "" }
	}
	if e.name == inSandboxName {
		if len(args) == 0 || !strings.HasPrefix(args[0], "__") || commands[args[0]].run == nil {
			return exitUsage
		}
		return commands[args[0]].run(ctx, e, args[1:])
	}
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(e.stdout)
		return exitClean
	case "-version", "--version":
		args[0] = "version"
	}
	c, ok := commands[args[0]]
	if !ok {
		e.errorf("unknown command %q", args[0])
		if strings.HasPrefix(args[0], "-") {
			e.hintf("flags go after the command, as in: sandboxctl trace %s ...", args[0])
		} else if _, err := os.Stat(args[0]); err == nil {
			e.hintf("to trace a skill, run: sandboxctl trace %s", args[0])
		} else {
			e.hintf(`run "sandboxctl help" for the list of commands`)
		}
		return exitUsage
	}
	return c.run(ctx, e, args[1:])
}

// newFlags returns a FlagSet for a subcommand whose errors and usage go to
// stderr, with a usage text written by hand.
func newFlags(e env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: sandboxctl %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and maps -h and bad flags to exit codes; ok is false
// when the caller should return code.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitClean, false
		}
		return exitUsage, false
	}
	return 0, true
}

// interspersed moves flags found after positional arguments to the front, so
// "sandboxctl trace SKILL --driver llm" works as users expect.
func interspersed(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil {
			if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
				continue
			}
			if i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		}
	}
	return append(flags, pos...)
}
