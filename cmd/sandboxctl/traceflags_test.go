package main

import (
	"flag"
	"io"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/traceplan"
)

// wantFlags are the flags of the commands that trace, with their
// defaults, as they were before the trace flags were registered once: a
// command gains or loses none, and no default moves.
var wantFlags = map[string]map[string]string{
	"trace": {
		"api-key-env": "", "base-url": "", "clock": "", "cpus": "1", "dns": "", "driver": "", "dry-run": "false",
		"engine-diff": "false", "fail-on": "high", "format": "text", "grace": "8s", "hostname": "", "image": "",
		"include-secrets": "false", "keep": "false", "memory": "2147483648", "model": "", "monitoring": "",
		"network-config": "", "out": "", "persona": "linux", "pids": "512", "prompt": "", "provider": "",
		"rules": "", "seed": "", "skill-id": "", "stable-after": "10", "stealth": "false", "stealth-auto": "true",
		"store": "", "time-zone": "", "timeout": "5m0s", "tokens": "200000", "tool-timeout": "2m0s",
		"trace-id": "", "transcript": "", "turns": "50", "twins": "auto", "user": "", "verbose": "false",
	},
	"eval": {
		"api-key-env": "", "attempts": "3", "backoff": "10s", "base-url": "", "check": "false", "commit": "",
		"cpus": "1", "driver": "", "engine-diff": "false", "force": "false", "image": "", "json": "",
		"keep-runs": "", "memory": "2147483648", "model": "", "network-config": "", "only": "", "parallel": "2",
		"pids": "512", "prompt": "", "provider": "", "rescore": "", "resume": "false", "rules": "", "sample": "0",
		"sample-seed": "sandboxctl-eval-1", "stealth": "false", "stealth-auto": "true", "timeout": "5m0s",
		"tokens": "200000", "tool-timeout": "2m0s", "turns": "50", "twins": "auto", "update-doc": "",
	},
	"sweep": {
		"api-key-env": "", "attempts": "3", "backoff": "10s", "base-url": "", "budget": "0s", "cpus": "1",
		"driver": "", "engine-diff": "false", "force": "false", "image": "", "lease": "1m0s",
		"max-entries": "10000", "memory": "2147483648", "model": "", "network-config": "", "out": "",
		"parallel": "2", "pids": "512", "prompt": "", "provider": "", "resume": "false", "rules": "", "shard": "",
		"stable-after": "10", "stealth": "false", "stealth-auto": "true", "store": "", "timeout": "5m0s",
		"tokens": "200000", "tool-timeout": "2m0s", "trace-prefix": "sweep", "turns": "50", "twins": "auto",
		"warm": "0",
	},
	"monitor": {
		"candidates": "3", "cells": "chained,independent", "driver": "literal", "format": "text", "image": "",
		"out": "", "prompt": "", "replay": "true", "runs": "5", "seed": "", "tier": "auto", "time-zone": "",
		"timeout": "5m0s", "transcript": "", "vary": "", "warm": "1",
	},
	"serve": {
		"allow-base-url": "false", "data": "", "drain": "2m0s", "image": "", "listen": "127.0.0.1:8080",
		"max-queue": "64", "max-timeout": "15m0s", "max-upload": "16777216", "stable-after": "10", "store": "",
		"timeout": "5m0s", "tokens": "", "workers": "2",
	},
}

// commandFlagSets registers each tracing command's flags as it does.
func commandFlagSets() map[string]*flag.FlagSet {
	sets := map[string]*flag.FlagSet{}
	add := func(name string, register func(*flag.FlagSet)) {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		register(fs)
		sets[name] = fs
	}
	add("trace", func(fs *flag.FlagSet) { new(traceCmd).register(fs) })
	add("eval", func(fs *flag.FlagSet) { new(evalFlags).register(fs) })
	add("sweep", func(fs *flag.FlagSet) { new(sweepFlags).register(fs) })
	add("monitor", func(fs *flag.FlagSet) { new(monitorFlags).register(fs) })
	add("serve", func(fs *flag.FlagSet) { new(serveFlags).register(fs) })
	return sets
}

func TestTraceFlagsPerCommand(t *testing.T) {
	for name, fs := range commandFlagSets() {
		got := map[string]string{}
		fs.VisitAll(func(f *flag.Flag) { got[f.Name] = f.DefValue })
		want := wantFlags[name]
		for _, n := range slices.Sorted(maps.Keys(want)) {
			if d, ok := got[n]; !ok {
				t.Errorf("%s lost --%s", name, n)
			} else if d != want[n] {
				t.Errorf("%s --%s defaults to %q, want %q", name, n, d, want[n])
			}
		}
		for _, n := range slices.Sorted(maps.Keys(got)) {
			if _, ok := want[n]; !ok {
				t.Errorf("%s gained --%s", name, n)
			}
		}
	}
}

// TestTraceFlagsHelp: a flag shared by commands says the same but for the
// words of what it applies to, and names only the driver values the
// command takes.
func TestTraceFlagsHelp(t *testing.T) {
	sets := commandFlagSets()
	usage := func(cmd, name string) string { return sets[cmd].Lookup(name).Usage }
	for cmd, want := range map[string]string{
		"trace":   "who decides the tool calls: literal, llm or replay (default: llm when --model, --provider or --base-url is set, else literal)",
		"eval":    "who decides the tool calls: literal or llm (default: llm when --model, --provider or --base-url is set, else literal)",
		"sweep":   "who decides the tool calls: literal or llm (default: llm when --model, --provider or --base-url is set, else literal)",
		"monitor": "who decides the tool calls, the same in every run: literal or replay",
	} {
		if got := usage(cmd, "driver"); got != want {
			t.Errorf("%s --driver: %q, want %q", cmd, got, want)
		}
	}
	for _, name := range []string{"base-url", "api-key-env", "provider", "model", "tool-timeout", "stealth", "twins", "network-config"} {
		if a, b := usage("trace", name), usage("sweep", name); a != b {
			t.Errorf("--%s: trace says %q, sweep %q", name, a, b)
		}
	}
}

// TestTraceFlagsPlans: what a command has no flag for is in its plans as
// it always was: eval and sweep trace with no grace and no persona (both
// part of a sweep's plan hash), monitor and serve with the default limits.
func TestTraceFlagsPlans(t *testing.T) {
	e := env{getenv: func(string) string { return "" }}
	var ev evalFlags
	ev.register(flag.NewFlagSet("eval", flag.ContinueOnError))
	p, err := ev.trace.plan(e, "skill", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := traceplan.DefaultLimits()
	want.Grace = 0
	if p.Limits != want || p.Persona != "" || p.Stealth != traceplan.StealthAuto || p.Twins != traceplan.TwinsAuto || p.Driver.Kind != traceplan.DriverLiteral {
		t.Errorf("eval plan: limits %+v persona %q stealth %q twins %q driver %q", p.Limits, p.Persona, p.Stealth, p.Twins, p.Driver.Kind)
	}

	var mon monitorFlags
	mon.register(flag.NewFlagSet("monitor", flag.ContinueOnError))
	if p, err = mon.trace.plan(e, "skill", time.Now()); err != nil {
		t.Fatal(err)
	}
	if p.Limits != traceplan.DefaultLimits() || p.Persona != "" || p.Driver.Kind != traceplan.DriverLiteral || p.Seed != nil {
		t.Errorf("monitor plan: limits %+v persona %q driver %q seed %q", p.Limits, p.Persona, p.Driver.Kind, p.Seed)
	}

	var srv serveFlags
	srv.register(flag.NewFlagSet("serve", flag.ContinueOnError))
	if l := srv.trace.limits(); l != traceplan.DefaultLimits() {
		t.Errorf("serve limits %+v, want the defaults", l)
	}

	var tr traceCmd
	tr.register(flag.NewFlagSet("trace", flag.ContinueOnError))
	if p, err = tr.trace.plan(e, "skill", time.Now()); err != nil {
		t.Fatal(err)
	}
	if p.Limits != traceplan.DefaultLimits() || p.Persona != "linux" {
		t.Errorf("trace plan: limits %+v persona %q", p.Limits, p.Persona)
	}
}

// TestTraceFlagsUnknown: an option naming a flag that does not exist is a
// mistake caught at once.
func TestTraceFlagsUnknown(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("register took an unknown flag name")
		}
	}()
	new(traceFlags).register(flag.NewFlagSet("x", flag.ContinueOnError), withoutFlags("no-such-flag"))
}
