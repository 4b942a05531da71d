// Package server is `sandboxctl serve`: the trace pipeline as an HTTP
// service for a team sharing one trace server or a registry checking
// every upload.
//
// The API is versioned under /v1 and described by an OpenAPI 3.1 document
// served at /v1/openapi.json (openapi.json, embedded). A caller submits a
// skill (a zip or tar upload, or JSON with its files) with the options of
// `sandboxctl trace`, gets a trace id, polls the trace and fetches its
// report in four formats. The result key is the sweep's
// (sweep.ResultKey): an identical skill under an identical plan is
// answered from the earlier result without a new trace.
//
// State lives in an embedded SQLite database in the data folder (the
// sweep's driver, modernc.org/sqlite): the traces, their options without
// any secret, their status and outcome. A provider key comes in a request
// header and is held in memory for that trace only: it never reaches the
// database, a log, a report or a transcript. A queued trace that needed a
// key cannot resume after a restart and is marked interrupted; other queued
// traces resume; traces running when the process died are marked
// interrupted.
//
// Uploads are untrusted: their size, their expansion (entries: files and
// folders; bytes) and their members are bounded (sweep.Extract: links,
// devices, FIFOs and paths leaving the folder are refused with a 4xx), a
// refused upload leaves nothing on disk, and nothing is written outside
// the data folder. Without tokens the API answers only requests whose Host
// is a loopback name and whose Origin, when sent, is the server's own (DNS
// rebinding, cross-site form posts). Callers are identified by
// bearer tokens (a tokens file), each with a submission rate and a bound on
// its traces in flight; the queue is bounded and a full queue answers 429
// with Retry-After.
//
// Traces run through a tracing.Tracer (the orchestrator's pipeline in
// cmd/sandboxctl, a fake in tests). The package never dials: it answers
// through the http.Handler it returns (the caller listens), and the
// connections a trace makes are the tracer's. Like every package outside
// cmd/, it never reads flags or the environment and never prints: log
// lines go to a callback that never receives a key.
package server
