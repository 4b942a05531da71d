package sweep

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/sandboxctl/sandboxctl/internal/fsutil"
)

// ArchiveLimits bound what one archive may unpack to: archives are
// untrusted input (zip bombs, directory bombs, path traversal).
type ArchiveLimits struct {
	// MaxEntries bounds the members written: files and folders alike,
	// the folders a member's path implies included (0: 10,000). A
	// directory costs an inode as a file does: 20,000 empty folders pack
	// into 100 to 150 KB.
	MaxEntries   int
	MaxFileSize  int64 // 0: 64 MiB
	MaxTotalSize int64 // 0: 4 GiB
}

// Limits of a member's name (bytes): longer names are refused, as is a
// name with a control character or that is not UTF-8.
const (
	maxMemberPath    = 1024
	maxMemberElement = 255
)

// DefaultMaxEntries is the entries an archive may unpack to when
// ArchiveLimits gives none.
const DefaultMaxEntries = 10_000

func (l ArchiveLimits) withDefaults() ArchiveLimits {
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
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
// a member other than a file or a folder, not an archive).
var ErrArchive = errors.New("archive refused")

// completeFile marks an extraction folder as whole.
const completeFile = ".complete"

// Extract unpacks the archive at src into a folder of dir named by the
// archive's digest, and returns that folder's content. An archive already
// unpacked there (same digest) is not unpacked again. Only regular files
// and folders are written: a link, a device, a FIFO or any other kind of
// member, a path that leaves the folder, a name too long or with a
// control character, and an archive over lim (entries, one file's size,
// the total) are refused with ErrArchive and the reason. On any error,
// everything this call unpacked is removed: a refused archive leaves
// nothing on disk.
//
// sweep, serve and eval unpack archives through this one function.
func Extract(ctx context.Context, src, dir string, lim ArchiveLimits) (string, error) {
	sum, err := fsutil.SHA256(src)
	if err != nil {
		return "", fmt.Errorf("extract: %w", err)
	}
	dest := filepath.Join(dir, sum[:16])
	if _, err := os.Stat(filepath.Join(dest, completeFile)); err == nil {
		return filepath.Join(dest, "content"), nil
	}
	if err := os.RemoveAll(dest); err != nil {
		return "", fmt.Errorf("extract: %w", err)
	}
	content := filepath.Join(dest, "content")
	if err := os.MkdirAll(content, 0o755); err != nil {
		return "", fmt.Errorf("extract: %w", err)
	}
	err = extractFile(ctx, src, content, lim)
	if err == nil {
		err = os.WriteFile(filepath.Join(dest, completeFile), []byte(sum+"\n"), 0o644)
	}
	if err != nil {
		return "", errors.Join(fmt.Errorf("extract %s: %w", filepath.Base(src), err), removeTree(dest))
	}
	return content, nil
}

func extractFile(ctx context.Context, src, content string, lim ArchiveLimits) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	return extractFrom(ctx, f, info.Size(), ArchiveFormat(src), content, lim)
}

// RemoveExtracted removes the folder Extract unpacked content into (an
// archive whose skill was refused after it unpacked). It removes nothing
// that Extract did not make.
func RemoveExtracted(content string) error {
	dest := filepath.Dir(content)
	if filepath.Base(content) != "content" {
		return fmt.Errorf("remove extracted %s: not an extraction folder", content)
	}
	if _, err := os.Stat(filepath.Join(dest, completeFile)); err != nil {
		return fmt.Errorf("remove extracted %s: not an extraction folder: %w", content, err)
	}
	return removeTree(dest)
}

// removeTree removes dir, making its folders writable first (a member
// may have been a folder without the write bit).
func removeTree(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

func extractFrom(ctx context.Context, r io.ReaderAt, size int64, format, dest string, lim ArchiveLimits) error {
	lim = lim.withDefaults()
	// Two passes: the first writes nothing and refuses an archive whose
	// members (names, kinds, counts, declared sizes) are over a bound, so
	// that a bomb is refused before its first folder exists; the second
	// writes, checking the same and the real sizes.
	for _, dry := range []bool{true, false} {
		w := &unpacker{ctx: ctx, dest: dest, lim: lim, dirs: map[string]bool{}, files: map[string]bool{}, dry: dry}
		if err := w.walk(r, size, format); err != nil {
			return err
		}
	}
	return nil
}

// walk reads the archive's members in order and unpacks each.
func (w *unpacker) walk(r io.ReaderAt, size int64, format string) error {
	if format == ".zip" {
		zr, err := zip.NewReader(r, size)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrArchive, err)
		}
		if len(zr.File) > w.lim.MaxEntries {
			return w.overEntries()
		}
		for _, zf := range zr.File {
			m := zf.Mode()
			switch {
			case m.IsDir():
				if err := w.dir(zf.Name); err != nil {
					return err
				}
			case m.IsRegular():
				if w.dry {
					if err := w.file(zf.Name, nil, int64(min(zf.UncompressedSize64, math.MaxInt64)), 0); err != nil {
						return err
					}
					continue
				}
				rc, err := zf.Open()
				if err != nil {
					return fmt.Errorf("%w: %s: %v", ErrArchive, quote(zf.Name), err)
				}
				err = w.file(zf.Name, rc, -1, m.Perm())
				rc.Close()
				if err != nil {
					return err
				}
			default:
				return special(zf.Name, zipKind(m))
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
			if err := w.file(h.Name, tr, h.Size, os.FileMode(h.Mode).Perm()); err != nil {
				return err
			}
		default:
			return special(h.Name, tarKind(h.Typeflag))
		}
	}
}

// unpacker writes an archive's members under dest within limits.
type unpacker struct {
	ctx   context.Context
	dest  string
	lim   ArchiveLimits
	dirs  map[string]bool // folders made, by cleaned member path
	files map[string]bool // files made, by cleaned member path
	count int             // entries: files and folders
	total int64
	// dry checks the members without writing anything: sizes are the
	// declared ones.
	dry bool
}

func (u *unpacker) overEntries() error {
	return fmt.Errorf("%w: over %d entries (files and folders)", ErrArchive, u.lim.MaxEntries)
}

// quote is a member name fit for an error message: control characters
// escaped, cut at 200 bytes.
func quote(name string) string {
	if len(name) > 200 {
		name = name[:200] + "..."
	}
	return strconv.Quote(name)
}

// clean is the cleaned '/'-separated member path of name, or an error
// when the name is unsafe or would leave dest. "" is the archive's root.
func clean(name string) (string, error) {
	n := strings.ReplaceAll(name, "\\", "/")
	switch {
	case n == "" || strings.HasPrefix(n, "/") || (len(n) > 1 && n[1] == ':'):
		return "", fmt.Errorf("%w: unsafe member name %s", ErrArchive, quote(name))
	case len(n) > maxMemberPath:
		return "", fmt.Errorf("%w: member name %s is over %d bytes", ErrArchive, quote(name), maxMemberPath)
	case !utf8.ValidString(n):
		return "", fmt.Errorf("%w: member name %s is not UTF-8", ErrArchive, quote(name))
	case strings.IndexFunc(n, unicode.IsControl) >= 0:
		return "", fmt.Errorf("%w: member name %s holds a control character", ErrArchive, quote(name))
	}
	c := path.Clean(n)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%w: member %s leaves the archive", ErrArchive, quote(name))
	}
	if c == "." {
		return "", nil
	}
	for _, e := range strings.Split(c, "/") {
		if len(e) > maxMemberElement {
			return "", fmt.Errorf("%w: member name %s has an element over %d bytes", ErrArchive, quote(name), maxMemberElement)
		}
	}
	return c, nil
}

// special refuses a member that is neither a file nor a folder.
func special(name, kind string) error {
	return fmt.Errorf("%w: member %s is a %s; only files and folders are accepted", ErrArchive, quote(name), kind)
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

func zipKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return fmt.Sprintf("member of mode %v", m)
}

// mkdirs makes folder c (cleaned, "" the root) and its parents, counting
// each one it makes as an entry.
func (u *unpacker) mkdirs(c string) error {
	if c == "" || u.dirs[c] {
		return nil
	}
	if i := strings.LastIndexByte(c, '/'); i >= 0 {
		if err := u.mkdirs(c[:i]); err != nil {
			return err
		}
	}
	if u.files[c] {
		return fmt.Errorf("%w: member %s is a file and a folder", ErrArchive, quote(c))
	}
	u.count++
	if u.count > u.lim.MaxEntries {
		return u.overEntries()
	}
	u.dirs[c] = true
	if u.dry {
		return nil
	}
	t := filepath.Join(u.dest, filepath.FromSlash(c))
	if err := os.Mkdir(t, 0o755); err != nil {
		return fmt.Errorf("unpack %s: %w", quote(c), err)
	}
	return nil
}

func (u *unpacker) dir(name string) error {
	if err := u.ctx.Err(); err != nil {
		return err
	}
	c, err := clean(name)
	if err != nil {
		return err
	}
	return u.mkdirs(c)
}

// file unpacks a file member read from r: size is its declared size (-1
// unknown), checked first; in a dry pass nothing is read or written.
func (u *unpacker) file(name string, r io.Reader, size int64, perm os.FileMode) error {
	if err := u.ctx.Err(); err != nil {
		return err
	}
	c, err := clean(name)
	if err != nil {
		return err
	}
	if c == "" {
		return fmt.Errorf("%w: unsafe member name %s", ErrArchive, quote(name))
	}
	if u.dirs[c] {
		return fmt.Errorf("%w: member %s is a folder and a file", ErrArchive, quote(name))
	}
	if i := strings.LastIndexByte(c, '/'); i >= 0 {
		if err := u.mkdirs(c[:i]); err != nil {
			return err
		}
	}
	// A later member of the same name replaces the earlier one (an
	// entry already counted); a new name is one more entry.
	if !u.files[c] {
		u.count++
		if u.count > u.lim.MaxEntries {
			return u.overEntries()
		}
		u.files[c] = true
	}
	if size > u.lim.MaxFileSize {
		return fmt.Errorf("%w: %s is over %d bytes", ErrArchive, quote(name), u.lim.MaxFileSize)
	}
	if u.dry {
		u.total += max(size, 0)
		if u.total > u.lim.MaxTotalSize {
			return fmt.Errorf("%w: over %d bytes in all", ErrArchive, u.lim.MaxTotalSize)
		}
		return nil
	}
	t := filepath.Join(u.dest, filepath.FromSlash(c))
	f, err := os.OpenFile(t, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm&0o755|0o600)
	if err != nil {
		return fmt.Errorf("unpack %s: %w", quote(name), err)
	}
	// Read at most one byte past what this file may hold: its own bound
	// or what is left of the total.
	room := min(u.lim.MaxFileSize, u.lim.MaxTotalSize-u.total)
	rr := &readErrs{r: r}
	n, err := io.Copy(f, io.LimitReader(rr, room+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rr.err != nil {
		// A corrupt member (bad checksum, broken compression) is the
		// archive's fault, not the disk's.
		return fmt.Errorf("%w: %s: %v", ErrArchive, quote(name), rr.err)
	}
	if err != nil {
		return fmt.Errorf("unpack %s: %w", quote(name), err)
	}
	if n > u.lim.MaxFileSize {
		return fmt.Errorf("%w: %s is over %d bytes", ErrArchive, quote(name), u.lim.MaxFileSize)
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
