package fsutil

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestSHA256(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := SHA256(p)
	if want := "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; err != nil || got != want {
		t.Errorf("SHA256 = %q, %v, want %q", got, err, want)
	}
	if _, err := SHA256(p + ".missing"); err == nil {
		t.Error("SHA256 of a missing file: no error")
	}
}

func TestWriteAtomic(t *testing.T) {
	tests := []struct {
		name    string
		write   func(io.Writer) error
		want    string // the file after the write
		wantErr bool
	}{
		{name: "replaces the file", write: func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }, want: "new"},
		{name: "a failed write keeps the old file", write: func(w io.Writer) error {
			io.WriteString(w, "half")
			return errors.New("boom")
		}, want: "old", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "out.json")
			if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			err := WriteAtomic(p, 0o640, tt.write)
			if (err != nil) != tt.wantErr {
				t.Fatalf("WriteAtomic error %v, want error %v", err, tt.wantErr)
			}
			b, _ := os.ReadFile(p)
			if string(b) != tt.want {
				t.Errorf("file holds %q, want %q", b, tt.want)
			}
			if !tt.wantErr {
				if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
					t.Errorf("mode %v, want 0640", fi.Mode().Perm())
				}
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("%d entries in the folder, want only the file (no temporary left)", len(ents))
			}
		})
	}
}
