package skill

import (
	"errors"
	"fmt"
)

// Sentinel refusals a caller may branch on.
var (
	// ErrEmpty: the skill has no instruction text (no markdown body and no
	// description).
	ErrEmpty = errors.New("skill is empty: no instruction text")
	// ErrNoManifest: a folder holds no SKILL.md and no other .md file.
	ErrNoManifest = errors.New("no SKILL.md or other .md file in folder")
)

// A ManifestError is invalid frontmatter. Line is 1-based in the file.
type ManifestError struct {
	Path string
	Line int
	Err  error
}

func (e *ManifestError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("invalid frontmatter in %s at line %d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("invalid frontmatter in %s: %v", e.Path, e.Err)
}

func (e *ManifestError) Unwrap() error { return e.Err }

// A BinaryError refuses an instruction file that is not text.
type BinaryError struct {
	Path   string
	Reason string // "NUL byte at offset N", "invalid UTF-8 at offset N"
}

func (e *BinaryError) Error() string {
	return fmt.Sprintf("%s is not a text instruction file: %s", e.Path, e.Reason)
}

// A SizeError refuses a skill over one of the caps.
type SizeError struct {
	Path  string // the file (or the skill root, for total and count caps)
	What  string // "file", "total", "files"
	Size  int64  // size seen (bytes, or file count)
	Limit int64
}

func (e *SizeError) Error() string {
	switch e.What {
	case "files":
		return fmt.Sprintf("%s has more than %d files (cap)", e.Path, e.Limit)
	case "total":
		return fmt.Sprintf("%s is over the total size cap of %d bytes", e.Path, e.Limit)
	}
	return fmt.Sprintf("%s is %d bytes, over the per-file cap of %d bytes", e.Path, e.Size, e.Limit)
}

// A SymlinkError refuses a symlink whose target leaves the skill folder (or
// cannot be resolved). The target is never read.
type SymlinkError struct {
	Path   string // skill-relative path of the link
	Target string // what it points to, as far as it resolved
	Reason string
}

func (e *SymlinkError) Error() string {
	return fmt.Sprintf("symlink %s -> %s refused: %s", e.Path, e.Target, e.Reason)
}

// A FileTypeError refuses something that is not a regular file or folder
// (device, FIFO, socket), or a single file that cannot be a skill.
type FileTypeError struct {
	Path   string
	Reason string
}

func (e *FileTypeError) Error() string {
	return fmt.Sprintf("%s refused: %s", e.Path, e.Reason)
}
