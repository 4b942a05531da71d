package orchestrator

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
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

// changedRoots are the places (tmpfs mounts) whose changed files a trace
// copies out: the engine's diff does not see them.
var changedRoots = append([]string{"/home", "/Users", "/tmp", "/var/tmp", "/dev/shm"}, HarnessDirs...)

// changedReader turns the entries of the tar of changed files (untrusted)
// into events: only regular files, only clean relative names, within the
// caps. Files are written under dir/files/<path> when dir is set.
type changedReader struct {
	dir    string
	home   *canaryfs.Home
	now    func() time.Time
	total  int64
	events []trace.Event
}

// add reads one entry: a regular file named by its path relative to "/".
func (c *changedReader) add(hdr *tar.Header, r io.Reader) error {
	name := path.Clean("/" + hdr.Name)
	if hdr.Typeflag != tar.TypeReg || strings.Contains(hdr.Name, "..") {
		return nil
	}
	ch := &trace.FSChange{Path: name, Kind: "added", Size: hdr.Size}
	planted, isPlanted := c.home.File(name)
	if isPlanted && !planted.Dir {
		ch.Kind = "modified"
	}
	if hdr.Size <= maxChangedFile && c.total+hdr.Size <= maxChangedTotal {
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, io.LimitReader(r, maxChangedFile)); err != nil {
			return fmt.Errorf("read changed file %s: %w", name, err)
		}
		c.total += int64(buf.Len())
		sum := sha256.Sum256(buf.Bytes())
		ch.SHA256 = hex.EncodeToString(sum[:])
		if ch.Kind == "modified" {
			// what the trace wrote, not what the user had
			ch.Head = textHead(addedLines(planted.Content, buf.Bytes()))
		} else {
			ch.Head = textHead(buf.Bytes())
		}
		if c.dir != "" {
			rel := filepath.Join("files", filepath.FromSlash(strings.TrimPrefix(name, "/")))
			dst := filepath.Join(c.dir, rel)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
				if os.WriteFile(dst, buf.Bytes(), 0o644) == nil {
					ch.Copied = filepath.ToSlash(rel)
				}
			}
		}
		for _, h := range c.home.Set.Find(buf.Bytes()) {
			c.events = append(c.events, trace.Event{Time: c.now(), Source: trace.SourceCanary, Type: trace.TypeCanaryHit,
				Data: &trace.CanaryHit{TokenID: h.Token.ID, Kind: string(h.Token.Kind), Location: h.Token.Location,
					Encoding: string(h.Encoding), Channel: "file", Where: name, Offset: h.Offset}})
		}
	}
	c.events = append(c.events, trace.Event{Time: c.now(), Source: trace.SourceFSDiff, Type: trace.TypeFSChange, Data: ch})
	return nil
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
