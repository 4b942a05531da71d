// Package netcapture is the network jail: the sinks that every packet a
// skill sends lands in, and the jail's main (Run) that routes the sandbox's
// network namespace into them.
//
// It sits between the containers and the timeline: the jail container runs
// Run as root with NET_ADMIN only, the sandbox joins its namespace, and the
// events Run writes (one JSON line per trace.Event) are read by the
// orchestrator. The DNS sink answers every name with a fake address of its
// own; the HTTP(S) sink (goproxy, transparent and explicit) terminates TLS
// with leaves minted from the per-trace CA and serves responses that keep a
// skill's chain going; the TCP and UDP catch-alls record everything else.
//
// netcapture must never send a packet anywhere: it never dials, never
// resolves upstream, never tunnels a CONNECT. Every path answers from the
// sink or refuses. It imports nothing of this module but trace, and knows
// nothing of canaries: the rules scan its events for planted tokens
// (rules.ScanCanaries, with the rest of the timeline), and the
// orchestrator scans the payloads it spooled.
package netcapture
