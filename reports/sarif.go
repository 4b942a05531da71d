package reports

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/safetext"
)

// SARIF output policy: one run, one reportingDescriptor per rule id that has
// findings (sorted by id, with the rule's help text), one result per
// incident (Report.Incidents) so that code scanning shows one alert per
// behaviour: under the rule of its worst finding, at its first skill line
// (the skill's first instruction file when it has none), every finding's
// rule and line as a relatedLocation, the evidence and tokens (ids, never
// values) in its properties, and a partialFingerprint that depends only on
// the behaviour (kind, rule, destination or path), the skill and the
// location, so dashboards match the same incident across runs. Messages
// never hold a token value.

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool              sarifTool                 `json:"tool"`
	AutomationDetails *sarifAutomation          `json:"automationDetails,omitempty"`
	OriginalURIBase   map[string]sarifArtifactL `json:"originalUriBaseIds,omitempty"`
	Results           []sarifResult             `json:"results"`
	Invocations       []sarifInvocation         `json:"invocations"`
	Properties        map[string]any            `json:"properties,omitempty"`
}

type sarifAutomation struct {
	ID string `json:"id"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text     string `json:"text"`
	Markdown string `json:"markdown,omitempty"`
}

type sarifRule struct {
	ID                   string         `json:"id"`
	Name                 string         `json:"name"`
	ShortDescription     sarifText      `json:"shortDescription"`
	FullDescription      sarifText      `json:"fullDescription"`
	Help                 sarifText      `json:"help"`
	DefaultConfiguration sarifConfig    `json:"defaultConfiguration"`
	Properties           map[string]any `json:"properties"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             sarifText         `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	RelatedLocations    []sarifLocation   `json:"relatedLocations,omitempty"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Properties          map[string]any    `json:"properties"`
}

type sarifLocation struct {
	ID               int           `json:"id,omitempty"`
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
	Message          *sarifText    `json:"message,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifactL `json:"artifactLocation"`
	Region           *sarifRegion   `json:"region,omitempty"`
}

type sarifArtifactL struct {
	URI       string `json:"uri"`
	URIBaseID string `json:"uriBaseId,omitempty"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifInvocation struct {
	ExecutionSuccessful bool   `json:"executionSuccessful"`
	StartTimeUTC        string `json:"startTimeUtc,omitempty"`
	EndTimeUTC          string `json:"endTimeUtc,omitempty"`
}

// sarifLevel maps a severity to a SARIF level.
func sarifLevel(s rules.Severity) string {
	switch s {
	case rules.Critical, rules.High:
		return "error"
	case rules.Medium:
		return "warning"
	}
	return "note"
}

// securitySeverity is GitHub code scanning's numeric severity.
func securitySeverity(s rules.Severity) string {
	switch s {
	case rules.Critical:
		return "9.5"
	case rules.High:
		return "8.0"
	case rules.Medium:
		return "5.5"
	case rules.Low:
		return "3.0"
	}
	return "1.0"
}

// SkillRootBase is the uriBaseId SARIF locations are relative to: the
// skill's folder.
const SkillRootBase = "SKILLROOT"

// WriteSARIF writes the report as a SARIF 2.1.0 log: one result per
// incident, under the rule of its worst finding, located at its first
// skill line, with every finding as a related location and the evidence
// in its properties.
func WriteSARIF(w io.Writer, r *Report) error {
	var ids []string
	for _, f := range r.Findings {
		if !slices.Contains(ids, f.RuleID) {
			ids = append(ids, f.RuleID)
		}
	}
	slices.Sort(ids)
	index := map[string]int{}
	drv := sarifDriver{Name: "sandboxctl", Version: r.Generator.Version,
		InformationURI: "https://github.com/sandboxctl/sandboxctl", Rules: []sarifRule{}}
	for i, id := range ids {
		index[id] = i
		ru, ok := rules.Lookup(id)
		if !ok {
			// a report from another version: describe the rule from its finding
			for _, f := range r.Findings {
				if f.RuleID == id {
					ru = rules.Rule{ID: id, Title: f.Title, Severity: f.Severity, Confidence: f.Confidence,
						Technique: f.Technique, Help: f.Title}
					break
				}
			}
		}
		drv.Rules = append(drv.Rules, sarifRule{
			ID: id, Name: ruleName(ru.Title),
			ShortDescription:     sarifText{Text: ru.Title},
			FullDescription:      sarifText{Text: ru.Help},
			Help:                 sarifText{Text: ru.Help, Markdown: fmt.Sprintf("**%s** (%s, ATT&CK %s)\n\n%s", ru.Title, ru.Severity, ru.Technique, ru.Help)},
			DefaultConfiguration: sarifConfig{Level: sarifLevel(ru.Severity)},
			Properties: map[string]any{
				"tags":              []string{"security", ru.Family, "external/mitre-attack/" + ru.Technique},
				"security-severity": securitySeverity(ru.Severity),
				"precision":         precision(ru.Confidence),
				"problem.severity":  problemSeverity(ru.Severity),
			},
		})
	}
	defFile := primaryFile(r)
	run := sarifRun{Tool: sarifTool{Driver: drv}, Results: []sarifResult{},
		AutomationDetails: &sarifAutomation{ID: "sandboxctl/" + safeID(r.Skill.Name) + "/"},
		OriginalURIBase:   map[string]sarifArtifactL{SkillRootBase: {URI: skillRootURI(r)}},
		Invocations: []sarifInvocation{{ExecutionSuccessful: r.Status == StatusCompleted || r.Status == StatusTimeout,
			StartTimeUTC: r.StartedAt.UTC().Format("2006-01-02T15:04:05.000Z"),
			EndTimeUTC:   r.StartedAt.UTC().Add(msDuration(r.DurationMS)).Format("2006-01-02T15:04:05.000Z")}},
		Properties: map[string]any{"trace_id": r.TraceID, "verdict": string(r.Verdict), "status": string(r.Status)},
	}
	if run.OriginalURIBase[SkillRootBase].URI == "" {
		run.OriginalURIBase = nil
	}
	seen := map[string]int{}
	for _, in := range r.Incidents {
		if len(in.Findings) == 0 || len(in.RuleIDs) == 0 {
			continue
		}
		file, line := defFile, 0
		if len(in.Locations) > 0 {
			file, line = in.Locations[0].File, in.Locations[0].Line
		}
		loc := sarifLoc(file, line)
		// the fingerprint names the behaviour, not the run: kind, where it
		// went or what it wrote, skill and location
		key := fmt.Sprintf("%s|%s|%s|%s|%s|%s|%d", in.Kind, in.RuleIDs[0], in.Destination+in.Channel, in.Path, r.Skill.Name, file, line)
		seen[key]++
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s|%d", key, seen[key])))
		var related []sarifLocation
		type relKey struct {
			file, rule string
			line       int
		}
		relN := map[relKey]int{}
		var relOrder []relKey
		for _, i := range in.Findings {
			if i < 0 || i >= len(r.Findings) {
				continue
			}
			f := r.Findings[i]
			k := relKey{f.SkillFile, f.RuleID, f.SkillLine}
			if k.file == "" {
				k.file = defFile
			}
			if relN[k] == 0 {
				relOrder = append(relOrder, k)
			}
			relN[k]++
		}
		for j, k := range relOrder {
			l := sarifLoc(k.file, k.line)
			l.ID = j + 1
			title := k.rule
			if ru, ok := rules.Lookup(k.rule); ok {
				title += " " + ru.Title
			}
			if relN[k] > 1 {
				title += fmt.Sprintf(" (%d findings)", relN[k])
			}
			l.Message = &sarifText{Text: safetext.Line(title, safetext.DefaultMax)}
			related = append(related, l)
		}
		var evidence []map[string]any
		for _, e := range in.Evidence {
			evidence = append(evidence, map[string]any{"seq": e.Seq, "source": string(e.Source), "summary": e.Summary})
		}
		props := map[string]any{"incident": in.ID, "kind": string(in.Kind), "severity": string(in.Severity),
			"confidence": string(in.Confidence), "rule_ids": in.RuleIDs, "finding_count": len(in.Findings), "evidence": evidence}
		if in.Harm != "" {
			props["harm"] = string(in.Harm)
		}
		if len(in.ToolCallIDs) > 0 {
			props["tool_call_ids"] = in.ToolCallIDs
		}
		if in.Destination != "" {
			props["destination"] = in.Destination
		}
		if in.Path != "" {
			props["path"] = in.Path
		}
		if len(in.Tokens) > 0 {
			var toks []string
			for _, t := range in.Tokens {
				toks = append(toks, t.TokenID+" ("+t.Planted+")")
			}
			props["tokens"] = toks
		}
		run.Results = append(run.Results, sarifResult{RuleID: in.RuleIDs[0], RuleIndex: index[in.RuleIDs[0]],
			Level: sarifLevel(in.Severity), Message: sarifText{Text: safetext.Line(in.Title+": "+in.Summary, safetext.DefaultMax)},
			Locations: []sarifLocation{loc}, RelatedLocations: related,
			PartialFingerprints: map[string]string{"sandboxctlIncident/v1": hex.EncodeToString(sum[:16])},
			Properties:          props})
	}
	log := sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}}
	// Viewers show the strings as they are: no raw control, bidi or
	// invisible character may remain in them (safetext.JSONWriter).
	sw := safetext.NewJSONWriter(w)
	enc := json.NewEncoder(sw)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(log); err != nil {
		return fmt.Errorf("write sarif: %w", err)
	}
	if err := sw.Flush(); err != nil {
		return fmt.Errorf("write sarif: %w", err)
	}
	return nil
}

func precision(c rules.Confidence) string {
	switch c {
	case rules.ConfHigh:
		return "high"
	case rules.ConfMedium:
		return "medium"
	}
	return "low"
}

func problemSeverity(s rules.Severity) string {
	switch s {
	case rules.Critical, rules.High:
		return "error"
	case rules.Medium:
		return "warning"
	}
	return "recommendation"
}

// ruleName turns a title into a PascalCase name.
func ruleName(title string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(title, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

func safeID(s string) string {
	if s == "" {
		return "skill"
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '-'
	}, s)
}

// primaryFile is where findings without a line are placed: SKILL.md, else
// the first instruction file, else the first file.
func primaryFile(r *Report) string {
	for _, f := range r.Skill.Files {
		if f.Path == "SKILL.md" {
			return f.Path
		}
	}
	for _, f := range r.Skill.Files {
		if f.Doc {
			return f.Path
		}
	}
	if len(r.Skill.Files) > 0 {
		return r.Skill.Files[0].Path
	}
	return "SKILL.md"
}

// skillRootURI is the skill folder as a file URI with a trailing slash, or
// "" when the report has no absolute path.
func skillRootURI(r *Report) string {
	p := r.Skill.Path
	if !strings.HasPrefix(p, "/") {
		return ""
	}
	if strings.HasSuffix(strings.ToLower(p), ".md") {
		p = p[:strings.LastIndex(p, "/")+1]
	}
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

func sarifLoc(file string, line int) sarifLocation {
	loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifactL{URI: file, URIBaseID: SkillRootBase}}}
	if line > 0 {
		loc.PhysicalLocation.Region = &sarifRegion{StartLine: line}
	}
	return loc
}
