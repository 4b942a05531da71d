package main

import (
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"syscall"

	"github.com/sandboxctl/sandboxctl/netcapture"
)

func init() {
	register(command{name: "__jail", hidden: true, run: runJail})
}

// runJail is the jail container's main process: it reads the netcapture
// configuration, routes the namespace into the sinks and records events
// until stopped (SIGTERM: the sinks stop, requests still open are recorded
// and the event log is closed). SIGUSR1 closes the event log and keeps the
// sinks serving, for a jail kept after its trace.
func runJail(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "__jail", "--config FILE")
	path := fs.String("config", "/run/agentd/jail.json", "netcapture configuration")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	b, err := os.ReadFile(*path)
	if err != nil {
		e.errorf("read jail config: %v", err)
		return exitFailed
	}
	var cfg netcapture.Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		e.errorf("decode jail config %s: %v", *path, err)
		return exitFailed
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	seal, done := make(chan struct{}), make(chan struct{})
	defer close(done)
	go func() { // ends at the first SIGUSR1 or when runJail returns
		select {
		case <-usr1:
			close(seal)
		case <-done:
		}
	}()
	if err := netcapture.RunWithSeal(ctx, cfg, e.stdout, seal); err != nil {
		e.errorf("jail: %v", err)
		return exitFailed
	}
	return exitClean
}
