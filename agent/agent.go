package agent

import (
	"context"
	"encoding/json"
	"time"
)

// A ToolSession runs tool calls in the sandbox. The MCP client implements it.
// CallTool returns an error only when the call could not be made (transport
// failure); a tool that ran and failed is a ToolResult with IsError set.
type ToolSession interface {
	CallTool(ctx context.Context, call ToolCall) (ToolResult, error)
}

// A ToolCall is one call the driver asks for. ID is assigned by the Loop
// ("t001", ...). SkillFile and SkillLine point at the skill line the call
// comes from, when the driver knows it (the literal driver always does).
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	SkillFile string          `json:"skill_file,omitempty"`
	SkillLine int             `json:"skill_line,omitempty"`
}

// A ToolResult is what a tool call produced. Text is what the model sees.
type ToolResult struct {
	ExitCode  int           `json:"exit_code"`
	Stdout    string        `json:"stdout,omitempty"`
	Stderr    string        `json:"stderr,omitempty"`
	Truncated bool          `json:"truncated,omitempty"`
	IsError   bool          `json:"is_error,omitempty"`
	Text      string        `json:"text,omitempty"`
	Duration  time.Duration `json:"duration_ns,omitempty"`
}
