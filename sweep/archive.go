package sweep

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/sandboxctl/sandboxctl/internal/fsutil"
)

// ArchiveLimits bound what one archive may unpack to: archives are
// untrusted input (zip bombs, path traversal).
type ArchiveLimits struct {
	MaxFiles     int   // 0: 100,000
	MaxFileSize  int64 // 0: 64 MiB
	MaxTotalSize int64 // 0: 4 GiB
	// RefuseSpecial refuses an archive holding a link, a device, a FIFO
	// or any member other than a file or a folder; by default such
	// members are skipped (never written). A server taking uploads sets
	// it, so that the caller learns what was not accepted.
	RefuseSpecial bool
}

func (l ArchiveLimits) withDefaults() ArchiveLimits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = 100_000
	}
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = 64 << 20
	}
	if l.MaxTotalSize <= 0 {
		l.MaxTotalSize = 4 << 30
	}
	return l
}

var archiveExts = []string{".tar.gz", ".tgz", ".tar.xz", ".tar.zst", ".tar", ".zip"}

// ArchiveFormat is the archive extension of name (".zip", ".tar.gz", ...),
// or "" when name is not an archive sweep reads.
func ArchiveFormat(name string) string {
	l := strings.ToLower(name)
	for _, e := range archiveExts {
		if strings.HasSuffix(l, e) && len(l) > len(e) {
			return e
		}
	}
	return ""
}

// ErrArchive marks an archive that is refused (unsafe path, over a limit,
// not an archive).
var ErrArchive = errors.New("archive refused")

// Extract unpacks the archive at src into a folder of dir named by the
// archive's digest, and returns that folder. An archive already unpacked
// there (same digest) is not unpacked again. Only regular files and
// folders are written; links, devices and paths that leave the folder are
// refused, as are archives over lim.
func Extract(ctx context.Context, src, dir string, lim ArchiveLimits) (string, error) {
	sum, err := fsutil.SHA256(src)
	if err != nil {
		return "", fmt.Errorf("extract: %w", err)
	}
	dest := filepath.Join(dir, sum[:16])
	if _, err := os.Stat(filepath.Join(dest, ".complete")); err == nil {
		return filepath.Join(dest, "content"), nil
	}
	if err := os.RemoveAll(dest); err != nil {
		return "", fmt.Errorf("extract: %w", err)
	}
	content := filepath.Join(dest, "content")
	if err := os.MkdirAll(content, 0o755); err != nil {
		return "", fmt.Errorf("extract: %w", err)
	}
	f, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("extract: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("extract: %w", err)
	}
	if err := extractFrom(ctx, f, info.Size(), ArchiveFormat(src), content, lim); err != nil {
		os.RemoveAll(dest)
		return "", fmt.Errorf("extract %s: %w", filepath.Base(src), err)
	}
	if err := os.WriteFile(filepath.Join(dest, ".complete"), []byte(sum+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("extract: %w", err)
	}
	return content, nil
}

func extractFrom(ctx context.Context, r io.ReaderAt, size int64, format, dest string, lim ArchiveLimits) error {
	lim = lim.withDefaults()
	w := &unpacker{ctx: ctx, dest: dest, lim: lim}
	if format == ".zip" {
		zr, err := zip.NewReader(r, size)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrArchive, err)
		}
		for _, zf := range zr.File {
			m := zf.Mode()
			switch {
			case m.IsDir():
				if err := w.dir(zf.Name); err != nil {
					return err
				}
			case m.IsRegular():
				rc, err := zf.Open()
				if err != nil {
					return fmt.Errorf("%w: %s: %v", ErrArchive, zf.Name, err)
				}
				err = w.file(zf.Name, rc, m.Perm())
				rc.Close()
				if err != nil {
					return err
				}
			default:
				if err := w.special(zf.Name, m.Type().String()); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var rd io.Reader = io.NewSectionReader(r, 0, size)
	switch format {
	case ".tar.gz", ".tgz":
		gz, err := gzip.NewReader(rd)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrArchive, err)
		}
		defer gz.Close()
		rd = gz
	case ".tar.xz":
		xr, err := xz.NewReader(rd)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrArchive, err)
		}
		rd = xr
	case ".tar.zst":
		zr, err := zstd.NewReader(rd, zstd.WithDecoderMaxMemory(256<<20))
		if err != nil {
			return fmt.Errorf("%w: %v", ErrArchive, err)
		}
		defer zr.Close()
		rd = zr
	}
	tr := tar.NewReader(rd)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrArchive, err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := w.dir(h.Name); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := w.file(h.Name, tr, os.FileMode(h.Mode).Perm()); err != nil {
				return err
			}
		default:
			// links, devices, FIFOs: never written
			if err := w.special(h.Name, tarKind(h.Typeflag)); err != nil {
				return err
			}
		}
	}
}

// unpacker writes an archive's members under dest within limits.
type unpacker struct {
	ctx     context.Context
	dest    string
	lim     ArchiveLimits
	files   int
	total   int64
	skipped int
}

// target is the host path of an archive member, or an error when the
// member's name would leave dest.
func (u *unpacker) target(name string) (string, error) {
	n := strings.ReplaceAll(name, "\\", "/")
	if n == "" || strings.HasPrefix(n, "/") || strings.ContainsRune(n, 0) || (len(n) > 1 && n[1] == ':') {
		return "", fmt.Errorf("%w: unsafe member name %q", ErrArchive, name)
	}
	c := path.Clean(n)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%w: member %q leaves the archive", ErrArchive, name)
	}
	if c == "." {
		return u.dest, nil
	}
	return filepath.Join(u.dest, filepath.FromSlash(c)), nil
}

// special skips a member that is neither a file nor a folder, or refuses
// the archive (RefuseSpecial).
func (u *unpacker) special(name, kind string) error {
	if u.lim.RefuseSpecial {
		return fmt.Errorf("%w: member %q is a %s; only files and folders are accepted", ErrArchive, name, kind)
	}
	u.skipped++
	return nil
}

func tarKind(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "FIFO"
	}
	return fmt.Sprintf("member of type %q", t)
}

func (u *unpacker) dir(name string) error {
	t, err := u.target(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(t, 0o755); err != nil {
		return fmt.Errorf("unpack %s: %w", name, err)
	}
	return nil
}

func (u *unpacker) file(name string, r io.Reader, perm os.FileMode) error {
	if err := u.ctx.Err(); err != nil {
		return err
	}
	u.files++
	if u.files > u.lim.MaxFiles {
		return fmt.Errorf("%w: over %d files", ErrArchive, u.lim.MaxFiles)
	}
	t, err := u.target(name)
	if err != nil {
		return err
	}
	if t == u.dest {
		return fmt.Errorf("%w: unsafe member name %q", ErrArchive, name)
	}
	if err := os.MkdirAll(filepath.Dir(t), 0o755); err != nil {
		return fmt.Errorf("unpack %s: %w", name, err)
	}
	// A later member of the same name replaces the earlier one; a folder
	// of that name is refused by the open below.
	f, err := os.OpenFile(t, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm&0o755|0o600)
	if err != nil {
		return fmt.Errorf("unpack %s: %w", name, err)
	}
	rr := &readErrs{r: r}
	n, err := io.Copy(f, io.LimitReader(rr, u.lim.MaxFileSize+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rr.err != nil {
		// A corrupt member (bad checksum, broken compression) is the
		// archive's fault, not the disk's.
		return fmt.Errorf("%w: %s: %v", ErrArchive, name, rr.err)
	}
	if err != nil {
		return fmt.Errorf("unpack %s: %w", name, err)
	}
	if n > u.lim.MaxFileSize {
		return fmt.Errorf("%w: %s is over %d bytes", ErrArchive, name, u.lim.MaxFileSize)
	}
	u.total += n
	if u.total > u.lim.MaxTotalSize {
		return fmt.Errorf("%w: over %d bytes in all", ErrArchive, u.lim.MaxTotalSize)
	}
	return nil
}

// readErrs remembers the read error of r (io.EOF aside).
type readErrs struct {
	r   io.Reader
	err error
}

func (e *readErrs) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		e.err = err
	}
	return n, err
}
