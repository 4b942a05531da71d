package server

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// durationBuckets are the upper bounds (seconds) of the trace duration
// histogram.
var durationBuckets = []float64{5, 10, 30, 60, 120, 300, 600, 1200}

// metrics are the counters kept in memory (the database gives the
// counts by status and verdict).
type metrics struct {
	mu        sync.Mutex
	requests  map[int]int
	rejects   map[string]int
	cachedN   int
	buckets   []int
	count     int
	sum       float64
	byOutcome map[string]int
}

func newMetrics() *metrics {
	return &metrics{requests: map[int]int{}, rejects: map[string]int{}, buckets: make([]int, len(durationBuckets)), byOutcome: map[string]int{}}
}

func (m *metrics) request(code int) {
	m.mu.Lock()
	m.requests[code]++
	m.mu.Unlock()
}

// Reasons of a 429, the values of the rejected_total label.
const (
	rejectConcurrency = "concurrency"
	rejectQueue       = "queue"
	rejectRate        = "rate"
	rejectOther       = "other"
)

// rejectReasons are every value the reason label takes: a fixed set.
var rejectReasons = []string{rejectConcurrency, rejectQueue, rejectRate, rejectOther}

// rejected counts a 429 by its reason; anything not in rejectReasons is
// "other", so the label's values stay a fixed set.
func (m *metrics) rejected(reason string) {
	if !slices.Contains(rejectReasons, reason) {
		reason = rejectOther
	}
	m.mu.Lock()
	m.rejects[reason]++
	m.mu.Unlock()
}

func (m *metrics) cached() {
	m.mu.Lock()
	m.cachedN++
	m.mu.Unlock()
}

func (m *metrics) finished(status, verdict string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byOutcome[status]++
	if status != StatusDone && status != StatusFailed {
		return
	}
	sec := d.Seconds()
	for i, b := range durationBuckets {
		if sec <= b {
			m.buckets[i]++
		}
	}
	m.count++
	m.sum += sec
}

func (m *metrics) meanDuration() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.count == 0 {
		return 0
	}
	return time.Duration(m.sum / float64(m.count) * float64(time.Second))
}

// metrics is GET /metrics in the Prometheus text format (0.0.4).
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	c, err := s.store.Count(r.Context(), "", true)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.mu.Lock()
	running := len(s.running)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	s.m.request(http.StatusOK)
	writeMetrics(w, c, running, s.cfg.Workers, s.m)
}

func writeMetrics(w io.Writer, c Counts, running, workers int, m *metrics) {
	m.mu.Lock()
	defer m.mu.Unlock()
	gauge := func(name, help string, v any) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %v\n", name, help, name, name, v)
	}
	gauge("sandboxctl_serve_queue_depth", "Traces queued, waiting for a worker.", c.ByStatus[StatusQueued])
	gauge("sandboxctl_serve_running", "Traces running now.", running)
	gauge("sandboxctl_serve_workers", "Traces that may run at once.", workers)
	fmt.Fprintf(w, "# HELP sandboxctl_serve_traces Traces in the database by status.\n# TYPE sandboxctl_serve_traces gauge\n")
	for _, st := range []string{StatusQueued, StatusRunning, StatusDone, StatusFailed, StatusCanceled, StatusInterrupted} {
		fmt.Fprintf(w, "sandboxctl_serve_traces{status=%q} %d\n", st, c.ByStatus[st])
	}
	fmt.Fprintf(w, "# HELP sandboxctl_serve_verdicts Done traces in the database by verdict.\n# TYPE sandboxctl_serve_verdicts gauge\n")
	for _, v := range []string{"malicious", "suspicious", "clean", "inconclusive"} {
		fmt.Fprintf(w, "sandboxctl_serve_verdicts{verdict=%q} %d\n", v, c.ByVerdict[v])
	}
	fmt.Fprintf(w, "# HELP sandboxctl_serve_cached_total Submissions answered from an earlier result since start.\n# TYPE sandboxctl_serve_cached_total counter\nsandboxctl_serve_cached_total %d\n", m.cachedN)
	fmt.Fprintf(w, "# HELP sandboxctl_serve_finished_total Traces ended since start, by status.\n# TYPE sandboxctl_serve_finished_total counter\n")
	for _, st := range []string{StatusDone, StatusFailed, StatusCanceled, StatusInterrupted} {
		fmt.Fprintf(w, "sandboxctl_serve_finished_total{status=%q} %d\n", st, m.byOutcome[st])
	}
	fmt.Fprintf(w, "# HELP sandboxctl_serve_rejected_total Submissions answered 429 since start, by reason.\n# TYPE sandboxctl_serve_rejected_total counter\n")
	for _, r := range rejectReasons {
		fmt.Fprintf(w, "sandboxctl_serve_rejected_total{reason=%q} %d\n", r, m.rejects[r])
	}
	fmt.Fprintf(w, "# HELP sandboxctl_serve_http_responses_total API responses since start, by status code.\n# TYPE sandboxctl_serve_http_responses_total counter\n")
	codes := make([]int, 0, len(m.requests))
	for c := range m.requests {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	for _, code := range codes {
		fmt.Fprintf(w, "sandboxctl_serve_http_responses_total{code=\"%d\"} %d\n", code, m.requests[code])
	}
	fmt.Fprintf(w, "# HELP sandboxctl_serve_trace_duration_seconds Wall-clock time of traces that ended done or failed.\n# TYPE sandboxctl_serve_trace_duration_seconds histogram\n")
	for i, b := range durationBuckets {
		fmt.Fprintf(w, "sandboxctl_serve_trace_duration_seconds_bucket{le=\"%g\"} %d\n", b, m.buckets[i])
	}
	fmt.Fprintf(w, "sandboxctl_serve_trace_duration_seconds_bucket{le=\"+Inf\"} %d\n", m.count)
	fmt.Fprintf(w, "sandboxctl_serve_trace_duration_seconds_sum %g\nsandboxctl_serve_trace_duration_seconds_count %d\n", m.sum, m.count)
}
