// Package rules turns one trace's timeline into findings and a verdict.
//
// It sits after the observers (strace, netcapture, the tool client) and
// before reports: events, the canary set and the skill go in; findings with
// their evidence (event sequence numbers, the tool call, the skill line) and
// a verdict come out. Rules are data (id, title, severity, confidence,
// ATT&CK technique, help) plus small matchers over typed events; some build
// on the findings of others (a credential read followed by egress is
// exfiltration).
//
// rules is pure: it never runs anything, never touches the network or the
// file system, and never reads the clock, so `sandboxctl report --reprocess`
// reruns it on stored events and gets the same findings.
package rules
