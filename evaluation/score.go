package evaluation

import (
	"cmp"
	"slices"
	"time"

	"github.com/sandboxctl/sandboxctl/rules"
)

// SchemaVersion is the version of the evaluation JSON (schema/eval.schema.json).
const SchemaVersion = "1"

// Report is an evaluation: what ran, the figures and every skill's result.
// It is what `sandboxctl eval --json` writes.
type Report struct {
	SchemaVersion string    `json:"schema_version"`
	GeneratedAt   time.Time `json:"generated_at"`
	// Commit is the source revision of the sandboxctl that ran ("" unknown).
	Commit string `json:"commit,omitempty"`
	// Driver is the driver kind (literal, llm, replay), and Model the
	// model of the llm driver.
	Driver    string   `json:"driver"`
	Model     string   `json:"model,omitempty"`
	Manifests []string `json:"manifests"`
	// Sample is the --sample size (0: every skill) and Seed its seed.
	Sample     int      `json:"sample,omitempty"`
	Seed       string   `json:"seed,omitempty"`
	Parallel   int      `json:"parallel"`
	DurationMS int64    `json:"duration_ms"`
	Summary    Summary  `json:"summary"`
	Results    []Result `json:"results"`
}

// Summary holds the figures, overall, per corpus and per group (family or
// category) of each corpus, and the skills that disagree with their label.
type Summary struct {
	Overall       Tally          `json:"overall"`
	Corpora       []Named        `json:"corpora"`
	Groups        []Named        `json:"groups"`
	Disagreements []Disagreement `json:"disagreements"`
}

// Named is the Tally of one corpus, or of one group of a corpus.
type Named struct {
	Corpus string `json:"corpus"`
	// Group is the family or category; "" for a whole corpus.
	Group string `json:"group,omitempty"`
	Tally
}

// Tally counts verdicts against labels. Rates are nil when their
// denominator is zero.
type Tally struct {
	Skills    int `json:"skills"`
	Malicious int `json:"malicious"`
	Benign    int `json:"benign"`
	DualUse   int `json:"dual_use"`
	// Of the malicious skills: judged malicious, and judged malicious or
	// suspicious.
	CaughtMalicious int `json:"caught_malicious"`
	CaughtAny       int `json:"caught_any"`
	// Of the benign skills: judged malicious, and judged suspicious.
	FalseMalicious  int `json:"false_malicious"`
	FalseSuspicious int `json:"false_suspicious"`
	// Inconclusive counts skills of any label judged inconclusive, Failed
	// those whose trace gave no report (verdict "error").
	Inconclusive int `json:"inconclusive"`
	Failed       int `json:"failed"`
	// InconclusiveCauses counts the inconclusive skills by cause
	// (rules.Causes; "unknown" for a result recorded without one).
	InconclusiveCauses map[string]int `json:"inconclusive_causes,omitempty"`
	// DualUseVerdicts counts the verdicts of dual-use skills (not scored).
	DualUseVerdicts map[string]int `json:"dual_use_verdicts"`
	// Expected counts skills whose manifest states the verdict, ExpectMet
	// those that got one of the stated verdicts.
	Expected  int `json:"expected"`
	ExpectMet int `json:"expect_met"`

	RecallMalicious     *float64 `json:"recall_malicious"`
	RecallAny           *float64 `json:"recall_any"`
	FalseMaliciousRate  *float64 `json:"false_malicious_rate"`
	FalseSuspiciousRate *float64 `json:"false_suspicious_rate"`
	InconclusiveRate    *float64 `json:"inconclusive_rate"`
}

// CauseUnknown counts an inconclusive result recorded before reports gave
// their cause.
const CauseUnknown = "unknown"

// RunnableInconclusive is the share of inconclusive skills among those
// that gave the driver something to run: the skills inconclusive for
// rules.CauseNeedsModel are left out of both counts (they need a model
// driver, not a better sandbox). rate is nil when no skill is left.
func (t Tally) RunnableInconclusive() (rate *float64, n, d int) {
	m := t.InconclusiveCauses[rules.CauseNeedsModel]
	n, d = t.Inconclusive-m, t.Skills-m
	if d > 0 {
		f := float64(n) / float64(d)
		rate = &f
	}
	return rate, n, d
}

// Kinds of Disagreement, worst first.
const (
	KindFalseMalicious  = "false-malicious"  // benign judged malicious
	KindFalseSuspicious = "false-suspicious" // benign judged suspicious
	KindMissed          = "missed"           // malicious judged clean or inconclusive, or no report
	KindUnderJudged     = "suspicious-only"  // malicious judged suspicious
	KindUnexpected      = "unexpected"       // none of the above, but not the verdict the manifest expects
	KindFailed          = "failed"           // a benign or dual-use skill whose trace gave no report
)

var kindOrder = []string{KindFalseMalicious, KindFalseSuspicious, KindMissed, KindUnderJudged, KindUnexpected, KindFailed}

// Disagreement is a skill whose verdict disagrees with its label or its
// expected verdict, with the rules that decided.
type Disagreement struct {
	Kind     string          `json:"kind"`
	Corpus   string          `json:"corpus"`
	Slug     string          `json:"slug"`
	Label    string          `json:"label"`
	Group    string          `json:"group"`
	Verdict  string          `json:"verdict"`
	Expect   []rules.Verdict `json:"expect,omitempty"`
	Deciding []string        `json:"deciding"`
	Cause    string          `json:"cause,omitempty"`
	Error    string          `json:"error,omitempty"`
}

// Add counts one result.
func (t *Tally) Add(r Result) {
	t.Skills++
	v := rules.Verdict(r.Verdict)
	switch r.Label {
	case Malicious:
		t.Malicious++
		if v == rules.Malicious {
			t.CaughtMalicious++
		}
		if v == rules.Malicious || v == rules.Suspicious {
			t.CaughtAny++
		}
	case Benign:
		t.Benign++
		switch v {
		case rules.Malicious:
			t.FalseMalicious++
		case rules.Suspicious:
			t.FalseSuspicious++
		}
	case DualUse:
		t.DualUse++
		if t.DualUseVerdicts == nil {
			t.DualUseVerdicts = map[string]int{}
		}
		t.DualUseVerdicts[r.Verdict]++
	}
	switch {
	case v == rules.Inconclusive:
		t.Inconclusive++
		if t.InconclusiveCauses == nil {
			t.InconclusiveCauses = map[string]int{}
		}
		t.InconclusiveCauses[cmp.Or(r.Cause, CauseUnknown)]++
	case r.Verdict == VerdictError:
		t.Failed++
	}
	if len(r.Expect) > 0 {
		t.Expected++
		if slices.Contains(r.Expect, v) {
			t.ExpectMet++
		}
	}
	t.rates()
}

func (t *Tally) rates() {
	rate := func(n, d int) *float64 {
		if d == 0 {
			return nil
		}
		f := float64(n) / float64(d)
		return &f
	}
	t.RecallMalicious = rate(t.CaughtMalicious, t.Malicious)
	t.RecallAny = rate(t.CaughtAny, t.Malicious)
	t.FalseMaliciousRate = rate(t.FalseMalicious, t.Benign)
	t.FalseSuspiciousRate = rate(t.FalseSuspicious, t.Benign)
	t.InconclusiveRate = rate(t.Inconclusive, t.Skills)
}

// Disagrees returns how r disagrees with its label or expectation, or "".
// Dual-use skills disagree only with a stated expectation; a trace that
// gave no report is listed whatever the label.
func Disagrees(r Result) string {
	v := rules.Verdict(r.Verdict)
	switch {
	case r.Label == Benign && v == rules.Malicious:
		return KindFalseMalicious
	case r.Label == Benign && v == rules.Suspicious:
		return KindFalseSuspicious
	case r.Label == Malicious && v != rules.Malicious && v != rules.Suspicious:
		return KindMissed
	case r.Label == Malicious && v == rules.Suspicious && !slices.Contains(r.Expect, rules.Suspicious):
		return KindUnderJudged
	case len(r.Expect) > 0 && !slices.Contains(r.Expect, v):
		return KindUnexpected
	case r.Verdict == VerdictError:
		return KindFailed
	}
	return ""
}

// Summarize computes the figures of results.
func Summarize(results []Result) Summary {
	s := Summary{Corpora: []Named{}, Groups: []Named{}, Disagreements: []Disagreement{}}
	corpora := map[string]*Named{}
	groups := map[[2]string]*Named{}
	for _, r := range results {
		s.Overall.Add(r)
		c := corpora[r.Corpus]
		if c == nil {
			c = &Named{Corpus: r.Corpus}
			corpora[r.Corpus] = c
		}
		c.Add(r)
		k := [2]string{r.Corpus, r.Group}
		g := groups[k]
		if g == nil {
			g = &Named{Corpus: r.Corpus, Group: r.Group}
			groups[k] = g
		}
		g.Add(r)
		if kind := Disagrees(r); kind != "" {
			s.Disagreements = append(s.Disagreements, Disagreement{
				Kind: kind, Corpus: r.Corpus, Slug: r.Slug, Label: r.Label, Group: r.Group,
				Verdict: r.Verdict, Expect: r.Expect, Deciding: r.Deciding, Cause: r.Cause, Error: r.Error,
			})
		}
	}
	s.Overall.rates()
	for _, c := range corpora {
		s.Corpora = append(s.Corpora, *c)
	}
	for _, g := range groups {
		s.Groups = append(s.Groups, *g)
	}
	slices.SortFunc(s.Corpora, func(a, b Named) int { return cmp.Compare(a.Corpus, b.Corpus) })
	slices.SortFunc(s.Groups, func(a, b Named) int {
		return cmp.Or(cmp.Compare(a.Corpus, b.Corpus), cmp.Compare(a.Group, b.Group))
	})
	slices.SortStableFunc(s.Disagreements, func(a, b Disagreement) int {
		return cmp.Or(cmp.Compare(slices.Index(kindOrder, a.Kind), slices.Index(kindOrder, b.Kind)),
			cmp.Compare(a.Corpus, b.Corpus), cmp.Compare(a.Slug, b.Slug))
	})
	return s
}
