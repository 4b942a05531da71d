package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/sandboxctl/sandboxctl/toolspec"
)

// Result is one tool call's outcome as the host sees it.
type Result struct {
	CallID    string // the id the server used (the log file's name)
	ExitCode  int
	Stdout    string
	Stderr    string
	Truncated bool
	IsError   bool
	TimedOut  bool
	Text      string // what the model sees
	Duration  time.Duration
}

// A Client drives the tool server over a `docker exec -i` stream. It is
// safe for concurrent use.
type Client struct {
	c *client.Client
}

// NewClient starts an MCP session on the exec's stdin (w) and stdout (r)
// and performs the initialize handshake. Close ends it; closing w (when it
// is an io.Closer) is what tells the server to stop.
func NewClient(ctx context.Context, w io.Writer, r io.Reader) (*Client, error) {
	wc, ok := w.(io.WriteCloser)
	if !ok {
		wc = nopCloser{w}
	}
	c := client.NewClient(transport.NewIO(r, wc, nil))
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("start mcp client: %w", err)
	}
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "sandboxctl", Version: "1"}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize mcp session: %w", err)
	}
	return &Client{c: c}, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// Tools lists the tools the server offers, as it serves them: names,
// descriptions and argument schemas (re-encoded from the wire).
func (c *Client) Tools(ctx context.Context) ([]toolspec.Spec, error) {
	res, err := c.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, fmt.Errorf("list tools: %w", err)
	}
	out := make([]toolspec.Spec, 0, len(res.Tools))
	for _, t := range res.Tools {
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("list tools: schema of %s: %w", t.Name, err)
		}
		out = append(out, toolspec.Spec{Name: t.Name, Description: t.Description, Parameters: schema})
	}
	return out, nil
}

// Call runs tool name with args (a JSON object) as call id. A tool that ran
// and failed is a Result with IsError, not an error; the error is for
// calls that could not be made (unknown tool, broken session, ctx).
func (c *Client) Call(ctx context.Context, id, name string, args json.RawMessage) (Result, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{MetaCallID: id}}
	start := time.Now()
	res, err := c.c.CallTool(ctx, req)
	if err != nil {
		return Result{CallID: id}, fmt.Errorf("call %s %s: %w", name, id, err)
	}
	return decodeResult(res, id, time.Since(start))
}

func decodeResult(res *mcp.CallToolResult, id string, took time.Duration) (Result, error) {
	r := Result{CallID: id, IsError: res.IsError, Duration: took}
	for _, c := range res.Content {
		if t, ok := mcp.AsTextContent(c); ok {
			r.Text += t.Text
		}
	}
	raw := res.RawStructuredContent
	if len(raw) == 0 && res.StructuredContent != nil {
		var err error
		if raw, err = json.Marshal(res.StructuredContent); err != nil {
			return r, fmt.Errorf("decode result of %s: %w", id, err)
		}
	}
	if len(raw) == 0 {
		return r, fmt.Errorf("decode result of %s: %w", id, errNoResult)
	}
	var st Structured
	if err := json.Unmarshal(raw, &st); err != nil {
		return r, fmt.Errorf("decode result of %s: %w", id, err)
	}
	if st.CallID != "" {
		r.CallID = st.CallID
	}
	r.ExitCode, r.Stdout, r.Stderr = st.ExitCode, st.Stdout, st.Stderr
	r.Truncated, r.TimedOut = st.Truncated, st.TimedOut
	if st.DurationMS > 0 {
		r.Duration = time.Duration(st.DurationMS) * time.Millisecond
	}
	return r, nil
}

// ListTools names the tools the server offers.
func (c *Client) ListTools(ctx context.Context) ([]string, error) {
	res, err := c.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, fmt.Errorf("list tools: %w", err)
	}
	names := make([]string, 0, len(res.Tools))
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	return names, nil
}

// Close ends the session and closes the exec's stdin.
func (c *Client) Close() error {
	if err := c.c.Close(); err != nil && !errors.Is(err, io.ErrClosedPipe) {
		return fmt.Errorf("close mcp client: %w", err)
	}
	return nil
}
