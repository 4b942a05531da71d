package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sandboxctl/sandboxctl/agent/llm"
)

func init() {
	register(command{name: "check", short: "check the Docker engine and the model provider", run: runCheck})
}

const checkSynopsis = `[flags]

Checks that the Docker engine answers and, when a model is given, that the
provider lists it and that it calls tools (one tiny request).

Examples:
  sandboxctl check
  OPENAI_API_KEY=... sandboxctl check --provider openai --model gpt-4o-mini
  sandboxctl check --provider ollama --model qwen2.5:7b`

func runCheck(ctx context.Context, e env, args []string) int {
	var f traceFlags
	fs := newFlags(e, "check", checkSynopsis)
	f.register(fs, onlyFlags("provider", "model", "base-url", "api-key-env"))
	noDocker := fs.Bool("no-docker", false, "skip the Docker engine check")
	if code, ok := parseFlags(fs, interspersed(fs, args)); !ok {
		return code
	}
	failed := false
	if !*noDocker {
		rt, ok := openDocker(ctx, e)
		if ok {
			fmt.Fprintf(e.stdout, "docker: ok (API %s)\n", rt.APIVersion())
			rt.Close()
		} else {
			failed = true
		}
	}
	if f.model != "" || f.provider != "" || f.baseURL != "" {
		f.driver = "llm"
		f.timeout, f.toolTimeout, f.turns, f.memory, f.pids, f.cpus = time.Minute, time.Minute, 1, 1<<30, 64, 1
		p, err := f.plan(e, "-", time.Now())
		if err != nil {
			e.errorf("%v", err)
			return exitUsage
		}
		cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		res, err := llm.Check(cctx, llm.Config{Provider: p.Driver.Provider, BaseURL: p.Driver.BaseURL, Model: p.Driver.Model, APIKey: p.Driver.APIKey})
		if err != nil {
			e.errorf("%v", err)
			failed = true
		} else {
			found := "not listed"
			switch {
			case !res.ModelsListed:
				found = "endpoint has no model listing"
			case res.ModelFound:
				found = "listed"
			}
			fmt.Fprintf(e.stdout, "provider: %s at %s: model %s %s; tools supported: %t (%.1fs)\n",
				res.Provider, res.BaseURL, res.Model, found, res.ToolsSupported, res.Latency.Seconds())
			for _, n := range res.Notes {
				fmt.Fprintf(e.stdout, "  note: %s\n", n)
			}
			if !res.ToolsSupported {
				e.warnf("the model answered without calling the tool: traces with it will exercise little")
			}
		}
	}
	if failed {
		return exitFailed
	}
	return exitClean
}
