package canaryfs_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/canaryfs"
)

// twinGrow is how much a twin's runs of secret characters grow in these
// tests.
const twinGrow = 8

func twinOf(t *testing.T, seed string, opts canaryfs.Options) (orig, twin *canaryfs.Home) {
	t.Helper()
	opts.Seed, opts.Now = []byte(seed), now
	orig, err := canaryfs.Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.Twin = &canary.Twin{Key: []byte("twin key"), Grow: twinGrow}
	twin, err = canaryfs.Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	return orig, twin
}

// secretBytes reports whether content holds anything of set: a value, a
// needle or a raw needle.
func secretBytes(set *canary.Set, content []byte) bool {
	for _, tok := range set.Tokens() {
		for _, n := range append([]string{tok.Value}, tok.Needles...) {
			if len(n) >= 8 && bytes.Contains(content, []byte(n)) {
				return true
			}
		}
		for _, n := range tok.RawNeedles {
			if len(n) >= 8 && bytes.Contains(content, n) {
				return true
			}
		}
	}
	return false
}

func TestTwinHome(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts canaryfs.Options
	}{
		{"linux", canaryfs.Options{}},
		{"macos", canaryfs.Options{Persona: "macos"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig, twin := twinOf(t, "twin-"+tc.name, tc.opts)
			if orig.User != twin.User || orig.Hostname != twin.Hostname || orig.Project != twin.Project {
				t.Fatalf("identity differs: %s@%s %s, twin %s@%s %s", orig.User, orig.Hostname, orig.Project, twin.User, twin.Hostname, twin.Project)
			}
			// Every secret differs, and the text ones grew.
			tw := map[string]canary.Token{}
			for _, tok := range twin.Set.Tokens() {
				tw[tok.ID] = tok
			}
			grew := 0
			for _, tok := range orig.Set.Tokens() {
				x, ok := tw[tok.ID]
				switch {
				case !ok:
					t.Errorf("token %s (%s) has no twin", tok.ID, tok.Location)
				case x.Value == tok.Value:
					t.Errorf("token %s (%s) has the same value in the twin", tok.ID, tok.Location)
				case x.Kind != tok.Kind || x.Location != tok.Location && !secretBytes(orig.Set, []byte(tok.Location)):
					t.Errorf("token %s: %s at %s, twin %s at %s", tok.ID, tok.Kind, tok.Location, x.Kind, x.Location)
				case len(x.Value) > len(tok.Value):
					grew++
				}
			}
			if len(tw) != len(orig.Set.Tokens()) {
				t.Errorf("%d tokens, twin %d", len(orig.Set.Tokens()), len(tw))
			}
			if grew < len(tw)/2 {
				t.Errorf("only %d of %d secrets grew", grew, len(tw))
			}
			// The same files, in the same places, with the same times; a
			// file differs only where it holds a secret.
			paths := func(h *canaryfs.Home) (out []string) {
				for _, f := range h.Files {
					out = append(out, f.Path)
				}
				return out
			}
			po, pt := paths(orig), paths(twin)
			if len(po) != len(pt) {
				t.Fatalf("%d files, twin %d", len(po), len(pt))
			}
			var renamed, changed []string
			for i, f := range orig.Files {
				g := twin.Files[i]
				if f.Path != g.Path {
					// Only a file named after its key (a keystore's
					// address) takes the twin key's name.
					if !secretBytes(orig.Set, []byte(f.Path)) {
						t.Errorf("%s is %s in the twin", f.Path, g.Path)
					}
					renamed = append(renamed, f.Path+" -> "+g.Path)
					continue
				}
				if f.Mode != g.Mode || !f.ModTime.Equal(g.ModTime) || f.Dir != g.Dir || f.Symlink != g.Symlink {
					t.Errorf("%s: mode, time or type differ in the twin", f.Path)
				}
				if !bytes.Equal(f.Content, g.Content) {
					changed = append(changed, f.Path)
					if !secretBytes(orig.Set, f.Content) && !secretBytes(twin.Set, g.Content) && !publicOf(twin.Set, g.Content) {
						t.Errorf("%s differs in the twin but holds no secret", f.Path)
					}
				}
			}
			t.Logf("%d files, %d changed, renamed: %v", len(po), len(changed), renamed)
			if len(changed) == 0 {
				t.Error("no file changed")
			}
			// Nothing of the original's secrets is in the twin.
			var tb bytes.Buffer
			if err := twin.WriteTar(&tb, 1000, 1000); err != nil {
				t.Fatal(err)
			}
			for _, h := range orig.Set.Find(tb.Bytes()) {
				t.Errorf("the original's %s (%s) found in the twin", h.Token.ID, h.Token.Location)
			}
			if !slices.EqualFunc(envNames(orig.Env), envNames(twin.Env), strings.EqualFold) {
				t.Error("the environment's variables differ")
			}
		})
	}
}

// publicOf reports whether content holds the public key of one of set's
// private keys (id_ed25519.pub, authorized_keys).
func publicOf(set *canary.Set, content []byte) bool {
	for _, tok := range set.Tokens() {
		if pub := canary.SSHPublicKey(tok.Value); pub != "" && bytes.Contains(content, []byte(strings.Fields(pub)[1])) {
			return true
		}
	}
	return false
}

func envNames(env []string) (out []string) {
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		out = append(out, k)
	}
	return out
}
