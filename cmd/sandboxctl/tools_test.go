package main

import (
	"slices"
	"testing"

	"github.com/sandboxctl/sandboxctl/mcptools"
)

// TestSplitEntropy: the seed of reproducible randomness reaches the tool
// server's Config and never the user's environment.
func TestSplitEntropy(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		env     []string
		seed    []byte
		wantErr bool
	}{
		{name: "none", environ: []string{"HOME=/home/u", "PATH=/bin"}, env: []string{"HOME=/home/u", "PATH=/bin"}},
		{name: "taken out", environ: []string{"HOME=/home/u", mcptools.EntropyEnv + "=00ff10", "PATH=/bin"},
			env: []string{"HOME=/home/u", "PATH=/bin"}, seed: []byte{0, 0xff, 0x10}},
		{name: "a longer name is the user's", environ: []string{mcptools.EntropyEnv + "_X=1"}, env: []string{mcptools.EntropyEnv + "_X=1"}},
		{name: "not hex", environ: []string{mcptools.EntropyEnv + "=zz"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, seed, err := splitEntropy(tt.environ)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v", err)
			}
			if tt.wantErr {
				return
			}
			if !slices.Equal(env, tt.env) || !slices.Equal(seed, tt.seed) {
				t.Errorf("splitEntropy = %q %x, want %q %x", env, seed, tt.env, tt.seed)
			}
		})
	}
}
