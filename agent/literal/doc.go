// Package literal is the model-free agent driver: a deterministic, maximally
// obedient agent that does what a skill's text says, in the order it says
// it. It plans every call up front from the skill (see Plan and
// docs/drivers.md for the rules) and hands them to the loop one per step,
// each pointing at the skill line it came from.
//
// literal never runs anything itself and never touches the network: it only
// proposes tool calls, which the loop runs in the sandbox.
package literal
