package audit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// newLog writes n records and returns the folder and the checkpoint.
func newLog(t *testing.T, n int) (string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "audit")
	l, err := Create(dir, "sandboxctl.test/monitor")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range n {
		if err := l.Append(fmt.Appendf(nil, `{"run":%d,"verdict":"clean"}`, i+1)); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := l.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	return dir, cp
}

func editRecords(t *testing.T, dir string, edit func([]string) []string) {
	t.Helper()
	p := filepath.Join(dir, RecordsFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	lines = edit(lines)
	out := strings.Join(lines, "\n")
	if len(lines) > 0 {
		out += "\n"
	}
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestVerify(t *testing.T) {
	_, otherVkey, err := note.GenerateKey(nil, "sandboxctl.test/monitor")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		n    int
		// tamper changes the folder after the checkpoint; external says
		// the checkpoint is passed in (as a report holds it).
		tamper   func(t *testing.T, dir, cp string)
		external bool
		vkey     string
		wantErr  string
	}{
		{name: "intact", n: 7},
		{name: "intact, checkpoint from the report", n: 7, external: true},
		{name: "one record", n: 1, external: true},
		{name: "grown after the checkpoint", n: 5, external: true, tamper: func(t *testing.T, dir, _ string) {
			editRecords(t, dir, func(l []string) []string { return append(l, `{"run":6}`, `{"run":7}`) })
		}},
		{name: "rewritten record", n: 7, external: true, wantErr: "rewritten", tamper: func(t *testing.T, dir, _ string) {
			editRecords(t, dir, func(l []string) []string { l[2] = strings.Replace(l[2], "clean", "malicious", 1); return l })
		}},
		{name: "reordered records", n: 4, external: true, wantErr: "rewritten", tamper: func(t *testing.T, dir, _ string) {
			editRecords(t, dir, func(l []string) []string { l[0], l[1] = l[1], l[0]; return l })
		}},
		{name: "truncated log", n: 7, external: true, wantErr: "truncated", tamper: func(t *testing.T, dir, _ string) {
			editRecords(t, dir, func(l []string) []string { return l[:5] })
		}},
		{name: "truncated and re-signed by the folder's key", n: 7, external: true, wantErr: "truncated", tamper: func(t *testing.T, dir, _ string) {
			editRecords(t, dir, func(l []string) []string { return l[:5] })
			// a forger re-checkpoints the folder: the report's checkpoint still fails
			os.WriteFile(filepath.Join(dir, CheckpointFile), []byte("forged"), 0o644)
		}},
		{name: "checkpoint body edited", n: 3, wantErr: "signature", tamper: func(t *testing.T, dir, cp string) {
			os.WriteFile(filepath.Join(dir, CheckpointFile), []byte(strings.Replace(cp, "\n3\n", "\n2\n", 1)), 0o644)
		}},
		{name: "another key", n: 3, external: true, vkey: otherVkey, wantErr: "signature"},
		{name: "records file gone", n: 3, wantErr: "no such file", tamper: func(t *testing.T, dir, _ string) {
			os.Remove(filepath.Join(dir, RecordsFile))
		}},
		{name: "malformed verifier key", n: 3, vkey: "not a key", wantErr: "verifier key"},
		{name: "a record line over 16 MiB", n: 3, wantErr: "a line over 16777216 bytes", tamper: func(t *testing.T, dir, _ string) {
			f, _ := os.OpenFile(filepath.Join(dir, RecordsFile), os.O_APPEND|os.O_WRONLY, 0)
			f.Write(bytes.Repeat([]byte("x"), 17<<20))
			f.Close()
		}},
		{name: "checkpoint not a note", n: 3, wantErr: "checkpoint signature", tamper: func(t *testing.T, dir, _ string) {
			os.WriteFile(filepath.Join(dir, CheckpointFile), []byte("\x00\xff garbage"), 0o644)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, cp := newLog(t, tc.n)
			if tc.tamper != nil {
				tc.tamper(t, dir, cp)
			}
			var cps []string
			if tc.external {
				cps = []string{cp}
			}
			res, err := Verify(dir, tc.vkey, cps...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Verify = %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Checkpoints != 1 || res.Records < int64(tc.n) {
				t.Errorf("result %+v, want 1 checkpoint over at least %d records", res, tc.n)
			}
		})
	}
}

func TestAppendRejects(t *testing.T) {
	l, err := Create(t.TempDir(), "o")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, r := range []string{"", "a\nb", "a\r"} {
		if err := l.Append([]byte(r)); err == nil {
			t.Errorf("Append(%q) accepted", r)
		}
	}
	if _, err := Create(l.dir, "o"); err == nil {
		t.Error("a second log created over the first")
	}
}

// FuzzOpen: a checkpoint (untrusted text from a report or a folder)
// opens only when signed by the key, and then has a sane body.
func FuzzOpen(f *testing.F) {
	skey, vkey, err := note.GenerateKey(nil, "fuzz")
	if err != nil {
		f.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	good, _ := note.Sign(&note.Note{Text: "fuzz\n3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"}, signer)
	f.Add(string(good))
	f.Add("fuzz\n3\nx\n\n— fuzz abc\n")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Open(s, vkey)
		if err != nil {
			return
		}
		if c.Size < 0 || c.Origin == "" && !strings.HasPrefix(s, "\n") {
			t.Fatalf("opened %+v from %q", c, s)
		}
	})
}

// FuzzParsePins: a pinned keys file never panics, and every pin it keeps
// is sha256: and 64 hex digits.
func FuzzParsePins(f *testing.F) {
	f.Add("# keys\nsha256:" + strings.Repeat("ab", 32) + " nightly\n\n")
	f.Add("sha256:zz\n")
	f.Fuzz(func(t *testing.T, s string) {
		pins, err := ParsePins(strings.NewReader(s))
		if err != nil {
			return
		}
		for p := range pins {
			if len(p) != len("sha256:")+64 || !strings.HasPrefix(p, "sha256:") {
				t.Fatalf("pin %q", p)
			}
		}
	})
}

func TestParsePins(t *testing.T) {
	fp := Fingerprint("k+1+abc")
	for _, c := range []struct {
		name, text string
		want       int
		err        string
	}{
		{name: "one with a note", text: fp + " nightly run\n", want: 1},
		{name: "comments and blanks", text: "# x\n\n  " + strings.ToUpper(fp[7:]) + "\n", err: "want sha256:"},
		{name: "upper case hex", text: "SHA256:" + strings.ToUpper(fp[7:]) + "\n", want: 1},
		{name: "short", text: "sha256:abcd\n", err: "want sha256:"},
		{name: "a line over 64 KiB", text: strings.Repeat("#", 70<<10) + "\n", err: "token too long"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pins, err := ParsePins(strings.NewReader(c.text))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || len(pins) != c.want {
				t.Fatalf("pins %v, %v", pins, err)
			}
		})
	}
}
