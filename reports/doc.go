// Package reports assembles one trace's report and renders it: report.json
// (canonical, documented by schema/report.schema.json), SARIF 2.1.0, a text
// summary and a self-contained HTML page, and the run folder that holds them
// with events.jsonl.
//
// It sits at the end of the pipeline: meta data from the orchestrator, the
// timeline and the rules' result go in. Renderers are pure functions of a
// Report: they never call time.Now, never iterate a map unsorted, and never
// print a planted token's value except in report.json when
// Options.IncludeCanaryValues says so. reports never runs anything and never
// touches the network; Reprocess reruns the rules on stored events only.
package reports
