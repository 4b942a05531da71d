package sweep

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/skill"
)

// A Skill is one skill a sweep found in its sources.
type Skill struct {
	// ID names the skill across sweeps of the same sources: the source's
	// base name and the skill's path inside it (publisher/skill in a
	// registry mirror). The diff between sweeps matches skills by ID.
	ID string `json:"id"`
	// Name is the skill's own name (frontmatter, else its folder).
	Name string `json:"name"`
	// Path is the skill on the host, as traced (inside the sweep's
	// extraction folder for an archive).
	Path string `json:"path"`
	// Source is where it came from: the SRC argument, and for an archive
	// the member path ("skills.zip!alice/weather").
	Source string `json:"source"`
	// SHA256 is the skill's content digest (skill.Digest); "" when
	// refused.
	SHA256 string `json:"sha256"`
	// Refused says why the loader refused the skill; it is never traced.
	Refused string `json:"refused,omitempty"`
}

// DiscoverOptions tune Discover.
type DiscoverOptions struct {
	// ExtractDir receives the archives' contents, one folder per archive
	// digest (reused when already there).
	ExtractDir string
	// Limits bound what an archive may unpack to (zero: the defaults).
	Limits ArchiveLimits
}

// maxListLines caps a list file: it is input we did not write.
const maxListLines = 1_000_000

// Discover lists the skills of every source: a skill folder or markdown
// file, a folder of skills at any depth (a registry mirror's
// publisher/skill layout included), a list file (one path a line, relative
// to the list; # comments), or a zip or tar archive (.zip, .tar, .tar.gz,
// .tgz, .tar.xz, .tar.zst) unpacked under opt.ExtractDir. Skills are
// sorted by ID; IDs are unique. A skill the loader refuses is listed with
// Refused set: one bad skill does not stop a sweep. An error is returned
// when a source cannot be read at all.
func Discover(ctx context.Context, srcs []string, opt DiscoverOptions) ([]Skill, error) {
	var out []Skill
	for _, src := range srcs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		got, err := discoverOne(ctx, src, opt, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	slices.SortStableFunc(out, func(a, b Skill) int { return strings.Compare(a.ID, b.ID) })
	// Two sources may hold skills of the same relative name: keep IDs
	// unique, in a stable way.
	seen := map[string]int{}
	for i := range out {
		id := out[i].ID
		if n := seen[id]; n > 0 {
			out[i].ID = fmt.Sprintf("%s#%d", id, n+1)
		}
		seen[id]++
	}
	return out, nil
}

func discoverOne(ctx context.Context, src string, opt DiscoverOptions, depth int) ([]Skill, error) {
	info, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", src, err)
	}
	base := sourceBase(src)
	switch {
	case info.IsDir():
		return discoverDir(src, base, src)
	case skill.IsMarkdown(src):
		return discoverDir(src, base, src)
	case ArchiveFormat(src) != "":
		if opt.ExtractDir == "" {
			return nil, fmt.Errorf("source %s: an archive needs an extraction folder", src)
		}
		dir, err := Extract(ctx, src, opt.ExtractDir, opt.Limits)
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", src, err)
		}
		sk, err := discoverDir(dir, base, src)
		if err != nil {
			return nil, err
		}
		for i := range sk {
			rel, _ := filepath.Rel(dir, sk[i].Path)
			sk[i].Source = src + "!" + filepath.ToSlash(rel)
		}
		return sk, nil
	case depth == 0:
		// A list file names sources; it does not name list files.
		lines, err := readList(src)
		if err != nil {
			return nil, err
		}
		var out []Skill
		for _, l := range lines {
			got, err := discoverOne(ctx, l, opt, depth+1)
			if err != nil {
				return nil, fmt.Errorf("list %s: %w", src, err)
			}
			out = append(out, got...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("source %s: not a skill, a folder or an archive", src)
}

// discoverDir lists the skills under dir, a skill itself or a corpus.
func discoverDir(dir, base, src string) ([]Skill, error) {
	entries, err := skill.ListCorpus(dir)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", src, err)
	}
	out := make([]Skill, 0, len(entries))
	for _, e := range entries {
		rel, err := filepath.Rel(dir, e.Path)
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", src, err)
		}
		id := base
		if rel != "." {
			id = base + "/" + strings.TrimSuffix(filepath.ToSlash(rel), "/SKILL.md")
		}
		abs, err := filepath.Abs(e.Path)
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", src, err)
		}
		s := Skill{ID: id, Name: e.Name, Path: abs, Source: src, SHA256: e.SHA256}
		if e.Err != nil {
			s.Refused = e.Err.Error()
			s.Name = filepath.Base(e.Path)
		}
		out = append(out, s)
	}
	return out, nil
}

// sourceBase is the name a source's skills are listed under: its base
// name without an archive extension.
func sourceBase(src string) string {
	b := filepath.Base(filepath.Clean(src))
	if f := ArchiveFormat(b); f != "" {
		b = b[:len(b)-len(f)]
	}
	return b
}

// readList reads a list file: one path a line, blank lines and # comments
// skipped, relative paths taken from the list's folder.
func readList(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", path, err)
	}
	defer f.Close()
	return parseList(f, filepath.Dir(path), path)
}

func parseList(r io.Reader, dir, name string) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	n := 0
	for sc.Scan() {
		n++
		if n > maxListLines {
			return nil, fmt.Errorf("list %s: over %d lines", name, maxListLines)
		}
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.ContainsRune(l, 0) {
			return nil, fmt.Errorf("list %s:%d: a NUL byte in a path", name, n)
		}
		if !filepath.IsAbs(l) {
			l = filepath.Join(dir, l)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("list %s:%d: line too long", name, n+1)
		}
		return nil, fmt.Errorf("list %s: %w", name, err)
	}
	return out, nil
}
