// Package replay is the agent driver that replays the tool calls of a
// transcript written by agent.Loop, in order, with the same names,
// arguments and skill lines, so a run can be repeated with the model's
// decisions held fixed. Rejected calls are replayed as rejections.
//
// replay reads only the transcript it is given; it never calls a model.
package replay

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/sandboxctl/sandboxctl/agent"
)

// maxLine caps one transcript line (a turn record holds the calls' arguments).
const maxLine = 32 << 20

// Driver replays recorded turns, one step per turn.
type Driver struct {
	turns [][]agent.Proposal
	i     int
}

type record struct {
	Type  string           `json:"type"`
	Turn  int              `json:"turn"`
	Calls []agent.Proposal `json:"calls"`
}

// Parse reads a transcript (JSON lines) and keeps its turns that made calls.
// Records of other types are skipped; a line that is not JSON is an error
// naming the line.
func Parse(r io.Reader) (*Driver, error) {
	d := &Driver{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var rec record
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("parse transcript line %d: %w", n, err)
		}
		if rec.Type != "turn" || len(rec.Calls) == 0 {
			continue
		}
		calls := make([]agent.Proposal, 0, len(rec.Calls))
		for _, c := range rec.Calls {
			if c.Name == "" {
				return nil, fmt.Errorf("parse transcript line %d: a call without a tool name", n)
			}
			if len(c.Arguments) == 0 {
				c.Arguments = json.RawMessage(`{}`)
			}
			c.ID = "" // the loop assigns fresh ids
			calls = append(calls, c)
		}
		d.turns = append(d.turns, calls)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parse transcript line %d: %w", n+1, err)
	}
	return d, nil
}

// Open parses the transcript file at path.
func Open(path string) (*Driver, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open transcript: %w", err)
	}
	defer f.Close()
	d, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// Calls returns the number of calls the driver will replay.
func (d *Driver) Calls() int {
	n := 0
	for _, t := range d.turns {
		n += len(t)
	}
	return n
}

// Next implements agent.Driver.
func (d *Driver) Next(ctx context.Context, prev []agent.Exchange) (agent.Step, error) {
	if d.i >= len(d.turns) {
		st := agent.Step{Done: true}
		if len(d.turns) == 0 {
			st.Note = "the transcript holds no tool calls"
		}
		return st, nil
	}
	calls := append([]agent.Proposal(nil), d.turns[d.i]...)
	d.i++
	return agent.Step{Calls: calls}, nil
}
