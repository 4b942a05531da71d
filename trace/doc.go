// Package trace is the timeline of one trace: typed events from every source
// (tool calls, syscalls, DNS, HTTP, raw connections, TLS hellos, canary hits,
// the file-system diff and resource figures), merged into one order.
//
// It is a leaf: it imports nothing of sandboxctl. Producers (strace,
// netcapture, the orchestrator) build Events; rules and reports read them.
// trace never runs anything and never decides what an event means: that is
// the rules' job.
package trace
