package sweep

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/skill"
)

// ManifestSchema is the JSON Schema of an export's manifest.json.
//
//go:embed schema/manifest.schema.json
var ManifestSchema []byte

// Names in an export.
const (
	ExportRoot   = "sandbox_verified"
	FileManifest = "manifest.json"
	FileOSV      = "osv.json"
	ExportSkill  = "skill"
)

// ManifestVersion is the version of manifest.json.
const ManifestVersion = "1.0"

// ExportOptions tune Export.
type ExportOptions struct {
	// Verdicts exported (empty: malicious only).
	Verdicts []string
	// Rules, when set, keeps only skills where one of these rules fired.
	Rules []string
	// MinConfidence keeps only skills with an incident (of the Rules,
	// when set) of at least this confidence ("": any).
	MinConfidence rules.Confidence
	// OSV also writes an OSV-style record per malicious skill.
	OSV bool
	// IncludeSecrets puts the planted token values in report.json. They
	// are fake, but they are the exact strings a detector would match:
	// off unless asked.
	IncludeSecrets bool
	Now            func() time.Time // nil: time.Now
}

// Exported is one exported example.
type Exported struct {
	Dir     string // the example's folder
	TraceID string
	SkillID string
}

// Manifest is an exported example's manifest.json.
type Manifest struct {
	SchemaVersion  string             `json:"schema_version"`
	TraceID        string             `json:"trace_id"`
	Skill          ManifestSkill      `json:"skill"`
	Verdict        string             `json:"verdict"`
	VerdictReasons []string           `json:"verdict_reasons"`
	RuleIDs        []string           `json:"rule_ids"`
	Deciding       []string           `json:"deciding_rule_ids"`
	Incidents      []ManifestIncident `json:"incidents"`
	Evidence       EvidenceSummary    `json:"evidence"`
	Sandboxctl     string             `json:"sandboxctl_version"`
	ImageDigest    string             `json:"image_digest"`
	ImageRef       string             `json:"image_ref,omitempty"`
	PlanHash       string             `json:"plan_hash"`
	Driver         string             `json:"driver"`
	Model          string             `json:"model,omitempty"`
	SweepID        string             `json:"sweep_id"`
	TracedAt       time.Time          `json:"traced_at"`
	ExportedAt     time.Time          `json:"exported_at"`
	// SecretsIncluded says report.json holds the planted values.
	SecretsIncluded bool `json:"secrets_included"`
}

// ManifestSkill identifies the exported skill.
type ManifestSkill struct {
	ID     string         `json:"id"`
	Name   string         `json:"name"`
	SHA256 string         `json:"sha256"`
	Source string         `json:"source"`
	Files  []ManifestFile `json:"files"`
}

// ManifestFile is one file of the skill, under skill/.
type ManifestFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// ManifestIncident is one incident of the report.
type ManifestIncident struct {
	ID          string   `json:"id"`
	Kind        string   `json:"kind"`
	Title       string   `json:"title"`
	Summary     string   `json:"summary"`
	Severity    string   `json:"severity"`
	Confidence  string   `json:"confidence"`
	Harm        string   `json:"harm,omitempty"`
	Destination string   `json:"destination,omitempty"`
	Channel     string   `json:"channel,omitempty"`
	Path        string   `json:"path,omitempty"`
	RuleIDs     []string `json:"rule_ids"`
	// TokenKinds are the kinds of planted secrets an exfiltration carried
	// (never their values).
	TokenKinds []string `json:"token_kinds,omitempty"`
}

// EvidenceSummary is the report's evidence in short.
type EvidenceSummary struct {
	Narrative     string `json:"narrative"`
	ToolCalls     int    `json:"tool_calls"`
	Events        int    `json:"events"`
	Findings      int    `json:"findings"`
	LeakedTokens  int    `json:"leaked_tokens"`
	SeverityMax   string `json:"severity_max"`
	DNSQueries    int    `json:"dns_queries"`
	HTTPRequests  int    `json:"http_requests"`
	Connections   int    `json:"connections"`
	CanaryHits    int    `json:"canary_hits"`
	Exercised     bool   `json:"exercised"`
	TraceStatus   string `json:"trace_status"`
	UnwatchedPass bool   `json:"unwatched_pass"`
}

// Export writes the sweep's examples that pass the filters to
// to/sandbox_verified/<trace id>/: the skill's files under skill/,
// report.json, manifest.json and, with OSV, osv.json. An example already
// exported is written again. A skill whose files changed since the sweep
// (its digest differs) is not exported: its files would not be the ones
// judged.
func Export(ctx context.Context, sweepDir, to string, opt ExportOptions) ([]Exported, error) {
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	verdicts := opt.Verdicts
	if len(verdicts) == 0 {
		verdicts = []string{string(rules.Malicious)}
	}
	f, err := os.Open(filepath.Join(sweepDir, FileResults))
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	res, err := ReadResults(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	var sum Summary
	if b, err := os.ReadFile(filepath.Join(sweepDir, FileSummary)); err == nil {
		jsonUnmarshal(b, &sum)
	}
	var out []Exported
	var errs []error
	seen := map[string]bool{}
	for _, r := range res {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if r.Status != StatusDone || !slices.Contains(verdicts, r.Verdict) || !passes(r, opt) || seen[r.Key] {
			continue
		}
		seen[r.Key] = true
		ex, err := exportOne(sweepDir, to, r, sum.Run, opt, now().UTC())
		if err != nil {
			errs = append(errs, fmt.Errorf("export %s: %w", r.Skill.ID, err))
			continue
		}
		out = append(out, ex)
	}
	return out, errors.Join(errs...)
}

// passes applies the rule and confidence filters.
func passes(r Result, opt ExportOptions) bool {
	if len(opt.Rules) > 0 && !slices.ContainsFunc(r.Rules, func(id string) bool { return slices.Contains(opt.Rules, id) }) {
		return false
	}
	if opt.MinConfidence == "" {
		return true
	}
	for _, in := range r.Incidents {
		if len(opt.Rules) > 0 && !slices.ContainsFunc(in.RuleIDs, func(id string) bool { return slices.Contains(opt.Rules, id) }) {
			continue
		}
		if rules.Confidence(in.Confidence).Rank() >= opt.MinConfidence.Rank() {
			return true
		}
	}
	return false
}

func exportOne(sweepDir, to string, r Result, run RunInfo, opt ExportOptions, now time.Time) (Exported, error) {
	runDir := filepath.Join(sweepDir, r.RunDir)
	rep, err := reports.Load(runDir)
	if err != nil {
		return Exported{}, err
	}
	if !traceIDRe.MatchString(rep.TraceID) {
		return Exported{}, fmt.Errorf("report %s: bad trace id %q", runDir, rep.TraceID)
	}
	skillPath := HostPath(sweepDir, r.Skill.Path)
	sk, err := skill.Load(skillPath, skill.Options{})
	if err != nil {
		return Exported{}, fmt.Errorf("skill files: %w", err)
	}
	if sk.SHA256 != r.Skill.SHA256 {
		return Exported{}, fmt.Errorf("skill files at %s changed since the sweep (sha256 %.12s, judged %.12s)", skillPath, sk.SHA256, r.Skill.SHA256)
	}
	dest := filepath.Join(to, ExportRoot, rep.TraceID)
	if err := os.RemoveAll(dest); err != nil {
		return Exported{}, err
	}
	m := Manifest{
		SchemaVersion: ManifestVersion, TraceID: rep.TraceID,
		Skill:   ManifestSkill{ID: r.Skill.ID, Name: r.Skill.Name, SHA256: r.Skill.SHA256, Source: r.Skill.Source, Files: []ManifestFile{}},
		Verdict: string(rep.Verdict), VerdictReasons: nonNil(rep.Reasons), RuleIDs: nonNil(r.Rules), Deciding: nonNil(r.Deciding),
		Incidents:  []ManifestIncident{},
		Sandboxctl: rep.Generator.Version, ImageDigest: run.Image, ImageRef: rep.Sandbox.Image, PlanHash: run.PlanHash,
		Driver: rep.Driver.Kind, Model: rep.Driver.Model, SweepID: run.ID, TracedAt: rep.StartedAt.UTC(), ExportedAt: now,
		SecretsIncluded: opt.IncludeSecrets,
		Evidence: EvidenceSummary{
			Narrative: rep.Narrative, ToolCalls: rep.Summary.TotalToolCalls, Events: rep.Summary.EventCount,
			Findings: rep.Summary.FindingCount, LeakedTokens: rep.Summary.LeakedTokens, SeverityMax: rep.Summary.SeverityMax,
			DNSQueries: len(rep.Network.DNS), HTTPRequests: len(rep.Network.HTTP), Connections: len(rep.Network.Connections),
			CanaryHits: len(rep.Canaries.Hits), Exercised: rep.Summary.Exercised, TraceStatus: string(rep.Status),
			UnwatchedPass: len(rep.Passes) > 1,
		},
	}
	if m.ImageDigest == "" {
		m.ImageDigest = r.Image
	}
	for _, f := range sk.Files {
		p := filepath.Join(dest, ExportSkill, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return Exported{}, err
		}
		// Never executable: an example is data.
		if err := os.WriteFile(p, f.Content, 0o644); err != nil {
			return Exported{}, err
		}
		m.Skill.Files = append(m.Skill.Files, ManifestFile{Path: f.Path, SHA256: f.SHA256, Size: f.Size})
	}
	for _, in := range rep.Incidents {
		mi := ManifestIncident{ID: in.ID, Kind: string(in.Kind), Title: in.Title, Summary: in.Summary,
			Severity: string(in.Severity), Confidence: string(in.Confidence), Harm: string(in.Harm),
			Destination: in.Destination, Channel: in.Channel, Path: in.Path, RuleIDs: nonNil(in.RuleIDs)}
		for _, t := range in.Tokens {
			if !slices.Contains(mi.TokenKinds, t.Kind) {
				mi.TokenKinds = append(mi.TokenKinds, t.Kind)
			}
		}
		m.Incidents = append(m.Incidents, mi)
	}
	if opt.IncludeSecrets {
		if set := rep.Meta().Canaries; set != nil {
			vals := map[string]string{}
			for _, t := range set.Tokens() {
				vals[t.ID] = t.Value
			}
			for i := range rep.Canaries.Planted {
				rep.Canaries.Planted[i].Value = vals[rep.Canaries.Planted[i].ID]
			}
		}
	}
	if err := writeAtomic(filepath.Join(dest, reports.FileJSON), func(w io.Writer) error { return reports.WriteJSON(w, rep) }); err != nil {
		return Exported{}, err
	}
	if err := writeAtomic(filepath.Join(dest, FileManifest), func(w io.Writer) error { return writeJSON(w, m) }); err != nil {
		return Exported{}, err
	}
	if opt.OSV && rep.Verdict == rules.Malicious {
		if err := writeAtomic(filepath.Join(dest, FileOSV), func(w io.Writer) error { return writeJSON(w, OSVRecord(m)) }); err != nil {
			return Exported{}, err
		}
	}
	return Exported{Dir: dest, TraceID: rep.TraceID, SkillID: r.Skill.ID}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// OSV is an OSV-format record (schema 1.6) of a malicious skill, after the
// records of ossf/malicious-packages: the skill is the "package", its
// content digest the version, and the origin names the sweep that
// confirmed it.
type OSV struct {
	SchemaVersion    string         `json:"schema_version"`
	ID               string         `json:"id"`
	Modified         string         `json:"modified"`
	Published        string         `json:"published"`
	Summary          string         `json:"summary"`
	Details          string         `json:"details"`
	Affected         []OSVAffected  `json:"affected"`
	DatabaseSpecific map[string]any `json:"database_specific"`
}

// OSVAffected is the affected skill.
type OSVAffected struct {
	Package          OSVPackage     `json:"package"`
	Versions         []string       `json:"versions"`
	DatabaseSpecific map[string]any `json:"database_specific"`
}

// OSVPackage names the skill.
type OSVPackage struct {
	Ecosystem string `json:"ecosystem"`
	Name      string `json:"name"`
}

// OSVEcosystem is the ecosystem the records name: skills have no OSV
// ecosystem of their own yet.
const OSVEcosystem = "AgentSkill"

// OSVRecord is the OSV record of an exported example.
func OSVRecord(m Manifest) OSV {
	var titles []string
	for _, in := range m.Incidents {
		titles = append(titles, in.Title)
	}
	ts := m.ExportedAt.UTC().Format(time.RFC3339)
	details := m.Evidence.Narrative
	if len(titles) > 0 {
		details += "\n\nIncidents: " + strings.Join(titles, "; ") + "."
	}
	return OSV{
		SchemaVersion: "1.6.0",
		ID:            "SBXV-" + strings.ToUpper(m.Skill.SHA256[:16]),
		Modified:      ts, Published: ts,
		Summary: "Malicious code in " + m.Skill.Name + " (agent skill)",
		Details: strings.TrimSpace(details),
		Affected: []OSVAffected{{
			Package:          OSVPackage{Ecosystem: OSVEcosystem, Name: m.Skill.ID},
			Versions:         []string{m.Skill.SHA256},
			DatabaseSpecific: map[string]any{"source": m.Skill.Source, "sha256": m.Skill.SHA256},
		}},
		DatabaseSpecific: map[string]any{
			"malicious-packages-origins": []map[string]any{{
				"source":             "sandboxctl",
				"sha256":             m.Skill.SHA256,
				"import_time":        ts,
				"trace_id":           m.TraceID,
				"rule_ids":           m.RuleIDs,
				"sandboxctl_version": m.Sandboxctl,
				"image_digest":       m.ImageDigest,
			}},
		},
	}
}
