package rules

import (
	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Extra adds findings after the built-in rules ran and before the verdict:
// the rules users write (package userrules). It is given the input, the
// whole numbered timeline (canary hits included) and the built-in findings,
// and must be deterministic; its findings are sorted in with the built-in
// ones and weigh in the verdict like them.
type Extra func(in Input, events []trace.Event, findings []Finding) []Finding

// Redact replaces every planted token's value in s with [canary:ID] and caps
// it, as the built-in rules do in evidence summaries and messages.
func Redact(set *canary.Set, s string) string { return redact(set, s) }
