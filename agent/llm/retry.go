package llm

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// retryDoer retries a request on 429, 5xx and transport errors, with
// exponential backoff and jitter, honouring Retry-After. go-openai builds
// its requests from byte buffers, so GetBody can replay the body.
type retryDoer struct {
	client *http.Client
	max    int
	base   time.Duration
	cap    time.Duration
	log    func(msg string, args ...any)
	sleep  func(ctx context.Context, d time.Duration) error
}

func (r *retryDoer) Do(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := r.client.Do(req)
		retryable := err != nil && req.Context().Err() == nil ||
			err == nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500)
		if !retryable || attempt >= r.max || (req.Body != nil && req.GetBody == nil) {
			return resp, err
		}
		wait := r.backoff(attempt)
		status := 0
		if err == nil {
			status = resp.StatusCode
			if ra, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				wait = min(ra, r.cap)
			}
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		r.log("model request retried", "attempt", attempt+1, "status", status, "wait", wait)
		if err := r.sleep(req.Context(), wait); err != nil {
			return nil, err
		}
		next := req.Clone(req.Context())
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			next.Body = body
		}
		req = next
	}
}

func (r *retryDoer) backoff(attempt int) time.Duration {
	d := r.base << min(attempt, 16)
	if d > r.cap || d <= 0 {
		d = r.cap
	}
	// Full jitter in [d/2, d).
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	if h == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
