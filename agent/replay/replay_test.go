package replay_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/agent/agenttest"
	"github.com/sandboxctl/sandboxctl/agent/literal"
	"github.com/sandboxctl/sandboxctl/agent/replay"
	"github.com/sandboxctl/sandboxctl/skill"
)

func TestReplayReproducesCalls(t *testing.T) {
	s, err := skill.Load("../literal/testdata/skills/basic", skill.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A first run with a rejected call in the middle, as a model would make.
	first := &agenttest.Session{}
	var tr bytes.Buffer
	script := &agenttest.Script{Steps: []agent.Step{
		{Calls: []agent.Proposal{{ToolCall: agent.ToolCall{Name: "bash", Arguments: []byte(`{"command":"id"}`)}}}},
		{Calls: []agent.Proposal{{ToolCall: agent.ToolCall{Name: "nope", Arguments: []byte(`"{bad"`)}, Reject: "no such tool"},
			{ToolCall: agent.ToolCall{Name: "read_file", Arguments: []byte(`{"path":"~/.netrc"}`), SkillFile: "SKILL.md", SkillLine: 3}}}},
	}}
	if _, err := (&agent.Loop{Session: first, Transcript: &tr}).Run(t.Context(), script); err != nil {
		t.Fatal(err)
	}
	lit := literal.New(s, literal.Config{})
	if _, err := (&agent.Loop{Session: first, Transcript: &tr}).Run(t.Context(), lit); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "transcript.jsonl")
	if err := os.WriteFile(path, tr.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := replay.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	second := &agenttest.Session{}
	res, err := (&agent.Loop{Session: second}).Run(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	// Two runs went into one transcript, so ids restart: compare without them.
	noIDs := func(cs []agent.ToolCall) []agent.ToolCall {
		for i := range cs {
			cs[i].ID = ""
		}
		return cs
	}
	if diff := cmp.Diff(noIDs(first.Calls()), noIDs(second.Calls())); diff != "" {
		t.Errorf("replayed calls differ (-first +replay):\n%s", diff)
	}
	if len(res.Calls) != len(first.Calls())+1 || res.Calls[1].Reject != "no such tool" {
		t.Errorf("replay result: %d calls, second %+v", len(res.Calls), res.Calls[1])
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "not json", in: "{\"type\":\"start\"}\nnot json\n", want: "line 2"},
		{name: "call without name", in: `{"type":"turn","calls":[{"arguments":{}}]}`, want: "without a tool name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := replay.Parse(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want %q", err, tt.want)
			}
		})
	}
	d, err := replay.Parse(strings.NewReader(`{"type":"start"}` + "\n"))
	if err != nil || d.Calls() != 0 {
		t.Fatalf("Parse = %v, %v", d, err)
	}
	res, err := (&agent.Loop{Session: &agenttest.Session{}}).Run(t.Context(), d)
	if err != nil || len(res.Notes) != 1 {
		t.Errorf("empty replay: %+v %v", res, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"type":"turn","turn":1,"calls":[{"id":"t001","name":"bash","arguments":{"command":"ls"}}]}`))
	f.Add([]byte("{}\n\n{\"type\":\"end\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := replay.Parse(bytes.NewReader(data))
		if err != nil {
			return
		}
		for {
			st, err := d.Next(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if st.Done {
				break
			}
			for _, c := range st.Calls {
				if c.Name == "" {
					t.Fatal("call without name")
				}
			}
		}
	})
}
