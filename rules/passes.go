package rules

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

// Two passes (docs/sandbox.md, "Stealth pass"): a skill that looks for the
// sandbox or its tracer may stay quiet while watched. The orchestrator then
// runs the same plan again with the syscall tracer off (the unwatched
// pass), where the evidence is the jail's sinks, the file diff, canary hits
// and process sampling. ComparePasses sets the two side by side: harm or
// destinations seen only unwatched are findings of their own, and
// CombineVerdict weighs both passes. Like every rule, this reads results
// and never runs anything.

// Pass names, as findings and reports carry them.
const (
	PassWatched   = "watched"   // under the syscall tracer
	PassUnwatched = "unwatched" // the tracer off
)

// tellRules are the rules whose findings show a skill looking for the
// sandbox or its tracer.
var tellRules = []string{"SBX-PROBE-001", "SBX-PROBE-002", "SBX-PROBE-003", "SBX-PROBE-004"}

// Tells returns the ids of the rules among fs that show the skill reading
// sandbox tells (the container, the tracer, the environment's freshness,
// the resolver, proxy variables), sorted and without repeats: the evidence
// on which a second, unwatched pass is run.
func Tells(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		if !slices.Contains(tellRules, f.RuleID) || slices.Contains(out, f.RuleID) {
			continue
		}
		// The freshness and proxy checks are also words in commands
		// ("sandbox", "uptime"): only a file actually opened (/proc/uptime,
		// the resolver's configuration) is a tell worth a second pass.
		if f.RuleID == "SBX-PROBE-003" && !slices.ContainsFunc(f.Evidence, func(e Evidence) bool { return e.Type == trace.TypeOpen }) {
			continue
		}
		{
			out = append(out, f.RuleID)
		}
	}
	slices.Sort(out)
	return out
}

func evadeRules() {
	// Both are decided by ComparePasses, on two passes' results: a single
	// timeline never shows them, so their matchers find nothing.
	def(Rule{ID: "SBX-EVADE-001", Family: "defense-evasion", Title: "Behaves differently when watched",
		Severity: High, Confidence: ConfHigh, Technique: "T1497",
		Help: "The unwatched pass (the same plan, the syscall tracer off) showed harm the watched pass did " +
			"not: a planted secret leaving, code fetched and run, persistence, a shell. The skill held back " +
			"while it could see the tracer. The finding carries the harm class of what it did unwatched, so " +
			"evasion with harm is malicious (docs/verdicts.md)."},
		func(c *ctx, r *Rule) {})
	def(Rule{ID: "SBX-EVADE-002", Family: "defense-evasion", Title: "Contacts other destinations when unwatched",
		Severity: Medium, Confidence: ConfMedium, Technique: "T1497",
		Help: "The unwatched pass reached network destinations (names, hosts, addresses) the watched pass " +
			"never contacted, with no harm shown: the skill's network behaviour depends on whether it is " +
			"traced."},
		func(c *ctx, r *Rule) {})
}

// PassResult is what ComparePasses reads of one pass: its findings and its
// timeline (canary hits included).
type PassResult struct {
	Findings []Finding
	Events   []trace.Event
}

// ComparePasses returns the findings of the comparison of a watched and an
// unwatched pass of the same plan: SBX-EVADE-001 for each harm class shown
// only unwatched, SBX-EVADE-002 for destinations reached only unwatched
// (when no harm already says more). Evidence sequence numbers are those of
// the unwatched pass's timeline, and the findings are marked with its name.
func ComparePasses(watched, unwatched PassResult) []Finding {
	var out []Finding
	had := map[Harm]bool{}
	// sameRule are the harm rules that fired watched at any rating: the same
	// behaviour rated higher unwatched, with no more than medium confidence,
	// is the same behaviour seen with less evidence (no tracer), not a
	// difference; content proven harmful only unwatched (high confidence)
	// still is one.
	sameRule := map[string]bool{}
	for _, f := range watched.Findings {
		if f.Harm != HarmNone && Suspect(f) {
			had[f.Harm] = true
		}
		if f.Harm != HarmNone {
			sameRule[f.RuleID] = true
		}
	}
	r1, _ := Lookup("SBX-EVADE-001")
	byHarm := map[Harm][]Finding{}
	for _, f := range unwatched.Findings {
		if sameRule[f.RuleID] && f.Confidence != ConfHigh {
			continue
		}
		if f.Harm != HarmNone && Suspect(f) && !had[f.Harm] {
			byHarm[f.Harm] = append(byHarm[f.Harm], f)
		}
	}
	for _, h := range Harms {
		fs := byHarm[h]
		if len(fs) == 0 {
			continue
		}
		f := Finding{RuleID: r1.ID, Title: r1.Title, Severity: r1.Severity, Confidence: r1.Confidence,
			Technique: r1.Technique, Harm: h, Pass: PassUnwatched}
		var ids []string
		for _, x := range fs {
			ids = append(ids, x.RuleID)
			if f.ToolCallID == "" {
				f.ToolCallID, f.SkillFile, f.SkillLine = x.ToolCallID, x.SkillFile, x.SkillLine
			}
			for _, ev := range x.Evidence {
				if len(f.Evidence) >= MaxEvidence {
					f.More++
				} else if !slices.ContainsFunc(f.Evidence, func(e Evidence) bool { return e.Seq == ev.Seq }) {
					f.Evidence = append(f.Evidence, ev)
				}
			}
		}
		f.Message = fmt.Sprintf("%s only when unwatched (%s): %s", h, strings.Join(uniq(ids), ", "), fs[0].Message)
		out = append(out, f)
	}
	if len(out) > 0 {
		return out
	}
	seen := destinations(watched.Events)
	var only []string
	var evs []Evidence
	more := 0
	for _, d := range orderedDestinations(unwatched.Events) {
		if seen[d.key] || slices.Contains(only, d.name) {
			continue
		}
		only = append(only, d.name)
		if len(evs) < MaxEvidence {
			evs = append(evs, Evidence{Seq: d.ev.Seq, Source: d.ev.Source, Type: d.ev.Type, ToolCallID: d.ev.ToolCallID,
				Summary: Summarize(*d.ev)})
		} else {
			more++
		}
	}
	if len(only) > 0 {
		r2, _ := Lookup("SBX-EVADE-002")
		out = append(out, Finding{RuleID: r2.ID, Title: r2.Title, Severity: r2.Severity, Confidence: r2.Confidence,
			Technique: r2.Technique, Pass: PassUnwatched, Evidence: evs, More: more,
			Message: "reached only when unwatched: " + capString(strings.Join(firstN(only, 5), ", "), 300)})
	}
	return out
}

type netDest struct {
	name string
	// key is what the passes compare: the name, or for an address of the
	// user's own network (a cluster's API server in the kubeconfig, a
	// database in .env) the class and the port: an address a step derives
	// from what it finds (a pod, a service the cluster lists) need not be
	// the same in both passes, though their homes are made from one seed.
	key string
	ev  *trace.Event
}

// orderedDestinations lists the network destinations of a timeline, in
// order: DNS names, HTTP hosts, and the names (or address:port) of raw
// connections and TLS hellos.
func orderedDestinations(events []trace.Event) []netDest {
	var out []netDest
	for i := range events {
		e := &events[i]
		name := ""
		switch d := e.Data.(type) {
		case *trace.DNSQuery:
			name = d.Name
		case *trace.HTTPExchange:
			name = d.Host
		case *trace.Connection:
			name = d.Name
			if name == "" {
				name = fmt.Sprintf("%s:%d", d.DstIP, d.DstPort)
			}
		case *trace.TLSHello:
			name = d.SNI
			if name == "" {
				name = fmt.Sprintf("%s:%d", d.DstIP, d.DstPort)
			}
		}
		if name = normalHost(name); name != "" {
			out = append(out, netDest{name: name, key: destKey(name), ev: e})
		}
	}
	return out
}

func destinations(events []trace.Event) map[string]bool {
	m := map[string]bool{}
	for _, d := range orderedDestinations(events) {
		m[d.key] = true
	}
	return m
}

// normalHost lower-cases a name and drops its final dot and a default
// port, so that the DNS name, the HTTP host and the SNI of one destination
// compare equal.
func normalHost(s string) string {
	s = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "."))
	for _, p := range []string{":80", ":443"} {
		if h, ok := strings.CutSuffix(s, p); ok && !strings.Contains(h, ":") {
			s = h
		}
	}
	return s
}

// CombineVerdict weighs both passes (docs/verdicts.md, "Two passes"): harm
// in any finding of either pass or of the comparison makes the trace
// malicious; otherwise the more severe of the two passes' verdicts holds,
// in the order malicious, suspicious, inconclusive, clean (an unwatched
// pass that saw too little keeps a clean watched pass from being clean),
// raised to suspicious by a suspect comparison finding. Reasons name the
// pass they come from.
func CombineVerdict(watched, unwatched Verdict, watchedWhy, unwatchedWhy []string, fs []Finding) (Verdict, []string) {
	var harm []string
	for _, f := range fs {
		if ProvesHarm(f) {
			harm = append(harm, fmt.Sprintf("%s (%s, %s): %s", f.RuleID, f.Harm, passOf(f), f.Title))
		}
	}
	if harm = uniq(harm); len(harm) > 0 {
		sort.SliceStable(harm, func(i, j int) bool {
			return strings.HasPrefix(harm[i], "SBX-EVADE") && !strings.HasPrefix(harm[j], "SBX-EVADE")
		})
		return Malicious, prefix("harm: ", harm)
	}
	rank := func(v Verdict) int {
		switch v {
		case Malicious:
			return 4
		case Suspicious:
			return 3
		case Inconclusive:
			return 2
		case Clean:
			return 1
		}
		return 0
	}
	v, why := watched, prefix(PassWatched+": ", watchedWhy)
	if rank(unwatched) > rank(v) {
		v, why = unwatched, prefix(PassUnwatched+": ", unwatchedWhy)
	}
	for _, f := range fs {
		if strings.HasPrefix(f.RuleID, "SBX-EVADE-") && Suspect(f) && rank(Suspicious) > rank(v) {
			v = Suspicious
			why = append([]string{fmt.Sprintf("finding: %s (%s): %s", f.RuleID, f.Severity, f.Title)}, why...)
		}
	}
	return v, why
}

func passOf(f Finding) string {
	if f.Pass == "" {
		return PassWatched
	}
	return f.Pass
}

// destKey is the key of a destination name (netDest.key): "private:PORT"
// for an address of a private network, the name otherwise.
func destKey(name string) string {
	host, port, err := net.SplitHostPort(name)
	if err != nil {
		host, port = name, ""
	}
	if a := net.ParseIP(strings.Trim(host, "[]")); a != nil && (a.IsPrivate() || cgnat.Contains(a)) {
		return "private:" + port
	}
	return name
}
