// Package userrules runs detection rules that users write: YAML files whose
// conditions are CEL expressions (github.com/google/cel-go) over the
// timeline's events or over the incidents the built-in rules' findings
// make. docs/rules.md is the reference; examples/rules/ holds examples.
//
// Its place in the pipeline: after the built-in rules and before the
// verdict. Load reads and validates rule files (a bad file is an error that
// names the file, the line and what is wrong; nothing half-loaded is used);
// Set.Extra is a rules.Extra that the orchestrator (trace), reports.Reprocess
// (report --reprocess, eval --rescore) pass to rules.Evaluate, so a user
// rule's findings count in the verdict like a built-in rule's.
//
// It must never run anything, touch the network or read anything but the
// rule files it is given: a rule sees the recorded timeline and nothing
// else. CEL evaluation is bounded by a cost limit per evaluation, so a rule
// cannot stall a trace. Only cmd/ decides which folders are read (--rules,
// the user's config folder).
package userrules
