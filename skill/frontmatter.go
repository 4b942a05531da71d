package skill

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// parseFrontmatter splits YAML frontmatter off content. It returns the
// frontmatter as a mapping node (nil when there is none) and the 1-based
// line where the body starts. The frontmatter opens with a "---" line as the
// first line (a UTF-8 BOM is allowed) and closes with a "---" or "..." line.
func parseFrontmatter(file string, content []byte) (*yaml.Node, int, error) {
	c := bytes.TrimPrefix(content, []byte("\xef\xbb\xbf"))
	lines := strings.Split(string(c), "\n")
	if len(lines) == 0 || strings.TrimRight(lines[0], " \t\r") != "---" {
		return nil, 1, nil
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t\r")
		if l == "---" || l == "..." {
			end = i
			break
		}
	}
	if end < 0 {
		return nil, 0, &ManifestError{Path: file, Line: 1, Err: errors.New("frontmatter opened with --- is never closed")}
	}
	src := strings.Join(lines[1:end], "\n")
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		return nil, 0, &ManifestError{Path: file, Line: errLine(lines[1:end], err) + 1, Err: cleanYAMLErr(err)}
	}
	body := end + 2
	if len(doc.Content) == 0 {
		return nil, body, nil // "---\n---": empty frontmatter
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, 0, &ManifestError{Path: file, Line: m.Line + 1, Err: errors.New("frontmatter is not a mapping of keys to values")}
	}
	// Shift node lines so they are lines of the file.
	shift(m, 1)
	return m, body, nil
}

func shift(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shift(c, by)
	}
}

// errLine finds the line of a YAML syntax error: the first line whose
// prefix no longer parses (yaml.v3's own line numbers are sometimes the line
// where the construct started, sometimes 0-based). Long frontmatter falls
// back to yaml.v3's figure.
func errLine(lines []string, err error) int {
	if len(lines) > 200 {
		return yamlErrLine(err)
	}
	for k := 1; k <= len(lines); k++ {
		var n yaml.Node
		if yaml.Unmarshal([]byte(strings.Join(lines[:k], "\n")), &n) != nil {
			return k
		}
	}
	return yamlErrLine(err)
}

var lineRE = regexp.MustCompile(`line (\d+)`)

// yamlErrLine extracts the 1-based line of a yaml.v3 error (0 if unknown).
func yamlErrLine(err error) int {
	m := lineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

var yamlLinePrefix = regexp.MustCompile(`^yaml: (line \d+: )?`)

func cleanYAMLErr(err error) error {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return errors.New(yamlLinePrefix.ReplaceAllString(msg, ""))
}

// applyFrontmatter fills the skill's known fields from the mapping m.
func applyFrontmatter(s *Skill, file string, m *yaml.Node) error {
	fm := map[string]any{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return &ManifestError{Path: file, Line: k.Line, Err: errors.New("a key is not a plain string")}
		}
		key := k.Value
		if _, dup := fm[key]; dup {
			return &ManifestError{Path: file, Line: k.Line, Err: fmt.Errorf("key %q appears twice", key)}
		}
		var val any
		if err := v.Decode(&val); err != nil {
			return &ManifestError{Path: file, Line: v.Line, Err: fmt.Errorf("key %q: %v", key, cleanYAMLErr(err))}
		}
		fm[key] = normalize(val)
		switch key {
		case "name", "description", "license":
			str, err := scalarString(v)
			if err != nil {
				return &ManifestError{Path: file, Line: v.Line, Err: fmt.Errorf("%s: %v", key, err)}
			}
			switch key {
			case "name":
				s.Name = strings.TrimSpace(str)
			case "description":
				s.Description = strings.TrimSpace(str)
			case "license":
				s.License = strings.TrimSpace(str)
			}
		case "allowed-tools", "allowed_tools":
			tools, err := toolList(v)
			if err != nil {
				return &ManifestError{Path: file, Line: v.Line, Err: fmt.Errorf("%s: %v", key, err)}
			}
			s.AllowedTools = tools
		case "metadata":
			if v.Kind != yaml.MappingNode && !(v.Kind == yaml.ScalarNode && v.Tag == "!!null") {
				return &ManifestError{Path: file, Line: v.Line, Err: errors.New("metadata: must be a mapping")}
			}
		}
	}
	s.Frontmatter = fm
	return nil
}

func scalarString(v *yaml.Node) (string, error) {
	if v.Kind == yaml.ScalarNode {
		if v.Tag == "!!null" {
			return "", nil
		}
		return v.Value, nil
	}
	return "", errors.New("must be a string")
}

// toolList reads allowed-tools: a list, or a string separated by commas or
// spaces ("Bash, Read" or "Bash(git:*) Read"); parentheses group.
func toolList(v *yaml.Node) ([]string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			return nil, nil
		}
		return SplitTools(v.Value), nil
	case yaml.SequenceNode:
		var out []string
		for _, c := range v.Content {
			if c.Kind != yaml.ScalarNode {
				return nil, errors.New("list items must be strings")
			}
			if t := strings.TrimSpace(c.Value); t != "" {
				out = append(out, t)
			}
		}
		return out, nil
	}
	return nil, errors.New("must be a string or a list of strings")
}

// SplitTools splits an allowed-tools string on commas, or on whitespace when
// it has no comma, outside parentheses.
func SplitTools(s string) []string {
	sepComma := strings.Contains(s, ",")
	var out []string
	var cur strings.Builder
	depth := 0
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			out = append(out, t)
		}
		cur.Reset()
	}
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0 && (r == ',' || !sepComma && (r == ' ' || r == '\t' || r == '\n')):
			flush()
			continue
		}
		cur.WriteRune(r)
	}
	flush()
	return out
}

// normalize turns yaml.v3's map[string]any / []any trees into JSON-friendly
// values (map[any]any can't occur with yaml.v3 string keys, but keys of
// other types can).
func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = normalize(x)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[fmt.Sprint(k)] = normalize(x)
		}
		return m
	case []any:
		for i, x := range t {
			t[i] = normalize(x)
		}
		return t
	}
	return v
}
