// Package agenttest provides a fake agent.ToolSession and a scripted driver
// for tests. It never runs anything: results come from a handler.
package agenttest

import (
	"context"
	"sync"

	"github.com/sandboxctl/sandboxctl/agent"
)

// Session is a fake ToolSession. Handle computes each result (nil: exit 0
// with stdout "ok <name>"). Calls records every call, in order. Safe for
// concurrent use.
type Session struct {
	Handle func(ctx context.Context, call agent.ToolCall) (agent.ToolResult, error)

	mu    sync.Mutex
	calls []agent.ToolCall
}

// CallTool implements agent.ToolSession.
func (s *Session) CallTool(ctx context.Context, call agent.ToolCall) (agent.ToolResult, error) {
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()
	if s.Handle != nil {
		return s.Handle(ctx, call)
	}
	out := "ok " + call.Name + "\n"
	return agent.ToolResult{Stdout: out, Text: out}, nil
}

// Calls returns the calls made so far.
func (s *Session) Calls() []agent.ToolCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]agent.ToolCall(nil), s.calls...)
}

// Script is a Driver that returns its steps in order, then Done. Seen
// records the prev argument of every Next call.
type Script struct {
	Steps []agent.Step
	Seen  [][]agent.Exchange
	i     int
}

// Next implements agent.Driver.
func (s *Script) Next(ctx context.Context, prev []agent.Exchange) (agent.Step, error) {
	s.Seen = append(s.Seen, prev)
	if s.i >= len(s.Steps) {
		return agent.Step{Done: true}, nil
	}
	st := s.Steps[s.i]
	s.i++
	// Copy the proposals: the loop writes IDs into them.
	st.Calls = append([]agent.Proposal(nil), st.Calls...)
	return st, nil
}
