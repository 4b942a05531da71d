package agent

import "encoding/json"

// The tools the sandbox offers (mcptools serves them under these names).
const (
	ToolBash          = "bash"
	ToolReadFile      = "read_file"
	ToolWriteFile     = "write_file"
	ToolEditFile      = "edit_file"
	ToolListDirectory = "list_directory"
	ToolSearchFiles   = "search_files"
	ToolFetchURL      = "fetch_url"
)

// A ToolSpec describes one tool to a model: a name, a description and a JSON
// Schema for its arguments.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Tools lists the sandbox's tools, in a fixed order.
var Tools = []ToolSpec{
	{ToolBash, "Run a shell command with bash in the user's environment and return its exit code, stdout and stderr.",
		json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","description":"the command line to run"},"timeout_s":{"type":"integer","description":"timeout in seconds (optional)"}},"required":["command"]}`)},
	{ToolReadFile, "Read a text file and return its contents.",
		json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"absolute path, or relative to the home directory"}},"required":["path"]}`)},
	{ToolWriteFile, "Write content to a file, creating or replacing it.",
		json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`)},
	{ToolEditFile, "Replace the exact text old with new in a file (old must occur once).",
		json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"old":{"type":"string"},"new":{"type":"string"}},"required":["path","old","new"]}`)},
	{ToolListDirectory, "List the entries of a directory.",
		json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
	{ToolSearchFiles, "Search file contents for a regular expression, recursively.",
		json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string","description":"where to search (optional; default the home directory)"}},"required":["pattern"]}`)},
	{ToolFetchURL, "Fetch a URL over HTTP(S) and return the status, headers and body.",
		json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"},"method":{"type":"string"},"headers":{"type":"object","additionalProperties":{"type":"string"}},"body":{"type":"string"}},"required":["url"]}`)},
}

// KnownTool reports whether name is one of Tools.
func KnownTool(name string) bool {
	for _, t := range Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}
