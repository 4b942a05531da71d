package server

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/sweep"
)

// Options are a submission's trace options, as the flags of `sandboxctl
// trace`. They hold no secret: the provider key comes in a header.
type Options struct {
	Driver   string `json:"driver,omitempty"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	BaseURL  string `json:"base_url,omitempty"`
	Prompt   string `json:"prompt,omitempty"`
	// Timeout is the agent's time budget, a Go duration ("5m").
	Timeout string `json:"timeout,omitempty"`
	// SkillID is the skill's registry identity (publisher/name): with a
	// fingerprint store (serve --store) the skill's history is kept under
	// its name and this, however many times it is uploaded.
	SkillID string `json:"skill_id,omitempty"`
}

// An apiError is a request refused, with its HTTP status.
type apiError struct {
	status int
	msg    string
	// retryAfter is sent as Retry-After with a 429 or 503.
	retryAfter time.Duration
	// reason names a 429 in the metrics: one of rejectReasons, never the
	// message (its numbers would make a label value per queue length).
	reason string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, a ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, a...)}
}

// submission is a parsed POST /v1/traces.
type submission struct {
	opts Options
	// archive is the uploaded or assembled archive in the data folder's
	// tmp/; removed once unpacked.
	archive string
}

// maxField bounds a form field other than the skill.
const maxField = 64 << 10

// readSubmission reads a multipart upload (field "skill" with a zip or
// tar archive, option fields beside it) or a JSON body with the skill's
// files, and writes the archive to tmp.
func (s *Server) readSubmission(r *http.Request, tmp string) (*submission, error) {
	ct, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return nil, &apiError{status: http.StatusUnsupportedMediaType, msg: "Content-Type must be multipart/form-data (field skill: a zip or tar archive) or application/json (the skill's files)"}
	}
	switch ct {
	case "multipart/form-data":
		if params["boundary"] == "" {
			return nil, badRequest("multipart body without a boundary")
		}
		return s.readMultipart(r, tmp)
	case "application/json":
		return s.readJSON(r, tmp)
	}
	return nil, &apiError{status: http.StatusUnsupportedMediaType, msg: "Content-Type must be multipart/form-data (field skill: a zip or tar archive) or application/json (the skill's files)"}
}

func tooLarge(err error, limit int64) error {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return &apiError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("the upload is over %d bytes", limit)}
	}
	return nil
}

func (s *Server) readMultipart(r *http.Request, tmp string) (*submission, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, badRequest("multipart body: %v", err)
	}
	sub := &submission{}
	fields := map[string]*string{"driver": &sub.opts.Driver, "provider": &sub.opts.Provider, "model": &sub.opts.Model,
		"base_url": &sub.opts.BaseURL, "prompt": &sub.opts.Prompt, "timeout": &sub.opts.Timeout, "skill_id": &sub.opts.SkillID}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if e := tooLarge(err, s.cfg.MaxUpload); e != nil {
				return nil, errors.Join(e, sub.cleanup())
			}
			return nil, errors.Join(badRequest("multipart body: %v", err), sub.cleanup())
		}
		name := p.FormName()
		switch {
		case name == "skill":
			if sub.archive != "" {
				return nil, errors.Join(badRequest("more than one skill field"), sub.cleanup())
			}
			path, err := writeArchive(p, tmp)
			if err != nil {
				if e := tooLarge(err, s.cfg.MaxUpload); e != nil {
					return nil, e
				}
				return nil, err
			}
			sub.archive = path
		case name == "options":
			b, err := io.ReadAll(io.LimitReader(p, maxField+1))
			if err == nil && len(b) > maxField {
				err = fmt.Errorf("over %d bytes", maxField)
			}
			if err == nil {
				err = strictJSON(b, &sub.opts)
			}
			if err != nil {
				return nil, errors.Join(badRequest("field options: %v", err), sub.cleanup())
			}
		case fields[name] != nil:
			b, err := io.ReadAll(io.LimitReader(p, maxField+1))
			if err != nil || len(b) > maxField {
				return nil, errors.Join(badRequest("field %s: unreadable or over %d bytes", name, maxField), sub.cleanup())
			}
			*fields[name] = string(b)
		default:
			return nil, errors.Join(badRequest("unknown field %q (skill, options, driver, provider, model, base_url, prompt, timeout, skill_id)", name), sub.cleanup())
		}
	}
	if sub.archive == "" {
		return nil, badRequest("no skill: send the skill as a zip or tar archive in the multipart field \"skill\"")
	}
	return sub, nil
}

func (sub *submission) cleanup() error {
	if sub.archive == "" {
		return nil
	}
	os.Remove(sub.archive)
	return nil
}

// jsonSubmission is the JSON form of a submission.
type jsonSubmission struct {
	// Files maps each path (relative, '/'-separated) to its text.
	Files map[string]string `json:"files"`
	// FilesBase64 maps paths to base64 contents, for binary files.
	FilesBase64 map[string]string `json:"files_base64,omitempty"`
	Options     Options           `json:"options"`
}

func strictJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func (s *Server) readJSON(r *http.Request, tmp string) (*submission, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		if e := tooLarge(err, s.cfg.MaxUpload); e != nil {
			return nil, e
		}
		return nil, badRequest("body: %v", err)
	}
	var js jsonSubmission
	if err := strictJSON(b, &js); err != nil {
		return nil, badRequest("JSON body: %v", err)
	}
	if len(js.Files)+len(js.FilesBase64) == 0 {
		return nil, badRequest("no skill: \"files\" maps each path of the skill to its text (SKILL.md at least)")
	}
	// The files become a tar archive, unpacked by the same code as an
	// upload: one path for every check.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	paths := make([]string, 0, len(js.Files)+len(js.FilesBase64))
	content := map[string][]byte{}
	for p, c := range js.Files {
		paths = append(paths, p)
		content[p] = []byte(c)
	}
	for p, c := range js.FilesBase64 {
		if _, dup := content[p]; dup {
			return nil, badRequest("file %q is in files and files_base64", p)
		}
		d, err := base64.StdEncoding.DecodeString(c)
		if err != nil {
			return nil, badRequest("files_base64 %q: %v", p, err)
		}
		paths = append(paths, p)
		content[p] = d
	}
	slices.Sort(paths)
	for _, p := range paths {
		if err := tw.WriteHeader(&tar.Header{Name: p, Mode: 0o644, Size: int64(len(content[p])), Typeflag: tar.TypeReg}); err != nil {
			return nil, badRequest("file %q: %v", p, err)
		}
		if _, err := tw.Write(content[p]); err != nil {
			return nil, badRequest("file %q: %v", p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, badRequest("files: %v", err)
	}
	path, err := writeArchive(&buf, tmp)
	if err != nil {
		return nil, err
	}
	return &submission{opts: js.Options, archive: path}, nil
}

// writeArchive copies an uploaded archive into tmp under a name with the
// extension of its format, read from its first bytes.
func writeArchive(r io.Reader, tmp string) (string, error) {
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return "", fmt.Errorf("upload: %w", err)
	}
	f, err := os.CreateTemp(tmp, "upload-*")
	if err != nil {
		return "", fmt.Errorf("upload: %w", err)
	}
	rr := &readErr{r: r}
	_, err = io.Copy(f, rr)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		if rr.err != nil {
			// The caller's body (cut, too slow, over the bound), not the
			// server's disk.
			if e := tooLarge(rr.err, -1); e != nil {
				return "", rr.err
			}
			return "", badRequest("the upload could not be read: %v", rr.err)
		}
		return "", fmt.Errorf("upload: %w", err)
	}
	head := make([]byte, 262)
	hf, err := os.Open(f.Name())
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("upload: %w", err)
	}
	n, _ := io.ReadFull(hf, head)
	hf.Close()
	ext := archiveKind(head[:n])
	if ext == "" {
		os.Remove(f.Name())
		return "", badRequest("the skill field is not a zip or tar archive (.zip, .tar, .tar.gz, .tar.xz, .tar.zst)")
	}
	dst := f.Name() + ext
	if err := os.Rename(f.Name(), dst); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("upload: %w", err)
	}
	return dst, nil
}

// readErr remembers the read error of r (io.EOF aside).
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		e.err = err
	}
	return n, err
}

// archiveKind is the extension sweep.Extract reads for an archive whose
// first bytes are head, or "".
func archiveKind(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return ".zip"
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return ".tar.gz"
	case bytes.HasPrefix(head, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		return ".tar.xz"
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return ".tar.zst"
	case len(head) >= 262 && string(head[257:262]) == "ustar":
		return ".tar"
	}
	return ""
}

// unpacked is a submitted skill on disk, checked by the loader.
type unpacked struct {
	path, name, sha string
}

// unpack extracts the archive under the data folder's skills/ (one folder
// per archive digest) and finds the one skill in it. An archive refused,
// or one that holds no skill or more than one, leaves nothing on disk.
func (s *Server) unpack(ctx context.Context, archive string) (*unpacked, error) {
	defer os.Remove(archive)
	// Two uploads of the same archive unpack into the same folder: one at
	// a time (each is bounded, so the wait is short), and a folder removed
	// as refused is not one another upload is using (the same content is
	// refused the same way).
	s.extractMu.Lock()
	defer s.extractMu.Unlock()
	dir, err := sweep.Extract(ctx, archive, filepath.Join(s.cfg.DataDir, "skills"), s.cfg.Archive)
	if err != nil {
		if errors.Is(err, sweep.ErrArchive) {
			msg := err.Error()
			if i := strings.Index(msg, "archive refused"); i >= 0 {
				msg = msg[i:]
			}
			return nil, &apiError{status: http.StatusUnprocessableEntity, msg: msg}
		}
		return nil, fmt.Errorf("unpack the skill: %w", err)
	}
	sk, err := oneSkill(dir)
	if err != nil {
		return nil, errors.Join(err, sweep.RemoveExtracted(dir))
	}
	return sk, nil
}

// oneSkill is the one skill of an unpacked archive, or a 422.
func oneSkill(dir string) (*unpacked, error) {
	entries, err := skill.ListCorpus(dir)
	if err != nil {
		return nil, &apiError{status: http.StatusUnprocessableEntity, msg: fmt.Sprintf("the archive holds no skill: %v", err)}
	}
	switch {
	case len(entries) == 0:
		return nil, &apiError{status: http.StatusUnprocessableEntity, msg: "the archive holds no skill (a SKILL.md, or .md files)"}
	case len(entries) > 1:
		return nil, &apiError{status: http.StatusUnprocessableEntity, msg: fmt.Sprintf("the archive holds %d skills; submit one at a time", len(entries))}
	case entries[0].Err != nil:
		return nil, &apiError{status: http.StatusUnprocessableEntity, msg: fmt.Sprintf("the skill is refused: %v", entries[0].Err)}
	}
	e := entries[0]
	return &unpacked{path: e.Path, name: e.Name, sha: e.SHA256}, nil
}

// newID is a sortable, unique trace id.
func newID(now time.Time) string {
	var b [5]byte
	rand.Read(b[:])
	return "srv-" + now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}
