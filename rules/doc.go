// Package rules turns one trace's timeline into findings and a verdict.
//
// It sits after the observers (strace, netcapture, the tool client) and
// before reports: events, the canary set and the skill go in; findings with
// their evidence (event sequence numbers, the tool call, the skill line), a
// coverage summary (which planned steps ran, failed or did not run) and a
// verdict with its reasons come out. Rules are data (id, title, severity,
// confidence, harm class, ATT&CK technique, help, the rules they build on,
// the evidence they read, their benign twins) plus small matchers over typed
// events; command text is read with a real shell parser (shell.go) and
// destinations are judged by lists kept as data (data/*.tsv). The verdict
// follows docs/verdicts.md: only a finding with a harm class can make a trace
// malicious (Decide).
//
// rules is pure: it never runs anything, never touches the network or the
// file system, and never reads the clock, so `sandboxctl report --reprocess`
// reruns it on stored events and gets the same findings.
package rules
