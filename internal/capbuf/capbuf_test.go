package capbuf_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/sandboxctl/sandboxctl/internal/capbuf"
)

func TestBuffer(t *testing.T) {
	tests := []struct {
		name      string
		max       int
		writes    []string
		want      string
		wantTotal int64
	}{
		{name: "under the cap", max: 10, writes: []string{"abc", "de"}, want: "abcde", wantTotal: 5},
		{name: "exactly the cap", max: 5, writes: []string{"abcde"}, want: "abcde", wantTotal: 5},
		{name: "cut inside a write", max: 4, writes: []string{"ab", "cdef"}, want: "abcd", wantTotal: 6},
		{name: "writes after the cap counted", max: 2, writes: []string{"ab", "cd", "ef"}, want: "ab", wantTotal: 6},
		{name: "zero cap", max: 0, writes: []string{"abc"}, want: "", wantTotal: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := capbuf.New(tt.max)
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", w, n, err, len(w))
				}
			}
			if got := b.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			kept, total := b.Snapshot()
			if string(kept) != tt.want || total != tt.wantTotal {
				t.Errorf("Snapshot() = %q, %d; want %q, %d", kept, total, tt.want, tt.wantTotal)
			}
		})
	}
}

// TestBufferConcurrent: reads while writers write (run under -race).
func TestBufferConcurrent(t *testing.T) {
	b := capbuf.New(1 << 10)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				b.Write([]byte("xy"))
			}
		}()
	}
	for range 200 {
		_ = b.String()
		b.Snapshot()
	}
	wg.Wait()
	if kept, total := b.Snapshot(); len(kept) != 1<<10 || total != 1600 || strings.Trim(string(kept), "xy") != "" {
		t.Errorf("Snapshot() = %d bytes, total %d; want 1024 bytes of x and y, total 1600", len(kept), total)
	}
}
