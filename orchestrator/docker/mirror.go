package docker

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// AptSource is one "deb" entry of an apt sources file.
type AptSource struct {
	URI        string
	Suites     []string
	Components []string
}

// ErrNoMirror is returned when the host's apt sources name no Debian mirror
// that could serve the base image's suite.
var ErrNoMirror = errors.New("no Debian mirror in the host's apt sources")

// maxSourcesFile caps how much of one sources file is read.
const maxSourcesFile = 1 << 20

// ReadAptSources reads the apt sources under root ("/" on a real host):
// etc/apt/sources.list, etc/apt/sources.list.d/*.list (one-line format) and
// etc/apt/sources.list.d/*.sources (deb822), in apt's order. Files that do
// not exist are skipped; other read errors are returned.
func ReadAptSources(root string) ([]AptSource, error) {
	dir := filepath.Join(root, "etc", "apt")
	files := []string{filepath.Join(dir, "sources.list")}
	for _, pat := range []string{"*.list", "*.sources"} {
		m, err := filepath.Glob(filepath.Join(dir, "sources.list.d", pat))
		if err != nil {
			return nil, err
		}
		sort.Strings(m)
		files = append(files, m...)
	}
	var out []AptSource
	for _, f := range files {
		data, err := readCapped(f, maxSourcesFile)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(f, ".sources") {
			out = append(out, ParseDeb822Sources(data)...)
		} else {
			out = append(out, ParseOneLineSources(data)...)
		}
	}
	return out, nil
}

func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// ParseOneLineSources parses the one-line format:
//
//	deb [ option=value ... ] uri suite [component ...]
//
// Comments, deb-src lines and malformed lines are skipped.
func ParseOneLineSources(data []byte) []AptSource {
	var out []AptSource
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxSourcesFile)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") {
			// Options run to the first field that ends with "]".
			end := -1
			for i, x := range f {
				if strings.HasSuffix(x, "]") {
					end = i
					break
				}
			}
			if end < 0 {
				continue
			}
			f = f[end+1:]
		}
		if len(f) < 2 {
			continue
		}
		out = append(out, AptSource{URI: f[0], Suites: []string{f[1]}, Components: f[2:]})
	}
	return out
}

// ParseDeb822Sources parses the deb822 format: stanzas separated by blank
// lines, with Types, URIs, Suites, Components and Enabled fields (field
// names are case-insensitive; continuation lines start with a space).
// Stanzas without type "deb", or with "Enabled: no", are skipped; a stanza
// with several URIs yields one source per URI.
func ParseDeb822Sources(data []byte) []AptSource {
	var out []AptSource
	fields := map[string]string{}
	last := ""
	flush := func() {
		if len(fields) > 0 && hasWord(fields["types"], "deb") && !strings.EqualFold(strings.TrimSpace(fields["enabled"]), "no") {
			suites := strings.Fields(fields["suites"])
			comps := strings.Fields(fields["components"])
			for _, u := range strings.Fields(fields["uris"]) {
				if len(suites) > 0 {
					out = append(out, AptSource{URI: u, Suites: suites, Components: comps})
				}
			}
		}
		fields = map[string]string{}
		last = ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxSourcesFile)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		switch {
		case strings.HasPrefix(strings.TrimSpace(line), "#"):
			continue
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] == ' ' || line[0] == '\t':
			if last != "" {
				fields[last] += " " + strings.TrimSpace(line)
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				last = ""
				continue
			}
			last = strings.ToLower(strings.TrimSpace(k))
			fields[last] = strings.TrimSpace(v)
		}
	}
	flush()
	return out
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// PickMirror returns the URI of the first source that serves suite itself
// (not suite-updates or suite-security) over http, https or file, trimmed of
// a trailing slash. It returns ErrNoMirror when there is none.
func PickMirror(sources []AptSource, suite string) (string, error) {
	for _, s := range sources {
		u, err := url.Parse(s.URI)
		if err != nil || u.Host == "" && u.Scheme != "file" {
			continue
		}
		switch u.Scheme {
		case "http", "https", "file":
		default:
			continue
		}
		for _, x := range s.Suites {
			if x == suite {
				return strings.TrimRight(s.URI, "/"), nil
			}
		}
	}
	return "", ErrNoMirror
}
