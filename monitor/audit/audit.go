// Package audit is the monitor's verifiable log: every observation is a
// record of an append-only Merkle log (golang.org/x/mod/sumdb/tlog, the
// RFC 6962 tree), and the log's state is an Ed25519-signed checkpoint
// (golang.org/x/mod/sumdb/note, C2SP checkpoint body: origin, size, base64
// root hash). A checkpoint kept outside the log (in the monitor report)
// verifies only against a log whose first SIZE records are the ones it
// signed: a rewritten record, a truncated log or a reordered one fails.
//
// On disk (DIR): records.jsonl (one record a line), checkpoint (the
// latest signed checkpoint) and key.vkey (the verifier key). The folder's
// own key only proves the log and checkpoint agree, not who wrote them:
// whoever rewrites the log can rewrite the key beside it. Trust comes from
// a key kept elsewhere: its Fingerprint, printed when the log is made and
// recorded apart from it (ParsePins reads a file of them), or the key
// itself, given to Verify.
package audit

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Files of a log folder.
const (
	RecordsFile    = "records.jsonl"
	CheckpointFile = "checkpoint"
	KeyFile        = "key.vkey"
)

// Log is an append-only log being written.
type Log struct {
	dir    string
	origin string
	signer note.Signer
	vkey   string
	f      *os.File
	tree   tree
}

// tree holds the stored hashes of a log's records (tlog's layout).
type tree struct {
	hashes []tlog.Hash
	n      int64
}

func (t *tree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(t.hashes)) {
			return nil, fmt.Errorf("read hash %d: not stored", x)
		}
		out[i] = t.hashes[x]
	}
	return out, nil
}

func (t *tree) add(record []byte) error {
	hs, err := tlog.StoredHashes(t.n, record, t)
	if err != nil {
		return err
	}
	t.hashes = append(t.hashes, hs...)
	t.n++
	return nil
}

// Create starts a new log in dir (made if missing; a log already there is
// an error) with a fresh signing key named origin.
func Create(dir, origin string) (*Log, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create audit log: %w", err)
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		return nil, fmt.Errorf("create audit log: %w", err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		return nil, fmt.Errorf("create audit log: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, RecordsFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create audit log: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, KeyFile), []byte(vkey+"\n"), 0o644); err != nil {
		f.Close()
		return nil, fmt.Errorf("create audit log: %w", err)
	}
	return &Log{dir: dir, origin: origin, signer: signer, vkey: vkey, f: f}, nil
}

// VerifierKey is the log's verifier key (note's vkey format).
func (l *Log) VerifierKey() string { return l.vkey }

// Append adds one record: a single line of text (JSON), no newline.
func (l *Log) Append(record []byte) error {
	if bytes.ContainsAny(record, "\n\r") || len(record) == 0 {
		return errors.New("append audit record: a record is one non-empty line")
	}
	if err := l.tree.add(record); err != nil {
		return fmt.Errorf("append audit record: %w", err)
	}
	if _, err := l.f.Write(append(record, '\n')); err != nil {
		return fmt.Errorf("append audit record: %w", err)
	}
	return nil
}

// Checkpoint signs the log's current state, writes it to the folder and
// returns it.
func (l *Log) Checkpoint() (string, error) {
	root, err := tlog.TreeHash(l.tree.n, &l.tree)
	if err != nil {
		return "", fmt.Errorf("sign checkpoint: %w", err)
	}
	body := fmt.Sprintf("%s\n%d\n%s\n", l.origin, l.tree.n, base64.StdEncoding.EncodeToString(root[:]))
	signed, err := note.Sign(&note.Note{Text: body}, l.signer)
	if err != nil {
		return "", fmt.Errorf("sign checkpoint: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return "", fmt.Errorf("sign checkpoint: %w", err)
	}
	if err := os.WriteFile(filepath.Join(l.dir, CheckpointFile), signed, 0o644); err != nil {
		return "", fmt.Errorf("sign checkpoint: %w", err)
	}
	return string(signed), nil
}

// Close closes the records file.
func (l *Log) Close() error { return l.f.Close() }

// Checkpoint is a verified checkpoint's body.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
}

// Open checks a signed checkpoint with the verifier key and parses it.
func Open(signed, vkey string) (Checkpoint, error) {
	v, err := note.NewVerifier(strings.TrimSpace(vkey))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("verifier key: %w", err)
	}
	n, err := note.Open([]byte(signed), note.VerifierList(v))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint signature: %w", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 || lines[3] != "" {
		return Checkpoint{}, errors.New("checkpoint: want origin, size and root hash lines")
	}
	c := Checkpoint{Origin: lines[0]}
	if c.Size, err = strconv.ParseInt(lines[1], 10, 64); err != nil || c.Size < 0 {
		return Checkpoint{}, fmt.Errorf("checkpoint size %q", lines[1])
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize {
		return Checkpoint{}, fmt.Errorf("checkpoint root hash %q", lines[2])
	}
	copy(c.Root[:], root)
	return c, nil
}

// Result is what Verify checked.
type Result struct {
	Records     int64 // records in the log
	Checkpoints int   // checkpoints verified
}

// Fingerprint names a verifier key: "sha256:" and the hex SHA-256 of the
// key's text (note's vkey format, surrounding space trimmed). It is short
// enough to record where the log's writer cannot reach (a ticket, a
// config file, a chat) and check later.
func Fingerprint(vkey string) string {
	h := sha256.Sum256([]byte(strings.TrimSpace(vkey)))
	return "sha256:" + hex.EncodeToString(h[:])
}

// maxPins bounds a file of pinned fingerprints (lines we did not write).
const maxPins = 100_000

// ParsePins reads pinned key fingerprints: one a line ("sha256:" and 64
// hex digits, then anything: a note), blank lines and # comments skipped.
func ParsePins(r io.Reader) (map[string]bool, error) {
	pins := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	n := 0
	for sc.Scan() {
		n++
		if n > maxPins {
			return nil, fmt.Errorf("pinned keys: over %d lines", maxPins)
		}
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		fp, _, _ := strings.Cut(l, " ")
		fp = strings.ToLower(strings.TrimSpace(fp))
		hx, ok := strings.CutPrefix(fp, "sha256:")
		if b, err := hex.DecodeString(hx); !ok || err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("pinned keys line %d: want sha256: and 64 hex digits, got %q", n, truncate(fp, 80))
		}
		pins[fp] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("pinned keys: %w", err)
	}
	return pins, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// Verify checks the log in dir against each signed checkpoint (the
// folder's own when none is given) with vkey (the folder's key.vkey when
// ""): each checkpoint's signature, that the log holds at least its size
// of records, that the tree of its first SIZE records has its root (no
// record rewritten, removed or reordered), an inclusion proof of every
// record it covers, and a consistency proof from each checkpoint to the
// log's current tree (the log only grew).
func Verify(dir, vkey string, checkpoints ...string) (Result, error) {
	var res Result
	if vkey == "" {
		b, err := os.ReadFile(filepath.Join(dir, KeyFile))
		if err != nil {
			return res, fmt.Errorf("verify audit log: %w", err)
		}
		vkey = string(b)
	}
	if len(checkpoints) == 0 {
		b, err := os.ReadFile(filepath.Join(dir, CheckpointFile))
		if err != nil {
			return res, fmt.Errorf("verify audit log: %w", err)
		}
		checkpoints = []string{string(b)}
	}
	t, records, err := readRecords(filepath.Join(dir, RecordsFile))
	if err != nil {
		return res, fmt.Errorf("verify audit log: %w", err)
	}
	res.Records = t.n
	now, err := tlog.TreeHash(t.n, t)
	if err != nil {
		return res, fmt.Errorf("verify audit log: %w", err)
	}
	for _, signed := range checkpoints {
		c, err := Open(signed, vkey)
		if err != nil {
			return res, fmt.Errorf("verify audit log: %w", err)
		}
		if c.Size == 0 {
			return res, errors.New("verify audit log: the checkpoint covers no record")
		}
		if c.Size > t.n {
			return res, fmt.Errorf("verify audit log: the checkpoint covers %d records, the log holds %d: it was truncated", c.Size, t.n)
		}
		root, err := tlog.TreeHash(c.Size, t)
		if err != nil {
			return res, fmt.Errorf("verify audit log: %w", err)
		}
		if root != c.Root {
			return res, fmt.Errorf("verify audit log: the first %d records do not hash to the checkpoint's root: a record was rewritten, removed or reordered", c.Size)
		}
		for i := range c.Size {
			p, err := tlog.ProveRecord(c.Size, i, t)
			if err == nil {
				err = tlog.CheckRecord(p, c.Size, c.Root, i, tlog.RecordHash(records[i]))
			}
			if err != nil {
				return res, fmt.Errorf("verify audit log: record %d: %w", i, err)
			}
		}
		p, err := tlog.ProveTree(t.n, c.Size, t)
		if err == nil {
			err = tlog.CheckTree(p, t.n, now, c.Size, c.Root)
		}
		if err != nil {
			return res, fmt.Errorf("verify audit log: consistency from %d to %d records: %w", c.Size, t.n, err)
		}
		res.Checkpoints++
	}
	return res, nil
}

// readRecords reads a records file into a tree.
func readRecords(path string) (*tree, [][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	t := &tree{}
	var records [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxRecord)
	for sc.Scan() {
		r := bytes.Clone(sc.Bytes())
		if err := t.add(r); err != nil {
			return nil, nil, err
		}
		records = append(records, r)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, nil, fmt.Errorf("record %d: a line over %d bytes: not a record the monitor wrote", len(records)+1, maxRecord)
		}
		return nil, nil, err
	}
	return t, records, nil
}

// maxRecord bounds one record line read back.
const maxRecord = 16 << 20
