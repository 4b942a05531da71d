package rules

import (
	"fmt"
	"strings"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Severity ranks how bad a finding is.
type Severity string

// Severities, worst first.
const (
	Critical Severity = "critical"
	High     Severity = "high"
	Medium   Severity = "medium"
	Low      Severity = "low"
	Info     Severity = "info"
)

// Severities lists every severity, worst first.
var Severities = []Severity{Critical, High, Medium, Low, Info}

// Rank orders severities: critical 5 ... info 1, anything else 0.
func (s Severity) Rank() int {
	switch s {
	case Critical:
		return 5
	case High:
		return 4
	case Medium:
		return 3
	case Low:
		return 2
	case Info:
		return 1
	}
	return 0
}

// ParseSeverity reads a severity name, case-insensitively.
func ParseSeverity(s string) (Severity, error) {
	v := Severity(strings.ToLower(strings.TrimSpace(s)))
	if v.Rank() == 0 {
		return "", fmt.Errorf("unknown severity %q (want critical, high, medium, low or info)", s)
	}
	return v, nil
}

// Confidence says how sure a rule is that what it saw means what it says.
type Confidence string

// Confidences.
const (
	ConfHigh   Confidence = "high"
	ConfMedium Confidence = "medium"
	ConfLow    Confidence = "low"
)

// Rank orders confidences: high 3, medium 2, low 1, anything else 0.
func (c Confidence) Rank() int {
	switch c {
	case ConfHigh:
		return 3
	case ConfMedium:
		return 2
	case ConfLow:
		return 1
	}
	return 0
}

// Verdict is the one-word outcome of a trace.
type Verdict string

// Verdicts. See Verdict thresholds in docs/report.md and VerdictFor.
const (
	Malicious    Verdict = "malicious"
	Suspicious   Verdict = "suspicious"
	Clean        Verdict = "clean"
	Inconclusive Verdict = "inconclusive"
)

// Harm names the kind of harm a finding proves. Only a finding with a harm
// class can make a trace malicious (docs/verdicts.md); access, probes and
// reconnaissance have none.
type Harm string

// Harm classes (docs/verdicts.md).
const (
	HarmNone        Harm = ""
	HarmExfil       Harm = "exfiltration"        // a planted secret left the sandbox
	HarmRemoteCode  Harm = "remote-code"         // code from an untrusted destination ran
	HarmPersistence Harm = "persistence"         // something will run again later
	HarmRemoteShell Harm = "remote-shell"        // a reverse or bind shell
	HarmSafeguards  Harm = "safeguards-disabled" // the agent's own safeguards switched off
	HarmDestruction Harm = "destruction"         // the user's data destroyed
	HarmHarvest     Harm = "credential-harvest"  // the secrets of several credential stores handed to the agent
)

// Harms lists every harm class.
var Harms = []Harm{HarmExfil, HarmRemoteCode, HarmPersistence, HarmRemoteShell, HarmSafeguards, HarmDestruction, HarmHarvest}

// A Rule is the fixed description of one kind of finding. IDs are stable:
// "SBX-<FAMILY>-<NNN>"; a retired id is never reused.
type Rule struct {
	ID         string     `json:"id"`
	Title      string     `json:"title"`
	Family     string     `json:"family"`
	Severity   Severity   `json:"severity"`
	Confidence Confidence `json:"confidence"`
	// Technique is a MITRE ATT&CK technique id such as "T1552.001".
	Technique string `json:"technique"`
	Help      string `json:"help"`
	// Harm is the harm the rule's findings prove at most: a finding may
	// drop it (a vendor's installer ran), never add another. Empty for
	// rules about access, probes and reconnaissance. The one exception is
	// SBX-EVADE-001, decided across two passes (ComparePasses): its
	// findings carry the harm class of what the unwatched pass showed.
	Harm Harm `json:"harm,omitempty"`
	// After lists the rules whose findings this one reads: they run
	// first.
	After []string `json:"after,omitempty"`
	// Needs says what evidence the rule reads; Twins names benign
	// look-alikes it is tested not to fire on (or to rate low).
	Needs []string `json:"needs,omitempty"`
	Twins []string `json:"twins,omitempty"`
}

// Evidence is one event that supports a finding.
type Evidence struct {
	Seq        int64        `json:"seq"`
	Source     trace.Source `json:"source"`
	Type       trace.Type   `json:"type"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
	Summary    string       `json:"summary"`
}

// A Finding is one rule firing, with the events that prove it.
type Finding struct {
	RuleID     string     `json:"rule_id"`
	Title      string     `json:"title"`
	Severity   Severity   `json:"severity"`
	Confidence Confidence `json:"confidence"`
	Technique  string     `json:"technique"`
	// Harm is the harm this finding proves, "" for none (docs/verdicts.md).
	Harm       Harm   `json:"harm,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	// SkillFile and SkillLine locate the part of the skill that caused the
	// finding: the tool call's origin, or the line of hidden content.
	SkillFile string     `json:"skill_file,omitempty"`
	SkillLine int        `json:"skill_line,omitempty"`
	Evidence  []Evidence `json:"evidence"`
	Message   string     `json:"message"`
	// More counts evidence events left out of Evidence (capped).
	More int `json:"more_evidence,omitempty"`
	// Pass names the pass of a two-pass trace the finding comes from
	// (PassWatched, PassUnwatched), whose timeline its evidence numbers
	// refer to; "" in a single-pass trace.
	Pass string `json:"pass,omitempty"`
}

// Input is everything Evaluate looks at. Only Events is required.
type Input struct {
	Events   []trace.Event
	Skill    *skill.Skill
	Canaries *canary.Set
	// SkillDir is where the skill sits inside the sandbox (read-only there).
	SkillDir string
	// Home is the sandbox user's home directory ("/home/<user>").
	Home string
	// MarkerPath and MarkerToken identify the harmless second stage the
	// jail serves: the file it writes, and the token it prints and writes.
	MarkerPath  string
	MarkerToken string
	// AllowedTools overrides the skill's allowed-tools when not nil.
	AllowedTools []string
	// Status is the trace's status ("completed", "timeout", "error",
	// "cancelled"; "" is completed). A trace that did not complete is
	// inconclusive unless harm was already proven (docs/verdicts.md).
	Status string
	// Extra, when set, adds findings before the verdict (user rules).
	Extra Extra
	// Repos are the home's git working trees (absolute) with the number of
	// files each held outside .git when the trace started.
	Repos map[string]Repo
	// Buckets are the S3 buckets the home declares as the user's own (a
	// Terraform state backend): data the user's AWS credentials sign into
	// one of them stays the user's (ownservice.go).
	Buckets []string
}

// A Repo is a git working tree of the seeded home.
type Repo struct {
	Files int `json:"files"` // regular files outside .git at the start
}

// Result is what Evaluate found.
type Result struct {
	// Events is the input timeline plus the canary-hit events ScanCanaries
	// found that the input did not already hold, numbered after it.
	Events   []trace.Event `json:"-"`
	Findings []Finding     `json:"findings"`
	Verdict  Verdict       `json:"verdict"`
	// Reasons say why the verdict is what it is, most decisive first.
	Reasons []string `json:"verdict_reasons"`
	// Cause says why an inconclusive trace is so (cause.go); "" otherwise.
	Cause     string `json:"verdict_cause,omitempty"`
	Exercised bool   `json:"exercised"`
	// Coverage says which planned steps ran, failed or did not run.
	Coverage Coverage `json:"coverage"`
	// Flows link reads of planted secrets to the processes that then
	// sent data out (flows.go).
	Flows []Flow `json:"flows,omitempty"`
}
