package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"sandboxctl": func() {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			code := run(ctx, os.Args[1:], env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv})
			stop()
			os.Exit(code)
		},
	})
}

// TestScripts runs the CLI scenarios in testdata/script. None of them needs
// a Docker engine (the end-to-end tests in e2e_*_test.go do, through
// testenv.RequireDocker); the "short" condition is true under -short.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "short":
				return testing.Short(), nil
			}
			return false, nil
		},
	})
}
