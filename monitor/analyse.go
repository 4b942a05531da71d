package monitor

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/fingerprint"
)

// Report is a monitor's result.
type Report struct {
	SchemaVersion string `json:"schema_version"`
	Skill         string `json:"skill,omitempty"`
	Runs          int    `json:"runs_per_cell"`
	Verdict       string `json:"verdict"`
	// ActivationRun and ActivationState are the first confirmed
	// activation's run and the carried files whose deletion resets it.
	ActivationRun   int      `json:"activation_run,omitempty"`
	ActivationState []string `json:"activation_state,omitempty"`
	// ActivationCondition is the first confirmed condition trigger
	// (NAME=VALUE), when the activation is a condition's.
	ActivationCondition string `json:"activation_condition,omitempty"`
	// QuietWhen is the first condition under which the skill hid what
	// every independent run did (NAME=VALUE).
	QuietWhen string `json:"quiet_when,omitempty"`
	// ClockWindow names, from the clock values the vary cells tried, where
	// the skill's clock trigger lies: "only when the clock reads 03:00 (of
	// 00:00, 03:00, 08:00): between 00:00 and 08:00".
	ClockWindow string   `json:"clock_window,omitempty"`
	Summary     string   `json:"summary"`
	Cells       []Cell   `json:"cells"`
	Actions     []string `json:"recommended_actions"`
	// Audit is the signed checkpoint of the monitor's audit log (every
	// run's observation, in the order they were made) and its verifier
	// key: `sandboxctl audit verify` checks the log against it.
	Audit *Audit `json:"audit,omitempty"`
	// Envelope is the skill's declared envelope and what the runs did
	// outside it (envelope.go).
	Envelope *Envelope `json:"envelope,omitempty"`
	// Tier is the risk tier (tier.go), asked for with Options.Tier or
	// observed, why, and its policy.
	Tier            string `json:"tier,omitempty"`
	TierReason      string `json:"tier_reason,omitempty"`
	RecommendedRuns int    `json:"recommended_runs,omitempty"`
	Sampling        string `json:"sampling,omitempty"`

	tierAsked string
}

// Audit is the audit log's state as the report holds it.
type Audit struct {
	Checkpoint  string `json:"checkpoint"`
	VerifierKey string `json:"verifier_key"`
	// KeyFingerprint names VerifierKey (audit.Fingerprint): recorded
	// elsewhere, it lets a later verify trust the key (schema 1.2).
	KeyFingerprint string `json:"key_fingerprint,omitempty"`
}

// SchemaVersion is the monitor report's schema version
// (schema/monitor.schema.json).
// 1.2 added the audit key's fingerprint (audit.key_fingerprint).
// 1.1 added, to runs, calls, output_hashes, outside_envelope and
// home_secrets; to deviations, outside_envelope; to the report, envelope,
// tier, tier_reason, recommended_runs and sampling.
const SchemaVersion = "1.2"

// Cell is one cell's runs and verdict.
type Cell struct {
	Kind string `json:"kind"`
	// Condition is a vary cell's condition, NAME=VALUE.
	Condition    string        `json:"condition,omitempty"`
	Verdict      string        `json:"verdict"`
	Why          string        `json:"why"`
	Observations []Observation `json:"runs"`
	// Deviation is the first run that did something the runs before it
	// did not; nil when none did.
	Deviation *Deviation `json:"deviation,omitempty"`
	// Confirmation holds the re-runs of a chained cell's deviation.
	Confirmation *Confirmation `json:"confirmation,omitempty"`
	// Suppression is what every independent run did and no run of a vary
	// cell did: the skill does less under the condition.
	Suppression *Suppression `json:"suppression,omitempty"`
	// Varied lists what differed between runs without being new (a
	// capability a later run dropped, a resource figure out of its band).
	Varied []string `json:"varied,omitempty"`
}

// Deviation is what run Run did that the runs before it did not.
type Deviation struct {
	Run         int                      `json:"run"`
	Added       fingerprint.Capabilities `json:"added"`
	NewRules    []string                 `json:"new_rules,omitempty"`
	VerdictFrom string                   `json:"verdict_from,omitempty"`
	VerdictTo   string                   `json:"verdict_to,omitempty"`
	// OutsideEnvelope is what the run did outside the declared envelope
	// that the runs before it did not.
	OutsideEnvelope []string `json:"outside_envelope,omitempty"`
}

// Suppression is what a condition took away: capabilities and rules
// every independent run had and no run under the condition had, and the
// verdict when every run under it was better than every independent run.
type Suppression struct {
	Dropped      fingerprint.Capabilities `json:"dropped"`
	DroppedRules []string                 `json:"dropped_rules,omitempty"`
	VerdictFrom  string                   `json:"verdict_from,omitempty"`
	VerdictTo    string                   `json:"verdict_to,omitempty"`
	// Expected: any skill would do less under this condition (no name
	// resolves), so it says nothing of hiding.
	Expected bool `json:"expected,omitempty"`
}

// what says in words what a suppression took away.
func (s *Suppression) what() string {
	d := Deviation{Added: s.Dropped, NewRules: s.DroppedRules, VerdictFrom: s.VerdictFrom, VerdictTo: s.VerdictTo}
	return d.what()
}

// Confirmation is what the re-runs of a deviation showed.
type Confirmation struct {
	// Recurred: the run from the state carried into the deviating run
	// deviated again.
	Recurred bool `json:"recurred"`
	// ResetBy are the carried files whose deletion stopped the deviation
	// (one file, or the whole carried state); empty when none did.
	ResetBy      []string      `json:"reset_by,omitempty"`
	Observations []Observation `json:"runs"`
	// Replay are runs 1..K again from nothing, once ResetBy is known
	// (Options.Replay); RecurredAfterReset says the deviation came back
	// at run K of them and not before (nil: not replayed).
	Replay             []Observation `json:"replay,omitempty"`
	RecurredAfterReset *bool         `json:"recurred_after_reset,omitempty"`
}

// baseline is what runs 1..k-1 did together: the union of their
// capabilities and rules, and their worst verdict.
func (c *Cell) baseline(k int) Observation {
	b := Observation{Verdict: "clean", Capabilities: fingerprint.Capabilities{}.Union(fingerprint.Capabilities{})}
	for _, o := range c.Observations[:k-1] {
		b.Capabilities = b.Capabilities.Union(o.Capabilities)
		b.Rules = append(b.Rules, o.Rules...)
		b.Outside = append(b.Outside, o.Outside...)
		if worse(o.Verdict, b.Verdict) {
			b.Verdict = o.Verdict
		}
	}
	slices.Sort(b.Rules)
	b.Rules = slices.Compact(b.Rules)
	return b
}

// analyse finds the first deviation and what varied, and sets the
// verdict a cell has before any confirmation.
func (c *Cell) analyse() {
	for k := 2; k <= len(c.Observations); k++ {
		if d := deviation(c.baseline(k), c.Observations[k-1], k); d != nil {
			c.Deviation = d
			break
		}
	}
	c.Varied = c.varied()
	c.decide()
}

// deviation is what run k (o) did that base did not, or nil.
func deviation(base, o Observation, k int) *Deviation {
	d := &Deviation{Run: k, Added: base.Capabilities.Diff(o.Capabilities)}
	for _, r := range o.Rules {
		if !slices.Contains(base.Rules, r) {
			d.NewRules = append(d.NewRules, r)
		}
	}
	if worse(o.Verdict, base.Verdict) {
		d.VerdictFrom, d.VerdictTo = base.Verdict, o.Verdict
	}
	for _, x := range o.Outside {
		if !slices.Contains(base.Outside, x) {
			d.OutsideEnvelope = append(d.OutsideEnvelope, x)
		}
	}
	if d.Added.Count() > 0 || len(d.NewRules) > 0 || d.VerdictTo != "" || len(d.OutsideEnvelope) > 0 {
		return d
	}
	return nil
}

// The names varied entries start with, by invariant class: the resource
// figures, and a tool call's output (outputVaried).
const (
	figureCPU    = "cpu seconds"
	figureNet    = "network bytes out"
	figureMemory = "peak memory"
	outputOfCall = "output of call"
)

// Resource bands: a figure is out of its band when it is more than
// bandFactor times the median of the cell's runs and above the floor.
const (
	bandFactor = 4.0
	cpuFloor   = 0.5     // seconds
	netFloor   = 1 << 10 // bytes sent
	memFloor   = 64 << 20
)

// varied lists the capabilities some runs had and others did not (before
// any deviation) and the resource figures out of their band.
func (c *Cell) varied() []string {
	n := len(c.Observations)
	if c.Deviation != nil {
		n = c.Deviation.Run - 1
	}
	runs := c.Observations[:n]
	var out []string
	all := fingerprint.Capabilities{}
	for _, o := range runs {
		all = all.Union(o.Capabilities)
	}
	for _, k := range joinCaps(all) {
		var missing []int
		for i, o := range runs {
			if !slices.Contains(joinCaps(o.Capabilities), k) {
				missing = append(missing, i+1)
			}
		}
		if len(missing) > 0 {
			out = append(out, fmt.Sprintf("%s: not in run %s", k, ints(missing)))
		}
	}
	figure := func(name string, floor float64, get func(fingerprint.Resources) float64) {
		var xs []float64
		for _, o := range c.Observations {
			xs = append(xs, get(o.Resources))
		}
		m := median(xs)
		for i, x := range xs {
			if x > floor && x > bandFactor*m {
				out = append(out, fmt.Sprintf("%s: run %d %.4g, median %.4g", name, i+1, x, m))
			}
		}
	}
	out = append(out, outputVaried(runs)...)
	figure(figureCPU, cpuFloor, func(r fingerprint.Resources) float64 { return r.CPUSeconds })
	figure(figureNet, netFloor, func(r fingerprint.Resources) float64 { return float64(r.NetworkBytesUp) })
	figure(figureMemory, memFloor, func(r fingerprint.Resources) float64 { return float64(r.PeakMemory) })
	return out
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func ints(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, ", ")
}

// decide sets the cell's verdict from its deviation, confirmation and
// variation (the criteria of docs/monitor.md).
func (c *Cell) decide() {
	d := c.Deviation
	sup := c.Suppression
	switch {
	case d == nil && sup != nil && sup.VerdictTo != "" && !sup.Expected && len(c.Observations) > 1:
		// The harm every independent run showed is gone in every run
		// under the condition: the skill hides when it holds.
		c.Verdict = Activation
		c.Why = fmt.Sprintf("quiet when %s: none of its %d runs did what every independent run did (%s)", c.Condition, len(c.Observations), sup.what())
	case d == nil && sup != nil:
		c.Verdict = Marginal
		c.Why = fmt.Sprintf("under %s every run did less than the independent runs (%s)", c.Condition, sup.what())
		if sup.Expected {
			c.Why += ", as any skill would: no name resolves"
		}
		if len(c.Varied) > 0 {
			c.Why += "; " + strings.Join(c.Varied, "; ")
		}
	case d == nil && len(c.Varied) == 0:
		c.Verdict, c.Why = Consistent, fmt.Sprintf("%d runs did the same", len(c.Observations))
	case d == nil:
		c.Verdict, c.Why = Marginal, "no run did anything new; "+strings.Join(c.Varied, "; ")
	case c.Kind == Varied && c.Confirmation != nil && c.Confirmation.Recurred && len(c.Observations) > 1:
		c.Verdict = Activation
		c.Why = fmt.Sprintf("only when %s: every one of its %d runs did something no independent run did (%s)", c.Condition, len(c.Observations), d.what())
	case c.Kind == Varied:
		c.Verdict = Variant
		c.Why = fmt.Sprintf("under %s, run %d did something no independent run did (%s), but not every run under it did", c.Condition, d.Run, d.what())
	case c.Confirmation != nil && c.Confirmation.Recurred && len(c.Confirmation.ResetBy) > 0 &&
		c.Confirmation.RecurredAfterReset != nil && !*c.Confirmation.RecurredAfterReset:
		c.Verdict = Variant
		c.Why = fmt.Sprintf("run %d did something new (%s); it recurred from the same state and deleting %s reset it, but runs 1..%d again from nothing did not bring it back at run %d alone",
			d.Run, d.what(), strings.Join(c.Confirmation.ResetBy, ", "), d.Run, d.Run)
	case c.Confirmation != nil && c.Confirmation.Recurred && len(c.Confirmation.ResetBy) > 0:
		c.Verdict = Activation
		c.Why = fmt.Sprintf("activates at run %d (%s); it recurred from the state carried into run %d and is resettable by deleting %s",
			d.Run, d.what(), d.Run, strings.Join(c.Confirmation.ResetBy, ", "))
		if c.Confirmation.RecurredAfterReset != nil {
			c.Why += fmt.Sprintf("; after a reset it came back at run %d again, not before (runs 1..%d replayed from nothing)", d.Run, d.Run)
		}
	case c.Confirmation != nil && c.Confirmation.Recurred:
		c.Verdict = Variant
		c.Why = fmt.Sprintf("run %d did something new (%s); it recurred from the same state, but deleting the carried state did not reset it", d.Run, d.what())
	case c.Confirmation != nil:
		c.Verdict = Variant
		c.Why = fmt.Sprintf("run %d did something new (%s); it did not recur from the same state", d.Run, d.what())
	default:
		c.Verdict = Variant
		c.Why = fmt.Sprintf("run %d did something new (%s)", d.Run, d.what())
	}
}

// what says in words what a deviation added.
func (d *Deviation) what() string {
	var parts []string
	if ks := joinCaps(d.Added); len(ks) > 0 {
		if len(ks) > 4 {
			ks = append(ks[:4], fmt.Sprintf("%d more", len(ks)-4))
		}
		parts = append(parts, strings.Join(ks, ", "))
	}
	if len(d.NewRules) > 0 {
		parts = append(parts, "rules "+strings.Join(d.NewRules, ", "))
	}
	if d.VerdictTo != "" {
		parts = append(parts, "verdict "+d.VerdictFrom+" -> "+d.VerdictTo)
	}
	if len(d.OutsideEnvelope) > 0 {
		parts = append(parts, "outside the declared envelope: "+capList(d.OutsideEnvelope, 4))
	}
	return strings.Join(parts, "; ")
}

// verdictOrder ranks monitor verdicts from the least to the most severe.
var verdictOrder = map[string]int{Consistent: 0, Marginal: 1, Variant: 2, Activation: 3}

// finish sets the report's verdict (the worst cell's), the activation,
// the summary and the recommended actions.
func (r *Report) finish() {
	r.SchemaVersion = SchemaVersion
	r.Verdict = Consistent
	var why []string
	for _, c := range r.Cells {
		if c.Verdict == "" {
			continue
		}
		if verdictOrder[c.Verdict] > verdictOrder[r.Verdict] {
			r.Verdict = c.Verdict
		}
		if c.Verdict == Activation && c.Kind == Varied && c.Deviation == nil && r.QuietWhen == "" {
			r.QuietWhen = c.Condition
		}
		if c.Verdict == Activation && c.Kind == Varied && c.Deviation != nil && r.ActivationCondition == "" && r.ActivationRun == 0 {
			r.ActivationCondition = c.Condition
		}
		if c.Verdict == Activation && c.Kind != Varied && r.ActivationRun == 0 {
			r.ActivationRun, r.ActivationState = c.Deviation.Run, c.Confirmation.ResetBy
			r.ActivationCondition = ""
		}
		why = append(why, c.name()+": "+c.Why)
	}
	r.ClockWindow = clockWindow(r.Cells)
	if r.ClockWindow != "" {
		why = append(why, "clock: "+r.ClockWindow)
	}
	r.Summary = strings.Join(why, "\n")
	r.Actions = []string{}
	switch r.Verdict {
	case Activation:
		switch {
		case r.ActivationRun > 0:
			r.Actions = append(r.Actions, fmt.Sprintf("do not install: the skill changes behaviour at run %d, driven by state it keeps in %s", r.ActivationRun, strings.Join(r.ActivationState, ", ")))
		case r.ActivationCondition != "":
			r.Actions = append(r.Actions, fmt.Sprintf("do not install: the skill changes behaviour only when %s", r.ActivationCondition))
		default:
			r.Actions = append(r.Actions, fmt.Sprintf("do not install: the skill hides what it does when %s, and does it when it seems unwatched", r.QuietWhen))
		}
		r.Actions = append(r.Actions, "read the report of the deviating run, runs/"+r.activationLabel()+" in the monitor's folder, for what it did")
	case Variant:
		r.Actions = append(r.Actions, "read the reports of the deviating runs (deviation above, under runs/ in the monitor's folder); run the monitor with more runs to see whether the change repeats")
	case Marginal:
		r.Actions = append(r.Actions, "the variation is within what a benign skill shows; run more runs if it matters")
	}
	r.assess()
}

// activationLabel is the label of the first activation's run.
func (r *Report) activationLabel() string {
	for _, c := range r.Cells {
		switch {
		case c.Verdict != Activation:
		case c.Deviation != nil:
			return c.Observations[c.Deviation.Run-1].Label
		case c.Kind == Varied:
			// A suppression: the independent runs show what it hides.
			for _, b := range r.Cells {
				if b.Kind == Independent && len(b.Observations) > 0 {
					return b.Observations[0].Label
				}
			}
		}
	}
	return ""
}

// clockWindow names where a clock trigger lies among the clock values
// the vary cells tried: the values whose cell activated, and, for times
// of day, the nearest tried values around them that did not.
func clockWindow(cells []Cell) string {
	type tried struct {
		value string
		fired bool
	}
	var ts []tried
	fired := 0
	for _, c := range cells {
		v, ok := strings.CutPrefix(c.Condition, "clock=")
		if c.Kind != Varied || !ok {
			continue
		}
		f := c.Verdict == Activation && c.Deviation != nil
		if f {
			fired++
		}
		ts = append(ts, tried{v, f})
	}
	if fired == 0 || fired == len(ts) {
		return ""
	}
	var yes, all []string
	for _, t := range ts {
		all = append(all, t.value)
		if t.fired {
			yes = append(yes, t.value)
		}
	}
	out := fmt.Sprintf("only when the clock reads %s (of %s)", strings.Join(yes, ", "), strings.Join(all, ", "))
	// Times of day: the window lies between the nearest quiet values.
	mins := func(v string) (int, bool) {
		var h, m int
		if n, err := fmt.Sscanf(v, "%d:%d", &h, &m); err != nil || n != 2 || len(v) > 5 {
			return 0, false
		}
		return h*60 + m, true
	}
	var day []tried
	for _, t := range ts {
		if _, ok := mins(t.value); ok {
			day = append(day, t)
		}
	}
	if len(day) < 3 {
		return out
	}
	slices.SortFunc(day, func(a, b tried) int { x, _ := mins(a.value); y, _ := mins(b.value); return x - y })
	first, last := -1, -1
	for i, t := range day {
		if t.fired {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return out
	}
	for i := first; i <= last; i++ {
		if !day[i].fired {
			return out // fired in more than one stretch of the day
		}
	}
	before := day[(first-1+len(day))%len(day)]
	after := day[(last+1)%len(day)]
	if before.fired || after.fired {
		return out
	}
	return fmt.Sprintf("%s: the window lies between %s and %s local time", out, before.value, after.value)
}

// name is the cell's kind, with its condition for a vary cell.
func (c *Cell) name() string {
	if c.Condition != "" {
		return c.Kind + " " + c.Condition
	}
	return c.Kind
}
