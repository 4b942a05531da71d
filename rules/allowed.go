package rules

import (
	"encoding/json"

	"github.com/sandboxctl/sandboxctl/trace"
)

// AllowedTools is a skill's allowed-tools list parsed as SBX-POLICY-001
// reads it: "Bash(git:*)" allows bash calls whose command starts with git.
type AllowedTools struct{ entries []allowedEntry }

// ParseAllowedTools parses allowed-tools entries (each may hold several,
// separated by commas or spaces outside parentheses).
func ParseAllowedTools(list []string) AllowedTools { return AllowedTools{parseAllowed(list)} }

// Empty says the list allows nothing because it declares nothing: a skill
// without allowed-tools is not held to any.
func (a AllowedTools) Empty() bool { return len(a.entries) == 0 }

// Allows says whether a call of the sandbox tool (bash, read_file, ...)
// with the shell command (bash only) is within the list.
func (a AllowedTools) Allows(tool, command string) bool { return allows(a.entries, tool, command) }

// ToolCommand is the shell command of a bash call's arguments ("" for the
// other tools, or arguments that do not decode).
func ToolCommand(tool string, args json.RawMessage) string {
	return toolCommand(&trace.ToolCall{Tool: tool, Arguments: args})
}
