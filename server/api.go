package server

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/sweep"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// OpenAPI is the API's OpenAPI 3.1 document, served at /v1/openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

//go:embed web
var web embed.FS

// pageCSP is the web page's policy: its own script and style only, calls
// to its own origin, reports shown from blob: frames.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-src blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// reportCSP is added to a served HTML report (which carries its own
// stricter policy): nothing fetched, no form, and a sandbox.
const reportCSP = "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /v1/health", s.health)
	m.HandleFunc("GET /v1/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(OpenAPI)
	})
	m.HandleFunc("GET /metrics", s.metrics)
	m.HandleFunc("POST /v1/traces", s.authed(s.submit))
	m.HandleFunc("GET /v1/traces", s.authed(s.list))
	m.HandleFunc("GET /v1/traces/{id}", s.authed(s.get))
	m.HandleFunc("DELETE /v1/traces/{id}", s.authed(s.cancel))
	m.HandleFunc("GET /v1/traces/{id}/{file}", s.authed(s.report))
	m.HandleFunc("GET /{$}", s.static("web/index.html", "text/html; charset=utf-8"))
	m.HandleFunc("GET /app.js", s.static("web/app.js", "text/javascript; charset=utf-8"))
	m.HandleFunc("GET /app.css", s.static("web/app.css", "text/css; charset=utf-8"))
	s.mux = m
	s.handler = m
	if len(s.auth.tokens) == 0 {
		s.handler = s.localOnly(m)
	}
}

// localOnly guards a server without tokens, which trusts whoever reaches
// it: the Host must be a loopback name or address (a page on another
// site that rebinds its DNS name to 127.0.0.1 sends its own name), and an
// Origin, when sent, must be this server's own (a cross-site form may
// POST multipart with no CORS preflight). Either refused is a 403, on
// every route.
func (s *Server) localOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			s.fail(w, &apiError{status: http.StatusForbidden, msg: fmt.Sprintf("Host %s is not a loopback name: without tokens this server answers only requests addressed to 127.0.0.1, [::1] or localhost (start it with --tokens to serve other names)", quoteHeader(r.Host))})
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r.Host) {
			s.fail(w, &apiError{status: http.StatusForbidden, msg: fmt.Sprintf("Origin %s is not this server: without tokens only the server's own page may call it", quoteHeader(o))})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header names loopback: localhost
// (or a name under it), an address of 127.0.0.0/8 or ::1, with any port.
func loopbackHost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}

// sameOrigin reports whether an Origin header is http(s)://HOST of this
// request.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" || u.User != nil {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

// quoteHeader is a header value fit for an error message.
func quoteHeader(v string) string {
	if len(v) > 100 {
		v = v[:100] + "..."
	}
	return strconv.Quote(v)
}

func (s *Server) static(name, ctype string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := web.ReadFile(name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", ctype)
		h.Set("Content-Security-Policy", pageCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		w.Write(b)
	}
}

// authed passes the caller's token to h (s.anon without tokens), or
// answers 401.
func (s *Server) authed(h func(http.ResponseWriter, *http.Request, *Token)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if len(s.auth.tokens) == 0 {
			h(w, r, &s.anon)
			return
		}
		t, ok := s.auth.lookup(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sandboxctl"`)
			s.fail(w, &apiError{status: http.StatusUnauthorized, msg: "a bearer token is needed (Authorization: Bearer TOKEN)"})
			return
		}
		h(w, r, t)
	}
}

func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	s.m.request(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// errorBody is every error's JSON.
type errorBody struct {
	Error  string `json:"error"`
	Status int    `json:"status"`
}

// fail answers an error: an apiError with its status, anything else 500
// (logged; the caller gets no detail of the server's folders).
func (s *Server) fail(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		s.cfg.Log(fmt.Sprintf("internal error: %v", err))
		ae = &apiError{status: http.StatusInternalServerError, msg: "internal error (see the server's log)"}
	}
	if ae.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(ae.retryAfter.Seconds()))))
	}
	if ae.status == http.StatusTooManyRequests {
		s.m.rejected(ae.reason)
	}
	s.writeJSON(w, ae.status, errorBody{Error: ae.msg, Status: ae.status})
}

// Health is GET /v1/health.
type Health struct {
	Status  string `json:"status"`
	Version string `json:"version"`
	Queued  int    `json:"queued"`
	Running int    `json:"running"`
	Workers int    `json:"workers"`
	// Auth says whether the API wants a bearer token.
	Auth bool `json:"auth"`
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	q, err := s.store.Queued(r.Context())
	if err != nil {
		s.cfg.Log(err.Error())
		s.writeJSON(w, http.StatusServiceUnavailable, Health{Status: "unavailable", Version: s.cfg.Version})
		return
	}
	s.mu.Lock()
	h := Health{Status: "ok", Version: s.cfg.Version, Queued: q, Running: len(s.running), Workers: s.cfg.Workers, Auth: len(s.auth.tokens) > 0}
	if s.closing {
		h.Status = "stopping"
	}
	s.mu.Unlock()
	code := http.StatusOK
	if h.Status != "ok" {
		code = http.StatusServiceUnavailable
	}
	s.writeJSON(w, code, h)
}

// Submitted is the answer to POST /v1/traces.
type Submitted struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	StatusURL string `json:"status_url"`
	Cached    bool   `json:"cached"`
	// CachedFrom is the trace whose result answered this submission.
	CachedFrom string `json:"cached_from,omitempty"`
	Verdict    string `json:"verdict,omitempty"`
}

// queueWait is the Retry-After of a full queue or a caller at its bound:
// about one trace's time.
func (s *Server) queueWait() time.Duration {
	if d := s.m.meanDuration(); d > 0 {
		return min(max(d, 5*time.Second), 10*time.Minute)
	}
	return 30 * time.Second
}

func (s *Server) submit(w http.ResponseWriter, r *http.Request, t *Token) {
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		s.fail(w, &apiError{status: http.StatusServiceUnavailable, msg: "the server is stopping", retryAfter: 30 * time.Second})
		return
	}
	if ok, wait := s.lim.allow(t, s.cfg.Now()); !ok {
		s.fail(w, &apiError{status: http.StatusTooManyRequests, msg: fmt.Sprintf("over %d submissions a minute", t.Rate), retryAfter: wait, reason: rejectRate})
		return
	}
	// Cheap checks before the upload is read; repeated under submitMu.
	if err := s.admit(r.Context(), t); err != nil {
		s.fail(w, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxUpload)
	sub, err := s.readSubmission(r, filepath.Join(s.cfg.DataDir, "tmp"))
	if err != nil {
		s.fail(w, err)
		return
	}
	key := r.Header.Get(KeyHeader)
	p, err := s.plan(sub.opts, key)
	if err != nil {
		sub.cleanup()
		s.fail(w, err)
		return
	}
	if p.Driver.Kind != traceplan.DriverLLM {
		key = "" // not needed: not held
	}
	sk, err := s.unpack(r.Context(), sub.archive)
	if err != nil {
		s.fail(w, err)
		return
	}
	planHash, err := sweep.PlanHash(p, s.cfg.Version)
	if err != nil {
		s.fail(w, err)
		return
	}
	rkey := sweep.ResultKey(sk.sha, planHash, s.cfg.ImageID)
	now := s.cfg.Now()
	rec := &Record{ID: newID(now), Key: rkey, Owner: t.Name, Status: StatusQueued, SkillName: sk.name, SkillSHA: sk.sha,
		SkillPath: sk.path, Options: sub.opts, NeedsKey: key != "", Created: now}

	s.submitMu.Lock()
	defer s.submitMu.Unlock()
	prev, err := s.store.Judged(r.Context(), rkey)
	if err != nil {
		s.fail(w, err)
		return
	}
	if prev != nil {
		// The same skill under the same plan and image: the result is
		// known. A record of its own, so that each caller sees theirs.
		rec.Status, rec.CachedFrom, rec.RunDir = StatusDone, prev.ID, prev.RunDir
		rec.Verdict, rec.Outcome, rec.Started, rec.Finished = prev.Verdict, prev.Outcome, now, now
		rec.NeedsKey = false
		if err := s.store.Insert(r.Context(), rec); err != nil {
			s.fail(w, err)
			return
		}
		s.m.cached()
		w.Header().Set("Location", "/v1/traces/"+rec.ID)
		s.writeJSON(w, http.StatusOK, Submitted{ID: rec.ID, Status: rec.Status, StatusURL: "/v1/traces/" + rec.ID, Cached: true, CachedFrom: prev.ID, Verdict: rec.Verdict})
		return
	}
	if err := s.admit(r.Context(), t); err != nil {
		s.fail(w, err)
		return
	}
	// The key is held before the trace is queued: a worker may claim the
	// trace the moment it is inserted, and must find its key.
	if key != "" {
		s.mu.Lock()
		s.keys[rec.ID] = key
		s.mu.Unlock()
	}
	if err := s.store.Insert(r.Context(), rec); err != nil {
		s.dropKey(rec.ID)
		s.fail(w, err)
		return
	}
	if s.testHookQueued != nil {
		s.testHookQueued(rec.ID)
	}
	s.poke()
	w.Header().Set("Location", "/v1/traces/"+rec.ID)
	s.writeJSON(w, http.StatusAccepted, Submitted{ID: rec.ID, Status: rec.Status, StatusURL: "/v1/traces/" + rec.ID})
}

// admit checks the queue's bound and the caller's traces in flight.
func (s *Server) admit(ctx context.Context, t *Token) error {
	q, err := s.store.Queued(ctx)
	if err != nil {
		return err
	}
	if q >= s.cfg.MaxQueue {
		return &apiError{status: http.StatusTooManyRequests, msg: fmt.Sprintf("the queue is full (%d traces waiting)", q), retryAfter: s.queueWait(), reason: rejectQueue}
	}
	n, err := s.store.InFlight(ctx, t.Name)
	if err != nil {
		return err
	}
	if n >= t.Concurrency {
		return &apiError{status: http.StatusTooManyRequests, msg: fmt.Sprintf("%d traces of yours are queued or running, your bound", n), retryAfter: s.queueWait(), reason: rejectConcurrency}
	}
	return nil
}

// TraceView is GET /v1/traces/{id}.
type TraceView struct {
	ID          string                `json:"id"`
	Status      string                `json:"status"`
	Verdict     string                `json:"verdict,omitempty"`
	Skill       SkillView             `json:"skill"`
	Options     Options               `json:"options"`
	Created     time.Time             `json:"created"`
	Started     *time.Time            `json:"started,omitempty"`
	Finished    *time.Time            `json:"finished,omitempty"`
	DurationMS  int64                 `json:"duration_ms,omitempty"`
	Cached      bool                  `json:"cached"`
	CachedFrom  string                `json:"cached_from,omitempty"`
	Error       string                `json:"error,omitempty"`
	SeverityMax string                `json:"severity_max,omitempty"`
	Deciding    []string              `json:"deciding,omitempty"`
	Incidents   []sweep.IncidentBrief `json:"incidents"`
	Reports     map[string]string     `json:"reports,omitempty"`
}

// SkillView names a trace's skill.
type SkillView struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

var reportFiles = map[string]struct{ file, ctype string }{
	"report.json":  {reports.FileJSON, "application/json"},
	"report.sarif": {reports.FileSARIF, "application/sarif+json"},
	"report.html":  {reports.FileHTML, "text/html; charset=utf-8"},
	"report.txt":   {reports.FileText, "text/plain; charset=utf-8"},
}

func (s *Server) view(r *Record) TraceView {
	v := TraceView{ID: r.ID, Status: r.Status, Verdict: r.Verdict, Skill: SkillView{Name: r.SkillName, SHA256: r.SkillSHA},
		Options: r.Options, Created: r.Created, Cached: r.CachedFrom != "", CachedFrom: r.CachedFrom, Error: r.Error,
		SeverityMax: r.Outcome.SeverityMax, Deciding: r.Outcome.Deciding, Incidents: r.Outcome.Incidents, DurationMS: r.Outcome.DurationMS}
	if v.Incidents == nil {
		v.Incidents = []sweep.IncidentBrief{}
	}
	if !r.Started.IsZero() {
		t := r.Started
		v.Started = &t
	}
	if !r.Finished.IsZero() {
		t := r.Finished
		v.Finished = &t
	}
	if r.RunDir != "" && (r.Status == StatusDone || r.Status == StatusFailed) {
		v.Reports = map[string]string{}
		for name := range reportFiles {
			if _, err := os.Stat(filepath.Join(s.cfg.DataDir, r.RunDir, reportFiles[name].file)); err == nil {
				v.Reports[name[len("report."):]] = "/v1/traces/" + r.ID + "/" + name
			}
		}
	}
	return v
}

// record returns the caller's trace id, or a 404 (another caller's trace
// is not found either).
func (s *Server) record(ctx context.Context, id string, t *Token) (*Record, error) {
	rec, err := s.store.Get(ctx, id)
	if errors.Is(err, ErrNotFound) || err == nil && len(s.auth.tokens) > 0 && rec.Owner != t.Name {
		return nil, &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("no trace %q", id)}
	}
	return rec, err
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, t *Token) {
	rec, err := s.record(r.Context(), r.PathValue("id"), t)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, s.view(rec))
}

func (s *Server) report(w http.ResponseWriter, r *http.Request, t *Token) {
	f, ok := reportFiles[r.PathValue("file")]
	if !ok {
		s.fail(w, &apiError{status: http.StatusNotFound, msg: "no such report: report.json, report.sarif, report.html or report.txt"})
		return
	}
	rec, err := s.record(r.Context(), r.PathValue("id"), t)
	if err != nil {
		s.fail(w, err)
		return
	}
	if rec.RunDir == "" {
		s.fail(w, &apiError{status: http.StatusConflict, msg: fmt.Sprintf("trace %s is %s: no report yet", rec.ID, rec.Status)})
		return
	}
	fh, err := os.Open(filepath.Join(s.cfg.DataDir, rec.RunDir, f.file))
	if err != nil {
		s.fail(w, &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("trace %s has no %s", rec.ID, r.PathValue("file"))})
		return
	}
	defer fh.Close()
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if f.file == reports.FileHTML {
		h.Set("Content-Security-Policy", reportCSP)
	}
	s.m.request(http.StatusOK)
	http.ServeContent(w, r, "", time.Time{}, fh)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request, t *Token) {
	rec, err := s.record(r.Context(), r.PathValue("id"), t)
	if err != nil {
		s.fail(w, err)
		return
	}
	ok, err := s.store.Cancel(r.Context(), rec.ID, "canceled by DELETE", s.cfg.Now())
	if err != nil {
		s.fail(w, err)
		return
	}
	if !ok {
		s.fail(w, &apiError{status: http.StatusConflict, msg: fmt.Sprintf("trace %s is %s already", rec.ID, rec.Status)})
		return
	}
	s.cancelTrace(rec.ID)
	if rec, err = s.store.Get(r.Context(), rec.ID); err != nil {
		s.fail(w, err)
		return
	}
	s.writeJSON(w, http.StatusAccepted, s.view(rec))
}

// TraceList is GET /v1/traces.
type TraceList struct {
	Traces     []TraceView `json:"traces"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, t *Token) {
	q := r.URL.Query()
	o := ListOptions{Owner: t.Name, Any: len(s.auth.tokens) == 0, Verdict: q.Get("verdict"), Status: q.Get("status"), Limit: 20}
	if o.Verdict != "" && !validVerdict(rules.Verdict(o.Verdict)) {
		s.fail(w, badRequest("verdict %q: want malicious, suspicious, clean or inconclusive", o.Verdict))
		return
	}
	switch o.Status {
	case "", StatusQueued, StatusRunning, StatusDone, StatusFailed, StatusCanceled, StatusInterrupted:
	default:
		s.fail(w, badRequest("status %q: want queued, running, done, failed, canceled or interrupted", o.Status))
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			s.fail(w, badRequest("limit %q: want 1 to 100", v))
			return
		}
		o.Limit = n
	}
	if v := q.Get("cursor"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			s.fail(w, badRequest("cursor %q: use the next_cursor of the previous page", v))
			return
		}
		o.Before = n
	}
	recs, err := s.store.List(r.Context(), o)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := TraceList{Traces: []TraceView{}}
	for _, rec := range recs {
		out.Traces = append(out.Traces, s.view(rec))
	}
	if len(recs) == o.Limit {
		out.NextCursor = strconv.FormatInt(recs[len(recs)-1].Seq, 10)
	}
	s.writeJSON(w, http.StatusOK, out)
}

// NewHTTPServer is an http.Server for h with timeouts fit for uploads:
// headers within 10 s, a request body within 2 minutes, idle connections
// closed after a minute.
func NewHTTPServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr: addr, Handler: h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

func validVerdict(v rules.Verdict) bool {
	switch v {
	case rules.Malicious, rules.Suspicious, rules.Clean, rules.Inconclusive:
		return true
	}
	return false
}
