package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sandboxctl/sandboxctl/fingerprint"
	"github.com/sandboxctl/sandboxctl/fingerprint/store"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/traceplan"
	"github.com/sandboxctl/sandboxctl/tracing"
)

func init() {
	register(command{name: "fingerprint", short: "list, show, diff, accept, reset or evict skills' behavioural fingerprints", run: runFingerprint})
}

const fingerprintSynopsis = `[flags] list | show NAME | diff NAME [--from V --to V] | accept NAME [--version V] | reset NAME | evict --older-than D

Reads the fingerprint store that trace --store writes (docs/fingerprints.md):
what each skill normally does, learnt from its clean runs.

list prints every fingerprint: skill, version, driver, cell, state,
invocations. show prints one skill's fingerprints with their capabilities
and its recent runs. diff prints the capabilities one version has that
another has not (default: the two newest versions). accept approves the
baseline: the newest version (or --version V) takes in its latest run's
capabilities and becomes stable. reset forgets a skill; evict removes the
fingerprints not seen for D (72h, 30d).

Examples:
  sandboxctl trace --store default ./my-skill/
  sandboxctl fingerprint list
  sandboxctl fingerprint show my-skill --format json
  sandboxctl fingerprint diff my-skill --from 3f2a --to 9c1d
  sandboxctl fingerprint accept my-skill
  sandboxctl fingerprint evict --older-than 30d`

// defaultStore is the fingerprint store under the user's data folder:
// $XDG_DATA_HOME/sandboxctl/fingerprints.db, else
// ~/.local/share/sandboxctl/fingerprints.db.
func defaultStore(e env) string {
	dir := e.getenv("XDG_DATA_HOME")
	if dir == "" {
		home := e.getenv("HOME")
		if home == "" {
			return filepath.Join(os.TempDir(), "sandboxctl", "fingerprints.db")
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "sandboxctl", "fingerprints.db")
}

// storePath maps --store's value to a file: "default" is defaultStore.
func storePath(e env, v string) string {
	if v == "default" || v == "" {
		return defaultStore(e)
	}
	return v
}

// parseAge reads a duration, with d for days: 30d, 72h, 90m.
func parseAge(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		if _, err := fmt.Sscanf(n, "%d", &days); err != nil || days < 0 || fmt.Sprint(days) != n {
			return 0, fmt.Errorf("bad duration %q (want 30d, 72h, ...)", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad duration %q (want 30d, 72h, ...)", s)
	}
	return d, nil
}

// fingerprintCmd is fingerprint's command line.
type fingerprintCmd struct {
	format, store, from, to, version, olderThan string
	sub, name                                   string // the subcommand and its NAME
}

// parseFingerprint reads fingerprint's command line; ok is false when the
// caller should return code.
func parseFingerprint(e env, args []string) (c fingerprintCmd, code int, ok bool) {
	fs := newFlags(e, "fingerprint", fingerprintSynopsis)
	fs.StringVar(&c.format, "format", "text", "text or json")
	fs.StringVar(&c.store, "store", "default", "the fingerprint store (\"default\": $XDG_DATA_HOME/sandboxctl/fingerprints.db, else ~/.local/share/sandboxctl/fingerprints.db)")
	fs.StringVar(&c.from, "from", "", "diff: the version compared from (a prefix of its content hash)")
	fs.StringVar(&c.to, "to", "", "diff: the version compared to (a prefix of its content hash)")
	fs.StringVar(&c.version, "version", "", "accept: the version to accept (a prefix of its content hash; default the newest)")
	fs.StringVar(&c.olderThan, "older-than", "", "evict: remove fingerprints not seen for this long (30d, 72h)")
	if code, ok := parseFlags(fs, interspersed(fs, args)); !ok {
		return c, code, false
	}
	if c.format != "text" && c.format != "json" {
		e.errorf("unknown format %q (want text or json)", c.format)
		return c, exitUsage, false
	}
	c.sub, c.name = fs.Arg(0), fs.Arg(1)
	want := map[string]int{"list": 1, "show": 2, "diff": 2, "accept": 2, "reset": 2, "evict": 1}
	if n, ok := want[c.sub]; !ok || fs.NArg() != n {
		e.errorf("fingerprint needs one of: list, show NAME, diff NAME, accept NAME, reset NAME, evict --older-than D")
		return c, exitUsage, false
	}
	if c.sub == "evict" && c.olderThan == "" {
		e.errorf("evict needs --older-than D")
		return c, exitUsage, false
	}
	return c, exitClean, true
}

func runFingerprint(ctx context.Context, e env, args []string) int {
	c, code, ok := parseFingerprint(e, args)
	if !ok {
		return code
	}
	path := storePath(e, c.store)
	if _, err := os.Stat(path); err != nil {
		e.errorf("no fingerprint store at %s (trace --store writes one)", path)
		return exitUsage
	}
	st, err := store.Open(ctx, path)
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	defer st.Close()
	out, text, code := c.do(ctx, e, st)
	if code != exitClean {
		return code
	}
	if c.format == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			e.errorf("write: %v", err)
			return exitFailed
		}
		return exitClean
	}
	text(e.stdout)
	return exitClean
}

// do runs the subcommand on st and returns what it answers, as JSON (out)
// and as text; code is other than exitClean when it failed, said.
func (c *fingerprintCmd) do(ctx context.Context, e env, st *store.Store) (out any, text func(w io.Writer), code int) {
	switch c.sub {
	case "list":
		all, err := st.List(ctx)
		if err != nil {
			e.errorf("%v", err)
			return nil, nil, exitFailed
		}
		list := fingerprintList{Store: st.Path(), Fingerprints: summaries(all)}
		return list, func(w io.Writer) { writeFingerprintList(w, list.Fingerprints) }, exitClean
	case "show":
		v, err := showFingerprint(ctx, st, c.name)
		if err != nil {
			e.errorf("%v", err)
			return nil, nil, exitFailed
		}
		if len(v.Fingerprints) == 0 {
			e.errorf("no fingerprint of %q in %s", c.name, st.Path())
			return nil, nil, exitUsage
		}
		return v, func(w io.Writer) { writeShow(w, v) }, exitClean
	case "diff":
		d, err := diffFingerprint(ctx, st, c.name, c.from, c.to)
		if err != nil {
			e.errorf("%v", err)
			return nil, nil, exitUsage
		}
		return d, func(w io.Writer) { writeDiff(w, d) }, exitClean
	case "accept":
		got, err := st.Accept(ctx, c.name, c.version, time.Now())
		if err != nil {
			e.errorf("%v", err)
			return nil, nil, exitFailed
		}
		if len(got) == 0 {
			e.errorf("no fingerprint of %q to accept in %s", c.name, st.Path())
			return nil, nil, exitUsage
		}
		acc := fingerprintList{Store: st.Path(), Fingerprints: summaries(got)}
		return acc, func(w io.Writer) {
			for _, f := range acc.Fingerprints {
				fmt.Fprintf(w, "accepted %s %s (%s, %s): stable, %d capabilities, hash %.16s\n", f.Skill, short(f.Version), f.Driver, f.Cell, f.Capabilities, f.Hash)
			}
		}, exitClean
	}
	return c.remove(ctx, e, st)
}

// remove runs reset and evict.
func (c *fingerprintCmd) remove(ctx context.Context, e env, st *store.Store) (out any, text func(w io.Writer), code int) {
	var n int
	var err error
	if c.sub == "reset" {
		n, err = st.Reset(ctx, c.name)
	} else {
		var age time.Duration
		if age, err = parseAge(c.olderThan); err != nil {
			e.errorf("%v", err)
			return nil, nil, exitUsage
		}
		n, err = st.Evict(ctx, time.Now().Add(-age))
	}
	if err != nil {
		e.errorf("%v", err)
		return nil, nil, exitFailed
	}
	res := struct {
		Removed int `json:"removed"`
	}{n}
	return res, func(w io.Writer) { fmt.Fprintf(w, "removed %d fingerprint(s)\n", n) }, exitClean
}

func short(v string) string {
	if len(v) > 12 {
		return v[:12]
	}
	return v
}

// fingerprintSummary is one fingerprint in list and accept's JSON.
type fingerprintSummary struct {
	fingerprint.Key
	Version      string    `json:"version"`
	State        string    `json:"state"`
	Invocations  int       `json:"invocations"`
	CleanStreak  int       `json:"clean_streak"`
	Capabilities int       `json:"capabilities"`
	Hash         string    `json:"capability_hash"`
	FirstSeen    time.Time `json:"first_seen"`
	LastSeen     time.Time `json:"last_seen"`
}

type fingerprintList struct {
	Store        string               `json:"store"`
	Fingerprints []fingerprintSummary `json:"fingerprints"`
}

func summaries(fs []fingerprint.Fingerprint) []fingerprintSummary {
	out := []fingerprintSummary{}
	for _, f := range fs {
		out = append(out, fingerprintSummary{Key: f.Key, Version: f.Version, State: f.State, Invocations: f.Invocations,
			CleanStreak: f.CleanStreak, Capabilities: f.Capabilities.Count(), Hash: f.Hash, FirstSeen: f.FirstSeen, LastSeen: f.LastSeen})
	}
	return out
}

func writeFingerprintList(w io.Writer, fs []fingerprintSummary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SKILL\tVERSION\tDRIVER\tCELL\tSTATE\tRUNS\tSTREAK\tCAPS\tLAST SEEN")
	for _, f := range fs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", f.Skill, short(f.Version), f.Driver, f.Cell, f.State,
			f.Invocations, f.CleanStreak, f.Capabilities, f.LastSeen.Format(time.RFC3339))
	}
	tw.Flush()
}

// fingerprintShow is the JSON of `fingerprint show` (docs/fingerprints.md,
// fingerprint/schema/show.schema.json).
type fingerprintShow struct {
	Skill        string                    `json:"skill"`
	Fingerprints []fingerprint.Fingerprint `json:"fingerprints"`
	Runs         []store.RunInfo           `json:"runs"` // newest first, up to 20 per key
}

func showFingerprint(ctx context.Context, st *store.Store, name string) (fingerprintShow, error) {
	fs, err := st.Fingerprints(ctx, name)
	if err != nil {
		return fingerprintShow{}, err
	}
	v := fingerprintShow{Skill: name, Fingerprints: fs, Runs: []store.RunInfo{}}
	if v.Fingerprints == nil {
		v.Fingerprints = []fingerprint.Fingerprint{}
	}
	seen := map[fingerprint.Key]bool{}
	for _, f := range fs {
		if seen[f.Key] {
			continue
		}
		seen[f.Key] = true
		runs, err := st.Runs(ctx, f.Key, 20)
		if err != nil {
			return v, err
		}
		v.Runs = append(v.Runs, runs...)
	}
	return v, nil
}

func writeShow(w io.Writer, v fingerprintShow) {
	for _, f := range v.Fingerprints {
		fmt.Fprintf(w, "%s version %s\n  identity %s, driver %s, cell %s\n  %s: %d invocations, %d clean in a row, %d absorbed; first seen %s, last seen %s\n  capability hash %s\n",
			f.Skill, f.Version, cmpOr(f.Identity, "(name only)"), f.Driver, f.Cell, f.State, f.Invocations, f.CleanStreak, f.Absorbed,
			f.FirstSeen.Format(time.RFC3339), f.LastSeen.Format(time.RFC3339), f.Hash)
		writeCaps(w, "  ", f.Capabilities)
	}
	if len(v.Runs) > 0 {
		fmt.Fprintln(w, "recent runs:")
	}
	for _, r := range v.Runs {
		sev := r.MaxSeverity
		if sev == "" {
			sev = "none"
		}
		fmt.Fprintf(w, "  %s %s version %s worst %s absorbed %v anomalies %d\n", r.At.Format(time.RFC3339), r.TraceID, short(r.Version), sev, r.Absorbed, len(r.Anomalies))
		for _, a := range r.Anomalies {
			fmt.Fprintf(w, "    %s (%s): %s\n", a.Type, a.Severity, a.Capability)
		}
	}
}

func writeCaps(w io.Writer, indent string, c fingerprint.Capabilities) {
	for _, x := range []struct {
		name string
		keys []string
	}{{"filesystem", c.Filesystem}, {"network", c.Network}, {"environment", c.Environment}, {"processes", c.Processes}, {"outputs", c.Outputs}} {
		if len(x.keys) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s%s:\n", indent, x.name)
		for _, k := range x.keys {
			fmt.Fprintf(w, "%s  %s\n", indent, k)
		}
	}
}

// fingerprintDiff is the JSON of `fingerprint diff`.
type fingerprintDiff struct {
	Skill   string                   `json:"skill"`
	From    string                   `json:"from"`
	To      string                   `json:"to"`
	Added   fingerprint.Capabilities `json:"added"`
	Removed fingerprint.Capabilities `json:"removed"`
}

func diffFingerprint(ctx context.Context, st *store.Store, name, from, to string) (fingerprintDiff, error) {
	fs, err := st.Fingerprints(ctx, name)
	if err != nil {
		return fingerprintDiff{}, err
	}
	if len(fs) == 0 {
		return fingerprintDiff{}, fmt.Errorf("no fingerprint of %q", name)
	}
	// The key of the newest fingerprint; its versions by first seen.
	newest := fs[0]
	for _, f := range fs {
		if f.LastSeen.After(newest.LastSeen) {
			newest = f
		}
	}
	var vs []fingerprint.Fingerprint
	for _, f := range fs {
		if f.Key == newest.Key {
			vs = append(vs, f)
		}
	}
	find := func(prefix string, dflt int) (*fingerprint.Fingerprint, error) {
		if prefix == "" {
			if dflt < 0 {
				return nil, fmt.Errorf("%s has one version only: give --from and --to", name)
			}
			return &vs[dflt], nil
		}
		var hit *fingerprint.Fingerprint
		for i := range vs {
			if strings.HasPrefix(vs[i].Version, prefix) {
				if hit != nil {
					return nil, fmt.Errorf("version %q is ambiguous", prefix)
				}
				hit = &vs[i]
			}
		}
		if hit == nil {
			return nil, fmt.Errorf("no version %q of %s", prefix, name)
		}
		return hit, nil
	}
	a, err := find(from, len(vs)-2)
	if err != nil {
		return fingerprintDiff{}, err
	}
	b, err := find(to, len(vs)-1)
	if err != nil {
		return fingerprintDiff{}, err
	}
	return fingerprintDiff{Skill: name, From: a.Version, To: b.Version,
		Added: a.Capabilities.Diff(b.Capabilities), Removed: b.Capabilities.Diff(a.Capabilities)}, nil
}

func writeDiff(w io.Writer, d fingerprintDiff) {
	fmt.Fprintf(w, "%s: %s -> %s\n", d.Skill, short(d.From), short(d.To))
	if d.Added.Count() == 0 && d.Removed.Count() == 0 {
		fmt.Fprintln(w, "  same capabilities")
		return
	}
	if d.Added.Count() > 0 {
		fmt.Fprintln(w, "added:")
		writeCaps(w, "  ", d.Added)
	}
	if d.Removed.Count() > 0 {
		fmt.Fprintln(w, "removed:")
		writeCaps(w, "  ", d.Removed)
	}
}

// fingerprintRun is trace --store: the store, the key and version of the
// skill, and the baseline read before the trace.
type fingerprintRun struct {
	st      *store.Store
	key     fingerprint.Key
	version string
	check   fingerprint.Check
	rule    fingerprint.Rule
}

// fingerprintKey is the fingerprint key of a trace of the skill named name
// under plan p: the name and its registry identity (id, "" none), the
// driver, and the environment cell (the persona, and the network
// configuration's hash when one is given). Where the skill lies on disk is
// not in it (docs/fingerprints.md).
func fingerprintKey(p traceplan.Plan, name, id string) (fingerprint.Key, error) {
	id, err := fingerprint.Identity(id)
	if err != nil {
		return fingerprint.Key{}, err
	}
	cell := "persona=" + p.Persona
	if p.Persona == "" {
		cell = "persona=linux"
	}
	if p.NetworkConfig != "" {
		b, err := os.ReadFile(p.NetworkConfig)
		if err != nil {
			return fingerprint.Key{}, fmt.Errorf("fingerprint cell: %w", err)
		}
		h := sha256.Sum256(b)
		cell += ",network=" + hex.EncodeToString(h[:6])
	}
	driver := p.Driver.Kind
	if p.Driver.Model != "" {
		driver += ":" + p.Driver.Model
	}
	return fingerprint.Key{Skill: name, Identity: id, Driver: driver, Cell: cell}, nil
}

// openFingerprintRun opens the store of trace --store and reads the
// skill's baseline under fingerprintKey (--skill-id its identity).
func openFingerprintRun(ctx context.Context, e env, f *traceFlags, p traceplan.Plan, sk *skill.Skill) (*fingerprintRun, error) {
	k, err := fingerprintKey(p, sk.Name, f.skillID)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, storePath(e, f.store))
	if err != nil {
		return nil, err
	}
	fr := &fingerprintRun{st: st, key: k,
		version: sk.SHA256, rule: stableRule(f.stableAfter)}
	if fr.check, err = st.Check(ctx, fr.key, fr.version); err != nil {
		st.Close()
		return nil, err
	}
	return fr, nil
}

// record adds the trace's report to the store and its fingerprint section
// to the report.
func (fr *fingerprintRun) record(ctx context.Context, r *reports.Report) error {
	res, err := fr.st.Record(ctx, fr.key, fr.version, fingerprint.Run{TraceID: r.TraceID, At: r.StartedAt,
		MaxSeverity: store.MaxSeverity(r.Findings), Profile: r.Profile}, fr.rule)
	if err != nil {
		return err
	}
	r.Fingerprint = &res
	return nil
}

// fingerprinted runs traces against a fingerprint store (sweep --store,
// serve --store): the skill's fingerprint, under its name and the plan's
// SkillID, is checked by the rules and the run recorded in it.
type fingerprinted struct {
	st   *store.Store
	rule fingerprint.Rule
}

// run traces p with runner against the skill's fingerprint and records the
// run (in the report's fingerprint section and the run folder too).
func (fp fingerprinted) run(ctx context.Context, runner *orchestrator.Runner, p traceplan.Plan, runDir string) (orchestrator.Outcome, error) {
	sk, err := skill.Load(p.SkillPath, skill.Options{})
	if err != nil {
		// The pipeline reports a skill it cannot load as it does without
		// a store.
		return runner.Run(ctx, p, runDir)
	}
	k, err := fingerprintKey(p, sk.Name, p.SkillID)
	if err != nil {
		return orchestrator.Outcome{}, fmt.Errorf("fingerprint of %s: %w", sk.Name, err)
	}
	check, err := fp.st.Check(ctx, k, sk.SHA256)
	if err != nil {
		return orchestrator.Outcome{}, err
	}
	r := *runner
	r.Extra = fingerprint.Chain(r.Extra, check.Extra())
	out, err := r.Run(ctx, p, runDir)
	if err != nil || out.Report == nil {
		return out, err
	}
	fr := &fingerprintRun{st: fp.st, key: k, version: sk.SHA256, rule: fp.rule, check: check}
	if err := fr.record(ctx, out.Report); err != nil {
		return out, err
	}
	if runDir != "" {
		// The run folder is written again with the fingerprint section.
		if err := reports.WriteRunDir(runDir, out.Report, out.Transcript); err != nil {
			return out, fmt.Errorf("write run folder %s: %w", runDir, err)
		}
	}
	return out, nil
}

// tracer is runner's tracer with --store, for sweep and serve: each skill
// is traced against its fingerprint and its run recorded in the store
// under its name and the plan's SkillID. A sweep's SkillID is the skill's
// path inside its source (sweep.Identity: publisher/skill in a mirror),
// never the folder it was unpacked to nor the source's own name, so a
// nightly sweep of a new archive of the same mirror goes on learning the
// same history (docs/fingerprints.md).
func (fp fingerprinted) tracer(runner *orchestrator.Runner) tracing.Tracer {
	return tracing.Func(func(ctx context.Context, p traceplan.Plan, dir string) (*reports.Report, error) {
		out, err := fp.run(ctx, runner, p, dir)
		return out.Report, err
	})
}

// openFingerprinted opens the store of --store PATH for sweep and serve.
func openFingerprinted(ctx context.Context, e env, path string, stableAfter int) (fingerprinted, error) {
	if stableAfter < 1 {
		return fingerprinted{}, fmt.Errorf("--stable-after must be at least 1")
	}
	st, err := store.Open(ctx, storePath(e, path))
	if err != nil {
		return fingerprinted{}, err
	}
	return fingerprinted{st: st, rule: stableRule(stableAfter)}, nil
}

// stableRule is the rule of --stable-after N: N invocations, the last
// min(5, N) of them clean.
func stableRule(n int) fingerprint.Rule {
	return fingerprint.Rule{Threshold: n, Streak: min(fingerprint.DefaultRule.Streak, n)}
}
