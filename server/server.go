package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/fingerprint"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/sweep"
	"github.com/sandboxctl/sandboxctl/traceplan"
	"github.com/sandboxctl/sandboxctl/tracing"
)

// Defaults of Config.
const (
	DefaultWorkers    = 2
	DefaultMaxQueue   = 64
	DefaultMaxUpload  = 16 << 20
	DefaultMaxTimeout = 15 * time.Minute
	// KeyHeader carries the provider key of a submission.
	KeyHeader = "X-Provider-Key"
)

// DefaultArchiveLimits bound what an upload may unpack to.
var DefaultArchiveLimits = sweep.ArchiveLimits{MaxEntries: 2000, MaxFileSize: 8 << 20, MaxTotalSize: 64 << 20}

// Config is the setup of a Server.
type Config struct {
	// DataDir holds the database, the unpacked skills and the run
	// folders; nothing is written outside it.
	DataDir string
	// Tracer runs each trace of Plan (as a submission sets it), writing
	// its run folder in DataDir.
	Tracer tracing.Tracer
	// Cleanup removes what a trace left (its containers, by trace id)
	// after a cancellation or an interruption; nil: nothing.
	Cleanup func(ctx context.Context, traceID string) error
	// Plan is the template of every trace (limits, image, stealth);
	// a submission sets the driver, model, prompt and timeout.
	Plan traceplan.Plan
	// Version and ImageID enter the result key with the plan, as in a
	// sweep.
	Version, ImageID string
	// Tokens are the callers; none: the API takes no token (loopback
	// use).
	Tokens []Token
	// Workers bounds the traces run at once; MaxQueue the traces waiting.
	Workers, MaxQueue int
	// MaxUpload bounds a request body; Archive what it may unpack to.
	MaxUpload int64
	Archive   sweep.ArchiveLimits
	// MaxTimeout bounds a submission's timeout (the agent's budget).
	MaxTimeout time.Duration
	// AllowBaseURL accepts a caller's base_url for the llm driver: the
	// server then connects where its callers say.
	AllowBaseURL bool
	// Log receives one line per event worth keeping (never a key).
	Log func(string)
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	c.Workers = cmp.Or(max(c.Workers, 0), DefaultWorkers)
	c.MaxQueue = cmp.Or(max(c.MaxQueue, 0), DefaultMaxQueue)
	c.MaxUpload = cmp.Or(max(c.MaxUpload, 0), DefaultMaxUpload)
	c.MaxTimeout = cmp.Or(max(c.MaxTimeout, 0), DefaultMaxTimeout)
	if c.Archive == (sweep.ArchiveLimits{}) {
		c.Archive = DefaultArchiveLimits
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = func(string) {}
	}
	if c.Plan.Limits == (traceplan.Limits{}) {
		c.Plan.Limits = traceplan.DefaultLimits()
	}
	return c
}

// A Server is the API and its workers.
type Server struct {
	cfg   Config
	store *Store
	lock  *os.File // the data folder's lock, held until Shutdown
	auth  *auth
	lim   limiter
	anon  Token
	mux   *http.ServeMux
	// handler is mux, guarded by localOnly without tokens.
	handler http.Handler
	m       *metrics

	submitMu  sync.Mutex // a submission's checks and its insert
	extractMu sync.Mutex // unpacking uploads

	mu      sync.Mutex
	keys    map[string]string // trace id -> provider key, until the trace ends
	running map[string]context.CancelCauseFunc
	closing bool

	// testHookQueued, when set (tests), runs right after a submission's
	// trace is inserted as queued, before the answer is written.
	testHookQueued func(id string)

	closeOnce sync.Once
	closeErr  error

	wake    chan struct{}
	stop    chan struct{} // closed by Shutdown: workers claim no more
	workers sync.WaitGroup
	runCtx  context.Context
	runStop context.CancelCauseFunc
}

var (
	errCanceled = errors.New("canceled by DELETE")
	errShutdown = errors.New("the server is stopping")
)

// New locks the data folder (ErrInUse when another server holds it),
// opens its database, marks the traces a stopped process left
// (Store.Recover) and returns the server. Start runs its workers.
func New(ctx context.Context, cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if cfg.DataDir == "" || cfg.Tracer == nil {
		return nil, errors.New("serve: no data folder or no tracer")
	}
	abs, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("serve: data folder: %w", err)
	}
	cfg.DataDir = abs
	for _, d := range []string{"", "tmp", "skills", "runs"} {
		if err := os.MkdirAll(filepath.Join(abs, d), 0o700); err != nil {
			return nil, fmt.Errorf("serve: data folder: %w", err)
		}
	}
	lock, err := lockDir(abs)
	if err != nil {
		return nil, err
	}
	// Uploads a stopped process left half-written.
	if ents, err := os.ReadDir(filepath.Join(abs, "tmp")); err == nil {
		for _, e := range ents {
			os.RemoveAll(filepath.Join(abs, "tmp", e.Name()))
		}
	}
	st, err := OpenStore(ctx, filepath.Join(abs, DBFile))
	if err != nil {
		lock.Close()
		return nil, err
	}
	ids, err := st.Recover(ctx, cfg.Now())
	if err != nil {
		st.Close()
		lock.Close()
		return nil, err
	}
	s := &Server{
		cfg: cfg, store: st, lock: lock, auth: &auth{tokens: cfg.Tokens},
		anon:    Token{Name: "", Rate: 1 << 20, Burst: 1 << 20, Concurrency: 1 << 30},
		keys:    map[string]string{},
		running: map[string]context.CancelCauseFunc{},
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		m:       newMetrics(),
	}
	for _, id := range ids {
		cfg.Log(fmt.Sprintf("trace %s: marked interrupted (the server had stopped)", id))
		if cfg.Cleanup != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			cfg.Cleanup(cctx, id) // best effort: gc by label catches the rest
			cancel()
		}
	}
	s.routes()
	return s, nil
}

// Handler is the API, the metrics and the web page.
func (s *Server) Handler() http.Handler { return s.handler }

// Start runs the workers until Shutdown. ctx bounds their traces.
func (s *Server) Start(ctx context.Context) {
	s.runCtx, s.runStop = context.WithCancelCause(ctx)
	for range s.cfg.Workers {
		s.workers.Add(1)
		go func() {
			defer s.workers.Done()
			s.worker()
		}()
	}
	s.poke()
}

// poke wakes a worker: a trace was queued.
func (s *Server) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Server) worker() {
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		r, err := s.store.ClaimNext(s.runCtx, s.cfg.Now())
		if err != nil {
			if s.runCtx.Err() != nil {
				return
			}
			s.cfg.Log(fmt.Sprintf("claim: %v", err))
		}
		if r == nil {
			select {
			case <-s.stop:
				return
			case <-s.runCtx.Done():
				return
			case <-s.wake:
			case <-time.After(5 * time.Second):
			}
			continue
		}
		s.poke() // another may be queued: pass the word on
		s.run(r)
	}
}

// run traces one claimed record and records its end.
func (s *Server) run(r *Record) {
	s.mu.Lock()
	key := s.keys[r.ID]
	ctx, cancel := context.WithCancelCause(s.runCtx)
	s.running[r.ID] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.running, r.ID)
		delete(s.keys, r.ID) // the key lives for this trace only
		s.mu.Unlock()
		cancel(nil)
	}()

	// A DELETE between the claim and the line above found nothing to
	// cancel: it is seen here, before any container exists.
	if cur, err := s.store.Get(ctx, r.ID); err == nil && cur.Status != StatusRunning {
		return
	}
	start := s.cfg.Now()
	rel := filepath.Join("runs", r.ID)
	dir := filepath.Join(s.cfg.DataDir, rel)
	var rep *reports.Report
	p, err := s.plan(r.Options, key)
	if err == nil {
		p.TraceID, p.SkillPath = r.ID, r.SkillPath
		budget := p.Limits.Timeout + 3*time.Minute
		tctx, tcancel := context.WithTimeoutCause(ctx, budget, fmt.Errorf("over the trace budget of %v", budget))
		s.cfg.Log(fmt.Sprintf("trace %s: running %s (%s)", r.ID, oneLine(r.SkillName), p.Driver.Kind))
		rep, err = s.cfg.Tracer.Trace(tctx, p, dir)
		tcancel()
	}
	// Record on a fresh bounded context: a stopping server still says
	// what became of its traces.
	sctx, scancel := context.WithTimeout(context.WithoutCancel(s.runCtx), 30*time.Second)
	defer scancel()
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, errCanceled):
		s.cleanup(sctx, r.ID)
		s.cfg.Log(fmt.Sprintf("trace %s: canceled", r.ID))
		s.m.finished(StatusCanceled, "", s.cfg.Now().Sub(start))
		return
	case cause != nil:
		s.cleanup(sctx, r.ID)
		if err := s.store.Interrupt(sctx, r.ID, s.cfg.Now()); err != nil {
			s.cfg.Log(err.Error())
		}
		s.cfg.Log(fmt.Sprintf("trace %s: interrupted", r.ID))
		s.m.finished(StatusInterrupted, "", s.cfg.Now().Sub(start))
		return
	}
	o := sweep.OutcomeOf(rep, err)
	o.TraceID, o.FinishedAt = r.ID, s.cfg.Now().UTC()
	o.Error = scrub(o.Error, key)
	if _, serr := os.Stat(dir); serr == nil {
		o.RunDir = rel
	}
	status := StatusDone
	if err != nil || rep == nil {
		status = StatusFailed
		if o.Error == "" {
			o.Error = "the trace produced no report"
		}
	}
	if ferr := s.store.Finish(sctx, r.ID, status, o.RunDir, o, s.cfg.Now()); ferr != nil {
		s.cfg.Log(ferr.Error())
	}
	s.m.finished(status, o.Verdict, s.cfg.Now().Sub(start))
	s.cfg.Log(fmt.Sprintf("trace %s: %s %s", r.ID, status, o.Verdict))
}

// scrub removes a key from text bound for the database: the pipeline
// never puts one in an error, and this makes sure.
func scrub(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[provider key]")
}

func (s *Server) cleanup(ctx context.Context, id string) {
	if s.cfg.Cleanup == nil {
		return
	}
	if err := s.cfg.Cleanup(ctx, id); err != nil {
		s.cfg.Log(fmt.Sprintf("trace %s: cleanup: %v", id, err))
	}
}

// dropKey forgets the provider key of trace id.
func (s *Server) dropKey(id string) {
	s.mu.Lock()
	delete(s.keys, id)
	s.mu.Unlock()
}

// cancelTrace stops a running trace (DELETE); it reports whether one ran.
func (s *Server) cancelTrace(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.keys, id)
	if c, ok := s.running[id]; ok {
		c(errCanceled)
		return true
	}
	return false
}

// Drain stops the workers: no new trace starts and submissions are
// answered 503 (status and reports are still served); running traces are
// given until ctx ends to finish, then canceled and marked interrupted,
// their containers removed by the tracer. Queued traces stay queued for
// the next start, except those whose key was in memory. Close follows.
func (s *Server) Drain(ctx context.Context) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	s.closing = true
	s.mu.Unlock()
	close(s.stop)
	done := make(chan struct{})
	go func() {
		s.workers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		if s.runStop != nil {
			s.runStop(errShutdown)
		}
		<-done // traces end on cancellation: the tracer tears down
	}
	if s.runStop != nil {
		s.runStop(errShutdown)
	}
	s.mu.Lock()
	clear(s.keys)
	s.mu.Unlock()
}

// Close closes the database and gives up the data folder; call it after
// Drain, once the HTTP server has stopped.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.store.Close()
		s.lock.Close()
	})
	return s.closeErr
}

// Shutdown is Drain then Close.
func (s *Server) Shutdown(ctx context.Context) error {
	s.Drain(ctx)
	return s.Close()
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}

// plan is the trace plan of a submission's options, or an apiError.
func (s *Server) plan(o Options, key string) (traceplan.Plan, error) {
	p := s.cfg.Plan
	p.Keep = false
	p.Prompt = o.Prompt
	if len(o.Prompt) > 8<<10 {
		return p, badRequest("prompt: over 8 KiB")
	}
	if o.SkillID != "" {
		id, err := fingerprint.Identity(o.SkillID)
		if err != nil {
			return p, badRequest("skill_id: %v", err)
		}
		p.SkillID = id
	}
	if o.Timeout != "" {
		d, err := time.ParseDuration(o.Timeout)
		if err != nil || d <= 0 {
			return p, badRequest("timeout %q: want a positive duration such as 5m", o.Timeout)
		}
		if d > s.cfg.MaxTimeout {
			return p, badRequest("timeout %v: over this server's maximum of %v", d, s.cfg.MaxTimeout)
		}
		p.Limits.Timeout = d
	}
	kind := o.Driver
	if kind == "" {
		kind = traceplan.DriverLiteral
		if o.Model != "" || o.Provider != "" || o.BaseURL != "" {
			kind = traceplan.DriverLLM
		}
	}
	if o.BaseURL != "" && !s.cfg.AllowBaseURL {
		return p, badRequest("base_url: this server does not connect where callers say (start it with --allow-base-url)")
	}
	p.Driver = traceplan.Driver{Kind: kind, Provider: o.Provider, Model: o.Model, BaseURL: o.BaseURL}
	switch kind {
	case traceplan.DriverLiteral:
		if o.Provider != "" || o.Model != "" || o.BaseURL != "" {
			return p, badRequest("the literal driver takes no provider, model or base_url")
		}
	case traceplan.DriverLLM:
		if p.Driver.Provider == "" {
			p.Driver.Provider = "openai"
			if o.BaseURL != "" {
				p.Driver.Provider = "custom"
			}
		}
		switch p.Driver.Provider {
		case "openai", "openrouter":
			if key == "" {
				return p, badRequest("the %s provider needs a key in the %s header", p.Driver.Provider, KeyHeader)
			}
		case "ollama", "custom":
		default:
			return p, badRequest("provider %q: want openai, openrouter, ollama or custom", p.Driver.Provider)
		}
		p.Driver.APIKey = key
	default:
		return p, badRequest("driver %q: want literal or llm", kind)
	}
	// Validate needs a skill and an id; the real ones are set per trace.
	chk := p
	chk.SkillPath, chk.TraceID = "skill", cmp.Or(p.TraceID, "srv-check")
	if err := chk.Validate(); err != nil {
		return p, badRequest("%v", err)
	}
	return p, nil
}
