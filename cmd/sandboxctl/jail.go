package main

import (
	"context"
	"encoding/json"
	"os"

	"github.com/sandboxctl/sandboxctl/netcapture"
)

func init() {
	register(command{name: "__jail", hidden: true, run: runJail})
}

// runJail is the jail container's main process: it reads the netcapture
// configuration, routes the namespace into the sinks and streams events on
// stdout until stopped.
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
	if err := netcapture.Run(ctx, cfg, e.stdout); err != nil {
		e.errorf("jail: %v", err)
		return exitFailed
	}
	return exitClean
}
