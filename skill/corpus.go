package skill

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// An Entry is one skill of a corpus: loaded (Name and SHA256 set) or
// refused (Err set). A refusal is data here, so one bad skill does not stop
// a sweep.
type Entry struct {
	Path   string `json:"path"`
	Name   string `json:"name,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Err    error  `json:"-"`
	// Error is Err's message, for JSON.
	Error string `json:"error,omitempty"`
}

// ListCorpus lists the skills in dir: each sub-folder holding a SKILL.md (at
// any depth; the search does not descend into a skill), and each .md file
// directly in dir or in a folder that is not a skill. Entries are sorted by
// path. Each skill is loaded with the default Options to get its name and
// digest. A dir holding a SKILL.md is one skill, listed alone. An error is
// returned only when dir itself cannot be read.
func ListCorpus(dir string) ([]Entry, error) {
	if hasManifest(dir) {
		return []Entry{entry(dir)}, nil // the folder is itself one skill
	}
	var out []Entry
	if err := listCorpus(dir, &out, 0); err != nil {
		return nil, fmt.Errorf("list corpus %s: %w", dir, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

const maxCorpusDepth = 8

func listCorpus(dir string, out *[]Entry, depth int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		full := filepath.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if e.Type()&os.ModeSymlink != 0 {
			continue // a corpus listing does not follow links
		}
		switch {
		case e.IsDir():
			if hasManifest(full) {
				*out = append(*out, entry(full))
			} else if depth < maxCorpusDepth {
				if err := listCorpus(full, out, depth+1); err != nil {
					*out = append(*out, Entry{Path: full, Err: err, Error: err.Error()})
				}
			}
		case e.Type().IsRegular() && IsMarkdown(e.Name()) && !strings.EqualFold(e.Name(), "README.md"):
			*out = append(*out, entry(full))
		}
	}
	return nil
}

func hasManifest(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if strings.EqualFold(e.Name(), "SKILL.md") {
			return true
		}
	}
	return false
}

func entry(p string) Entry {
	s, err := Load(p, Options{})
	if err != nil {
		return Entry{Path: p, Err: err, Error: err.Error()}
	}
	return Entry{Path: p, Name: s.Name, SHA256: s.SHA256}
}
