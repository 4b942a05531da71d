package monitor

import (
	_ "embed"
	"fmt"
	"io"
	"strings"
)

// Schema is the JSON Schema of the monitor report (monitor.json).
//
//go:embed schema/monitor.schema.json
var Schema []byte

// WriteText writes the report for a reader: per cell, each run's verdict,
// rules and figures, the deviation, the confirmation and the verdict, then
// the skill's verdict and the recommended actions.
func WriteText(w io.Writer, r Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "sandboxctl monitor: %s, %d runs per cell\n", r.Skill, r.Runs)
	for _, c := range r.Cells {
		fmt.Fprintf(&b, "\n%s cell: %s\n", c.name(), c.Verdict)
		for _, o := range c.Observations {
			writeRun(&b, o)
		}
		if d := c.Deviation; d != nil {
			fmt.Fprintf(&b, "  deviation at run %d: %s\n", d.Run, d.what())
		}
		if sp := c.Suppression; sp != nil {
			fmt.Fprintf(&b, "  did less than every independent run: %s\n", sp.what())
		}
		if cf := c.Confirmation; cf != nil {
			for _, o := range cf.Observations {
				writeRun(&b, o)
			}
			for _, o := range cf.Replay {
				writeRun(&b, o)
			}
			fmt.Fprintf(&b, "  confirmation: recurred from the same state: %v", cf.Recurred)
			if len(cf.ResetBy) > 0 {
				fmt.Fprintf(&b, "; reset by deleting %s", strings.Join(cf.ResetBy, ", "))
			}
			if cf.RecurredAfterReset != nil {
				fmt.Fprintf(&b, "; came back at the same run after a reset: %v", *cf.RecurredAfterReset)
			}
			b.WriteString("\n")
		}
		for _, v := range c.Varied {
			fmt.Fprintf(&b, "  varied: %s\n", v)
		}
		fmt.Fprintf(&b, "  %s\n", c.Why)
	}
	b.WriteString("\ninvariants:\n")
	for _, iv := range r.invariants() {
		fmt.Fprintf(&b, "  %-28s %s\n", iv[0], iv[1])
	}
	fmt.Fprintf(&b, "\nverdict: %s", r.Verdict)
	if r.ActivationRun > 0 {
		fmt.Fprintf(&b, " (activates at run %d; resettable by deleting %s)", r.ActivationRun, strings.Join(r.ActivationState, ", "))
	} else if r.ActivationCondition != "" {
		fmt.Fprintf(&b, " (activates only when %s)", r.ActivationCondition)
	} else if r.QuietWhen != "" {
		fmt.Fprintf(&b, " (quiet when %s)", r.QuietWhen)
	}
	b.WriteString("\n")
	if r.ClockWindow != "" {
		fmt.Fprintf(&b, "clock: %s\n", r.ClockWindow)
	}
	for _, a := range r.Actions {
		fmt.Fprintf(&b, "  - %s\n", a)
	}
	if r.Tier != "" {
		fmt.Fprintf(&b, "\ntier: %s (%s)\n  policy: %d runs per cell; trace %s\n", r.Tier, r.TierReason, r.RecommendedRuns, r.Sampling)
	}
	writeEnvelope(&b, r.Envelope)
	if r.Audit != nil {
		fmt.Fprintf(&b, "\naudit log checkpoint (sandboxctl audit verify DIR):\n%s", r.Audit.Checkpoint)
		if r.Audit.KeyFingerprint != "" {
			fmt.Fprintf(&b, "audit key %s: record it apart from this folder to verify the log against it later\n", r.Audit.KeyFingerprint)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeRun(b *strings.Builder, o Observation) {
	rules := "-"
	if len(o.Rules) > 0 {
		rules = strings.Join(o.Rules, ",")
	}
	fmt.Fprintf(b, "  %-22s %-12s caps %-3d rules %-s  cpu %.2fs  mem %dMiB  net out %dB  written %d  restored %d\n",
		o.Label, o.Verdict, o.Capabilities.Count(), rules, o.Resources.CPUSeconds, o.Resources.PeakMemory>>20,
		o.Resources.NetworkBytesUp, len(o.Written), len(o.Restored))
}

// writeEnvelope writes the declared envelope and what was outside it,
// when the skill declares one or a run left it.
func writeEnvelope(b *strings.Builder, e *Envelope) {
	if e == nil || len(e.Declared.From) == 0 && len(e.Outside) == 0 {
		return
	}
	fmt.Fprintf(b, "\nenvelope: %s\n", e.Declared.describe())
	for _, o := range e.Outside {
		if o.EveryRun {
			fmt.Fprintf(b, "  outside in every run: %s\n", o.What)
		} else {
			fmt.Fprintf(b, "  outside: %s (%s)\n", o.What, strings.Join(o.Runs, ", "))
		}
	}
}

// invariants is the report read by invariant class, as the reference's
// example reads: each class and what the runs showed of it.
func (r Report) invariants() [][2]string {
	var output, resources, effects []string
	count := "no chained cell"
	var triggers, quiet []string
	for _, c := range r.Cells {
		for _, v := range c.Varied {
			switch {
			case strings.HasPrefix(v, outputOfCall):
				output = append(output, c.name()+": "+v)
			case strings.HasPrefix(v, figureCPU) || strings.HasPrefix(v, figureNet) || strings.HasPrefix(v, figureMemory):
				resources = append(resources, c.name()+": "+v)
			default:
				effects = append(effects, c.name()+": "+v)
			}
		}
		if c.Deviation != nil && c.Kind != Varied {
			effects = append(effects, fmt.Sprintf("%s: run %d did something new (%s)", c.name(), c.Deviation.Run, c.Deviation.what()))
		}
		switch {
		case c.Kind == Chained && c.Verdict == Activation:
			count = c.Why
		case c.Kind == Chained && count == "no chained cell":
			count = fmt.Sprintf("held over %d chained runs", len(c.Observations))
		case c.Kind == Varied && (c.Deviation != nil || c.Suppression != nil):
			triggers = append(triggers, c.name()+": "+c.Why)
		case c.Kind == Varied:
			quiet = append(quiet, c.Condition)
		}
	}
	env := strings.Join(triggers, "; ")
	if len(quiet) > 0 {
		if env != "" {
			env += "; "
		}
		env += "held under " + strings.Join(quiet, ", ")
	}
	if env == "" {
		env = "no condition varied"
	}
	held := func(xs []string) string {
		if len(xs) == 0 {
			return "held"
		}
		return "differed: " + strings.Join(xs, "; ")
	}
	envelope := "nothing declared"
	if e := r.Envelope; e != nil && len(e.Declared.From) > 0 {
		envelope = "held"
		if len(e.Outside) > 0 {
			envelope = fmt.Sprintf("%d outside (below)", len(e.Outside))
		}
	}
	audit := "no log"
	if r.Audit != nil {
		audit = "signed checkpoint below (sandboxctl audit verify DIR)"
	}
	return [][2]string{
		{"output determinism", held(output)},
		{"resource usage", held(resources)},
		{"side effects", held(effects)},
		{"execution-count sensitivity", count},
		{"environmental triggers", env},
		{"constraint envelope", envelope},
		{"audit trail", audit},
	}
}
