// Package evaluation measures sandboxctl's verdicts on labelled corpora of
// skills: it reads a corpus manifest, runs every skill (or a fixed,
// stratified sample) through the real pipeline, the same orchestrator.Runner
// that `sandboxctl trace` uses, and scores the verdicts against the labels:
// recall on malicious skills, false-malicious and false-suspicious rates on
// benign ones, inconclusive rates, dual-use reported apart, and the skills
// that disagree with their label with the rule ids that decided.
//
// It sits above the orchestrator: it runs traces and reads their reports,
// and never judges a trace itself (the verdict is the rules' alone). It never
// reads flags or the environment and never prints: cmd/sandboxctl's eval
// command does, and writes the JSON and docs/detection.md it renders.
// Labels stay in the manifest: nothing a skill's agent sees (paths, names,
// prompts) carries them.
package evaluation
