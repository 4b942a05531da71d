package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/fingerprint"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/server"
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
	listen, data, tokens, image string
	store                       string
	stableAfter                 int
	workers, maxQueue           int
	maxUpload                   int64
	timeout, maxTimeout, drain  time.Duration
	allowBaseURL                bool
}

func runServe(ctx context.Context, e env, args []string) int {
	var f serveFlags
	fs := newFlags(e, "serve", serveSynopsis)
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to listen on (loopback unless --tokens is given)")
	fs.StringVar(&f.data, "data", "", "data folder: state database, skills, run folders (required)")
	fs.StringVar(&f.tokens, "tokens", "", "file of bearer tokens, one caller a line: NAME TOKEN [rate=N] [burst=N] [concurrency=N]")
	fs.IntVar(&f.workers, "workers", server.DefaultWorkers, "traces run at once")
	fs.IntVar(&f.maxQueue, "max-queue", server.DefaultMaxQueue, "traces waiting at most; more are answered 429")
	fs.Int64Var(&f.maxUpload, "max-upload", server.DefaultMaxUpload, "largest request body, bytes")
	fs.DurationVar(&f.timeout, "timeout", orchestrator.DefaultLimits().Timeout, "a trace's deadline when the submission gives none")
	fs.DurationVar(&f.maxTimeout, "max-timeout", server.DefaultMaxTimeout, "the longest deadline a submission may ask for")
	fs.DurationVar(&f.drain, "drain", 2*time.Minute, "on SIGTERM, how long running traces may finish before they are canceled")
	fs.StringVar(&f.image, "image", "", "sandbox image (default: built from the embedded Dockerfile.sandbox)")
	fs.StringVar(&f.store, "store", "", "record each trace in the fingerprint store at PATH (\"default\": ~/.local/share/sandboxctl/fingerprints.db) under the skill's name and the skill_id its caller gives, and compare it with the skill's fingerprint (docs/fingerprints.md)")
	fs.IntVar(&f.stableAfter, "stable-after", fingerprint.DefaultRule.Threshold, "with --store: invocations before a fingerprint may become stable (the last min(5, N) of them clean)")
	fs.BoolVar(&f.allowBaseURL, "allow-base-url", false, "accept a submission's base_url for the llm driver (the server then connects where callers say)")
	if code, ok := parseFlags(fs, interspersed(fs, args)); !ok {
		return code
	}
	switch {
	case f.data == "":
		e.errorf("serve needs --data DIR")
		return exitUsage
	case fs.NArg() > 0:
		e.errorf("serve takes no arguments, got %q", fs.Arg(0))
		return exitUsage
	case f.workers < 1 || f.maxQueue < 1 || f.maxUpload < 1<<10:
		e.errorf("--workers and --max-queue must be at least 1, --max-upload at least 1024")
		return exitUsage
	case f.timeout <= 0 || f.timeout > f.maxTimeout:
		e.errorf("--timeout must be positive and at most --max-timeout (%v)", f.maxTimeout)
		return exitUsage
	}
	var tokens []server.Token
	if f.tokens != "" {
		fh, err := os.Open(f.tokens)
		if err != nil {
			e.errorf("%v", err)
			return exitUsage
		}
		tokens, err = server.ParseTokens(fh)
		fh.Close()
		if err != nil {
			e.errorf("%s: %v", f.tokens, err)
			return exitUsage
		}
	}
	loop, err := loopbackAddr(f.listen)
	if err != nil {
		e.errorf("--listen: %v", err)
		return exitUsage
	}
	if !loop && len(tokens) == 0 {
		e.errorf("--listen %s is not a loopback address: give --tokens FILE so that callers are known", f.listen)
		return exitUsage
	}

	eng, ok := openEngine(ctx, e, f.image)
	if !ok {
		return exitFailed
	}
	defer eng.rt.Close()
	rt, bin, imageID := eng.rt, eng.bin, eng.imageID
	plan := orchestrator.Plan{Image: eng.image, Limits: orchestrator.DefaultLimits()}
	plan.Limits.Timeout = f.timeout
	var logMu sync.Mutex
	logf := func(s string) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(e.stderr, "sandboxctl: %s %s\n", time.Now().UTC().Format(time.RFC3339), oneLine(s))
	}
	runner := &orchestrator.Runner{Runtime: rt, Binary: bin, Version: version(), Log: debugLog(e)}
	// Once, before any trace: otherwise the first traces each wait for it.
	logf("preparing the agent image")
	if _, err := runner.AgentImage(ctx, plan.Image); err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	trace := runner.Run
	if f.store != "" {
		fp, err := openFingerprinted(ctx, e, f.store, f.stableAfter)
		if err != nil {
			e.errorf("%v", err)
			return exitFailed
		}
		defer fp.st.Close()
		trace = func(ctx context.Context, p orchestrator.Plan, dir string) (orchestrator.Outcome, error) {
			return fp.run(ctx, runner, p, dir)
		}
	}
	srv, err := server.New(ctx, server.Config{
		DataDir: f.data,
		Tracer: server.TracerFunc(func(ctx context.Context, p orchestrator.Plan, dir string) (*reports.Report, error) {
			out, err := trace(ctx, p, dir)
			return out.Report, err
		}),
		Cleanup: func(ctx context.Context, id string) error {
			return gcPasses(ctx, rt, id)
		},
		Plan: plan, Version: version(), ImageID: imageID, Tokens: tokens,
		Workers: f.workers, MaxQueue: f.maxQueue, MaxUpload: f.maxUpload, MaxTimeout: f.maxTimeout,
		AllowBaseURL: f.allowBaseURL, Log: logf,
	})
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
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
	if len(tokens) > 0 {
		auth = fmt.Sprintf("%d token(s)", len(tokens))
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
