// Package evaluation measures sandboxctl's verdicts on labelled corpora of
// skills: it reads a corpus manifest, runs every skill (or a fixed,
// stratified sample) through the real pipeline (a tracing.Tracer, which
// cmd/sandboxctl backs with the same orchestrator.Runner that `sandboxctl
// trace` uses), and scores the verdicts against the labels:
// recall on malicious skills, false-malicious and false-suspicious rates on
// benign ones, inconclusive rates, dual-use reported apart, and the skills
// that disagree with their label with the rule ids that decided.
//
// RunSweep runs the cases as one run of a sweep (package sweep): the cases
// are the run's items, keyed as a sweep keys skills, so that traces that
// could not observe are retried, a stopped evaluation resumes, and a case
// judged before under the same key in the same sweep folder is reused; its
// results map back to Result. Run is the plain worker loop that rescoring
// (Rescorer, which reads a kept sweep folder or the older <corpus>/<slug>
// layout) and the corpus sample tests use.
//
// It never names the engine: it runs traces and reads their reports,
// and never judges a trace itself (the verdict is the rules' alone). It never
// reads flags or the environment and never prints: cmd/sandboxctl's eval
// command does, and writes the JSON and docs/detection.md it renders.
// Labels stay in the manifest: nothing a skill's agent sees (paths, names,
// prompts) carries them.
package evaluation
