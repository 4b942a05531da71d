package canary

import (
	"bytes"
	"testing"
)

// TestHasTextRun checks hasTextRun, which probes one byte in n, at every
// offset of a run of text in binary, at the run's length and one short of it.
func TestHasTextRun(t *testing.T) {
	const n = MinNeedle
	bin := func(k int) []byte { return bytes.Repeat([]byte{0x00}, k) }
	tests := []struct {
		name string
		run  []byte
		want bool
	}{
		{name: "run of n", run: bytes.Repeat([]byte("a"), n), want: true},
		{name: "run of n-1", run: bytes.Repeat([]byte("a"), n-1), want: false},
		{name: "run of n with breaks and tabs", run: []byte("ab\r\ncd\tef "), want: true},
		{name: "run of 3n", run: bytes.Repeat([]byte("z"), 3*n), want: true},
		{name: "two runs of n-1", run: append(append(bytes.Repeat([]byte("a"), n-1), 0x80), bytes.Repeat([]byte("a"), n-1)...), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for pre := range 2*n + 1 {
				for post := range n + 1 {
					data := append(append(bin(pre), tt.run...), bin(post)...)
					if got := hasTextRun(data, n); got != tt.want {
						t.Fatalf("%d binary bytes, %q, %d binary bytes: %v, want %v", pre, tt.run, post, got, tt.want)
					}
				}
			}
		})
	}
}
