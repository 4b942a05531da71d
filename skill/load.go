package skill

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"

	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// Default caps (Options zero values).
const (
	DefaultMaxFileSize  = 1 << 20  // 1 MiB per file
	DefaultMaxTotalSize = 10 << 20 // 10 MiB per skill
	DefaultMaxFiles     = 2000     // real skills ship hundreds of reference files (454 in one of the shared corpus); the total size bounds them
)

// Options are the caps Load applies. Zero values take the defaults.
type Options struct {
	MaxFileSize  int64
	MaxTotalSize int64
	MaxFiles     int
}

func (o Options) withDefaults() Options {
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.MaxTotalSize <= 0 {
		o.MaxTotalSize = DefaultMaxTotalSize
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	return o
}

// Load reads the skill at path: a markdown file, or a folder (with SKILL.md
// and supporting files, or with several .md files read in name order). A
// path to a file named SKILL.md loads its folder: the skill is the folder.
//
// In a folder with SKILL.md (any case), SKILL.md is the only instruction
// file (Doc); other .md files are references. Without SKILL.md, every .md
// file is an instruction file, in path order. Binary files are allowed as
// assets (File.Binary set); binary instruction files are refused. A .git
// folder is skipped. Symlinks are resolved; one whose target leaves the
// folder is refused without reading the target; devices, FIFOs and sockets
// are refused. Refusals are typed errors (see errors.go); Load never panics
// on its input.
func Load(p string, opts Options) (*Skill, error) {
	opts = opts.withDefaults()
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, fmt.Errorf("load skill %s: %w", p, err)
	}
	// The path given by the user is trusted to be what they meant: resolve
	// it. Links inside a folder are checked against the resolved root.
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("load skill %s: %w", p, err)
	}
	info, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("load skill %s: %w", p, err)
	}
	if info.Mode().IsRegular() && strings.EqualFold(filepath.Base(real), "SKILL.md") {
		// A SKILL.md stands for its folder: the skill is the folder, with
		// the scripts and references next to it.
		real = filepath.Dir(real)
		if info, err = os.Stat(real); err != nil {
			return nil, fmt.Errorf("load skill %s: %w", p, err)
		}
	}
	l := &loader{opts: opts, root: real, visited: map[string]bool{}}
	s := &Skill{Path: p}
	switch {
	case info.IsDir():
		s.Dir = real
		if err := l.walk(real, ""); err != nil {
			return nil, fmt.Errorf("load skill %s: %w", p, err)
		}
	case info.Mode().IsRegular():
		s.Dir = filepath.Dir(real)
		l.root = s.Dir
		if err := l.addFile(real, filepath.Base(real), info); err != nil {
			return nil, fmt.Errorf("load skill %s: %w", p, err)
		}
	default:
		return nil, fmt.Errorf("load skill %s: %w", p, &FileTypeError{Path: p, Reason: "not a regular file or folder"})
	}
	s.Files = l.files
	sort.Slice(s.Files, func(i, j int) bool { return s.Files[i].Path < s.Files[j].Path })
	if err := finish(s, info.IsDir()); err != nil {
		return nil, fmt.Errorf("load skill %s: %w", p, err)
	}
	return s, nil
}

type loader struct {
	opts    Options
	root    string
	visited map[string]bool
	files   []File
	total   int64
}

// walk reads the folder dir, whose skill-relative path is rel.
func (l *loader) walk(dir, rel string) error {
	if l.visited[dir] {
		return nil // a link back to a folder already read
	}
	l.visited[dir] = true
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read folder %s: %w", displayRel(rel), err)
	}
	for _, e := range entries {
		name := e.Name()
		r := path.Join(rel, name)
		full := filepath.Join(dir, name)
		if e.IsDir() && name == ".git" {
			continue
		}
		info, err := os.Lstat(full)
		if err != nil {
			return fmt.Errorf("stat %s: %w", r, err)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := l.resolveLink(full, r)
			if err != nil {
				return err
			}
			full = target
			if info, err = os.Stat(target); err != nil {
				return fmt.Errorf("stat %s: %w", r, err)
			}
		}
		switch {
		case info.IsDir():
			if err := l.walk(full, r); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if err := l.addFile(full, r, info); err != nil {
				return err
			}
		default:
			return &FileTypeError{Path: r, Reason: "not a regular file or folder (" + info.Mode().Type().String() + ")"}
		}
	}
	return nil
}

// resolveLink resolves the link at full (skill-relative rel) and refuses a
// target outside the root. It only stats the target, never opens it.
func (l *loader) resolveLink(full, rel string) (string, error) {
	dest, err := os.Readlink(full)
	if err != nil {
		return "", &SymlinkError{Path: rel, Target: "?", Reason: err.Error()}
	}
	target, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", &SymlinkError{Path: rel, Target: dest, Reason: "cannot be resolved"}
	}
	if !within(l.root, target) {
		return "", &SymlinkError{Path: rel, Target: dest, Reason: "points outside the skill folder"}
	}
	return target, nil
}

func within(root, p string) bool {
	r, err := filepath.Rel(root, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) && !filepath.IsAbs(r)
}

func displayRel(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

func (l *loader) addFile(full, rel string, info fs.FileInfo) error {
	if len(l.files) >= l.opts.MaxFiles {
		return &SizeError{Path: l.root, What: "files", Size: int64(len(l.files) + 1), Limit: int64(l.opts.MaxFiles)}
	}
	if info.Size() > l.opts.MaxFileSize {
		return &SizeError{Path: rel, What: "file", Size: info.Size(), Limit: l.opts.MaxFileSize}
	}
	f, err := os.Open(full)
	if err != nil {
		return fmt.Errorf("open %s: %w", rel, err)
	}
	defer f.Close()
	// The size may have changed since the stat: read at most cap+1 bytes.
	data, err := io.ReadAll(io.LimitReader(f, l.opts.MaxFileSize+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	if int64(len(data)) > l.opts.MaxFileSize {
		return &SizeError{Path: rel, What: "file", Size: int64(len(data)), Limit: l.opts.MaxFileSize}
	}
	l.total += int64(len(data))
	if l.total > l.opts.MaxTotalSize {
		return &SizeError{Path: l.root, What: "total", Size: l.total, Limit: l.opts.MaxTotalSize}
	}
	sum := sha256.Sum256(data)
	l.files = append(l.files, File{
		Path:    rel,
		Size:    int64(len(data)),
		SHA256:  hex.EncodeToString(sum[:]),
		Mode:    info.Mode().Perm(),
		Content: data,
	})
	return nil
}

// IsMarkdown reports whether a file name is a markdown file by extension.
func IsMarkdown(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".md", ".markdown", ".mdx":
		return true
	}
	return false
}

// finish marks instruction files, checks them, parses frontmatter, scans
// for hidden content and computes the digest.
func finish(s *Skill, isDir bool) error {
	if len(s.Files) == 0 {
		return ErrNoManifest
	}
	if !isDir {
		// A single file given directly is the instructions, whatever its name.
		s.Files[0].Doc = true
	} else {
		manifest := -1
		for i, f := range s.Files {
			if strings.EqualFold(f.Path, "SKILL.md") {
				manifest = i
				break
			}
		}
		if manifest >= 0 {
			s.Files[manifest].Doc = true
		} else {
			for i := range s.Files {
				if IsMarkdown(s.Files[i].Path) {
					s.Files[i].Doc = true
				}
			}
		}
	}
	var docs int
	text := false
	for i := range s.Files {
		f := &s.Files[i]
		reason := binaryReason(f.Content)
		if f.Doc {
			docs++
			if reason != "" {
				return &BinaryError{Path: f.Path, Reason: reason}
			}
			fm, body, err := parseFrontmatter(f.Path, f.Content)
			if err != nil {
				return err
			}
			f.BodyLine = body
			if fm != nil && s.Frontmatter == nil {
				if err := applyFrontmatter(s, f.Path, fm); err != nil {
					return err
				}
			}
			if strings.TrimSpace(string(bodyOf(f))) != "" {
				text = true
			}
		} else if reason != "" {
			f.Binary = true
			continue
		}
		s.Hidden = append(s.Hidden, scanHidden(f.Path, f.Content, IsMarkdown(f.Path) || f.Doc)...)
	}
	if docs == 0 {
		return ErrNoManifest
	}
	if !text && strings.TrimSpace(s.Description) == "" {
		return ErrEmpty
	}
	if s.Name == "" {
		s.Name = defaultName(s, isDir)
	}
	s.SHA256 = Digest(s.Files)
	return nil
}

func defaultName(s *Skill, isDir bool) string {
	if isDir || strings.EqualFold(s.Files[0].Path, "SKILL.md") {
		return filepath.Base(s.Dir)
	}
	n := s.Files[0].Path
	return strings.TrimSuffix(n, path.Ext(n))
}

// bodyOf returns the doc's content after frontmatter.
func bodyOf(f *File) []byte {
	if f.BodyLine <= 1 {
		return f.Content
	}
	c := f.Content
	for n := 1; n < f.BodyLine; n++ {
		i := bytes.IndexByte(c, '\n')
		if i < 0 {
			return nil
		}
		c = c[i+1:]
	}
	return c
}

// Body returns the instruction text of a doc after its frontmatter.
func (f *File) Body() string { return string(bodyOf(f)) }

// binaryReason says why data is not text, or "" if it is.
func binaryReason(data []byte) string {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return fmt.Sprintf("NUL byte at offset %d", i)
	}
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return fmt.Sprintf("invalid UTF-8 at offset %d", off)
	}
	return ""
}

// Digest is the skill's sha256: the hex sha256 of the lines
// "<path>\x00<file sha256>\n" for every file, sorted by path. It depends
// only on paths and contents, not on modes or the order files were read.
func Digest(files []File) string {
	pairs := make([]string, 0, len(files))
	for _, f := range files {
		pairs = append(pairs, f.Path+"\x00"+f.SHA256+"\n")
	}
	sort.Strings(pairs)
	h := sha256.New()
	for _, p := range pairs {
		io.WriteString(h, p)
	}
	return hex.EncodeToString(h.Sum(nil))
}
