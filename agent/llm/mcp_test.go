package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/agent/llm"
	"github.com/sandboxctl/sandboxctl/mcptools"
)

// TestMain lets the test binary play agentd's hidden subcommands, which
// the MCP tool server re-executes for the shim and the file tools.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "__shim":
			os.Exit(mcptools.Shim(os.Args[2:], os.Environ(), os.Stdin, os.Stdout, os.Stderr))
		case "__tool":
			os.Exit(mcptools.Tool(context.Background(), os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
		}
	}
	os.Exit(m.Run())
}

// mcpSession adapts the MCP client to agent.ToolSession, as the
// orchestrator does.
type mcpSession struct{ c *mcptools.Client }

func (s mcpSession) CallTool(ctx context.Context, call agent.ToolCall) (agent.ToolResult, error) {
	r, err := s.c.Call(ctx, call.ID, call.Name, call.Arguments)
	if err != nil {
		return agent.ToolResult{}, err
	}
	return agent.ToolResult{ExitCode: r.ExitCode, Stdout: r.Stdout, Stderr: r.Stderr, Truncated: r.Truncated,
		IsError: r.IsError, Text: r.Text, Duration: r.Duration}, nil
}

// startTools serves the real MCP tools on in-process pipes, untraced, as
// the current user in a temporary home.
func startTools(t *testing.T) (*mcptools.Client, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	home := t.TempDir()
	cfg := mcptools.Config{Self: self, NoStrace: true, LogDir: t.TempDir(), User: u.Username, UID: uid, GID: gid,
		Home: home, MaxOutput: 64 << 10, Timeout: 20 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- mcptools.Serve(ctx, sr, sw, cfg)
		sw.Close()
	}()
	c, err := mcptools.NewClient(ctx, cw, cr)
	if err != nil {
		cancel()
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() {
		c.Close()
		cw.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return c, home
}

// TestMultiTurnThroughMCP runs a scripted model through the loop and the
// real MCP tool server: the model writes a file, reads it back with bash
// and lists the folder, and sees each result in the next request.
func TestMultiTurnThroughMCP(t *testing.T) {
	c, home := startTools(t)
	srv := newServer(t, "mcp")
	d, err := llm.New(llm.Config{Provider: "custom", BaseURL: srv.URL, Model: "test-model", APIKey: fakeKey,
		Skill: testSkill(t), BackoffBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var tr bytes.Buffer
	res, err := (&agent.Loop{Session: mcpSession{c}, Transcript: &tr, Budget: agent.Budget{Turns: 10, Wall: time.Minute}}).Run(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop != agent.StopDone || len(res.Calls) != 3 {
		t.Fatalf("stop %q, %d calls: %+v", res.Stop, len(res.Calls), res.Calls)
	}
	if b, err := os.ReadFile(home + "/notes.txt"); err != nil || string(b) != "hello from the model\n" {
		t.Errorf("notes.txt = %q, %v", b, err)
	}
	cat := res.Calls[1].Result
	if cat.ExitCode != 3 || cat.Stdout != "hello from the model\n" || cat.Stderr != "err\n" {
		t.Errorf("bash result = %+v", cat)
	}
	fed := toolMessages(srv.Requests()[2]) // the whole history: write, bash, list
	if len(fed) != 3 || !strings.Contains(fed[0], "wrote 21 bytes") || !strings.Contains(fed[1], "hello from the model") ||
		!strings.Contains(fed[1], "[exit code: 3]") || !strings.Contains(fed[2], "notes.txt") {
		t.Errorf("tool messages fed back = %q", fed)
	}
	if bytes.Contains(tr.Bytes(), []byte(fakeKey)) {
		t.Error("API key in the transcript")
	}
}

// TestModelSeesServedTools: the tools in the request the model gets (names,
// descriptions, argument schemas) are exactly the tools the MCP server in
// the sandbox serves (which lists them by name).
func TestModelSeesServedTools(t *testing.T) {
	c, _ := startTools(t)
	served, err := c.Tools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, "mcp")
	d, err := llm.New(llm.Config{Provider: "custom", BaseURL: srv.URL, Model: "test-model", APIKey: fakeKey,
		Skill: testSkill(t), BackoffBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Next(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model got no request")
	}
	type tool struct {
		Name        string
		Description string
		Parameters  any
	}
	var shown []tool
	list, _ := reqs[0]["tools"].([]any)
	for _, x := range list {
		fn, _ := x.(map[string]any)["function"].(map[string]any)
		name, _ := fn["name"].(string)
		desc, _ := fn["description"].(string)
		shown = append(shown, tool{name, desc, fn["parameters"]})
	}
	var want []tool
	for _, s := range served {
		var params any
		if err := json.Unmarshal(s.Parameters, &params); err != nil {
			t.Fatalf("served schema of %s: %v", s.Name, err)
		}
		want = append(want, tool{s.Name, s.Description, params})
	}
	if len(want) == 0 {
		t.Fatal("the server serves no tool")
	}
	byName := func(a, b tool) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(want, byName)
	slices.SortFunc(shown, byName)
	if diff := cmp.Diff(want, shown); diff != "" {
		t.Errorf("tools shown to the model differ from the tools served (-served +shown):\n%s", diff)
	}
}
