// Package sweep runs sandboxctl over whole corpora of skills, resumably: a
// nightly job over a registry mirror, a folder, a list file or archives.
//
// Each skill gets a result key, the sha256 of its content digest, the plan
// hash (driver, model, limits, options, sandboxctl version) and the sandbox
// image's digest: a skill already judged under the same key is not traced
// again. State lives in an embedded SQLite database (modernc.org/sqlite,
// pure Go) in the sweep's output folder, with leases: a worker claims a
// skill for a bounded time and renews the lease while it traces; a lease
// that expires (its process was killed, the machine rebooted) goes back to
// the queue, so a resumed sweep finishes the work with nothing lost and a
// skill recorded done exactly once.
//
// Traces run through a tracing.Tracer, the one interface a sweep needs to
// run a trace, each of a plan made from the sweep's template: cmd/sandboxctl
// backs it with orchestrator.Runner, the pipeline of `sandboxctl trace`
// (with a pool of warm sandboxes or not), and the sweep never names the
// engine. Infrastructure failures (the trace
// could not observe: exit 3 of trace) are retried with backoff; verdicts
// never are. A skill that fails every attempt is marked failed with its
// reason and skipped.
//
// The package writes the sweep's outputs (results.jsonl, summary.json,
// diff.json, index.html), exports confirmed examples as sandbox_verified
// corpus entries, partitions work into shards by skill hash and merges
// shard databases. Like every package outside cmd/, it never reads flags
// or the environment and never prints: progress goes to a callback.
package sweep
