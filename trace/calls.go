package trace

import "time"

// Channels of a canary hit (CanaryHit.Channel): where a planted token was
// seen.
const (
	ChannelHTTP       = "http"        // an HTTP request to the jail's sink
	ChannelDNS        = "dns"         // a DNS query
	ChannelTCP        = "tcp"         // bytes to the TCP catch-all
	ChannelUDP        = "udp"         // a datagram to the UDP catch-all
	ChannelTLS        = "tls"         // a TLS ClientHello
	ChannelSMTP       = "smtp"        // mail to the jail's relay
	ChannelFile       = "file"        // a file written in the sandbox
	ChannelArgv       = "argv"        // a process's arguments
	ChannelToolOutput = "tool_output" // tool output the model was shown
)

// LeftSandbox reports whether a token seen on channel ch was sent out of
// the sandbox (to one of the jail's sinks).
func LeftSandbox(ch string) bool {
	switch ch {
	case ChannelHTTP, ChannelDNS, ChannelTCP, ChannelUDP, ChannelTLS, ChannelSMTP:
		return true
	}
	return false
}

// CallWindows says when each tool call of a timeline ran, so that an event
// that carries no call id (the jail's sinks see no process) can be
// attributed to the call that was running when it happened.
type CallWindows struct {
	ws []callWindow
}

type callWindow struct {
	id         string
	start, end time.Time
}

// NewCallWindows returns the windows of the tool calls in events that have
// an id: from the call's start (its event's time when unknown) to the end
// of its duration.
func NewCallWindows(events []Event) CallWindows {
	var w CallWindows
	for _, e := range events {
		d, ok := e.Data.(*ToolCall)
		if !ok || d.ID == "" {
			continue
		}
		start := d.Started
		if start.IsZero() {
			start = e.Time
		}
		w.ws = append(w.ws, callWindow{d.ID, start, start.Add(d.Duration)})
	}
	return w
}

// At returns the id of the tool call running at t, or "". When calls
// overlap, the last of them in the timeline's order wins.
func (w CallWindows) At(t time.Time) string {
	id := ""
	for _, c := range w.ws {
		if !t.Before(c.start) && !t.After(c.end) {
			id = c.id
		}
	}
	return id
}
