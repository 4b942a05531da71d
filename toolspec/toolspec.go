// Package toolspec is the catalogue of the tools the sandbox offers an agent:
// their names, what each does, and the JSON Schema of its arguments.
//
// It is the one home of that vocabulary: the llm driver shows the catalogue
// to the model (agent/llm), the MCP server in the sandbox serves it and
// runs the calls (mcptools), the literal driver makes calls by its names
// (agent/literal), and the rules read tool calls by them (rules). A test in
// agent/llm checks that what the model is shown is what the server serves.
//
// toolspec is a leaf: it imports nothing of sandboxctl, runs nothing and
// holds no state beyond the catalogue, which it never lets a caller change.
package toolspec

import (
	"encoding/json"
	"slices"
)

// The tools' names.
const (
	Bash          = "bash"
	ReadFile      = "read_file"
	WriteFile     = "write_file"
	EditFile      = "edit_file"
	ListDirectory = "list_directory"
	SearchFiles   = "search_files"
	FetchURL      = "fetch_url"
)

// A Spec describes one tool: its name, a description for the model, and
// the JSON Schema of its arguments (an object).
type Spec struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

var catalogue = []Spec{
	{Bash, "Run a shell command with bash -c in the home directory. Returns stdout, stderr and the exit code.",
		json.RawMessage(`{"type":"object","properties":{` +
			`"command":{"type":"string","description":"The command line"},` +
			`"timeout_s":{"type":"number","description":"Timeout in seconds (optional)"}},` +
			`"required":["command"]}`)},
	{ReadFile, "Read a text file.",
		json.RawMessage(`{"type":"object","properties":{` + pathProp + `},"required":["path"]}`)},
	{WriteFile, "Write a file, creating it and its parent folders, replacing its content.",
		json.RawMessage(`{"type":"object","properties":{` + pathProp + `,` +
			`"content":{"type":"string","description":"The new content"}},` +
			`"required":["path","content"]}`)},
	{EditFile, "Replace the one occurrence of old with new in a file.",
		json.RawMessage(`{"type":"object","properties":{` + pathProp + `,` +
			`"old":{"type":"string","description":"Text to replace; must occur exactly once"},` +
			`"new":{"type":"string","description":"Replacement text"}},` +
			`"required":["path","old","new"]}`)},
	{ListDirectory, "List a directory: folders end with /, files show their size.",
		json.RawMessage(`{"type":"object","properties":{` + pathProp + `},"required":["path"]}`)},
	{SearchFiles, "Search files under path (default: the home directory) whose name matches pattern (a glob, or a substring) and lines matching pattern as a regular expression.",
		json.RawMessage(`{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"Glob, substring or regular expression"},` +
			`"path":{"type":"string","description":"Folder to search (optional)"}},` +
			`"required":["pattern"]}`)},
	{FetchURL, "Fetch a URL over HTTP(S) and return the status, headers and body.",
		json.RawMessage(`{"type":"object","properties":{` +
			`"url":{"type":"string","description":"http or https URL"},` +
			`"method":{"type":"string","description":"HTTP method (default GET)"},` +
			`"headers":{"type":"object","description":"Request headers","additionalProperties":{"type":"string"}},` +
			`"body":{"type":"string","description":"Request body"}},` +
			`"required":["url"]}`)},
}

const pathProp = `"path":{"type":"string","description":"File path, absolute or relative to the home directory"}`

// All returns the catalogue, in a fixed order. The result is a copy.
func All() []Spec {
	out := make([]Spec, len(catalogue))
	for i, s := range catalogue {
		s.Parameters = slices.Clone(s.Parameters)
		out[i] = s
	}
	return out
}

// Lookup returns the tool named name.
func Lookup(name string) (Spec, bool) {
	for _, s := range catalogue {
		if s.Name == name {
			s.Parameters = slices.Clone(s.Parameters)
			return s, true
		}
	}
	return Spec{}, false
}

// Known reports whether name is a tool of the catalogue.
func Known(name string) bool {
	_, ok := Lookup(name)
	return ok
}

// Names returns the tools' names, in the catalogue's order.
func Names() []string {
	out := make([]string, len(catalogue))
	for i, s := range catalogue {
		out[i] = s.Name
	}
	return out
}
