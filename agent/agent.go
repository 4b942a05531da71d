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
// PlanReason says why the driver made the call (one of the Reason values,
// or another short phrase); the loop carries it to the trace's tool_call
// event, where the report's coverage reads it.
type ToolCall struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	SkillFile  string          `json:"skill_file,omitempty"`
	SkillLine  int             `json:"skill_line,omitempty"`
	PlanReason string          `json:"plan_reason,omitempty"`
}

// Why a driver made a call (ToolCall.PlanReason).
const (
	ReasonCodeBlock    = "code block"                           // a shell code block, or a command of a transcript block
	ReasonPromptLine   = "prompt line"                          // a "$ cmd" line in prose
	ReasonProseScript  = "prose script"                         // a bundled script named in prose
	ReasonReference    = "reference"                            // a bundled markdown file named in prose, read
	ReasonProseURL     = "prose url"                            // a URL named in prose, fetched
	ReasonProsePath    = "prose path"                           // a home or absolute path named in prose, read or listed
	ReasonFileBlock    = "file block"                           // a code block the text says to save as a file, written or appended
	ReasonToolBlock    = "tool block"                           // a code block written as tool calls (write_file("x", "...")), made
	ReasonEntryPoint   = "bundled entry point"                  // a bundled script, package.json script, Makefile target the text does not call
	ReasonUsageProbe   = "usage probe"                          // SCRIPT --help, run to learn the arguments of an entry point
	ReasonDependency   = "dependency install"                   // installing what a bundled entry point declares it needs
	ReasonRetry        = "retry after install"                  // a failed call again, after installing the module or package its output said was missing
	ReasonRetryArgs    = "retry without unrecognized arguments" // a failed call again, without the arguments its argument parser refused
	ReasonPlaceholder  = "placeholder filled"                   // a planned call whose placeholders were filled with fixture files and plausible values
	ReasonExampleInput = "example input"                        // the data file a step reads, made from a fixture of its kind when missing
	ReasonModel        = "model"                                // the model asked for it
)

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
