package trace

import (
	"net"
	"time"
)

// AttributeNetwork gives the jail's events (HTTP requests, raw flows, TLS
// ClientHellos, DNS queries, mail, WebSocket messages: the sinks see no
// process) the tool call and pid of the process that opened the
// connection: the latest connect or sendto syscall to the same original
// destination (address and port; port 53 for a DNS query) made before the
// event, at most connectWindow before it. The syscall log records which
// process made it, and that process is traced by its own call's tracer
// however it detached, so a daemon's post lands on the call that started
// it, not on whatever call was running when it posted. Events that already
// have a pid, or with no such syscall (the unwatched pass), are left as
// they are; callers fall back to the call running at the time. events is
// modified in place and must be in time order.
func AttributeNetwork(events []Event) {
	type key struct {
		ip   string
		port int
	}
	type who struct {
		call string
		pid  int
		at   time.Time
	}
	last := map[key]who{}
	var dns who
	for i := range events {
		e := &events[i]
		if e.Source == SourceSyscall {
			n, ok := e.Data.(*Net)
			if !ok || (e.Type != TypeConnect && e.Type != TypeSendto) || n.Family != "inet" && n.Family != "inet6" {
				continue
			}
			w := who{call: e.ToolCallID, pid: e.PID, at: e.Time}
			last[key{normIP(n.Addr), n.Port}] = w
			if n.Port == 53 {
				dns = w
			}
			continue
		}
		if e.PID != 0 {
			continue
		}
		var w who
		switch d := e.Data.(type) {
		case *HTTPExchange:
			w = last[key{normIP(d.DstIP), d.DstPort}]
		case *Connection:
			w = last[key{normIP(d.DstIP), d.DstPort}]
		case *TLSHello:
			w = last[key{normIP(d.DstIP), d.DstPort}]
		case *WSMessage:
			w = last[key{normIP(d.DstIP), d.DstPort}]
		case *Mail:
			w = last[key{normIP(d.DstIP), d.DstPort}]
		case *DNSQuery:
			w = dns
		default:
			continue
		}
		if w.pid == 0 || e.Time.Sub(w.at) > connectWindow {
			continue
		}
		e.PID = w.pid
		if e.ToolCallID == "" {
			e.ToolCallID = w.call
		}
	}
}

// connectWindow bounds how long after its connect a connection's event may
// come (a kept-alive connection, a slow upload). strace stamps a connect
// when it is entered, before the jail accepts it.
const connectWindow = 10 * time.Minute

func normIP(s string) string {
	if ip := net.ParseIP(s); ip != nil {
		return ip.String()
	}
	return s
}
