package trace_test

import (
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

func TestCallWindowsAt(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	events := []trace.Event{
		{Time: at(0), Data: &trace.ToolCall{ID: "c1", Started: at(0), Duration: 2 * time.Second}},
		{Time: at(5), Data: &trace.ToolCall{ID: "c2", Duration: 3 * time.Second}}, // no Started: the event's time
		{Time: at(6), Data: &trace.ToolCall{ID: "c3", Started: at(6), Duration: time.Second}},
		{Time: at(20), Data: &trace.ToolCall{ID: "", Started: at(20), Duration: time.Second}}, // no id: no window
		{Time: at(1), Data: &trace.DNSQuery{Name: "x.example."}},
	}
	w := trace.NewCallWindows(events)
	tests := []struct {
		name string
		t    time.Time
		want string
	}{
		{name: "inside the first", t: at(1), want: "c1"},
		{name: "at its start", t: at(0), want: "c1"},
		{name: "at its end", t: at(2), want: "c1"},
		{name: "between calls", t: at(3), want: ""},
		{name: "start from the event time", t: at(5.5), want: "c2"},
		{name: "overlap: the later call in the timeline", t: at(6.5), want: "c3"},
		{name: "after the overlap", t: at(7.5), want: "c2"},
		{name: "call without id", t: at(20.5), want: ""},
		{name: "before everything", t: at(-1), want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := w.At(tt.t); got != tt.want {
				t.Errorf("At(%v) = %q, want %q", tt.t.Sub(t0), got, tt.want)
			}
		})
	}
}

func TestLeftSandbox(t *testing.T) {
	for ch, want := range map[string]bool{
		trace.ChannelHTTP: true, trace.ChannelDNS: true, trace.ChannelTCP: true, trace.ChannelUDP: true,
		trace.ChannelTLS: true, trace.ChannelSMTP: true,
		trace.ChannelFile: false, trace.ChannelArgv: false, trace.ChannelToolOutput: false, "": false,
	} {
		if got := trace.LeftSandbox(ch); got != want {
			t.Errorf("LeftSandbox(%q) = %v, want %v", ch, got, want)
		}
	}
}
