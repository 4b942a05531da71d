package orchestrator_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/orchestrator/runtimetest"
)

// chattyDeadToolServer plays a tool server whose stdout dies at once while
// it goes on writing to stderr until its stdin closes: the orchestrator
// reads that stderr for its error while the exec still writes it.
func chattyDeadToolServer(ctx context.Context, sb *runtimetest.Sandbox, e orchestrator.ExecSpec) (int, error) {
	if !slices.Contains(e.Argv, "__mcp") {
		return deadToolServer(ctx, sb, e)
	}
	io.WriteString(e.Stderr, "tool server: cannot start\n")
	stdinDone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, e.Stdin)
		close(stdinDone)
	}()
	if c, ok := e.Stdout.(io.Closer); ok {
		c.Close()
	}
	for {
		select {
		case <-stdinDone:
			return 1, nil
		case <-ctx.Done():
			return 1, ctx.Err()
		case <-time.After(50 * time.Microsecond):
			io.WriteString(e.Stderr, "tool server: still failing\n")
		}
	}
}

// TestToolServerStderrWhileFailing: the tool server's stderr, quoted in
// the error when the MCP handshake fails, is read while the exec may still
// be writing it; under -race an unsynchronised read fails this test.
func TestToolServerStderrWhileFailing(t *testing.T) {
	// Each round seeds a home (most of its time); -short runs two rounds of
	// the five that make test runs.
	rounds := 5
	if testing.Short() {
		rounds = 2
	}
	for i := range rounds {
		rt := &runtimetest.Fake{Logs: readyLogs, Exec: chattyDeadToolServer}
		r := &orchestrator.Runner{Runtime: rt, Binary: binary(t), Teardown: 5 * time.Second}
		p := testPlan(t)
		p.TraceID += "-" + string(rune('a'+i))
		_, err := r.Run(t.Context(), p, "")
		if err == nil || !strings.Contains(err.Error(), "connect to tool server") || !strings.Contains(err.Error(), "tool server: ") {
			t.Fatalf("Run() err = %v, want the handshake failure with the server's stderr", err)
		}
		if _, live := rt.Snapshot(); live != 0 {
			t.Errorf("%d containers left", live)
		}
	}
}
