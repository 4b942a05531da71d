package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func init() {
	register(command{name: "__hold", hidden: true, run: runHold})
}

// runHold is the sandbox container's main process: it reaps orphaned
// children (the container has no other init) and waits to be stopped.
func runHold(ctx context.Context, e env, args []string) int {
	chld := make(chan os.Signal, 16)
	signal.Notify(chld, syscall.SIGCHLD)
	defer signal.Stop(chld)
	for {
		select {
		case <-ctx.Done():
			return exitClean
		case <-chld:
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
		}
	}
}
