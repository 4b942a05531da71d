package main

import (
	"context"
	"fmt"
	"runtime/debug"
)

func init() {
	register(command{name: "version", short: "print the version", run: runVersion})
}

func runVersion(ctx context.Context, e env, args []string) int {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " " + s.Value[:12]
			}
		}
	}
	fmt.Fprintf(e.stdout, "sandboxctl %s\n", v)
	return exitClean
}
