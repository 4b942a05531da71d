package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/mcptools"
)

// The hidden commands the sandbox runs: the MCP tool server (root, on a
// docker exec -i stream), the shim and the file tools it runs as the user
// under strace, and the end-of-trace flush of the tracers.
func init() {
	register(command{name: "__mcp", hidden: true, run: runMCP})
	register(command{name: "__flush", hidden: true, run: runFlush})
	register(command{name: "__shim", hidden: true, run: runShim})
	register(command{name: "__tool", hidden: true, run: runTool})
	register(command{name: "__freeze", hidden: true, run: runFreeze})
	register(command{name: "__ps", hidden: true, run: runPS})
	register(command{name: "__evidence", hidden: true, run: runEvidence})
	register(command{name: "__settle", hidden: true, run: runSettle})
}

// runEvidence ends the skill's processes (with --freeze-uid) and the
// tracers, and writes the trace's evidence from inside
// the sandbox (the home's file identities, the root file-system changes,
// the syscall logs, the changed files, the cgroup's counters and the
// places' use) as one tar stream on stdout: the collection's one exec.
func runEvidence(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "__evidence", "[flags]")
	var cfg mcptools.EvidenceConfig
	var changed string
	fs.StringVar(&cfg.LogDir, "log-dir", "", "per-call strace logs: tracers ended and logs archived (empty: none)")
	fs.StringVar(&cfg.Home, "home", "", "home whose file identities are listed (empty: none)")
	fs.StringVar(&cfg.Stamp, "stamp", "", "the stamp file: changes are after its modification time")
	fs.StringVar(&cfg.Writable, "writable", "", "list of the places the root scan walks (absent: /)")
	fs.StringVar(&changed, "changed", "", "comma-separated roots whose changed files are copied out")
	fs.IntVar(&cfg.MaxFiles, "max-files", 500, "changed files copied out at most")
	fs.StringVar(&cfg.Cgroup, "cgroup", "", "the cgroup folder whose counters are archived first (empty: none)")
	var places string
	fs.StringVar(&places, "places", "", "comma-separated mount points whose use is archived")
	var fz mcptools.FreezeConfig
	fs.IntVar(&fz.UID, "freeze-uid", -1, "first end the processes of this uid as __freeze does (-1: none)")
	fs.DurationVar(&fz.Grace, "grace", 0, "with -freeze-uid: the longest wait for them to end by themselves")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fz.UID >= 0 {
		fz.LogDir = cmp.Or(cfg.LogDir, mcptools.DefaultLogDir)
		cfg.Freeze = &fz
	}
	if changed != "" {
		cfg.Changed = strings.Split(changed, ",")
	}
	if places != "" {
		cfg.Places = strings.Split(places, ",")
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second+fz.Grace)
	defer cancel()
	w := bufio.NewWriterSize(e.stdout, 256<<10)
	warn, err := mcptools.Evidence(ctx, cfg, w)
	if err == nil {
		err = w.Flush()
	}
	if warn != nil {
		e.warnf("%v", warn) // what could not be read; the rest is sent
	}
	if err != nil {
		e.errorf("write evidence: %v", err)
		return exitFailed
	}
	return exitClean
}

// runSettle gives the home lived-in access times and prints the identity
// of each of its files: the end of a sandbox's setup.
func runSettle(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "__settle", "--home DIR")
	home := fs.String("home", "", "the home folder")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *home == "" {
		e.errorf("__settle: --home is required")
		return exitUsage
	}
	mcptools.Settle(e.stdout, *home)
	return exitClean
}

// runPS lists the skill's processes (one JSON line each, on stdout) until
// its stdin closes: the unwatched pass's process sampling.
func runPS(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "__ps", "[flags]")
	var cfg mcptools.SampleConfig
	fs.IntVar(&cfg.UID, "uid", mcptools.DefaultUID, "uid of the skill's processes")
	fs.DurationVar(&cfg.Every, "every", 100*time.Millisecond, "how often to list them")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// Ends at EOF on stdin (the orchestrator closes it), or when the
		// process exits.
		_, _ = io.Copy(io.Discard, e.stdin)
		cancel()
	}()
	enc := json.NewEncoder(e.stdout)
	if err := mcptools.Sample(ctx, cfg, func(s mcptools.Sampled) error { return enc.Encode(s) }); err != nil {
		e.errorf("list processes: %v", err)
		return exitFailed
	}
	return exitClean
}

// runFreeze ends the skill's processes still running after the last call:
// it waits up to --grace for them, then stops, records (one JSON line
// each, on stdout) and kills them.
func runFreeze(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "__freeze", "[flags]")
	var cfg mcptools.FreezeConfig
	fs.IntVar(&cfg.UID, "uid", mcptools.DefaultUID, "uid of the skill's processes")
	fs.StringVar(&cfg.LogDir, "log-dir", mcptools.DefaultLogDir, "where per-call strace logs go")
	fs.DurationVar(&cfg.Grace, "grace", 0, "longest wait for them to end by themselves")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	left, err := mcptools.Freeze(ctx, cfg)
	enc := json.NewEncoder(e.stdout)
	for _, l := range left {
		if werr := enc.Encode(l); werr != nil {
			e.errorf("write records: %v", werr)
			return exitFailed
		}
	}
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	return exitClean
}

func runMCP(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "__mcp", "[flags]")
	var cfg mcptools.Config
	fs.StringVar(&cfg.User, "user", mcptools.DefaultUser, "user the tools run as")
	fs.IntVar(&cfg.UID, "uid", mcptools.DefaultUID, "its uid")
	fs.IntVar(&cfg.GID, "gid", mcptools.DefaultGID, "its gid")
	fs.StringVar(&cfg.Home, "home", "", "its home (default /home/USER)")
	fs.StringVar(&cfg.LogDir, "log-dir", mcptools.DefaultLogDir, "where per-call strace logs go")
	fs.StringVar(&cfg.Strace, "strace", mcptools.DefaultStrace, "the strace binary")
	fs.BoolVar(&cfg.NoStrace, "no-strace", false, "run tools without strace (tests only)")
	// The unwatched pass's spelling: the tool server's command line is
	// readable by the skill (/proc/PID/cmdline), and "strace" in it is the
	// very tell the pass is there to remove.
	fs.BoolVar(&cfg.NoStrace, "direct", false, "the same as -no-strace")
	fs.IntVar(&cfg.MaxOutput, "max-output", mcptools.DefaultMaxOutput, "bytes kept per stream of a call")
	fs.DurationVar(&cfg.Timeout, "timeout", mcptools.DefaultTimeout, "default timeout of a call")
	fs.DurationVar(&cfg.MaxTimeout, "max-timeout", mcptools.DefaultMaxTimeout, "longest timeout a call may ask for")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if self, err := os.Executable(); err == nil {
		cfg.Self = self
	}
	// The server's own environment (set by the orchestrator on the exec)
	// is the environment of the user's processes, less the seed of
	// reproducible randomness (twin traces), which is the server's alone.
	var err error
	if cfg.Env, cfg.Entropy, err = splitEntropy(os.Environ()); err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	if err := mcptools.Serve(ctx, e.stdin, e.stdout, cfg); err != nil {
		e.errorf("tool server: %v", err)
		return exitFailed
	}
	return exitClean
}

// splitEntropy takes the seed (mcptools.EntropyEnv, hex) out of environ:
// it returns the rest and the seed (nil without one).
func splitEntropy(environ []string) ([]string, []byte, error) {
	var env []string
	var seed []byte
	for _, kv := range environ {
		v, ok := strings.CutPrefix(kv, mcptools.EntropyEnv+"=")
		if !ok {
			env = append(env, kv)
			continue
		}
		s, err := hex.DecodeString(v)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", mcptools.EntropyEnv, err)
		}
		seed = s
	}
	return env, seed, nil
}

func runFlush(ctx context.Context, e env, args []string) int {
	fs := newFlags(e, "__flush", "[--log-dir DIR]")
	dir := fs.String("log-dir", mcptools.DefaultLogDir, "where per-call strace logs go")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := mcptools.Flush(ctx, *dir); errors.Is(err, mcptools.ErrTracersKilled) {
		e.warnf("%v", err) // the logs are complete but for a last line
	} else if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	return exitClean
}

func runShim(ctx context.Context, e env, args []string) int {
	return mcptools.Shim(args, os.Environ(), os.Stdin, os.Stdout, os.Stderr)
}

func runTool(ctx context.Context, e env, args []string) int {
	return mcptools.Tool(ctx, args, e.stdin, e.stdout, e.stderr)
}
