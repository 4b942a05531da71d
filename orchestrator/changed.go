package orchestrator

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Caps on the changed files copied out of the sandbox (untrusted content).
const (
	maxChangedFiles = 500
	maxChangedFile  = 8 << 20
	maxChangedTotal = 64 << 20
)

// stampPath marks the moment the skill got control: files whose status
// changed after it (ctime, which the user cannot set back) are the trace's.
const stampPath = "/run/agentd/stamp"

// changedScript lists the files under the user-writable places whose ctime is
// newer than the stamp, and tars the ones within the size cap to stdout. It
// runs as root; the user cannot touch the stamp.
const changedScript = `cd / && find home Users tmp var/tmp dev/shm -xdev -cnewer "$STAMP" -type f -print0 2>/dev/null |
head -z -n "$MAXFILES" | tar -c -f - --null -T - --ignore-failed-read --no-recursion 2>/dev/null || true`

// changedFiles copies out the files the trace created or changed in the
// tmpfs places (home, /tmp, /var/tmp, /dev/shm: the engine's diff does not
// see them) into dir/files, and returns an fs_change event for each.
func (r *Runner) changedFiles(ctx context.Context, st *run) ([]trace.Event, error) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := st.sandbox.Exec(ctx, ExecSpec{
			Argv: []string{"/bin/sh", "-c", changedScript}, User: "0:0",
			Env:    []string{"STAMP=" + stampPath, fmt.Sprintf("MAXFILES=%d", maxChangedFiles)},
			Stdout: pw, Stderr: io.Discard,
		})
		pw.CloseWithError(err)
		done <- err
	}()
	events, err := readChanged(pr, st.dir, st.home, r.now)
	io.Copy(io.Discard, pr) // the archive's padding, or what is past a cap
	if st.system.Clock != "" {
		events = slices.DeleteFunc(events, func(e trace.Event) bool {
			ch, ok := e.Data.(*trace.FSChange)
			return ok && fakeClockFile(ch.Path)
		})
	}
	if xerr := <-done; xerr != nil && err == nil {
		err = xerr
	}
	return events, err
}

// readChanged reads the tar of changed files (untrusted): only regular files,
// only clean relative names, within the caps. Files are written under
// dir/files/<path> when dir is set.
func readChanged(r io.Reader, dir string, home *canaryfs.Home, now func() time.Time) ([]trace.Event, error) {
	tr := tar.NewReader(r)
	var events []trace.Event
	var total int64
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return events, nil
		}
		if err != nil {
			return events, fmt.Errorf("read changed files: %w", err)
		}
		name := path.Clean("/" + hdr.Name)
		if hdr.Typeflag != tar.TypeReg || strings.Contains(hdr.Name, "..") {
			continue
		}
		ch := &trace.FSChange{Path: name, Kind: "added", Size: hdr.Size}
		planted, isPlanted := home.File(name)
		if isPlanted && !planted.Dir {
			ch.Kind = "modified"
		}
		if hdr.Size <= maxChangedFile && total+hdr.Size <= maxChangedTotal {
			var buf bytes.Buffer
			if _, err := io.Copy(&buf, io.LimitReader(tr, maxChangedFile)); err != nil {
				return events, fmt.Errorf("read changed file %s: %w", name, err)
			}
			total += int64(buf.Len())
			sum := sha256.Sum256(buf.Bytes())
			ch.SHA256 = hex.EncodeToString(sum[:])
			if ch.Kind == "modified" {
				// what the trace wrote, not what the user had
				ch.Head = textHead(addedLines(planted.Content, buf.Bytes()))
			} else {
				ch.Head = textHead(buf.Bytes())
			}
			if dir != "" {
				rel := filepath.Join("files", filepath.FromSlash(strings.TrimPrefix(name, "/")))
				dst := filepath.Join(dir, rel)
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
					if os.WriteFile(dst, buf.Bytes(), 0o644) == nil {
						ch.Copied = filepath.ToSlash(rel)
					}
				}
			}
			for _, h := range home.Set.Find(buf.Bytes()) {
				events = append(events, trace.Event{Time: now(), Source: trace.SourceCanary, Type: trace.TypeCanaryHit,
					Data: &trace.CanaryHit{TokenID: h.Token.ID, Kind: string(h.Token.Kind), Location: h.Token.Location,
						Encoding: string(h.Encoding), Channel: "file", Where: name, Offset: h.Offset}})
			}
		}
		events = append(events, trace.Event{Time: now(), Source: trace.SourceFSDiff, Type: trace.TypeFSChange, Data: ch})
	}
}

// maxHead caps FSChange.Head: enough for an rc file, a hook or agent
// settings, which the rules judge by what was written.
const maxHead = 4 << 10

// textHead is the start of a changed file for the rules, or nil for a file
// that is not text (a NUL byte in its start).
func textHead(b []byte) []byte {
	h := b[:min(len(b), maxHead)]
	if bytes.IndexByte(h, 0) >= 0 {
		return nil
	}
	return bytes.Clone(h)
}

// addedLines returns the lines of now that were not lines of before, in
// order: what an append, an edit or a rewrite of a planted file added.
func addedLines(before, now []byte) []byte {
	had := map[string]bool{}
	for _, l := range bytes.Split(before, []byte("\n")) {
		had[string(l)] = true
	}
	var out []byte
	for _, l := range bytes.Split(now, []byte("\n")) {
		if !had[string(l)] {
			out = append(append(out, l...), '\n')
		}
	}
	return out
}
