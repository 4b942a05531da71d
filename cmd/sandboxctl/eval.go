package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/evaluation"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/sweep"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

func init() {
	register(command{name: "eval", short: "measure verdicts on labelled corpora of skills", run: runEval})
}

const evalSynopsis = `[flags] MANIFEST...

Traces every skill of the labelled corpora whose manifest.tsv files are given
(skills at <manifest folder>/skills/<slug>), through the same pipeline as
trace, a few at a time, and scores the verdicts against the labels: recall on
malicious skills, false-malicious and false-suspicious rates on benign ones,
inconclusive rates, dual-use skills apart, per family or category and overall,
and the skills that disagree with their label with the rules that decided.
The table goes to stdout, progress to stderr.

The traces run as a sweep (see sweep): a trace that could not observe is
retried with backoff (--attempts) before the skill counts as an error. With
--keep-runs DIR, DIR is the sweep folder (sweep.db, runs/, results.jsonl,
index.html): a stopped evaluation is finished by --resume, and a second
evaluation into DIR reuses every result whose skill, settings, sandboxctl
version and image are unchanged (--force traces them again). Without it, the
sweep folder is temporary.

A manifest is tab-separated with a header line; slug and label (benign,
dual-use, malicious) are required, category, family and expect (verdicts
separated by |) are used when present. See docs/detection.md.

Examples:
  sandboxctl eval eval/manifest.tsv
  sandboxctl eval --sample 40 --json /tmp/eval.json ../shared/corpus/manifest.tsv
  sandboxctl eval --only weather-report --keep-runs /tmp/runs eval/manifest.tsv
  sandboxctl eval --resume --keep-runs /tmp/runs eval/manifest.tsv   (after Ctrl-C or kill -9)
  sandboxctl eval --update-doc docs/detection.md ../shared/corpus/manifest.tsv eval/manifest.tsv
  sandboxctl eval --rescore /tmp/runs eval/manifest.tsv   (rules only, on the runs kept before)`

type evalFlags struct {
	trace                traceFlags
	parallel, sample     int
	sampleSeed, keepRuns string
	rescore              string
	jsonOut, updateDoc   string
	commit               string
	only                 stringList
	check                bool
	resume, force        bool
	attempts             int
	backoff              time.Duration

	manifests []string // the arguments
}

// stringList is a flag that may be given several times, or with commas.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}

// register adds eval's flags to fs.
func (f *evalFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.parallel, "parallel", evaluation.DefaultParallel, "traces run at once")
	fs.IntVar(&f.sample, "sample", 0, "trace a fixed, stratified sample of N skills (by corpus, label and family or category) instead of all")
	fs.StringVar(&f.sampleSeed, "sample-seed", evaluation.DefaultSeed, "seed of --sample: the same seed picks the same skills")
	fs.Var(&f.only, "only", "trace only this skill (slug or corpus/slug); repeat or separate with commas")
	fs.StringVar(&f.keepRuns, "keep-runs", "", "keep the evaluation's sweep folder in DIR (state, runs/<skill>-<key>/, results.jsonl, index.html); a later evaluation into DIR reuses unchanged results")
	fs.BoolVar(&f.resume, "resume", false, "finish the evaluation stopped in --keep-runs DIR (after Ctrl-C or kill -9); starts one when none is unfinished")
	fs.BoolVar(&f.force, "force", false, "trace every skill, even those judged before in --keep-runs DIR under the same key")
	fs.IntVar(&f.attempts, "attempts", sweep.DefaultMaxAttempts, "attempts at a skill whose trace fails to observe before it counts as an error")
	fs.DurationVar(&f.backoff, "backoff", sweep.DefaultBackoff, "wait after a failed attempt, doubled after each")
	fs.StringVar(&f.rescore, "rescore", "", "trace nothing: rerun the rules, --rules DIR's too, on the run folders an earlier --keep-runs DIR kept (measures a rule change on the same traces)")
	fs.StringVar(&f.jsonOut, "json", "", "write the evaluation as JSON to FILE (schema: evaluation/schema/eval.schema.json)")
	fs.StringVar(&f.updateDoc, "update-doc", "", "update the marked sections of FILE (docs/detection.md) with the figures")
	fs.StringVar(&f.commit, "commit", "", "source revision recorded with the figures (default: this binary's build revision)")
	fs.BoolVar(&f.check, "check", false, "exit 1 when a benign skill is judged malicious or a stated expected verdict is not met")

	f.trace.register(fs, corpusFlags(withoutFlags("store", "stable-after"))...)
}

func runEval(ctx context.Context, e env, args []string) int {
	f, code, ok := parseEval(e, args)
	if !ok {
		return code
	}
	cases, ok := evalCases(e, &f)
	if !ok {
		return exitUsage
	}
	// Validate the trace settings once; each case sets its own skill and id.
	plan, err := f.trace.plan(e, cases[0].Dir, time.Now())
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	urules, ok := loadUserRules(e, f.trace.rules)
	if !ok {
		return exitUsage
	}
	commit := f.commit
	if commit == "" {
		commit = buildRevision()
	}
	rep := &evaluation.Report{
		SchemaVersion: evaluation.SchemaVersion,
		GeneratedAt:   time.Now().UTC(),
		Commit:        commit,
		Driver:        plan.Driver.Kind,
		Model:         plan.Driver.Model,
		Manifests:     f.manifests,
		Parallel:      f.parallel,
	}
	if f.sample > 0 {
		rep.Sample, rep.Seed = f.sample, f.sampleSeed
	}
	start := time.Now()
	results, code, runErr := evalRun(ctx, e, &f, plan, urules.Extra(), cases)
	if code != exitClean {
		return code
	}
	rep.DurationMS = time.Since(start).Milliseconds()
	rep.Results = results
	rep.Summary = evaluation.Summarize(results)
	return writeEval(e, &f, rep, runErr)
}

// parseEval reads eval's command line; ok is false when the caller should
// return code.
func parseEval(e env, args []string) (f evalFlags, code int, ok bool) {
	fs := newFlags(e, "eval", evalSynopsis)
	f.register(fs)
	if code, ok := parseFlags(fs, interspersed(fs, args)); !ok {
		return f, code, false
	}
	if fs.NArg() == 0 {
		e.errorf("eval needs at least one MANIFEST")
		e.hintf("usage: sandboxctl eval [flags] MANIFEST... (e.g. eval/manifest.tsv)")
		return f, exitUsage, false
	}
	f.manifests = fs.Args()
	switch {
	case f.parallel < 1:
		e.errorf("--parallel must be at least 1, got %d", f.parallel)
	case f.sample < 0:
		e.errorf("--sample must be positive, got %d", f.sample)
	case f.trace.driver == traceplan.DriverReplay:
		e.errorf("eval cannot replay: a transcript belongs to one skill")
	case f.attempts < 1 || f.backoff < 0:
		e.errorf("--attempts must be at least 1 and --backoff cannot be negative")
	case f.resume && f.force:
		e.errorf("--resume finishes an evaluation; --force starts one over: choose one")
	case f.resume && f.keepRuns == "":
		e.errorf("--resume needs --keep-runs DIR, the folder of the evaluation to finish")
	case f.rescore != "" && (f.resume || f.force):
		e.errorf("--rescore traces nothing: --resume and --force do not apply")
	default:
		return f, exitClean, true
	}
	return f, exitUsage, false
}

// evalCases reads the manifests into the cases to trace: those --only
// names, the --sample of them. On a problem it has said what and returns
// false.
func evalCases(e env, f *evalFlags) ([]evaluation.Case, bool) {
	var cases []evaluation.Case
	corpora := map[string]string{}
	for _, m := range f.manifests {
		cs, err := evaluation.ReadManifest(m)
		if err != nil {
			e.errorf("%v", err)
			if errors.Is(err, os.ErrNotExist) {
				e.hintf("a manifest is a corpus's manifest.tsv, with the skills in skills/<slug> beside it")
			}
			return nil, false
		}
		if len(cs) > 0 {
			if prev, dup := corpora[cs[0].Corpus]; dup {
				e.errorf("%s and %s are both corpus %q: results would mix", prev, m, cs[0].Corpus)
				return nil, false
			}
			corpora[cs[0].Corpus] = m
		}
		cases = append(cases, cs...)
	}
	if len(f.only) > 0 {
		var picked []evaluation.Case
		for _, c := range cases {
			if slices.Contains(f.only, c.Slug) || slices.Contains(f.only, c.ID()) {
				picked = append(picked, c)
			}
		}
		for _, o := range f.only {
			if !slices.ContainsFunc(picked, func(c evaluation.Case) bool { return o == c.Slug || o == c.ID() }) {
				e.errorf("--only %s: no such skill in the manifests", o)
				return nil, false
			}
		}
		cases = picked
	}
	cases = evaluation.Sample(cases, f.sample, f.sampleSeed)
	if len(cases) == 0 {
		e.errorf("the manifests list no skills")
		return nil, false
	}
	return cases, true
}

// evalRun judges the cases: traced as a sweep, or with --rescore by the
// rules alone on the runs kept before. It returns the results, an exit
// code other than exitClean when nothing could be judged, and the error
// that stopped the evaluation.
func evalRun(ctx context.Context, e env, f *evalFlags, plan traceplan.Plan, extra rules.Extra, cases []evaluation.Case) ([]evaluation.Result, int, error) {
	progress := func(done, total int, r evaluation.Result) {
		note := ""
		if r.Cached {
			note = ", reused"
		} else if r.Attempts > 1 {
			note = fmt.Sprintf(", %d attempts", r.Attempts)
		}
		fmt.Fprintf(e.stderr, "sandboxctl: [%d/%d] %s/%s %s: %s%s (%.0fs%s)\n", done, total, r.Corpus, r.Slug, r.Label,
			r.Verdict, decidingNote(r), float64(r.DurationMS)/1000, note)
	}
	if f.rescore == "" {
		return evalSweep(ctx, e, f, plan, extra, f.manifests, cases, progress)
	}
	if f.keepRuns != "" && filepath.Clean(f.keepRuns) == filepath.Clean(f.rescore) {
		e.errorf("--keep-runs and --rescore name the same folder: the kept runs would be replaced while read")
		return nil, exitUsage, nil
	}
	fmt.Fprintf(e.stderr, "sandboxctl: rescoring %d skill(s) from %s\n", len(cases), f.rescore)
	results, err := evaluation.Run(ctx, cases, evaluation.Options{
		Rescore:  &evaluation.Rescorer{From: f.rescore, Extra: extra},
		Parallel: f.parallel,
		KeepRuns: f.keepRuns,
		Progress: progress,
	})
	return results, exitClean, err
}

// writeEval prints the evaluation's table and writes --json and
// --update-doc, and returns eval's exit code.
func writeEval(e env, f *evalFlags, rep *evaluation.Report, runErr error) int {
	code := exitClean
	if runErr != nil {
		e.errorf("%v", runErr)
		if f.rescore == "" && f.keepRuns != "" {
			e.hintf("finish it with the same flags and: sandboxctl eval --resume --keep-runs %s %s", f.keepRuns, strings.Join(f.manifests, " "))
		}
		code = exitFailed
	}
	if len(rep.Results) == 0 {
		return exitFailed
	}
	if runErr != nil {
		e.warnf("the figures below cover only the %d skills that finished", len(rep.Results))
	}
	if err := evaluation.WriteText(e.stdout, rep); err != nil {
		e.errorf("write table: %v", err)
		return exitFailed
	}
	if f.jsonOut != "" {
		if err := writeFileAtomic(f.jsonOut, func(w *os.File) error { return evaluation.WriteJSON(w, rep) }); err != nil {
			e.errorf("write %s: %v", f.jsonOut, err)
			return exitFailed
		}
	}
	if f.updateDoc != "" && runErr == nil {
		if err := updateDoc(f.updateDoc, rep); err != nil {
			e.errorf("update %s: %v", f.updateDoc, err)
			if errors.Is(err, evaluation.ErrNoMarkers) {
				e.hintf("the document needs the sections of docs/detection.md (copy its marker comments)")
			}
			return exitFailed
		}
		fmt.Fprintf(e.stderr, "sandboxctl: updated %s\n", f.updateDoc)
	} else if f.updateDoc != "" {
		e.warnf("%s not updated: the evaluation did not finish", f.updateDoc)
	}
	if code == exitClean && f.check && checkFails(rep) {
		code = exitFindings
	}
	return code
}

// decidingNote is " by RULE, RULE" for a verdict with deciding rules.
func decidingNote(r evaluation.Result) string {
	if len(r.Deciding) == 0 {
		if r.Verdict == evaluation.VerdictError && r.Error != "" {
			return ": " + strings.SplitN(r.Error, "\n", 2)[0]
		}
		return ""
	}
	return " by " + strings.Join(r.Deciding, ", ")
}

// checkFails reports what --check fails on: a benign skill judged
// malicious, or a stated expected verdict not met.
func checkFails(rep *evaluation.Report) bool {
	for _, d := range rep.Summary.Disagreements {
		switch {
		case d.Kind == evaluation.KindFalseMalicious:
			return true
		case len(d.Expect) > 0 && !slices.Contains(d.Expect, rules.Verdict(d.Verdict)):
			return true
		}
	}
	return false
}

func updateDoc(path string, rep *evaluation.Report) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := evaluation.UpdateDoc(doc, rep)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, func(w *os.File) error { _, err := w.Write(out); return err })
}

// writeFileAtomic writes path through a temporary file in the same folder,
// so a failure leaves the old file whole.
func writeFileAtomic(path string, write func(*os.File) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// buildRevision is the short VCS revision this binary was built from, with
// "-dirty" when the tree had changes, or "".
func buildRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" && dirty {
		rev += "-dirty"
	}
	return rev
}
