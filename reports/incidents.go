package reports

import (
	"cmp"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"

	"golang.org/x/net/publicsuffix"

	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Incidents group a report's findings by behaviour, so that one POST
// carrying sixteen planted secrets reads as one exfiltration and not as
// thirty-five cards. The grouping is presentation: it never changes a
// finding, a severity or the verdict.
//
// Each finding gets a kind (incidentKinds, by rule id) and a key: the
// destination and channel for exfiltration, remote code and shells, the
// file for persistence and safeguards, the tool call for the rest. Then
// findings that are steps of a harm incident join it (absorb): a token
// copied into a command line joins the exfiltration that sent it, a
// credential file read (or the environment dumped) joins the exfiltration
// of a token planted there, contact with a host joins the harm incident
// that went to that host.

// IncidentKind names a behaviour.
type IncidentKind string

// Incident kinds.
const (
	KindExfiltration IncidentKind = "exfiltration"
	KindRemoteCode   IncidentKind = "remote-code" // a dropper chain: download to execution
	KindPersistence  IncidentKind = "persistence"
	KindShell        IncidentKind = "remote-shell"
	KindSafeguards   IncidentKind = "safeguards-disabled"
	KindDestruction  IncidentKind = "destruction"
	KindPrivilege    IncidentKind = "privilege"
	KindCredentials  IncidentKind = "credential-access"
	KindNetwork      IncidentKind = "network"
	KindEvasion      IncidentKind = "evasion"
	KindRecon        IncidentKind = "reconnaissance"
	KindPackages     IncidentKind = "packages"
	KindHidden       IncidentKind = "hidden-content"
	KindResources    IncidentKind = "resources"
	KindOther        IncidentKind = "other"
)

// groupBy says what makes two findings of a kind the same behaviour.
type groupBy int

const (
	byToolCall    groupBy = iota // the tool call (and rule family)
	byDestination                // the destination host and channel
	byPath                       // the file written
	byRule                       // the rule, whatever the call
)

// incidentKinds maps rule ids (an exact id or a family prefix ending in
// "-") to a kind and a grouping. The first match wins.
var incidentKinds = []struct {
	match string
	kind  IncidentKind
	by    groupBy
}{
	{"SBX-EXFIL-", KindExfiltration, byDestination},
	{"SBX-EXEC-", KindRemoteCode, byDestination},
	{"SBX-REMOTE-", KindRemoteCode, byDestination},
	{"SBX-PKG-004", KindRemoteCode, byDestination},
	{"SBX-PKG-", KindPackages, byRule},
	{"SBX-SHELL-", KindShell, byDestination},
	{"SBX-PERSIST-", KindPersistence, byPath},
	{"SBX-AGENT-", KindSafeguards, byPath},
	{"SBX-DESTROY-", KindDestruction, byToolCall},
	{"SBX-PRIV-", KindPrivilege, byToolCall},
	{"SBX-CRED-", KindCredentials, byToolCall},
	{"SBX-ENV-", KindCredentials, byToolCall},
	{"SBX-TRACER-002", KindCredentials, byToolCall},
	{"SBX-NET-", KindNetwork, byDestination},
	{"SBX-PROBE-", KindEvasion, byToolCall},
	{"SBX-EVADE-", KindEvasion, byRule},
	{"SBX-TRACER-", KindEvasion, byToolCall},
	{"SBX-SELF-", KindEvasion, byToolCall},
	{"SBX-RECON-", KindRecon, byToolCall},
	{"SBX-HIDDEN-", KindHidden, byRule},
	{"SBX-BUDGET-", KindResources, byRule},
	{"SBX-RES-", KindResources, byRule},
}

// kindOf returns the kind and grouping of a rule id.
func kindOf(ruleID string) (IncidentKind, groupBy) {
	for _, k := range incidentKinds {
		if ruleID == k.match || strings.HasSuffix(k.match, "-") && strings.HasPrefix(ruleID, k.match) {
			return k.kind, k.by
		}
	}
	return KindOther, byRule
}

// harmKinds gives a finding of a rule not in incidentKinds (a user's rule)
// that proves harm the kind and grouping of that harm, so that it joins
// the incident of the same behaviour.
var harmKinds = map[rules.Harm]struct {
	kind IncidentKind
	by   groupBy
}{
	rules.HarmExfil:       {KindExfiltration, byDestination},
	rules.HarmRemoteCode:  {KindRemoteCode, byDestination},
	rules.HarmRemoteShell: {KindShell, byDestination},
	rules.HarmPersistence: {KindPersistence, byPath},
	rules.HarmSafeguards:  {KindSafeguards, byPath},
	rules.HarmDestruction: {KindDestruction, byToolCall},
	rules.HarmHarvest:     {KindCredentials, byRule},
}

// findingKind is kindOf for a finding.
func findingKind(f rules.Finding) (IncidentKind, groupBy) {
	kind, by := kindOf(f.RuleID)
	if hk, ok := harmKinds[f.Harm]; ok && kind == KindOther {
		return hk.kind, hk.by
	}
	return kind, by
}

// An Incident is one behaviour: the findings that describe it, its
// severity (the highest of theirs) and its evidence.
type Incident struct {
	ID         string           `json:"id"` // "I1", "I2"... in report order
	Kind       IncidentKind     `json:"kind"`
	Title      string           `json:"title"`
	Summary    string           `json:"summary"` // one sentence
	Severity   rules.Severity   `json:"severity"`
	Confidence rules.Confidence `json:"confidence"`
	Harm       rules.Harm       `json:"harm,omitempty"`
	// Destination is the host (or address) data went to or code came
	// from; Channel how (http, https, dns, tcp, udp, tls).
	Destination string `json:"destination,omitempty"`
	Channel     string `json:"channel,omitempty"`
	// ClaimedHost is the name the requests claimed (a Host header, a URL,
	// an SNI) when that is not where they went: the jail gave Destination
	// no such name.
	ClaimedHost string `json:"claimed_host,omitempty"`
	// Path is the file a persistence or configuration change wrote.
	Path string `json:"path,omitempty"`
	// Tokens are the planted secrets an exfiltration carried.
	Tokens []IncidentToken `json:"tokens,omitempty"`
	// RuleIDs are the rules of its findings, worst first; Findings their
	// indexes in report.json's findings[].
	RuleIDs     []string        `json:"rule_ids"`
	Findings    []int           `json:"findings"`
	ToolCallIDs []string        `json:"tool_call_ids,omitempty"`
	Locations   []SkillLocation `json:"locations,omitempty"`
	// Evidence is every event of its findings, once, in timeline order
	// (capped at MaxIncidentEvidence; More counts the rest).
	Evidence []rules.Evidence `json:"evidence"`
	More     int              `json:"more_evidence,omitempty"`
	Pass     string           `json:"pass,omitempty"`
}

// IncidentToken is one planted secret of an exfiltration.
type IncidentToken struct {
	TokenID   string   `json:"token_id"`
	Kind      string   `json:"kind"`
	Planted   string   `json:"planted"`   // where it was planted: a file, or env:NAME
	Encodings []string `json:"encodings"` // as it was seen leaving
}

// SkillLocation is a line of the skill.
type SkillLocation struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
}

// MaxIncidentEvidence caps the evidence kept per incident.
const MaxIncidentEvidence = 200

// groupState is an incident being built.
type groupState struct {
	inc      Incident
	findings []rules.Finding
	hosts    []string // registrable domains it went to
	seqs     map[int64]bool
}

// GroupIncidents groups findings over a timeline into incidents, as
// Incidents does for a report (home is the sandbox user's home): what the
// user's rules see before the report exists.
func GroupIncidents(events []trace.Event, findings []rules.Finding, home string) []Incident {
	return Incidents(&Report{Events: events, Findings: findings, Sandbox: Sandbox{Home: home}})
}

// Incidents groups the report's findings into incidents, worst first.
func Incidents(r *Report) []Incident {
	byseq := map[int64]trace.Event{}
	for _, e := range r.Events {
		byseq[e.Seq] = e
	}
	w := newWhereTo(r.Events)
	var groups []*groupState
	index := map[string]*groupState{}
	type pending struct {
		i int
		f rules.Finding
	}
	var secondary []pending
	for i, f := range r.Findings {
		if absorbable(f) {
			secondary = append(secondary, pending{i, f})
			continue
		}
		key, inc := w.incidentKey(f, byseq)
		g := index[key]
		if g == nil {
			g = &groupState{inc: inc, seqs: map[int64]bool{}}
			index[key] = g
			groups = append(groups, g)
		}
		g.add(i, f, byseq, w)
	}
	// Steps of a harm incident join it; what joins nothing is its own.
	for _, p := range secondary {
		if g := w.absorber(groups, p.f, byseq, r.Sandbox.Home); g != nil {
			g.add(p.i, p.f, byseq, w)
			continue
		}
		key, inc := w.incidentKey(p.f, byseq)
		g := index[key]
		if g == nil {
			g = &groupState{inc: inc, seqs: map[int64]bool{}}
			index[key] = g
			groups = append(groups, g)
		}
		g.add(p.i, p.f, byseq, w)
	}
	out := make([]Incident, 0, len(groups))
	for _, g := range groups {
		out = append(out, g.finish())
	}
	slices.SortStableFunc(out, func(a, b Incident) int {
		if c := cmp.Compare(b.Severity.Rank(), a.Severity.Rank()); c != 0 {
			return c
		}
		if c := cmp.Compare(b2i(b.Harm != ""), b2i(a.Harm != "")); c != 0 {
			return c
		}
		return cmp.Compare(firstSeq(a), firstSeq(b))
	})
	for i := range out {
		out[i].ID = fmt.Sprintf("I%d", i+1)
	}
	return out
}

func firstSeq(in Incident) int64 {
	if len(in.Evidence) == 0 {
		return 1 << 62
	}
	return in.Evidence[0].Seq
}

// absorbable reports a finding that is, when a harm incident explains it,
// a step of that incident rather than a behaviour of its own.
func absorbable(f rules.Finding) bool {
	switch {
	case f.RuleID == "SBX-EXFIL-002", f.RuleID == "SBX-EXFIL-003",
		f.RuleID == "SBX-EXFIL-004", f.RuleID == "SBX-EXFIL-005", f.RuleID == "SBX-EXFIL-006",
		f.RuleID == "SBX-CRED-001", f.RuleID == "SBX-ENV-001", f.RuleID == "SBX-TRACER-002",
		strings.HasPrefix(f.RuleID, "SBX-NET-"):
		return true
	}
	return false
}

// absorber returns the harm incident f is a step of, or nil.
func (w whereTo) absorber(groups []*groupState, f rules.Finding, byseq map[int64]trace.Event, home string) *groupState {
	if f.Pass == rules.PassUnwatched {
		return nil
	}
	toks := hitTokens(f, byseq)
	reads := readPaths(f, byseq, home)
	hosts := w.findingHosts(f, byseq)
	env := f.RuleID == "SBX-ENV-001" || f.RuleID == "SBX-EXFIL-005"
	for _, g := range groups {
		if g.inc.Harm == "" || g.inc.Pass != f.Pass {
			continue
		}
		for _, t := range g.inc.Tokens {
			if slices.Contains(toks, t.TokenID) || slices.Contains(reads, t.Planted) ||
				env && strings.HasPrefix(t.Planted, "env:") {
				return g
			}
		}
		for _, h := range hosts {
			if slices.Contains(g.hosts, h) {
				return g
			}
		}
	}
	return nil
}

// incidentKey returns the grouping key of f and the incident it opens.
func (w whereTo) incidentKey(f rules.Finding, byseq map[int64]trace.Event) (string, Incident) {
	kind, by := findingKind(f)
	family := f.RuleID
	if i := strings.LastIndexByte(family, '-'); i > 0 {
		family = family[:i]
	}
	inc := Incident{Kind: kind, Pass: f.Pass}
	if f.Pass == rules.PassUnwatched {
		// its evidence numbers are another timeline's
		by = byRule
	}
	var key string
	switch by {
	case byDestination:
		host, ch, claimed := w.destination(f, byseq)
		inc.Destination, inc.Channel, inc.ClaimedHost = host, ch, claimed
		if host == "" {
			key = "call|" + family + "|" + f.ToolCallID
		} else {
			key = "dest|" + string(kind) + "|" + registrableOf(host) + "|" + ch
		}
	case byPath:
		p := writtenPath(f, byseq)
		inc.Path = p
		if p == "" {
			key = "call|" + family + "|" + f.ToolCallID
		} else {
			key = "path|" + string(kind) + "|" + p
		}
	case byToolCall:
		key = "call|" + family + "|" + f.ToolCallID
	default:
		key = "rule|" + f.RuleID
	}
	return string(kind) + "|" + f.Pass + "|" + key, inc
}

func (g *groupState) add(i int, f rules.Finding, byseq map[int64]trace.Event, w whereTo) {
	in := &g.inc
	in.Findings = append(in.Findings, i)
	g.findings = append(g.findings, f)
	if f.Severity.Rank() > in.Severity.Rank() {
		in.Severity = f.Severity
	}
	if f.Confidence.Rank() > in.Confidence.Rank() {
		in.Confidence = f.Confidence
	}
	if in.Harm == "" && f.Harm != "" {
		in.Harm = f.Harm
	}
	if f.ToolCallID != "" && !slices.Contains(in.ToolCallIDs, f.ToolCallID) {
		in.ToolCallIDs = append(in.ToolCallIDs, f.ToolCallID)
	}
	if f.SkillFile != "" {
		loc := SkillLocation{File: f.SkillFile, Line: f.SkillLine}
		if !slices.Contains(in.Locations, loc) {
			in.Locations = append(in.Locations, loc)
		}
	}
	for _, e := range f.Evidence {
		if !g.seqs[e.Seq] {
			g.seqs[e.Seq] = true
			in.Evidence = append(in.Evidence, e)
		}
	}
	in.More += f.More
	if f.Pass == rules.PassUnwatched {
		return
	}
	if f.Harm != "" || in.Harm != "" {
		for _, h := range w.findingHosts(f, byseq) {
			if !slices.Contains(g.hosts, h) {
				g.hosts = append(g.hosts, h)
			}
		}
	}
	if f.RuleID == "SBX-EXFIL-001" {
		for _, e := range f.Evidence {
			ev, ok := byseq[e.Seq]
			if !ok {
				continue
			}
			h, ok := ev.Data.(*trace.CanaryHit)
			if !ok {
				continue
			}
			j := slices.IndexFunc(in.Tokens, func(t IncidentToken) bool { return t.TokenID == h.TokenID })
			if j < 0 {
				in.Tokens = append(in.Tokens, IncidentToken{TokenID: h.TokenID, Kind: h.Kind, Planted: h.Location})
				j = len(in.Tokens) - 1
			}
			if !slices.Contains(in.Tokens[j].Encodings, h.Encoding) {
				in.Tokens[j].Encodings = append(in.Tokens[j].Encodings, h.Encoding)
			}
		}
	}
}

// finish orders the incident's parts and writes its title and summary.
func (g *groupState) finish() Incident {
	in := g.inc
	slices.SortFunc(in.Evidence, func(a, b rules.Evidence) int { return cmp.Compare(a.Seq, b.Seq) })
	if len(in.Evidence) > MaxIncidentEvidence {
		in.More += len(in.Evidence) - MaxIncidentEvidence
		in.Evidence = in.Evidence[:MaxIncidentEvidence]
	}
	slices.SortFunc(in.Tokens, func(a, b IncidentToken) int {
		return cmp.Or(cmp.Compare(plantedOrder(a.Planted), plantedOrder(b.Planted)),
			cmp.Compare(a.Planted, b.Planted), cmp.Compare(a.TokenID, b.TokenID))
	})
	// rules worst first, then by id
	fs := slices.Clone(g.findings)
	slices.SortStableFunc(fs, func(a, b rules.Finding) int {
		return cmp.Or(cmp.Compare(b.Severity.Rank(), a.Severity.Rank()), cmp.Compare(a.RuleID, b.RuleID))
	})
	for _, f := range fs {
		if !slices.Contains(in.RuleIDs, f.RuleID) {
			in.RuleIDs = append(in.RuleIDs, f.RuleID)
		}
	}
	if in.Evidence == nil {
		in.Evidence = []rules.Evidence{}
	}
	in.Title, in.Summary = describe(in, fs[0])
	return in
}

// plantedOrder puts files before environment variables.
func plantedOrder(loc string) int {
	if strings.HasPrefix(loc, "env:") {
		return 1
	}
	return 0
}

// describe writes an incident's title and its one-sentence summary. top is
// its worst finding.
func describe(in Incident, top rules.Finding) (title, summary string) {
	where := ""
	if len(in.ToolCallIDs) > 0 {
		where = " in tool call " + strings.Join(in.ToolCallIDs, ", ")
	}
	if len(in.Locations) > 0 {
		where += " (" + locString(in.Locations[0]) + ")"
	}
	dest := in.Destination
	if in.ClaimedHost != "" && dest != "" {
		dest += " claiming " + in.ClaimedHost
	}
	if in.Channel != "" && dest != "" {
		dest += " over " + in.Channel
	}
	switch {
	case in.Kind == KindExfiltration && len(in.Tokens) > 0:
		title = fmt.Sprintf("%d planted secret%s sent to %s", len(in.Tokens), plural(len(in.Tokens)), orWord(dest, "the network"))
		verb := "were sent"
		if len(in.Tokens) == 1 {
			verb = "was sent"
		}
		summary = fmt.Sprintf("%s (%s) %s%s to %s%s.", capitalize(tokenCount(len(in.Tokens))), tokenOrigins(in.Tokens),
			verb, encodingList(in.Tokens), orWord(dest, "the network"), where)
	case in.Kind == KindRemoteCode && in.Destination != "":
		title = "Code from " + in.Destination + " executed"
		summary = fmt.Sprintf("Code fetched from %s was executed%s: %s.", dest, where, strings.ToLower(top.Title))
	case in.Kind == KindShell && in.Destination != "":
		title = "Remote shell to " + in.Destination
		summary = fmt.Sprintf("A shell was bound to a connection to %s%s.", dest, where)
	case in.Kind == KindPersistence && in.Path != "":
		title = "Persistence in " + in.Path
		summary = fmt.Sprintf("%s wrote %s%s: %s.", "The skill", in.Path, where, strings.ToLower(top.Title))
	case in.Kind == KindSafeguards && in.Path != "":
		title = "Agent safeguards disabled in " + in.Path
		summary = fmt.Sprintf("The skill wrote %s%s, switching the agent's safeguards off.", in.Path, where)
	case in.Kind == KindNetwork && in.Destination != "":
		title = top.Title + ": " + in.Destination
		summary = fmt.Sprintf("%s%s: %s.", top.Title, where, top.Message)
	default:
		title = top.Title
		summary = fmt.Sprintf("%s%s: %s.", top.Title, where, top.Message)
	}
	return title, strings.ReplaceAll(summary, "..", ".")
}

func locString(l SkillLocation) string {
	if l.Line > 0 {
		return fmt.Sprintf("%s:%d", l.File, l.Line)
	}
	return l.File
}

func orWord(s, w string) string {
	if s == "" {
		return w
	}
	return s
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func tokenCount(n int) string {
	if n == 1 {
		return "one planted secret"
	}
	return fmt.Sprintf("%d planted secrets", n)
}

// tokenOrigins says where tokens were planted: "2 from ~/.aws/credentials,
// 14 from environment variables".
func tokenOrigins(ts []IncidentToken) string {
	var order []string
	n := map[string]int{}
	for _, t := range ts {
		loc := t.Planted
		if strings.HasPrefix(loc, "env:") {
			loc = "environment variables"
		}
		if n[loc] == 0 {
			order = append(order, loc)
		}
		n[loc]++
	}
	if len(order) == 1 && (n[order[0]] == 1 || order[0] != "environment variables") {
		if n[order[0]] == 1 && order[0] == "environment variables" {
			return "from an environment variable"
		}
		return "from " + order[0]
	}
	var parts []string
	for _, loc := range order {
		name := loc
		if loc == "environment variables" && n[loc] == 1 {
			name = "an environment variable"
		}
		parts = append(parts, fmt.Sprintf("%d from %s", n[loc], name))
	}
	return strings.Join(parts, ", ")
}

// encodingList says how tokens were encoded: " (plain, base64)"-like, as
// " as plain and base64".
func encodingList(ts []IncidentToken) string {
	var encs []string
	for _, t := range ts {
		for _, e := range t.Encodings {
			if !slices.Contains(encs, e) {
				encs = append(encs, e)
			}
		}
	}
	slices.Sort(encs)
	switch len(encs) {
	case 0:
		return ""
	case 1:
		return " as " + encs[0]
	}
	return " as " + strings.Join(encs[:len(encs)-1], ", ") + " and " + encs[len(encs)-1]
}

// hitTokens returns the token ids of the canary hits among f's evidence.
func hitTokens(f rules.Finding, byseq map[int64]trace.Event) []string {
	var ids []string
	for _, e := range f.Evidence {
		if h, ok := byseq[e.Seq].Data.(*trace.CanaryHit); ok {
			ids = append(ids, h.TokenID)
		}
	}
	return ids
}

// readPaths returns the files f's evidence opened, as the planted
// locations name them (~/ for the home).
func readPaths(f rules.Finding, byseq map[int64]trace.Event, home string) []string {
	var ps []string
	for _, e := range f.Evidence {
		if d, ok := byseq[e.Seq].Data.(*trace.File); ok && d.Path != "" {
			p := path.Clean(d.Path)
			if home != "" && strings.HasPrefix(p, strings.TrimSuffix(home, "/")+"/") {
				p = "~/" + strings.TrimPrefix(p, strings.TrimSuffix(home, "/")+"/")
			}
			ps = append(ps, p)
		}
	}
	return ps
}

// writtenPath returns the first file f's evidence wrote or changed.
func writtenPath(f rules.Finding, byseq map[int64]trace.Event) string {
	for _, e := range f.Evidence {
		switch d := byseq[e.Seq].Data.(type) {
		case *trace.File:
			if d.NewPath != "" {
				return d.NewPath
			}
			if d.Path != "" {
				return d.Path
			}
		case *trace.FSChange:
			return d.Path
		}
	}
	return ""
}

// destination returns the host (or address) and channel f's evidence went
// to, and the name it claimed when that is not where it went: a leaked
// canary's, else the first network event's.
func (w whereTo) destination(f rules.Finding, byseq map[int64]trace.Event) (host, channel, claimed string) {
	for _, e := range f.Evidence {
		if h, ok := byseq[e.Seq].Data.(*trace.CanaryHit); ok && trace.LeftSandbox(h.Channel) {
			if ev, ok := byseq[h.EventSeq]; ok {
				if host, ch, cl := w.eventHost(ev); host != "" {
					if ch == "https" {
						return host, ch, cl
					}
					return host, h.Channel, cl
				}
			}
			return hostOf(h.Where), h.Channel, ""
		}
	}
	for _, e := range f.Evidence {
		if host, ch, cl := w.eventHost(byseq[e.Seq]); host != "" {
			return host, ch, cl
		}
	}
	return "", "", ""
}

// findingHosts returns the registrable domains (or addresses) of f's
// network evidence.
func (w whereTo) findingHosts(f rules.Finding, byseq map[int64]trace.Event) []string {
	var hs []string
	for _, e := range f.Evidence {
		ev := byseq[e.Seq]
		if h, ok := ev.Data.(*trace.CanaryHit); ok && trace.LeftSandbox(h.Channel) {
			ev = byseq[h.EventSeq]
		}
		if host, _, _ := w.eventHost(ev); host != "" && !slices.Contains(hs, registrableOf(host)) {
			hs = append(hs, registrableOf(host))
		}
	}
	return hs
}

// whereTo names where network events went, as the rules judge it
// (rules.Destinations): by the name the jail resolved to the address
// dialled, or by the address when the name an event claims (its Host
// header, URL or SNI) is not one the jail gave that address.
type whereTo struct{ d rules.Destinations }

func newWhereTo(events []trace.Event) whereTo { return whereTo{rules.NewDestinations(events)} }

// eventHost returns the host (or address) a network event went to, its
// channel, and the name it claimed when that is not where it went.
func (w whereTo) eventHost(e trace.Event) (host, channel, claimed string) {
	switch d := e.Data.(type) {
	case *trace.HTTPExchange:
		ch := "http"
		if d.TLS {
			ch = "https"
		}
		if dst := w.d.HTTP(d); dst.Addr != "" {
			return orWord(dst.Host, dst.Addr), ch, dst.Claimed
		}
		h := d.Host
		if h == "" {
			h = hostOf(d.URL)
		}
		if i := strings.LastIndexByte(h, ':'); i > 0 && !strings.Contains(h[i+1:], "]") && strings.Count(h, ":") == 1 {
			h = h[:i]
		}
		return strings.ToLower(h), ch, ""
	case *trace.TLSHello:
		if dst := w.d.Named(d.SNI, d.DstIP); dst.Addr != "" {
			if dst.Host != "" {
				return dst.Host, "tls", dst.Claimed
			}
			return fmt.Sprintf("%s:%d", d.DstIP, d.DstPort), "tls", dst.Claimed
		}
		if d.SNI != "" {
			return strings.ToLower(d.SNI), "tls", ""
		}
		return fmt.Sprintf("%s:%d", d.DstIP, d.DstPort), "tls", ""
	case *trace.Connection:
		if d.Name != "" {
			if dst := w.d.Named(strings.TrimSuffix(d.Name, "."), d.DstIP); dst.Addr == "" {
				return strings.ToLower(strings.TrimSuffix(d.Name, ".")), d.Proto, ""
			} else if dst.Host != "" {
				return dst.Host, d.Proto, dst.Claimed
			} else {
				return fmt.Sprintf("%s:%d", d.DstIP, d.DstPort), d.Proto, dst.Claimed
			}
		}
		return fmt.Sprintf("%s:%d", d.DstIP, d.DstPort), d.Proto, ""
	case *trace.DNSQuery:
		return registrableOf(strings.ToLower(strings.TrimSuffix(d.Name, "."))), "dns", ""
	case *trace.Mail:
		// The relay the message was handed to.
		if d.Name != "" {
			return strings.ToLower(strings.TrimSuffix(d.Name, ".")), trace.ChannelSMTP, ""
		}
		if d.DstIP != "" {
			return fmt.Sprintf("%s:%d", d.DstIP, d.DstPort), trace.ChannelSMTP, ""
		}
	}
	return "", "", ""
}

// hostOf returns the host of a URL, or s when it is not one.
func hostOf(s string) string {
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		return strings.ToLower(u.Hostname())
	}
	return strings.ToLower(strings.TrimSuffix(s, "."))
}

// registrableOf returns a host's registrable domain (eTLD+1); addresses
// and names without one are returned as they are.
func registrableOf(host string) string {
	if strings.ContainsAny(host, ":") || strings.Trim(host, "0123456789.") == "" {
		return host
	}
	if d, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil {
		return d
	}
	return host
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// maxNarrativeIncidents is how many incidents the narrative tells one by
// one; the rest are counted.
const maxNarrativeIncidents = 3

// Narrative tells what happened in two to five sentences, from the
// incidents and the verdict: what ran, the worst incidents (harm first),
// how many others, and why the verdict is what it is.
func Narrative(r *Report, incs []Incident) string {
	var s []string
	name := r.Skill.Name
	if name == "" {
		name = "the skill"
	}
	calls := fmt.Sprintf("%d tool call%s", len(r.ToolCalls), plural(len(r.ToolCalls)))
	switch {
	case len(incs) == 0 && r.Status != StatusCompleted && r.Status != "":
		s = append(s, fmt.Sprintf("The trace of %s ran %s and ended with status %s; the rules flagged nothing in what it recorded.", name, calls, r.Status))
	case len(incs) == 0:
		s = append(s, fmt.Sprintf("The trace of %s ran %s and nothing the rules flag happened.", name, calls))
	default:
		s = append(s, fmt.Sprintf("The trace of %s ran %s (status %s); its %d finding%s make %d incident%s.", name, calls,
			r.Status, len(r.Findings), plural(len(r.Findings)), len(incs), plural(len(incs))))
	}
	// at most five sentences: the opening, up to three incidents (two
	// when the rest need a sentence of their own) and the verdict
	tell := min(len(incs), maxNarrativeIncidents)
	if len(incs) > maxNarrativeIncidents {
		tell--
	}
	told := 0
	for _, in := range incs {
		if told == tell || in.Severity.Rank() < rules.Medium.Rank() && told > 0 {
			break
		}
		s = append(s, in.Summary)
		told++
	}
	if rest := len(incs) - told; rest > 0 {
		sev := incs[told].Severity
		s = append(s, fmt.Sprintf("%d other incident%s, %s at most: %s.", rest, plural(rest), sev, otherTitles(incs[told:], 3)))
	}
	why := "no reason recorded"
	if len(r.Reasons) > 0 {
		why = r.Reasons[0]
	}
	s = append(s, fmt.Sprintf("Verdict %s: %s.", r.Verdict, strings.TrimSuffix(why, ".")))
	return strings.Join(s, " ")
}

func otherTitles(incs []Incident, max int) string {
	var ts []string
	for i, in := range incs {
		if i == max {
			ts = append(ts, fmt.Sprintf("%d more", len(incs)-max))
			break
		}
		ts = append(ts, strings.ToLower(in.Title[:1])+in.Title[1:])
	}
	return strings.Join(ts, "; ")
}
