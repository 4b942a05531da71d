package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/server"
	"github.com/sandboxctl/sandboxctl/traceplan"
	"github.com/sandboxctl/sandboxctl/tracing"
)

func init() {
	register(command{name: "serve", short: "trace skills over an HTTP API, with a small web page", run: runServe})
}

const serveSynopsis = `[flags] --data DIR

Serves the trace pipeline over HTTP: callers submit a skill (a zip or tar
upload, or JSON with its files), poll the trace and fetch its report in four
formats. The API is described at /v1/openapi.json; / is a small web page;
/metrics is in the Prometheus format. An identical skill under identical
options is answered from the earlier result without a new trace.

DIR holds the state database (serve.db), the unpacked skills and the run
folders; nothing is written outside it. A provider key comes with each
submission in the X-Provider-Key header and is held in memory for that trace
only. The server listens on loopback unless --listen says otherwise, and then
only with --tokens: one caller a line, "NAME TOKEN [rate=N] [burst=N]
[concurrency=N]" (docs/serve.md).

On SIGTERM or Ctrl-C it stops taking submissions, gives running traces
--drain to finish, then cancels them and removes their containers; queued
traces resume at the next start.

Examples:
  sandboxctl serve --data /srv/sandboxctl
  sandboxctl serve --listen 0.0.0.0:8080 --tokens /etc/sandboxctl/tokens --data /srv/sandboxctl
  curl -F skill=@skill.zip http://127.0.0.1:8080/v1/traces`

type serveFlags struct {
	trace                traceFlags // the traces' defaults
	listen, data, tokens string
	workers, maxQueue    int
	maxUpload            int64
	maxTimeout, drain    time.Duration
	allowBaseURL         bool

	callers []server.Token // read from --tokens
}

// register adds serve's flags to fs.
func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to listen on (loopback unless --tokens is given)")
	fs.StringVar(&f.data, "data", "", "data folder: state database, skills, run folders (required)")
	fs.StringVar(&f.tokens, "tokens", "", "file of bearer tokens, one caller a line: NAME TOKEN [rate=N] [burst=N] [concurrency=N]")
	fs.IntVar(&f.workers, "workers", server.DefaultWorkers, "traces run at once")
	fs.IntVar(&f.maxQueue, "max-queue", server.DefaultMaxQueue, "traces waiting at most; more are answered 429")
	fs.Int64Var(&f.maxUpload, "max-upload", server.DefaultMaxUpload, "largest request body, bytes")
	fs.DurationVar(&f.maxTimeout, "max-timeout", server.DefaultMaxTimeout, "the longest deadline a submission may ask for")
	fs.DurationVar(&f.drain, "drain", 2*time.Minute, "on SIGTERM, how long running traces may finish before they are canceled")
	fs.BoolVar(&f.allowBaseURL, "allow-base-url", false, "accept a submission's base_url for the llm driver (the server then connects where callers say)")
	// A submission says its driver and may say its deadline: the rest of
	// a trace's settings are the server's.
	f.trace.register(fs, withScope(scopeServe), onlyFlags("image", "timeout", "store", "stable-after"))
}

func runServe(ctx context.Context, e env, args []string) int {
	f, code, ok := parseServe(e, args)
	if !ok {
		return code
	}
	eng, ok := openEngine(ctx, e, f.trace.image)
	if !ok {
		return exitFailed
	}
	defer eng.rt.Close()
	plan := traceplan.Plan{Image: eng.image, Limits: f.trace.limits()}
	var logMu sync.Mutex
	logf := func(s string) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(e.stderr, "sandboxctl: %s %s\n", time.Now().UTC().Format(time.RFC3339), oneLine(s))
	}
	runner := &orchestrator.Runner{Runtime: eng.rt, Binary: eng.bin, Version: version(), Log: debugLog(e)}
	// Once, before any trace: otherwise the first traces each wait for it.
	logf("preparing the agent image")
	if _, err := runner.AgentImage(ctx, plan.Image); err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	var tracer tracing.Tracer = runner
	if f.trace.store != "" {
		fp, err := openFingerprinted(ctx, e, f.trace.store, f.trace.stableAfter)
		if err != nil {
			e.errorf("%v", err)
			return exitFailed
		}
		defer fp.st.Close()
		tracer = fp.tracer(runner)
	}
	srv, err := server.New(ctx, server.Config{
		DataDir: f.data,
		Tracer:  tracer,
		Cleanup: func(ctx context.Context, id string) error {
			return gcPasses(ctx, eng.rt, id)
		},
		Plan: plan, Version: version(), ImageID: eng.imageID, Tokens: f.callers,
		Workers: f.workers, MaxQueue: f.maxQueue, MaxUpload: f.maxUpload, MaxTimeout: f.maxTimeout,
		AllowBaseURL: f.allowBaseURL, Log: logf,
	})
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	return f.serve(ctx, e, srv, logf)
}

// parseServe reads serve's command line and its --tokens file; ok is
// false when the caller should return code.
func parseServe(e env, args []string) (f serveFlags, code int, ok bool) {
	fs := newFlags(e, "serve", serveSynopsis)
	f.register(fs)
	if code, ok := parseFlags(fs, interspersed(fs, args)); !ok {
		return f, code, false
	}
	switch {
	case f.data == "":
		e.errorf("serve needs --data DIR")
	case fs.NArg() > 0:
		e.errorf("serve takes no arguments, got %q", fs.Arg(0))
	case f.workers < 1 || f.maxQueue < 1 || f.maxUpload < 1<<10:
		e.errorf("--workers and --max-queue must be at least 1, --max-upload at least 1024")
	case f.trace.timeout <= 0 || f.trace.timeout > f.maxTimeout:
		e.errorf("--timeout must be positive and at most --max-timeout (%v)", f.maxTimeout)
	default:
		if f.readCallers(e) {
			return f, exitClean, true
		}
	}
	return f, exitUsage, false
}

// readCallers reads --tokens and checks that a listener off loopback has
// callers; on a problem it has said what and returns false.
func (f *serveFlags) readCallers(e env) bool {
	if f.tokens != "" {
		fh, err := os.Open(f.tokens)
		if err != nil {
			e.errorf("%v", err)
			return false
		}
		f.callers, err = server.ParseTokens(fh)
		fh.Close()
		if err != nil {
			e.errorf("%s: %v", f.tokens, err)
			return false
		}
	}
	loop, err := loopbackAddr(f.listen)
	if err != nil {
		e.errorf("--listen: %v", err)
		return false
	}
	if !loop && len(f.callers) == 0 {
		e.errorf("--listen %s is not a loopback address: give --tokens FILE so that callers are known", f.listen)
		return false
	}
	return true
}

// serve serves srv's API until ctx is done or the listener fails, then
// drains and closes srv, and returns serve's exit code.
func (f *serveFlags) serve(ctx context.Context, e env, srv *server.Server, logf func(string)) int {
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		srv.Shutdown(context.Background())
		e.errorf("%v", err)
		return exitFailed
	}
	// Traces end through Shutdown, not through the signal: a drain lets
	// them finish.
	srv.Start(context.WithoutCancel(ctx))
	hs := server.NewHTTPServer(f.listen, srv.Handler())
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	auth := "no token (loopback)"
	if len(f.callers) > 0 {
		auth = fmt.Sprintf("%d token(s)", len(f.callers))
	}
	logf(fmt.Sprintf("listening on http://%s (data %s, %d worker(s), %s)", ln.Addr(), f.data, f.workers, auth))

	code := exitClean
	select {
	case <-ctx.Done():
		logf(fmt.Sprintf("stopping: running traces get up to %v to finish", f.drain))
	case err := <-served:
		e.errorf("serve: %v", err)
		code = exitFailed
	}
	// Drain with the API up: callers poll and fetch reports, submissions
	// get 503, health says stopping.
	dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), f.drain)
	defer dcancel()
	srv.Drain(dctx)
	hctx, hcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer hcancel()
	if err := hs.Shutdown(hctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		e.warnf("http shutdown: %v", err)
	}
	if err := srv.Close(); err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	logf("stopped")
	return code
}

// loopbackAddr reports whether a listen address is on loopback only.
func loopbackAddr(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

func init() {
	register(command{name: "serve-health", hidden: true, run: runServeHealth})
}

// runServeHealth is the container image's health check (it has no shell
// or curl): GET a loopback health URL, exit 0 on 200.
func runServeHealth(ctx context.Context, e env, args []string) int {
	if len(args) != 1 {
		e.errorf("serve-health needs one URL")
		return exitUsage
	}
	u, err := url.Parse(args[0])
	if err != nil || u.Scheme != "http" {
		e.errorf("serve-health: want an http:// URL on loopback")
		return exitUsage
	}
	if loop, err := loopbackAddr(u.Host); err != nil || !loop {
		e.errorf("serve-health: %s is not on loopback", u.Host)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", u.String(), nil)
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.errorf("health: %s", resp.Status)
		return exitFailed
	}
	return exitClean
}
