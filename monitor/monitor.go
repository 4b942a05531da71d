package monitor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/fingerprint"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// Verdicts of a cell and of a monitor.
const (
	Consistent = "CONSISTENT"                  // every run did the same
	Marginal   = "MARGINAL"                    // same capabilities; figures or dropped capabilities varied
	Variant    = "VARIANT"                     // a run did something new, without a confirmed pattern
	Activation = "ACTIVATION-PATTERN-DETECTED" // a run did something new, again from the same state, and not without it
)

// Cell kinds.
const (
	Chained     = "chained"     // each run starts from the state the runs before it left
	Independent = "independent" // each run starts fresh
	Varied      = "vary"        // each run starts fresh under one condition (Options.Vary)
)

// Condition names a run condition a vary cell sets.
const (
	CondTimeZone   = "tz"         // the sandbox's time zone (an IANA name)
	CondUser       = "user"       // the user's name (and so the home's path)
	CondHostname   = "hostname"   // the host name
	CondClock      = "clock"      // the sandbox's fake clock: +3d, -2h, 03:00, sat, 2027-01-01, 2027-01-01T03:00
	CondMonitoring = "monitoring" // visible (/.dockerenv, security agents in ps) or hidden (the default)
	CondDNS        = "dns"        // all (every name resolves) or none (none does)
)

// expectedLoss are conditions under which doing less is what any skill
// would do, not a sign that it hides: with no name resolving, nothing
// reaches a host by name.
var expectedLoss = map[Condition]bool{{CondDNS, "none"}: true}

// Condition is one condition of a vary cell: NAME=VALUE.
type Condition struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func (c Condition) String() string { return c.Name + "=" + c.Value }

var (
	conditionValue = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+/-]{0,62}$`)
	clockValue     = regexp.MustCompile(`^[+-]?[A-Za-z0-9][A-Za-z0-9:-]{0,24}$`)
)

// ParseCondition parses NAME=VALUE. A clock's value is checked for its
// characters only: the orchestrator parses it.
func ParseCondition(s string) (Condition, error) {
	name, value, ok := strings.Cut(s, "=")
	c := Condition{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)}
	switch {
	case !ok:
		return c, fmt.Errorf("condition %q: want NAME=VALUE", s)
	case c.Name == CondClock:
		if !clockValue.MatchString(c.Value) {
			return c, fmt.Errorf("condition %q: a clock is +3d, -2h, 03:00, sat, 2027-01-01 or 2027-01-01T03:00", s)
		}
	case c.Name == CondMonitoring:
		if c.Value != "visible" && c.Value != "hidden" {
			return c, fmt.Errorf("condition %q: monitoring is visible or hidden", s)
		}
	case c.Name == CondDNS:
		if c.Value != "all" && c.Value != "none" {
			return c, fmt.Errorf("condition %q: dns is all (every name resolves) or none (none does)", s)
		}
	case c.Name != CondTimeZone && c.Name != CondUser && c.Name != CondHostname:
		return c, fmt.Errorf("condition %q: unknown name %q (want tz, user, hostname, clock, monitoring or dns)", s, c.Name)
	case !conditionValue.MatchString(c.Value) || strings.Contains(c.Value, ".."):
		return c, fmt.Errorf("condition %q: value must be 1-63 letters, digits and . _ + / -", s)
	}
	return c, nil
}

// File is one file of the state a run left (home, /tmp, /var/tmp,
// /dev/shm), as a chained run restores it.
type File struct {
	Path    string `json:"path"`
	Mode    int64  `json:"mode"`
	Content []byte `json:"-"`
}

// runSpec is one trace the monitor asks for.
type runSpec struct {
	Cell string // the cell's kind
	// Condition is the vary cell's condition (zero for other cells).
	Condition Condition
	// Label names the run's folder: "chained-03", "confirm-chained-03",
	// "reset-chained-03-1".
	Label string
	// Restore is the state the run starts from (nil: fresh).
	Restore []File
}

// runResult is what one trace gave the monitor.
type runResult struct {
	Observation Observation
	// Changed are the files the run created or changed, with their
	// content: the state it leaves.
	Changed []File
	// Deleted are the paths the run removed (unlinked, or renamed away)
	// and did not write again: carried files of these paths go.
	Deleted []string
}

// runFunc runs one trace.
type runFunc func(ctx context.Context, s runSpec) (runResult, error)

// Observation is what the monitor compares of one run, from its report.
type Observation struct {
	Label        string                   `json:"label"`
	TraceID      string                   `json:"trace_id"`
	Dir          string                   `json:"dir,omitempty"`
	Status       string                   `json:"status"`
	Verdict      string                   `json:"verdict"`
	Rules        []string                 `json:"rules"`
	Capabilities fingerprint.Capabilities `json:"capabilities"`
	Resources    fingerprint.Resources    `json:"resources"`
	Written      []string                 `json:"written"`
	// Restored are the paths of the state the run started from.
	Restored []string `json:"restored,omitempty"`
	// Calls are the run's tool calls ("bash COMMAND", or the tool's name)
	// and OutputHashes their outputs' hashes, volatile parts normalised
	// (OutputHash), one per call in order.
	Calls        []string `json:"calls,omitempty"`
	OutputHashes []string `json:"output_hashes,omitempty"`
	// Outside is what the run did outside the skill's declared envelope
	// (Options.Declared; envelope.go).
	Outside []string `json:"outside_envelope,omitempty"`
	// Secrets are the home secrets the run read or touched (filesystem
	// keys of fingerprint's home_secret class): the risk tier counts them.
	Secrets []string `json:"home_secrets,omitempty"`
}

// Observe is the observation of a trace's report.
func Observe(r *reports.Report, label, dir string) Observation {
	o := Observation{Label: label, TraceID: r.TraceID, Dir: dir, Status: string(r.Status), Verdict: string(r.Verdict),
		Capabilities: r.Profile.Capabilities(), Resources: r.Profile.Resources, Rules: []string{}, Written: []string{}}
	for _, f := range r.Findings {
		o.Rules = append(o.Rules, f.RuleID)
	}
	slices.Sort(o.Rules)
	o.Rules = slices.Compact(o.Rules)
	observeCalls(&o, r)
	for _, f := range r.Profile.Filesystem {
		if f.Class == fingerprint.ClassHomeSecret {
			o.Secrets = append(o.Secrets, f.Op+" "+f.Path)
		}
	}
	return o
}

// Options are a monitor's plan.
type Options struct {
	Runs  int      // runs per cell
	Cells []string // Chained, Independent, in order
	// Vary are conditions each run as a cell of fresh runs after Cells,
	// compared with the independent cell's runs (which Cells must hold).
	Vary []Condition
	// Candidates caps the carried files tried one by one to name the
	// state that carries an activation (default 3).
	Candidates int
	// Replay, once a carried file is named, runs 1..K of a chained cell
	// again from nothing (the reset): the activation recurs at run K, and
	// not before, when a run count carries it.
	Replay bool
	// Declared is the skill's declared envelope (DeclaredEnvelope).
	Declared Declared
	// Tier is the risk tier asked for (ParseTier): "" or TierAuto
	// computes it from what the runs did.
	Tier string

	// Plan is the plan of every run: each run traces a copy with a trace
	// id of its own (TraceID), its condition (a vary cell's) and the
	// state it starts from (Plan.Restore).
	Plan traceplan.Plan
	// Dir is the monitor's folder: each run's folder is Dir/runs/<label>.
	Dir string
	// TraceID makes each run's trace id.
	TraceID func() string
	// Observed, when set, receives each run's observation as the monitor
	// saw it, before any comparison (cmd/sandboxctl appends it to the
	// audit log); its error ends the monitor.
	Observed func(Observation) error
}

// Validate reports the first problem with o.
func (o Options) Validate() error {
	if o.Runs < 2 {
		return fmt.Errorf("monitor needs at least 2 runs per cell, got %d", o.Runs)
	}
	if len(o.Cells) == 0 {
		return errors.New("monitor needs at least one cell")
	}
	for _, c := range o.Cells {
		if c != Chained && c != Independent {
			return fmt.Errorf("unknown cell %q (want chained or independent)", c)
		}
	}
	if len(o.Vary) > 0 && !slices.Contains(o.Cells, Independent) {
		return errors.New("varied conditions are compared with the independent cell: add it to the cells")
	}
	if _, err := ParseTier(o.Tier); err != nil {
		return err
	}
	return nil
}

// runWith runs the cells of o, each run through t, and returns the
// report. A trace that fails ends the monitor with the cells done so far
// and the error.
func runWith(ctx context.Context, t runFunc, o Options) (Report, error) {
	if err := o.Validate(); err != nil {
		return Report{}, err
	}
	if o.Candidates <= 0 {
		o.Candidates = 3
	}
	t = o.Declared.tracer(t)
	rep := Report{Runs: o.Runs, Envelope: &Envelope{Declared: o.Declared}, tierAsked: o.Tier}
	for _, kind := range o.Cells {
		c, err := runCell(ctx, t, o, kind)
		rep.Cells = append(rep.Cells, c)
		if err != nil {
			rep.finish()
			return rep, err
		}
	}
	var base *Cell
	for i := range rep.Cells {
		if rep.Cells[i].Kind == Independent {
			base = &rep.Cells[i]
		}
	}
	for _, cond := range o.Vary {
		c, err := runVaried(ctx, t, o, cond, base)
		rep.Cells = append(rep.Cells, c)
		if err != nil {
			rep.finish()
			return rep, err
		}
	}
	rep.finish()
	return rep, nil
}

// runVaried runs a vary cell: fresh runs under cond, each compared with
// what the independent cell's runs did together. The cell's own runs
// confirm a deviation: a trigger is the condition when every run under it
// deviates the same way and no independent run did.
func runVaried(ctx context.Context, t runFunc, o Options, cond Condition, base *Cell) (Cell, error) {
	c := Cell{Kind: Varied, Condition: cond.String()}
	for i := 1; i <= o.Runs; i++ {
		spec := runSpec{Cell: Varied, Condition: cond, Label: fmt.Sprintf("vary-%s-%02d", labelSafe(cond.String()), i)}
		res, err := t(ctx, spec)
		if err != nil {
			return c, fmt.Errorf("monitor %s: %w", spec.Label, err)
		}
		obs := res.Observation
		obs.Label, obs.Written = spec.Label, paths(res.Changed)
		c.Observations = append(c.Observations, obs)
	}
	b := base.baseline(len(base.Observations) + 1)
	for k, o := range c.Observations {
		if d := deviation(b, o, k+1); d != nil {
			c.Deviation = d
			break
		}
	}
	c.Varied = c.varied()
	if c.Deviation != nil {
		conf := &Confirmation{Recurred: true, Observations: []Observation{}} // the cell's own runs confirm it
		for _, o := range c.Observations {
			conf.Recurred = conf.Recurred && newBehaviour(b, o, c.Deviation)
		}
		c.Confirmation = conf
	} else {
		if c.Suppression = suppression(base.Observations, c.Observations); c.Suppression != nil {
			c.Suppression.Expected = expectedLoss[cond]
		}
	}
	c.decide()
	return c, nil
}

// intersect is what a and b both hold, class by class.
func intersect(a, b fingerprint.Capabilities) fingerprint.Capabilities {
	both := func(x, y []string) []string {
		return slices.DeleteFunc(slices.Clone(x), func(k string) bool { return !slices.Contains(y, k) })
	}
	return fingerprint.Capabilities{Filesystem: both(a.Filesystem, b.Filesystem), Network: both(a.Network, b.Network),
		Environment: both(a.Environment, b.Environment), Processes: both(a.Processes, b.Processes),
		Outputs: both(a.Outputs, b.Outputs)}.Union(fingerprint.Capabilities{})
}

// suppression is what every baseline run did and no run under the
// condition did, or nil when the condition's runs lost nothing.
func suppression(base, runs []Observation) *Suppression {
	if len(base) == 0 || len(runs) == 0 {
		return nil
	}
	common := func(os []Observation) (fingerprint.Capabilities, []string, string) {
		caps, rules, best := os[0].Capabilities, slices.Clone(os[0].Rules), os[0].Verdict
		for _, o := range os[1:] {
			caps = intersect(caps, o.Capabilities)
			rules = slices.DeleteFunc(rules, func(r string) bool { return !slices.Contains(o.Rules, r) })
			if worse(best, o.Verdict) {
				best = o.Verdict
			}
		}
		return caps, rules, best
	}
	bCaps, bRules, bBest := common(base)
	var any fingerprint.Capabilities
	var anyRules []string
	cWorst := runs[0].Verdict
	for _, o := range runs {
		any = any.Union(o.Capabilities)
		anyRules = append(anyRules, o.Rules...)
		if worse(o.Verdict, cWorst) {
			cWorst = o.Verdict
		}
	}
	s := &Suppression{Dropped: any.Diff(bCaps)}
	for _, r := range bRules {
		if !slices.Contains(anyRules, r) {
			s.DroppedRules = append(s.DroppedRules, r)
		}
	}
	if worse(bBest, cWorst) {
		s.VerdictFrom, s.VerdictTo = bBest, cWorst
	}
	if s.Dropped.Count() == 0 && len(s.DroppedRules) == 0 && s.VerdictTo == "" {
		return nil
	}
	return s
}

var unsafeLabel = regexp.MustCompile(`[^a-z0-9.-]+`)

func labelSafe(s string) string {
	return strings.Trim(unsafeLabel.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// state is the carried state of a chained cell: path to file.
type state map[string]File

func (s state) files(skip string) []File {
	var out []File
	for _, p := range slices.Sorted(maps.Keys(s)) {
		if p != skip {
			out = append(out, s[p])
		}
	}
	return out
}

// apply removes what a run deleted from the state (a path, or a folder
// and what it held), then adds the files it changed. A file where a
// carried file's folder was, or a folder where a carried file was,
// replaces it: the run deleted the one to make the other.
func (s state) apply(changed []File, deleted []string) {
	for _, d := range deleted {
		for p := range s {
			if p == d || strings.HasPrefix(p, d+"/") {
				delete(s, p)
			}
		}
	}
	for _, f := range changed {
		for p := range s {
			if strings.HasPrefix(f.Path, p+"/") || strings.HasPrefix(p, f.Path+"/") {
				delete(s, p)
			}
		}
		s[f.Path] = f
	}
}

func runCell(ctx context.Context, t runFunc, o Options, kind string) (Cell, error) {
	c := Cell{Kind: kind}
	st := state{}
	var before []state // the state each run started from
	var changed [][]string
	for i := 1; i <= o.Runs; i++ {
		spec := runSpec{Cell: kind, Label: fmt.Sprintf("%s-%02d", kind, i)}
		if kind == Chained {
			spec.Restore = st.files("")
		}
		res, err := t(ctx, spec)
		if err != nil {
			return c, fmt.Errorf("monitor %s: %w", spec.Label, err)
		}
		obs := res.Observation
		obs.Label = spec.Label
		obs.Restored = paths(spec.Restore)
		obs.Written = paths(res.Changed)
		c.Observations = append(c.Observations, obs)
		before = append(before, maps.Clone(st))
		changed = append(changed, obs.Written)
		if kind == Chained {
			st.apply(res.Changed, res.Deleted)
		}
	}
	c.analyse()
	if c.Deviation == nil || kind != Chained {
		return c, nil
	}
	k := c.Deviation.Run
	err := c.confirm(ctx, t, before[k-1], candidates(before[k-1], changed[:k-1], o.Candidates))
	if err == nil && o.Replay && c.Confirmation.Recurred && len(c.Confirmation.ResetBy) > 0 {
		err = c.replay(ctx, t)
	}
	c.decide()
	return c, err
}

func paths(fs []File) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Path)
	}
	slices.Sort(out)
	return out
}

// candidates are the carried files to delete one at a time, most likely
// first: those rewritten by the most runs before the deviation (a counter
// is rewritten by every run), then by path.
func candidates(st state, changed [][]string, n int) []string {
	score := map[string]int{}
	for _, ws := range changed {
		for _, w := range ws {
			if _, ok := st[w]; ok {
				score[w]++
			}
		}
	}
	ps := slices.Sorted(maps.Keys(st))
	slices.SortStableFunc(ps, func(a, b string) int { return score[b] - score[a] })
	return ps[:min(n, len(ps))]
}

// confirm re-runs the deviating run from the state carried into it (does
// the deviation recur?), then from that state without each candidate file
// (which one, deleted, resets it?), and without any carried state when no
// single file does.
func (c *Cell) confirm(ctx context.Context, t runFunc, st state, cands []string) error {
	k := c.Deviation.Run
	base := c.baseline(k)
	conf := &Confirmation{}
	c.Confirmation = conf
	run := func(label string, restore []File) (Observation, bool, error) {
		res, err := t(ctx, runSpec{Cell: c.Kind, Label: label, Restore: restore})
		if err != nil {
			return Observation{}, false, fmt.Errorf("monitor %s: %w", label, err)
		}
		obs := res.Observation
		obs.Label, obs.Restored, obs.Written = label, paths(restore), paths(res.Changed)
		conf.Observations = append(conf.Observations, obs)
		return obs, newBehaviour(base, obs, c.Deviation), nil
	}
	_, again, err := run(fmt.Sprintf("confirm-%s-%02d", c.Kind, k), st.files(""))
	if err != nil {
		return err
	}
	conf.Recurred = again
	if !again {
		return nil
	}
	for i, p := range cands {
		_, dev, err := run(fmt.Sprintf("reset-%s-%02d-%d", c.Kind, k, i+1), st.files(p))
		if err != nil {
			return err
		}
		if !dev {
			conf.ResetBy = []string{p}
			return nil
		}
	}
	if len(st) > 1 || len(cands) == 0 {
		_, dev, err := run(fmt.Sprintf("reset-%s-%02d-all", c.Kind, k), nil)
		if err != nil {
			return err
		}
		if !dev {
			conf.ResetBy = slices.Sorted(maps.Keys(st))
		}
	}
	return nil
}

// replay runs 1..K again as a fresh chain (the carried state reset) and
// records whether the deviation came back at run K and not before.
func (c *Cell) replay(ctx context.Context, t runFunc) error {
	k := c.Deviation.Run
	base := c.baseline(k)
	conf := c.Confirmation
	st := state{}
	early, atK := false, false
	for i := 1; i <= k; i++ {
		label := fmt.Sprintf("replay-%s-%02d", c.Kind, i)
		restore := st.files("")
		res, err := t(ctx, runSpec{Cell: c.Kind, Label: label, Restore: restore})
		if err != nil {
			return fmt.Errorf("monitor %s: %w", label, err)
		}
		obs := res.Observation
		obs.Label, obs.Restored, obs.Written = label, paths(restore), paths(res.Changed)
		conf.Replay = append(conf.Replay, obs)
		dev := newBehaviour(base, obs, c.Deviation)
		if i < k {
			early = early || dev
		} else {
			atK = dev
		}
		st.apply(res.Changed, res.Deleted)
	}
	again := atK && !early
	conf.RecurredAfterReset = &again
	return nil
}

// newBehaviour says whether o shows again what the deviation added.
func newBehaviour(base Observation, o Observation, d *Deviation) bool {
	was := joinCaps(d.Added)
	for _, k := range joinCaps(base.Capabilities.Diff(o.Capabilities)) {
		if slices.Contains(was, k) {
			return true // some of what was new is there again
		}
	}
	for _, r := range d.NewRules {
		if slices.Contains(o.Rules, r) {
			return true
		}
	}
	for _, x := range d.OutsideEnvelope {
		if slices.Contains(o.Outside, x) {
			return true
		}
	}
	return d.VerdictFrom != "" && worse(o.Verdict, base.Verdict)
}

// verdictRank orders trace verdicts from the least to the most severe.
var verdictRank = map[string]int{string(rules.Clean): 0, string(rules.Inconclusive): 1, string(rules.Suspicious): 2, string(rules.Malicious): 3}

func worse(a, b string) bool { return verdictRank[a] > verdictRank[b] }

// joinCaps lists the capabilities of c, class by class.
func joinCaps(c fingerprint.Capabilities) []string {
	var out []string
	add := func(class string, ks []string) {
		for _, k := range ks {
			out = append(out, class+" "+k)
		}
	}
	add("net", c.Network) // most telling first: a deviation's summary keeps the first four
	add("proc", c.Processes)
	add("env", c.Environment)
	add("output", c.Outputs)
	add("file", c.Filesystem)
	return out
}
