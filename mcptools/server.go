package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/sandboxctl/sandboxctl/toolspec"
)

// MetaCallID is the _meta key under which the host passes a call's id.
const MetaCallID = "call_id"

// Structured is the structured content of every tool result.
type Structured struct {
	CallID      string `json:"call_id"`
	ExitCode    int    `json:"exit_code"`
	Stdout      string `json:"stdout"`
	Stderr      string `json:"stderr"`
	Truncated   bool   `json:"truncated"`
	DurationMS  int64  `json:"duration_ms"`
	TimedOut    bool   `json:"timed_out,omitempty"`
	Signal      string `json:"signal,omitempty"`
	StdoutBytes int64  `json:"stdout_bytes"`
	StderrBytes int64  `json:"stderr_bytes"`
}

type toolServer struct {
	cfg     Config
	tracers tracers
	rand    *randomness // nil without Config.Entropy
	mu      sync.Mutex
	n       int
	used    map[string]bool
}

// Serve runs the MCP tool server on in/out until in ends or ctx ends. It
// must run as root (it starts strace, which runs tools as cfg.User). When
// ctx ends, the commands still running are killed and the tracers told to
// detach; when only in ends, tracers keep following what calls left in the
// background, until Flush.
func Serve(ctx context.Context, in io.Reader, out io.Writer, cfg Config) error {
	cfg = cfg.withDefaults()
	if !cfg.NoStrace {
		if err := os.MkdirAll(cfg.LogDir, 0o700); err != nil {
			return fmt.Errorf("create log dir: %w", err)
		}
	}
	s := &toolServer{cfg: cfg, used: map[string]bool{}}
	if len(cfg.Entropy) > 0 {
		r, err := newRandomness(cfg.Entropy)
		if err != nil {
			return fmt.Errorf("reproducible randomness: %w", err)
		}
		s.rand = r
		// Ends the listeners' goroutines; processes still under a filter
		// get ENOSYS from getrandom from then on.
		defer r.close()
	}
	ms := server.NewMCPServer("sandboxctl-tools", "1", server.WithToolCapabilities(false), server.WithRecovery())
	for _, t := range s.tools() {
		ms.AddTool(t.def, t.handler)
	}
	ss := server.NewStdioServer(ms)
	ss.SetErrorLogger(log.New(io.Discard, "", 0))
	err := ss.Listen(ctx, in, out)
	if ctx.Err() != nil {
		s.tracers.stop(syscall.SIGTERM)
		err = nil
	}
	if err != nil {
		return fmt.Errorf("serve mcp: %w", err)
	}
	return nil
}

type toolDef struct {
	def     mcp.Tool
	handler server.ToolHandlerFunc
}

// tools is the catalogue (toolspec), each tool served with its schema as
// is, so that the server offers exactly what the model is shown.
func (s *toolServer) tools() []toolDef {
	var defs []toolDef
	for _, t := range toolspec.All() {
		defs = append(defs, toolDef{mcp.NewToolWithRawSchema(t.Name, t.Description, t.Parameters), s.handle(t.Name)})
	}
	return defs
}

// callID returns a file-name-safe, unique id for a call: the host's
// _meta.call_id when given, else "s<n>".
func (s *toolServer) callID(req mcp.CallToolRequest) string {
	var id string
	if m := req.Params.Meta; m != nil && m.AdditionalFields != nil {
		if v, ok := m.AdditionalFields[MetaCallID].(string); ok {
			id = SanitizeID(v)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if id == "" {
		id = "s" + strconv.Itoa(s.n)
	}
	base := id
	for i := 2; s.used[id]; i++ {
		id = base + "-" + strconv.Itoa(i)
	}
	s.used[id] = true
	return id
}

// SanitizeID maps a call id to the name of its log file: letters, digits,
// '.', '_' and '-' are kept, anything else becomes '_', at most 64 bytes,
// never starting with '.'. It returns "" for an empty id.
func SanitizeID(id string) string {
	b := []byte(id)
	if len(b) > 64 {
		b = b[:64]
	}
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
		if !ok || i == 0 && c == '.' {
			b[i] = '_'
		}
	}
	return string(b)
}

func (s *toolServer) handle(name string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id := s.callID(req)
		var a toolArgs
		raw, err := json.Marshal(req.GetArguments())
		if err == nil {
			err = json.Unmarshal(raw, &a)
		}
		if err != nil {
			return s.refuse(id, fmt.Sprintf("%s: arguments: %v", name, err)), nil
		}
		if msg := validate(name, a); msg != "" {
			return s.refuse(id, name+": "+msg), nil
		}
		j := job{callID: id, timeout: s.cfg.Timeout}
		if name == toolspec.Bash {
			j.argv = []string{"/bin/bash", "-c", a.Command}
			if a.TimeoutS != nil && *a.TimeoutS > 0 {
				j.timeout = min(time.Duration(*a.TimeoutS*float64(time.Second)), s.cfg.MaxTimeout)
			}
		} else {
			if p, ok := expandHome(a.Path, s.cfg.Home); ok {
				a.Path = p
				if raw, err = json.Marshal(a); err != nil {
					return s.refuse(id, fmt.Sprintf("%s: arguments: %v", name, err)), nil
				}
			}
			j.argv = append(append([]string{s.cfg.Self, "__tool"}, s.cfg.identity().args()...), name)
			j.stdin = raw
		}
		o, err := s.run(ctx, j)
		if err != nil {
			return s.refuse(id, fmt.Sprintf("%s: %v", name, err)), nil
		}
		return result(id, o), nil
	}
}

// expandHome expands a leading "~" of a file tool's path to the user's
// home, as the user's shell would: "~" and "~/..." only ("~other" names
// another user's home and is left as it is). ok is false when p has no
// such "~".
func expandHome(p, home string) (string, bool) {
	switch {
	case p == "~":
		return home, true
	case strings.HasPrefix(p, "~/"):
		return filepath.Join(home, p[2:]), true
	}
	return p, false
}

// validate checks a tool's required arguments; it returns what is wrong.
func validate(name string, a toolArgs) string {
	switch name {
	case toolspec.Bash:
		if strings.TrimSpace(a.Command) == "" {
			return "command is required"
		}
		if a.TimeoutS != nil && *a.TimeoutS < 0 {
			return "timeout_s must not be negative"
		}
	case toolspec.ReadFile, toolspec.ListDirectory:
		if a.Path == "" {
			return "path is required"
		}
	case toolspec.WriteFile:
		if a.Path == "" || a.Content == nil {
			return "path and content are required"
		}
	case toolspec.EditFile:
		if a.Path == "" || a.Old == nil || a.New == nil {
			return "path, old and new are required"
		}
	case toolspec.SearchFiles:
		if a.Pattern == "" {
			return "pattern is required"
		}
	case toolspec.FetchURL:
		if a.URL == "" {
			return "url is required"
		}
	}
	if strings.ContainsRune(a.Path, 0) {
		return "path contains a NUL byte"
	}
	return ""
}

// refuse is the result of a call that never ran.
func (s *toolServer) refuse(id, msg string) *mcp.CallToolResult {
	r := mcp.NewToolResultStructured(Structured{CallID: id, ExitCode: -1, Stderr: msg}, msg)
	r.IsError = true
	return r
}

func result(id string, o outcome) *mcp.CallToolResult {
	st := Structured{
		CallID:      id,
		ExitCode:    o.exitCode,
		Stdout:      string(o.stdout),
		Stderr:      string(o.stderr),
		Truncated:   o.truncated(),
		DurationMS:  o.duration.Milliseconds(),
		TimedOut:    o.timedOut,
		Signal:      o.signal,
		StdoutBytes: o.stdoutBytes,
		StderrBytes: o.stderrBytes,
	}
	var b strings.Builder
	b.WriteString(st.Stdout)
	if st.Stderr != "" {
		if b.Len() > 0 && !strings.HasSuffix(st.Stdout, "\n") {
			b.WriteByte('\n')
		}
		b.WriteString("[stderr]\n")
		b.WriteString(st.Stderr)
	}
	note := func(s string) {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(s)
		b.WriteByte('\n')
	}
	if st.Truncated {
		note(fmt.Sprintf("[output truncated: kept %d of %d stdout bytes, %d of %d stderr bytes]",
			len(o.stdout), o.stdoutBytes, len(o.stderr), o.stderrBytes))
	}
	switch {
	case o.timedOut:
		note(fmt.Sprintf("[timed out; the command was killed after %s]", o.duration.Round(time.Second)))
	case o.cancelled:
		note("[cancelled; the command was killed]")
	case o.exitCode != 0:
		note(fmt.Sprintf("[exit code: %d]", o.exitCode))
	}
	r := mcp.NewToolResultStructured(st, b.String())
	r.IsError = o.exitCode != 0 || o.timedOut || o.cancelled
	return r
}
