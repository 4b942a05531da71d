package trace_test

import (
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// TestAttributeNetwork (issue 29, class 8): a daemon started by call t1
// posts while call t2 runs; the post goes to t1's process, found by its
// connect, not to t2 by time. A DNS query goes to the process that sent to
// port 53; an event with no connect before it keeps no pid.
func TestAttributeNetwork(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	events := []trace.Event{
		{Time: at(0), Source: trace.SourceTool, Type: trace.TypeToolCall, Data: &trace.ToolCall{ID: "t1", Started: at(0), Duration: time.Second}},
		{Time: at(2), Source: trace.SourceTool, Type: trace.TypeToolCall, Data: &trace.ToolCall{ID: "t2", Started: at(2), Duration: 10 * time.Second}},
		{Time: at(3), Source: trace.SourceSyscall, Type: trace.TypeSendto, ToolCallID: "t1", PID: 77, Data: &trace.Net{Family: "inet", Addr: "10.255.255.53", Port: 53}},
		{Time: at(3), Source: trace.SourceDNS, Type: trace.TypeDNSQuery, Data: &trace.DNSQuery{Name: "drop.example.net."}},
		{Time: at(4), Source: trace.SourceSyscall, Type: trace.TypeConnect, ToolCallID: "t2", PID: 90, Data: &trace.Net{Family: "inet", Addr: "198.51.100.1", Port: 443}},
		{Time: at(5), Source: trace.SourceSyscall, Type: trace.TypeConnect, ToolCallID: "t1", PID: 77, Data: &trace.Net{Family: "inet", Addr: "203.0.113.9", Port: 443}},
		{Time: at(6), Source: trace.SourceHTTP, Type: trace.TypeHTTP, Data: &trace.HTTPExchange{Method: "POST", DstIP: "203.0.113.9", DstPort: 443}},
		{Time: at(7), Source: trace.SourceTCP, Type: trace.TypeConnection, Data: &trace.Connection{DstIP: "192.0.2.1", DstPort: 9}},
	}
	trace.AttributeNetwork(events)
	for _, w := range []struct {
		i    int
		call string
		pid  int
	}{{3, "t1", 77}, {6, "t1", 77}, {7, "", 0}} {
		if e := events[w.i]; e.ToolCallID != w.call || e.PID != w.pid {
			t.Errorf("event %d (%s): call %q pid %d, want %q %d", w.i, e.Type, e.ToolCallID, e.PID, w.call, w.pid)
		}
	}
}
