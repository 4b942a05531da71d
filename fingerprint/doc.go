// Package fingerprint is what a skill normally does, from evidence: the
// behaviour profile of one trace (Build: file-system operations by path
// class, network targets, environment accesses, processes, output patterns,
// resource figures), the capability set and hash a profile reduces to, and
// the fingerprint a run of traces builds (Fingerprint.Observe: the
// stability rule, and typed anomalies once a fingerprint is stable or an
// earlier version's is). Anomalies become findings (Findings) with rule ids
// of their own (SBX-FP-*), so they weigh in the verdict like any other.
//
// It is pure: it reads a timeline and stored fingerprints and decides;
// fingerprint/store keeps fingerprints in SQLite. docs/fingerprints.md
// describes what is recorded and the rules.
package fingerprint
