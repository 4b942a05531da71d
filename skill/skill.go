package skill

import (
	"io/fs"
	"strings"
)

// A Skill is a loaded skill. Files are sorted by Path; instruction files
// (Doc) come in the order an agent reads them (see Docs).
type Skill struct {
	Path         string         `json:"path"` // what Load was given
	Dir          string         `json:"dir"`  // the skill root on disk (the folder, or the file's folder)
	Name         string         `json:"name"` // frontmatter name, else the folder or file name
	Description  string         `json:"description,omitempty"`
	License      string         `json:"license,omitempty"`
	AllowedTools []string       `json:"allowed_tools,omitempty"`
	Frontmatter  map[string]any `json:"frontmatter,omitempty"` // every frontmatter key, known ones included
	Files        []File         `json:"files"`
	SHA256       string         `json:"sha256"` // digest over sorted (path, sha256) pairs; see Digest
	Hidden       []Hidden       `json:"hidden,omitempty"`
}

// A File is one file of a skill. Content is the whole file (caps apply).
type File struct {
	Path    string      `json:"path"` // slash-separated, relative to the skill root
	Size    int64       `json:"size"`
	SHA256  string      `json:"sha256"`
	Mode    fs.FileMode `json:"mode"`
	Content []byte      `json:"-"`
	Doc     bool        `json:"doc,omitempty"` // a markdown instruction file
	// BodyLine is the 1-based line where the body starts after frontmatter
	// (1 when there is none). Only set for Doc files.
	BodyLine int `json:"body_line,omitempty"`
	// Binary is set for a non-instruction file holding binary content
	// (allowed as an asset, flagged for the rules).
	Binary bool `json:"binary,omitempty"`
}

// Hidden is content a human reading the rendered skill would not see.
type Hidden struct {
	File    string `json:"file"`    // skill-relative path
	Line    int    `json:"line"`    // 1-based
	Kind    string `json:"kind"`    // one of the Hidden* constants
	Excerpt string `json:"excerpt"` // decoded where possible, capped
}

// Kinds of hidden content.
const (
	HiddenTagChars    = "tag-chars"
	HiddenZeroWidth   = "zero-width"
	HiddenBidi        = "bidi"
	HiddenHTMLComment = "html-comment"
	HiddenBase64Blob  = "base64-blob"
	HiddenDataURI     = "data-uri"
)

// File returns the file at the skill-relative path, or nil.
func (s *Skill) File(path string) *File {
	for i := range s.Files {
		if s.Files[i].Path == path {
			return &s.Files[i]
		}
	}
	return nil
}

// Docs returns the instruction files in reading order: SKILL.md first when
// present, then the other markdown files in name order.
func (s *Skill) Docs() []*File {
	var out []*File
	for i := range s.Files {
		if s.Files[i].Doc {
			out = append(out, &s.Files[i])
		}
	}
	return out
}

// Lines returns the lines of the file at path (no line terminators), so that
// Lines(p)[n-1] is line n. It returns nil for an unknown path.
func (s *Skill) Lines(path string) []string {
	f := s.File(path)
	if f == nil {
		return nil
	}
	return splitLines(string(f.Content))
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	s = strings.TrimSuffix(s, "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}
