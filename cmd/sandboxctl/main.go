// Command sandboxctl runs an AI-agent skill in a throwaway, instrumented
// sandbox and reports what it really did. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"golang.org/x/term"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], env{name: filepath.Base(os.Args[0]), stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv,
		isTerminal: func() bool { return term.IsTerminal(int(os.Stdout.Fd())) && term.IsTerminal(int(os.Stderr.Fd())) }})
	stop()
	os.Exit(code)
}
