package evaluation

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/rules"
)

// Labels of a corpus skill.
const (
	// Benign skills measure precision: never malicious, rarely suspicious.
	Benign = "benign"
	// DualUse skills do openly, for the user, what an attack does: they are
	// reported, not scored.
	DualUse = "dual-use"
	// Malicious skills measure recall.
	Malicious = "malicious"
)

// A Case is one labelled skill of a corpus.
type Case struct {
	// Corpus names the corpus: the name of the manifest's folder.
	Corpus string `json:"corpus"`
	Slug   string `json:"slug"`
	Label  string `json:"label"`
	// Category is what the skill is for (web-api, installer, ...).
	Category string `json:"category,omitempty"`
	// Family is the attack family (or, for a benign twin, the family it
	// imitates); "" when the manifest has no family column.
	Family string `json:"family,omitempty"`
	// Expect lists the verdicts the skill may get; empty when the manifest
	// states none.
	Expect []rules.Verdict `json:"expect,omitempty"`
	// Dir is the skill's folder on the host: <manifest dir>/skills/<slug>.
	Dir   string `json:"-"`
	Notes string `json:"notes,omitempty"`
}

// Group is what the case is scored under: its family when the manifest has
// one, else its category.
func (c Case) Group() string {
	if c.Family != "" {
		return c.Family
	}
	if c.Category != "" {
		return c.Category
	}
	return "(none)"
}

// ID is corpus/slug, unique across corpora.
func (c Case) ID() string { return c.Corpus + "/" + c.Slug }

// Manifest limits: a manifest is untrusted input.
const (
	maxManifestLine  = 64 << 10
	maxManifestCases = 100_000
)

var slugRe = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`)

// ManifestError locates a problem in a manifest.
type ManifestError struct {
	Path string
	Line int
	Err  error
}

func (e *ManifestError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *ManifestError) Unwrap() error { return e.Err }

// ReadManifest reads a corpus manifest (manifest.tsv) from path. The corpus
// is named after the manifest's folder, and each skill is expected at
// <folder>/skills/<slug>; ReadManifest checks that every one exists.
func ReadManifest(path string) ([]Case, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	defer f.Close()
	root := filepath.Dir(path)
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	cases, err := ParseManifest(f, filepath.Base(abs))
	if err != nil {
		var me *ManifestError
		if errors.As(err, &me) {
			me.Path = path
		}
		return nil, err
	}
	for i := range cases {
		cases[i].Dir = filepath.Join(root, "skills", cases[i].Slug)
		if _, err := os.Stat(cases[i].Dir); err != nil {
			return nil, &ManifestError{Path: path, Err: fmt.Errorf("skill %s: %w", cases[i].Slug, err)}
		}
	}
	return cases, nil
}

// ParseManifest parses a tab-separated manifest whose first line names the
// columns. slug and label are required; category, family, expect and notes
// are read when present (expect holds verdicts separated by "|"), and other
// columns (source_repo, commit, licence, ...) are ignored. Dir is left
// empty. Errors are *ManifestError with the line.
func ParseManifest(r io.Reader, corpus string) ([]Case, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxManifestLine)
	line := 0
	var cols map[string]int
	var cases []Case
	seen := map[string]int{}
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Split(text, "\t")
		if cols == nil {
			cols = map[string]int{}
			for i, f := range fields {
				cols[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(f, "\ufeff")))] = i
			}
			for _, need := range []string{"slug", "label"} {
				if _, ok := cols[need]; !ok {
					return nil, &ManifestError{Line: line, Err: fmt.Errorf("header lacks the %s column", need)}
				}
			}
			continue
		}
		get := func(name string) string {
			if i, ok := cols[name]; ok && i < len(fields) {
				return strings.TrimSpace(fields[i])
			}
			return ""
		}
		c := Case{
			Corpus:   corpus,
			Slug:     get("slug"),
			Label:    get("label"),
			Category: get("category"),
			Family:   get("family"),
			Notes:    get("notes"),
		}
		if !slugRe.MatchString(c.Slug) {
			return nil, &ManifestError{Line: line, Err: fmt.Errorf("slug %q: want lower-case letters, digits, dots, dashes and underscores", c.Slug)}
		}
		if prev, dup := seen[c.Slug]; dup {
			return nil, &ManifestError{Line: line, Err: fmt.Errorf("slug %s repeated (first on line %d)", c.Slug, prev)}
		}
		seen[c.Slug] = line
		switch c.Label {
		case Benign, DualUse, Malicious:
		default:
			return nil, &ManifestError{Line: line, Err: fmt.Errorf("label %q: want benign, dual-use or malicious", c.Label)}
		}
		if e := get("expect"); e != "" {
			for _, v := range strings.Split(e, "|") {
				v := rules.Verdict(strings.TrimSpace(v))
				switch v {
				case rules.Malicious, rules.Suspicious, rules.Clean, rules.Inconclusive:
				default:
					return nil, &ManifestError{Line: line, Err: fmt.Errorf("expect %q: want verdicts (malicious, suspicious, clean, inconclusive) separated by |", e)}
				}
				if !slices.Contains(c.Expect, v) {
					c.Expect = append(c.Expect, v)
				}
			}
		}
		if len(cases) >= maxManifestCases {
			return nil, &ManifestError{Line: line, Err: fmt.Errorf("more than %d skills", maxManifestCases)}
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("a line is longer than %d bytes", maxManifestLine)
		}
		return nil, &ManifestError{Line: line + 1, Err: err}
	}
	if cols == nil {
		return nil, &ManifestError{Err: errors.New("empty manifest: no header line")}
	}
	return cases, nil
}
