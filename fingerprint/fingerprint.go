package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sandboxctl/sandboxctl/rules"
)

func itoa(n int) string { return strconv.Itoa(n) }

// Capabilities are what a profile reduces to for comparison: one sorted
// set of keys per class. File keys are "OP PATH" (PATH may end in /*),
// network keys "SINK:HOST[:PORT]" (names, not addresses, when the jail
// gave one: its answers vary per trace), environment keys the variable's
// name, process keys the argument shape, output keys the pattern.
type Capabilities struct {
	Filesystem  []string `json:"filesystem"`
	Network     []string `json:"network"`
	Environment []string `json:"environment"`
	Processes   []string `json:"processes"`
	Outputs     []string `json:"outputs"`
}

// Capabilities returns the profile's capability set.
func (p Profile) Capabilities() Capabilities {
	c := Capabilities{Filesystem: []string{}, Network: []string{}, Environment: []string{}, Processes: []string{}, Outputs: []string{}}
	for _, f := range p.Filesystem {
		c.Filesystem = append(c.Filesystem, f.Op+" "+f.Path)
	}
	for _, t := range p.Network {
		c.Network = append(c.Network, t.key())
	}
	for _, e := range p.Environment {
		c.Environment = append(c.Environment, e.Name)
	}
	for _, x := range p.Processes {
		c.Processes = append(c.Processes, x.Shape)
	}
	for _, o := range p.Outputs {
		c.Outputs = append(c.Outputs, o.Pattern)
	}
	return c.normal()
}

// normal sorts and deduplicates every class, with empty classes as [].
func (c Capabilities) normal() Capabilities {
	n := func(s []string) []string {
		s = slices.Clone(s)
		slices.Sort(s)
		s = slices.Compact(s)
		if s == nil {
			s = []string{}
		}
		return s
	}
	return Capabilities{n(c.Filesystem), n(c.Network), n(c.Environment), n(c.Processes), n(c.Outputs)}
}

// Union is c with every capability of o added.
func (c Capabilities) Union(o Capabilities) Capabilities {
	return Capabilities{append(slices.Clone(c.Filesystem), o.Filesystem...), append(slices.Clone(c.Network), o.Network...),
		append(slices.Clone(c.Environment), o.Environment...), append(slices.Clone(c.Processes), o.Processes...),
		append(slices.Clone(c.Outputs), o.Outputs...)}.normal()
}

// Count is the number of capabilities.
func (c Capabilities) Count() int {
	return len(c.Filesystem) + len(c.Network) + len(c.Environment) + len(c.Processes) + len(c.Outputs)
}

// Hash is the capability hash: the hex SHA-256 (256 bits) of the
// canonical encoding, the JSON of the normalised sets in class order.
func (c Capabilities) Hash() string {
	b, err := json.Marshal(c.normal())
	if err != nil {
		panic(err) // strings only
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Diff lists, per class, what o has that c does not hold (patterns in c
// cover the literal paths they match).
func (c Capabilities) Diff(o Capabilities) Capabilities {
	return Capabilities{missing(c.Filesystem, o.Filesystem, true), missing(c.Network, o.Network, false),
		missing(c.Environment, o.Environment, false), missing(c.Processes, o.Processes, false),
		missing(c.Outputs, o.Outputs, false)}.normal()
}

func missing(base, x []string, patterns bool) []string {
	var out []string
	for _, k := range x {
		if !covered(base, k, patterns) {
			out = append(out, k)
		}
	}
	return out
}

func covered(base []string, k string, patterns bool) bool {
	if slices.Contains(base, k) {
		return true
	}
	if !patterns {
		return false
	}
	op, p, _ := strings.Cut(k, " ")
	for _, b := range base {
		bop, bp, _ := strings.Cut(b, " ")
		if bop != op || !strings.HasSuffix(bp, "/*") {
			continue
		}
		dir := strings.TrimSuffix(bp, "/*")
		// FOLDER/* holds FOLDER's entries (and, for the collapsed system
		// reads, everything below).
		if path.Dir(p) == dir || strings.HasPrefix(p, dir+"/") && strings.HasPrefix(p, "/") {
			return true
		}
	}
	return false
}

// Anomaly types (the seed's names).
const (
	NewFilesystemOp     = "new_filesystem_op"
	NewNetworkTarget    = "new_network_target"
	NewEnvAccess        = "new_env_access"
	NewProcessExec      = "new_process_exec"
	NewOutputPattern    = "new_output_pattern"
	CapabilityExpansion = "capability_expansion"
)

// RuleIDs maps each anomaly type to the rule id of its findings.
var RuleIDs = map[string]string{NewFilesystemOp: "SBX-FP-001", NewNetworkTarget: "SBX-FP-002",
	NewEnvAccess: "SBX-FP-003", NewProcessExec: "SBX-FP-004", NewOutputPattern: "SBX-FP-005",
	CapabilityExpansion: "SBX-FP-006"}

// An Anomaly is a capability the baseline does not hold.
type Anomaly struct {
	Type       string         `json:"type"`
	Severity   rules.Severity `json:"severity"`
	Capability string         `json:"capability"` // the key (Capabilities), or a summary for capability_expansion
	// Baseline says what it was compared with: "stable" (this version's
	// fingerprint) or "version:SHA256" (an earlier version's).
	Baseline string  `json:"baseline"`
	Evidence []int64 `json:"evidence"` // event numbers of the trace
	Message  string  `json:"message"`
}

var secretName = regexp.MustCompile(`(?i)(KEY|TOKEN|SECRET|PASS|CRED|AUTH|SESSION|PRIVATE|DATABASE_URL|DSN)`)

// Compare returns the anomalies of profile p against the baseline
// capabilities base; baseline names it (Anomaly.Baseline). Versions says
// the baseline is an earlier version's: any expansion is then also one
// capability_expansion anomaly.
func Compare(base Capabilities, p Profile, baseline string, versions bool) []Anomaly {
	var out []Anomaly
	add := func(typ string, sev rules.Severity, k string, seqs []int64, msg string) {
		out = append(out, Anomaly{Type: typ, Severity: sev, Capability: k, Baseline: baseline,
			Evidence: slices.Clone(seqs), Message: msg})
	}
	classes := 0
	n := len(out)
	for _, f := range p.Filesystem {
		k := f.Op + " " + f.Path
		if covered(base.Filesystem, k, true) {
			continue
		}
		sev := rules.Low
		if f.Class == ClassHomeSecret || sensitiveSystem.MatchString(f.Path) {
			sev = rules.Medium
		}
		add(NewFilesystemOp, sev, k, f.Seqs, fmt.Sprintf("%s of %s (%s) is new for this skill", f.Op, f.Path, f.Class))
	}
	classes += btoi(len(out) > n)
	n = len(out)
	for _, t := range p.Network {
		k := t.key()
		if slices.Contains(base.Network, k) {
			continue
		}
		add(NewNetworkTarget, rules.Medium, k, t.Seqs, fmt.Sprintf("%s is a new network target for this skill", k))
	}
	classes += btoi(len(out) > n)
	n = len(out)
	for _, e := range p.Environment {
		if slices.Contains(base.Environment, e.Name) {
			continue
		}
		sev := rules.Low
		if e.Name == "*" || secretName.MatchString(e.Name) || slices.Contains(e.How, "value") {
			sev = rules.Medium
		}
		add(NewEnvAccess, sev, e.Name, e.Seqs, fmt.Sprintf("environment variable %s (%s) is newly accessed", e.Name, strings.Join(e.How, ", ")))
	}
	classes += btoi(len(out) > n)
	n = len(out)
	for _, x := range p.Processes {
		if slices.Contains(base.Processes, x.Shape) {
			continue
		}
		add(NewProcessExec, rules.Low, x.Shape, x.Seqs, fmt.Sprintf("%s is a new program or argument shape for this skill", x.Shape))
	}
	classes += btoi(len(out) > n)
	n = len(out)
	for _, o := range p.Outputs {
		if slices.Contains(base.Outputs, o.Pattern) {
			continue
		}
		sev := rules.Low
		if o.Pattern == OutputExfiltration {
			sev = rules.High
		}
		add(NewOutputPattern, sev, o.Pattern, o.Seqs, fmt.Sprintf("output pattern %q is new for this skill", o.Pattern))
	}
	classes += btoi(len(out) > n)
	if len(out) > 0 && (versions || classes >= 2) {
		var seqs []int64
		for _, a := range out {
			if len(seqs) < MaxSeqs && len(a.Evidence) > 0 {
				seqs = append(seqs, a.Evidence[0])
			}
		}
		what := "this version"
		if !versions {
			what = "this run"
		}
		n := fmt.Sprintf("%d new %s in %d %s", len(out), plural(len(out), "capability", "capabilities"), classes, plural(classes, "class", "classes"))
		add(CapabilityExpansion, rules.Medium, n, seqs, fmt.Sprintf("%s adds %s over the baseline (%s)", what, n, baseline))
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// States of a fingerprint.
const (
	Learning = "learning"
	Stable   = "stable"
)

// Rule is the stability rule: a fingerprint becomes stable after at least
// Threshold invocations, the last Streak of them clean.
type Rule struct {
	Threshold int `json:"threshold"`
	Streak    int `json:"streak"`
}

// DefaultRule is the seed's: 10 invocations, 5 clean in a row.
var DefaultRule = Rule{Threshold: 10, Streak: 5}

// Key says which conditions a fingerprint's runs share: the skill's
// identity (its name and, where it has one, its registry identity), the
// driver and the environment cell. Where the skill was traced from (a
// folder, a temporary unpacking of an upload or an archive) is not part of
// it: the same skill from two folders shares one history.
type Key struct {
	Skill string `json:"skill"`
	// Identity is the skill's registry identity: publisher/name from a
	// mirror's layout, a sweep's skill ID within its source, the name a
	// serve caller gives, trace --skill-id; "" when there is none, and
	// the skill is known by its name alone (Identity).
	Identity string `json:"identity"`
	Driver   string `json:"driver"`
	Cell     string `json:"cell"`
}

// MaxIdentity bounds a registry identity (bytes).
const MaxIdentity = 200

// Identity checks and normalises a registry identity given by a caller:
// surrounding space and slashes trimmed; at most MaxIdentity bytes of
// printable characters, and no absolute path (an identity names a skill,
// not where it lies on disk).
func Identity(id string) (string, error) {
	id = strings.Trim(strings.TrimSpace(id), "/")
	switch {
	case len(id) > MaxIdentity:
		return "", fmt.Errorf("skill identity: over %d bytes", MaxIdentity)
	case strings.IndexFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f || r == utf8.RuneError }) >= 0:
		return "", errors.New("skill identity: a control character or an invalid byte")
	case strings.Contains("/"+id+"/", "/../") || strings.Contains("/"+id+"/", "/./"):
		return "", fmt.Errorf("skill identity %q: a path element that is . or .. (a name, not a path)", id)
	}
	return id, nil
}

// A Fingerprint is what the clean runs of one version of a skill did under
// one key.
type Fingerprint struct {
	Key
	Version      string       `json:"version"` // the skill's content hash (SHA-256)
	State        string       `json:"state"`   // learning or stable
	Invocations  int          `json:"invocations"`
	CleanStreak  int          `json:"clean_streak"`
	Absorbed     int          `json:"absorbed"` // runs whose capabilities are in the baseline
	FirstSeen    time.Time    `json:"first_seen"`
	LastSeen     time.Time    `json:"last_seen"`
	AcceptedAt   time.Time    `json:"accepted_at,omitzero"`
	Capabilities Capabilities `json:"capabilities"`
	Hash         string       `json:"capability_hash"`
}

// Run is one trace as the store sees it.
type Run struct {
	TraceID string    `json:"trace_id"`
	At      time.Time `json:"at"`
	// MaxSeverity is the worst finding of the trace, anomalies included
	// ("" none): from medium up the run is never absorbed.
	MaxSeverity rules.Severity `json:"max_severity,omitempty"`
	Profile     Profile        `json:"-"`
}

// Result is what one run did to a fingerprint: the report's fingerprint
// section.
type Result struct {
	State       string    `json:"state"`
	Invocations int       `json:"invocations"`
	CleanStreak int       `json:"clean_streak"`
	Absorbed    bool      `json:"absorbed"`
	Version     string    `json:"version"`
	Hash        string    `json:"capability_hash"` // of this run's capabilities
	Baseline    string    `json:"baseline,omitempty"`
	Anomalies   []Anomaly `json:"anomalies"`
}

// Baseline returns what a run of f's version is compared with: f's own
// capabilities once it is stable, else the last stable fingerprint of an
// earlier version (prev, may be nil); ok is false while there is neither.
func Baseline(f *Fingerprint, prev *Fingerprint) (caps Capabilities, name string, versions, ok bool) {
	if f != nil && f.State == Stable {
		return f.Capabilities, "stable", false, true
	}
	if prev != nil && prev.State == Stable {
		return prev.Capabilities, "version:" + prev.Version, true, true
	}
	return Capabilities{}, "", false, false
}

// Observe records run r in f (nil: the first run of this version; key and
// version name it) under rule, comparing it with the baseline (Baseline),
// and returns the updated fingerprint and the result. A run with a finding
// of medium or above, or with any anomaly, is counted but never absorbed:
// its capabilities stay out of the baseline and the clean streak restarts.
func Observe(f *Fingerprint, prev *Fingerprint, key Key, version string, r Run, rule Rule) (Fingerprint, Result) {
	var nf Fingerprint
	if f != nil {
		nf = *f
	} else {
		nf = Fingerprint{Key: key, Version: version, State: Learning, FirstSeen: r.At,
			Capabilities: Capabilities{}.normal()}
	}
	caps := r.Profile.Capabilities()
	res := Result{Version: version, Hash: caps.Hash(), Anomalies: []Anomaly{}}
	if base, name, versions, ok := Baseline(f, prev); ok {
		res.Baseline = name
		if as := Compare(base, r.Profile, name, versions); as != nil {
			res.Anomalies = as
		}
	}
	worst := r.MaxSeverity
	for _, a := range res.Anomalies {
		if a.Severity.Rank() > worst.Rank() {
			worst = a.Severity
		}
	}
	nf.Invocations++
	nf.LastSeen = r.At
	clean := worst.Rank() < rules.Medium.Rank() && len(res.Anomalies) == 0
	if clean {
		nf.CleanStreak++
		nf.Capabilities = nf.Capabilities.Union(caps)
		nf.Absorbed++
		res.Absorbed = true
	} else {
		nf.CleanStreak = 0
	}
	if nf.State != Stable && nf.Absorbed > 0 && nf.Invocations >= rule.Threshold && nf.CleanStreak >= rule.Streak {
		nf.State = Stable
	}
	nf.Hash = nf.Capabilities.Hash()
	res.State, res.Invocations, res.CleanStreak = nf.State, nf.Invocations, nf.CleanStreak
	return nf, res
}

// Accept approves f's baseline as it is plus caps (the capabilities of a
// run a person reviewed): it becomes stable at once.
func Accept(f Fingerprint, caps Capabilities, at time.Time) Fingerprint {
	f.Capabilities = f.Capabilities.Union(caps)
	f.Hash = f.Capabilities.Hash()
	f.State = Stable
	f.AcceptedAt = at
	f.CleanStreak = 0
	return f
}
