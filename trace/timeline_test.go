package trace_test

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/trace"
)

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func open(ms int, pid int, path string) trace.Event {
	return trace.Event{Time: at(ms), Source: trace.SourceSyscall, Type: trace.TypeOpen, PID: pid,
		ToolCallID: "c1", Data: &trace.File{Path: path}}
}

func TestMergeOrder(t *testing.T) {
	tool := []trace.Event{
		{Time: at(0), Source: trace.SourceTool, Type: trace.TypeToolCall, Data: &trace.ToolCall{ID: "c1"}},
		{Time: at(20), Source: trace.SourceTool, Type: trace.TypeToolCall, Data: &trace.ToolCall{ID: "c2"}},
	}
	sys := []trace.Event{open(10, 5, "/a"), open(20, 5, "/b"), open(20, 5, "/c")}
	dns := []trace.Event{{Time: at(5), Source: trace.SourceDNS, Type: trace.TypeDNSQuery, Data: &trace.DNSQuery{Name: "x."}}}
	got := trace.Merge(tool, sys, dns)
	type row struct {
		Seq  int64
		Desc string
	}
	var rows []row
	for _, e := range got {
		d := string(e.Type)
		switch x := e.Data.(type) {
		case *trace.ToolCall:
			d += " " + x.ID
		case *trace.File:
			d += " " + x.Path
		case *trace.DNSQuery:
			d += " " + x.Name
		}
		rows = append(rows, row{e.Seq, d})
	}
	want := []row{{1, "tool_call c1"}, {2, "dns_query x."}, {3, "open /a"}, {4, "tool_call c2"}, {5, "open /b"}, {6, "open /c"}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("Merge order (-want +got):\n%s", diff)
	}
	if sys[0].Seq != 0 {
		t.Errorf("Merge modified its input: Seq = %d", sys[0].Seq)
	}
}

func TestCollapse(t *testing.T) {
	tests := []struct {
		name   string
		events []trace.Event
		counts []int
	}{
		{name: "identical within window", events: []trace.Event{open(0, 1, "/a"), open(100, 1, "/a"), open(200, 1, "/a")}, counts: []int{3}},
		{name: "interleaved", events: []trace.Event{open(0, 1, "/a"), open(1, 1, "/b"), open(2, 1, "/a"), open(3, 1, "/b")}, counts: []int{2, 2}},
		{name: "other pid", events: []trace.Event{open(0, 1, "/a"), open(1, 2, "/a")}, counts: []int{0, 0}},
		{name: "gap over window", events: []trace.Event{open(0, 1, "/a"), open(1500, 1, "/a"), open(2000, 1, "/a")}, counts: []int{0, 2}},
		{name: "sliding window", events: []trace.Event{open(0, 1, "/a"), open(900, 1, "/a"), open(1800, 1, "/a")}, counts: []int{3}},
		{name: "tool calls never collapse", events: []trace.Event{
			{Time: at(0), Source: trace.SourceTool, Type: trace.TypeToolCall, Data: &trace.ToolCall{ID: "x"}},
			{Time: at(0), Source: trace.SourceTool, Type: trace.TypeToolCall, Data: &trace.ToolCall{ID: "x"}},
		}, counts: []int{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := trace.Merge(tt.events)
			var counts []int
			for _, e := range got {
				counts = append(counts, e.Count)
			}
			if diff := cmp.Diff(tt.counts, counts); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCollapseMillion adds a million identical opens and checks that the
// result is one event, and that time and memory stay bounded.
func TestCollapseMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const n = 1_000_000
	c := trace.NewCollapser(time.Second)
	data := &trace.File{Path: "/home/u/.cache/loop", Flags: "O_RDONLY"}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	for i := range n {
		c.Add(trace.Event{Time: t0.Add(time.Duration(i) * time.Microsecond), Source: trace.SourceSyscall,
			Type: trace.TypeOpen, PID: 7, ToolCallID: "c1", Data: data})
	}
	el := time.Since(start)
	runtime.ReadMemStats(&after)
	got := c.Events()
	if len(got) != 1 || got[0].Count != n {
		t.Fatalf("got %d events, first count %d; want 1 event of count %d", len(got), got[0].Count, n)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("1e6 identical opens: %v, %d bytes allocated", el, alloc)
	if alloc > 16<<20 {
		t.Errorf("allocated %d bytes for 1e6 identical events, want < 16 MiB", alloc)
	}
	if el > 20*time.Second {
		t.Errorf("took %v, want < 20s", el)
	}
}

func TestBuildTree(t *testing.T) {
	sc := func(ms, pid int, typ trace.Type, d any) trace.Event {
		return trace.Event{Time: at(ms), Source: trace.SourceSyscall, Type: typ, PID: pid, ToolCallID: "c1", Data: d}
	}
	events := trace.Merge([]trace.Event{
		sc(0, 10, trace.TypeExec, &trace.Exec{Path: "/bin/sh", Argv: []string{"sh", "-c", "curl x | sh"}}),
		sc(1, 10, trace.TypeClone, &trace.Process{ChildPID: 11}),
		sc(2, 11, trace.TypeExec, &trace.Exec{Path: "/usr/bin/curl", Argv: []string{"curl", "x"}}),
		sc(3, 10, trace.TypeClone, &trace.Process{ChildPID: 12}),
		sc(4, 12, trace.TypeExec, &trace.Exec{Path: "/bin/nope", Argv: []string{"nope"}, Errno: "ENOENT"}),
		sc(5, 11, trace.TypeExit, &trace.Process{ExitCode: 0}),
		sc(6, 12, trace.TypeExit, &trace.Process{ExitCode: 127}),
	})
	tr := trace.BuildTree(events)
	if diff := cmp.Diff([]int{10}, tr.Roots); diff != "" {
		t.Errorf("roots (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{11, 12}, tr.Procs[10].Children); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
	if got := tr.Procs[11].Argv; !cmp.Equal(got, []string{"curl", "x"}) {
		t.Errorf("argv of 11 = %q", got)
	}
	if got := tr.Procs[12].Argv; !cmp.Equal(got, []string{"sh", "-c", "curl x | sh"}) {
		t.Errorf("argv of 12 after failed exec = %q, want parent's", got)
	}
	if p := tr.Procs[12]; !p.Exited || p.ExitCode != 127 || len(p.Execs) != 1 {
		t.Errorf("proc 12 = %+v", p)
	}
	if diff := cmp.Diff([]int{10}, tr.Ancestors(11)); diff != "" {
		t.Errorf("ancestors (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{11, 12}, tr.Descendants(10)); diff != "" {
		t.Errorf("descendants (-want +got):\n%s", diff)
	}
}

func TestJSONLRoundTrip(t *testing.T) {
	in := trace.Merge([]trace.Event{
		{Time: at(0), Source: trace.SourceTool, Type: trace.TypeToolCall, Data: &trace.ToolCall{ID: "c1", Tool: "bash", Arguments: []byte(`{"command":"id"}`), Started: at(0)}},
		open(1, 3, "/etc/passwd"),
		{Time: at(2), Source: trace.SourceHTTP, Type: trace.TypeHTTP, Data: &trace.HTTPExchange{Method: "POST", URL: "https://x/y", Body: []byte("a=b"), Headers: map[string][]string{"A": {"1"}}}},
		{Time: at(3), Source: trace.SourceDNS, Type: "future_type", Data: nil},
	})
	var buf bytes.Buffer
	if err := trace.WriteJSONL(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := trace.ReadJSONL(&buf, trace.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestReadJSONLLimits(t *testing.T) {
	line := `{"seq":1,"time":"2026-11-23T10:00:00Z","source":"syscall","type":"open","data":{"path":"/a"}}` + "\n"
	_, err := trace.ReadJSONL(strings.NewReader(strings.Repeat(line, 5)), trace.Limits{MaxEvents: 4})
	if !errors.Is(err, trace.ErrTooLarge) {
		t.Errorf("5 events with MaxEvents 4: err = %v, want ErrTooLarge", err)
	}
	_, err = trace.ReadJSONL(strings.NewReader(line), trace.Limits{MaxLine: 20})
	if !errors.Is(err, trace.ErrTooLarge) {
		t.Errorf("long line: err = %v, want ErrTooLarge", err)
	}
	_, err = trace.ReadJSONL(strings.NewReader(line+"{not json\n"), trace.Limits{})
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: err = %v, want one naming line 2", err)
	}
	_, err = trace.ReadJSONL(strings.NewReader(`{"type":"open","data":{"path":5}}`), trace.Limits{})
	if err == nil {
		t.Errorf("mistyped data: no error")
	}
}

func FuzzReadJSONL(f *testing.F) {
	f.Add([]byte(`{"seq":1,"time":"2026-11-23T10:00:00Z","source":"syscall","type":"open","data":{"path":"/a"}}` + "\n"))
	f.Add([]byte(`{"type":"http","data":{"method":"GET","url":"http://x","headers":{"a":["b"]},"body":"aGk="}}`))
	f.Add([]byte(`{"type":"tool_call","data":{"id":"c","arguments":{"x":[1,2]}}}` + "\n\n{}"))
	f.Add([]byte(`{"type":"nope","data":[1,2,3]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := trace.ReadJSONL(bytes.NewReader(b), trace.Limits{MaxLine: 1 << 16, MaxEvents: 100})
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := trace.WriteJSONL(&buf, evs); err != nil {
			t.Fatalf("rewrite of accepted events: %v", err)
		}
		again, err := trace.ReadJSONL(&buf, trace.Limits{})
		if err != nil {
			t.Fatalf("reread of written events: %v", err)
		}
		if len(again) != len(evs) {
			t.Fatalf("reread %d events, wrote %d", len(again), len(evs))
		}
	})
}

func TestMergeFillsPPID(t *testing.T) {
	sc := func(ms, pid int, typ trace.Type, d any) trace.Event {
		return trace.Event{Time: at(ms), Source: trace.SourceSyscall, Type: typ, PID: pid, Data: d}
	}
	got := trace.Merge([]trace.Event{
		sc(0, 10, trace.TypeClone, &trace.Process{ChildPID: 11}),
		sc(1, 11, trace.TypeExec, &trace.Exec{Path: "/bin/true", Argv: []string{"true"}}),
		sc(2, 12, trace.TypeExec, &trace.Exec{Path: "/bin/x", Argv: []string{"x"}}),
	})
	var ppids []int
	for _, e := range got {
		ppids = append(ppids, e.PPID)
	}
	if diff := cmp.Diff([]int{0, 10, 0}, ppids); diff != "" {
		t.Errorf("ppids (-want +got):\n%s", diff)
	}
}
