package server

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A Token is one caller of the API: a bearer token with its limits.
type Token struct {
	// Name identifies the caller in the database and the metrics; the
	// token itself is never stored.
	Name string
	// Rate bounds the submissions per minute (0: DefaultRate); Burst is
	// how many may come at once (0: Rate).
	Rate, Burst int
	// Concurrency bounds the caller's traces queued or running at once
	// (0: DefaultConcurrency).
	Concurrency int
	sum         [32]byte
}

// Defaults of a token's limits.
const (
	DefaultRate        = 30
	DefaultConcurrency = 4
)

// maxTokensFile bounds the tokens file (lines we did not write).
const maxTokensFile = 10_000

// ParseTokens reads a tokens file: one caller a line, "NAME TOKEN" then
// optional "rate=N" (submissions a minute), "burst=N" and
// "concurrency=N"; blank lines and # comments are skipped. A token must
// be at least 16 characters; names and tokens are unique.
func ParseTokens(r io.Reader) ([]Token, error) {
	var out []Token
	names := map[string]bool{}
	sums := map[[32]byte]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	n := 0
	for sc.Scan() {
		n++
		if n > maxTokensFile {
			return nil, fmt.Errorf("tokens: over %d lines", maxTokensFile)
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			return nil, fmt.Errorf("tokens line %d: want NAME TOKEN [rate=N] [burst=N] [concurrency=N]", n)
		}
		t := Token{Name: f[0]}
		if !validName(t.Name) {
			return nil, fmt.Errorf("tokens line %d: name %q: letters, digits, '.', '_' and '-' only, at most 64", n, t.Name)
		}
		if len(f[1]) < 16 {
			return nil, fmt.Errorf("tokens line %d: the token of %s is shorter than 16 characters", n, t.Name)
		}
		t.sum = sha256.Sum256([]byte(f[1]))
		for _, kv := range f[2:] {
			k, v, ok := strings.Cut(kv, "=")
			x, err := strconv.Atoi(v)
			if !ok || err != nil || x < 1 || x > 1_000_000 {
				return nil, fmt.Errorf("tokens line %d: %q: want key=N with N from 1 to 1000000", n, kv)
			}
			switch k {
			case "rate":
				t.Rate = x
			case "burst":
				t.Burst = x
			case "concurrency":
				t.Concurrency = x
			default:
				return nil, fmt.Errorf("tokens line %d: unknown limit %q (rate, burst, concurrency)", n, k)
			}
		}
		if names[t.Name] {
			return nil, fmt.Errorf("tokens line %d: name %s twice", n, t.Name)
		}
		if sums[t.sum] {
			return nil, fmt.Errorf("tokens line %d: the token of %s is another caller's too", n, t.Name)
		}
		names[t.Name], sums[t.sum] = true, true
		out = append(out, t.withDefaults())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("tokens: no token in the file")
	}
	return out, nil
}

func (t Token) withDefaults() Token {
	if t.Rate <= 0 {
		t.Rate = DefaultRate
	}
	if t.Burst <= 0 {
		t.Burst = t.Rate
	}
	if t.Concurrency <= 0 {
		t.Concurrency = DefaultConcurrency
	}
	return t
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// auth finds the caller of a bearer token: every token is compared, in
// constant time, so that the time taken says nothing of which matched.
type auth struct {
	tokens []Token
}

func (a *auth) lookup(header string) (*Token, bool) {
	v, ok := strings.CutPrefix(header, "Bearer ")
	if !ok || v == "" {
		return nil, false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(v)))
	var found *Token
	for i := range a.tokens {
		if subtle.ConstantTimeCompare(sum[:], a.tokens[i].sum[:]) == 1 {
			found = &a.tokens[i]
		}
	}
	return found, found != nil
}

// limiter is a token bucket per caller: Rate a minute, Burst at once.
type limiter struct {
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	level float64
	at    time.Time
}

// allow takes one submission from the caller's bucket, or says how long
// until one is available.
func (l *limiter) allow(t *Token, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = map[string]*bucket{}
	}
	b := l.buckets[t.Name]
	perSec := float64(t.Rate) / 60
	if b == nil {
		b = &bucket{level: float64(t.Burst), at: now}
		l.buckets[t.Name] = b
	}
	b.level = math.Min(float64(t.Burst), b.level+now.Sub(b.at).Seconds()*perSec)
	b.at = now
	if b.level >= 1 {
		b.level--
		return true, 0
	}
	wait := time.Duration((1 - b.level) / perSec * float64(time.Second))
	return false, wait
}
