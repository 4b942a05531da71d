package reports

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/fingerprint"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/trace"
)

// SchemaVersion is the version of report.json's layout. A change that
// removes or renames a field bumps the major number.
const SchemaVersion = "1.4"

// Status says how a trace ended.
type Status string

// Statuses.
const (
	StatusCompleted Status = "completed"
	StatusTimeout   Status = "timeout"
	StatusError     Status = "error"
	StatusCancelled Status = "cancelled"
)

// A Report is everything known about one trace. report.json is its JSON.
type Report struct {
	SchemaVersion string        `json:"schema_version"`
	TraceID       string        `json:"trace_id"`
	Generator     Generator     `json:"generator"`
	Skill         SkillInfo     `json:"skill"`
	Driver        Driver        `json:"driver"`
	Prompt        string        `json:"prompt"`
	StartedAt     time.Time     `json:"started_at"`
	DurationMS    int64         `json:"duration_ms"`
	Status        Status        `json:"status"`
	Error         string        `json:"error,omitempty"`
	Verdict       rules.Verdict `json:"verdict"`
	Reasons       []string      `json:"verdict_reasons"` // why the verdict (docs/verdicts.md)
	// Cause says why an inconclusive trace is so, one of rules.Causes;
	// "" for any other verdict.
	Cause     string          `json:"verdict_cause,omitempty"`
	Coverage  rules.Coverage  `json:"coverage"` // which planned steps ran
	ToolCalls []ToolCall      `json:"tool_calls"`
	Sandbox   Sandbox         `json:"sandbox"`
	Events    []trace.Event   `json:"events"`
	Network   Network         `json:"network"`
	Canaries  Canaries        `json:"canaries"`
	Findings  []rules.Finding `json:"findings"`
	// Flows link reads of planted secrets to the processes that then sent
	// data out, from the syscall log (rules.Flows).
	Flows []rules.Flow `json:"flows,omitempty"`
	// Incidents group the findings by behaviour, worst first; Narrative
	// tells them in a few sentences (incidents.go).
	Incidents []Incident `json:"incidents"`
	Narrative string     `json:"narrative"`
	Summary   Summary    `json:"summary"`
	Analysis  Analysis   `json:"analysis"`
	// Passes describes the two passes of a trace run again without the
	// tracer (watched, then unwatched); nil for a single pass. Events,
	// network and canaries above are the watched pass's; the unwatched
	// pass's own report is in the run folder's Pass.Dir.
	Passes []Pass `json:"passes,omitempty"`
	// Twins is what the twin traces run after this trace compared
	// (twins.go); nil when none ran.
	Twins *Twins `json:"twins,omitempty"`
	// Profile is what the trace did by capability class, from its
	// evidence (fingerprint.Build over the watched pass's timeline).
	Profile fingerprint.Profile `json:"profile"`
	// Fingerprint is what the run did to the skill's stored fingerprint
	// (trace --store); nil without a store.
	Fingerprint *fingerprint.Result `json:"fingerprint,omitempty"`

	// secrets holds what reprocessing needs but reports must not show: the
	// canary set with values and the second-stage marker token. WriteRunDir
	// stores it in rules-input.json (0600).
	secrets *Secrets
	// raw is the unredacted timeline, written to events.jsonl.
	raw []trace.Event
}

// Generator names the program that wrote the report.
type Generator struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// SkillInfo describes the skill that ran.
type SkillInfo struct {
	Path         string         `json:"path"`
	Name         string         `json:"name"`
	Description  string         `json:"description,omitempty"`
	SHA256       string         `json:"sha256"`
	AllowedTools []string       `json:"allowed_tools,omitempty"`
	Files        []SkillFile    `json:"files"`
	Hidden       []skill.Hidden `json:"hidden,omitempty"`
}

// SkillFile is one file of the skill. Text holds the content of text files
// up to MaxSkillText bytes, so the report shows the lines findings point at
// and reprocessing sees what the rules saw.
type SkillFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Doc    bool   `json:"doc,omitempty"`
	Binary bool   `json:"binary,omitempty"`
	Text   string `json:"text,omitempty"`
}

// MaxSkillText caps the text kept per skill file.
const MaxSkillText = 256 << 10

// Driver is what decided the tool calls.
type Driver struct {
	Kind     string `json:"kind"` // "llm", "literal", "replay"
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// Notes are what the driver said of its plan: the code blocks it did
	// not run and why (examples of attacks, a shell the sandbox has not),
	// the bundled scripts it left alone.
	Notes []string `json:"notes,omitempty"`
}

// ToolCall is one tool call and its result.
type ToolCall struct {
	ID         string          `json:"id"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
	Result     ToolResult      `json:"result"`
	StartedAt  time.Time       `json:"started_at"`
	DurationMS int64           `json:"duration_ms"`
	SkillFile  string          `json:"skill_file,omitempty"`
	SkillLine  int             `json:"skill_line,omitempty"`
	Seq        int64           `json:"seq"`
}

// ToolResult is what a tool call returned.
type ToolResult struct {
	ExitCode  int    `json:"exit_code"`
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	Truncated bool   `json:"truncated"`
	IsError   bool   `json:"is_error,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Sandbox describes the container the skill ran in.
type Sandbox struct {
	Image    string `json:"image"`
	User     string `json:"user"`
	Hostname string `json:"hostname"`
	Home     string `json:"home,omitempty"`
	Limits   Limits `json:"limits"`
	// Persona is the system the sandbox passed for ("" is linux).
	Persona string `json:"persona,omitempty"`
}

// Limits are the trace's budgets.
type Limits struct {
	TimeoutMS   int64   `json:"timeout_ms,omitempty"`
	MemoryBytes int64   `json:"memory_bytes,omitempty"`
	PIDs        int64   `json:"pids,omitempty"`
	CPUs        float64 `json:"cpus,omitempty"`
	OutputBytes int64   `json:"output_bytes,omitempty"`
	Turns       int     `json:"turns,omitempty"`
	Tokens      int     `json:"tokens,omitempty"`
}

// Network summarises what the jail saw.
type Network struct {
	DNS         []DNSEntry  `json:"dns"`
	HTTP        []HTTPEntry `json:"http"`
	Connections []ConnEntry `json:"connections"`
}

// DNSEntry is one DNS query.
type DNSEntry struct {
	Seq     int64     `json:"seq"`
	Time    time.Time `json:"time"`
	Name    string    `json:"name"`
	QType   string    `json:"qtype"`
	Rcode   string    `json:"rcode,omitempty"`
	Answers []string  `json:"answers,omitempty"`
	Count   int       `json:"count,omitempty"`
}

// HTTPEntry is one HTTP request.
type HTTPEntry struct {
	Seq      int64     `json:"seq"`
	Time     time.Time `json:"time"`
	Method   string    `json:"method"`
	URL      string    `json:"url"`
	Status   int       `json:"status"`
	BodySize int64     `json:"body_size"`
	Response string    `json:"response,omitempty"`
	TLS      bool      `json:"tls"`
}

// ConnEntry is one raw connection or TLS hello.
type ConnEntry struct {
	Seq     int64     `json:"seq"`
	Time    time.Time `json:"time"`
	Proto   string    `json:"proto"` // "tcp", "udp", "tls"
	DstIP   string    `json:"dst_ip"`
	DstPort int       `json:"dst_port"`
	Name    string    `json:"name,omitempty"`
	Size    int64     `json:"size"`
}

// Canaries lists what was planted and where it was seen.
type Canaries struct {
	Planted []Planted `json:"planted"`
	Hits    []Hit     `json:"hits"`
}

// Planted is one planted token. Value is set only with
// Options.IncludeCanaryValues.
type Planted struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Location string `json:"location"`
	Value    string `json:"value,omitempty"`
}

// Hit is one sighting of a planted token.
type Hit struct {
	Seq      int64  `json:"seq"`
	TokenID  string `json:"token_id"`
	Kind     string `json:"kind"`
	Location string `json:"location"`
	Channel  string `json:"channel"`
	Encoding string `json:"encoding"`
	Where    string `json:"where"`
	EventSeq int64  `json:"event_seq"`
	Leaked   bool   `json:"leaked"` // seen leaving the sandbox (trace.LeftSandbox: mail included)
	// Pass is the pass of a two-pass trace the hit was seen in
	// (rules.PassWatched, rules.PassUnwatched; "" in a one-pass trace).
	// Seq and EventSeq of an unwatched hit number that pass's own
	// timeline (its folder, Pass.Dir), not this report's events.
	Pass string `json:"pass,omitempty"`
	// Spans are the events a token split across requests was reassembled
	// from (trace.CanaryHit.Spans).
	Spans []int64 `json:"spans,omitempty"`
}

// Summary is the report in a few numbers.
type Summary struct {
	TotalToolCalls int            `json:"total_tool_calls"`
	FindingCount   int            `json:"finding_count"`
	SeverityMax    string         `json:"severity_max"` // a severity, or "none"
	Clean          bool           `json:"clean"`
	BySeverity     map[string]int `json:"by_severity"`
	EventCount     int            `json:"event_count"`
	LeakedTokens   int            `json:"leaked_tokens"`
	IncidentCount  int            `json:"incident_count"`
	Exercised      bool           `json:"exercised"`
}

// Analysis records the inputs of the rules that are not secret, so that
// Reprocess evaluates exactly what the run evaluated.
type Analysis struct {
	SkillDir     string   `json:"skill_dir,omitempty"`
	Home         string   `json:"home,omitempty"`
	MarkerPath   string   `json:"marker_path,omitempty"`
	AllowedTools []string `json:"allowed_tools,omitempty"`
	// Repos are the home's git working trees with the number of files
	// each held outside .git when the trace started.
	Repos map[string]rules.Repo `json:"repositories,omitempty"`
	// Buckets are the S3 buckets the home declares as the user's own.
	Buckets []string `json:"buckets,omitempty"`
}

// Secrets are the rules' inputs a report must not show.
type Secrets struct {
	Canaries    *canary.Set `json:"canaries"`
	MarkerToken string      `json:"marker_token,omitempty"`
}

// Meta is what the orchestrator knows about a trace besides its events.
type Meta struct {
	TraceID   string
	Version   string // sandboxctl's version
	Skill     *skill.Skill
	Driver    Driver
	Prompt    string
	StartedAt time.Time
	Duration  time.Duration
	Status    Status
	Error     string
	Sandbox   Sandbox
	Canaries  *canary.Set
	// SkillDir is the skill's folder inside the sandbox; Home is the
	// sandbox user's home (default Sandbox.Home).
	SkillDir    string
	Home        string
	MarkerPath  string
	MarkerToken string
	// AllowedTools overrides the skill's allowed-tools when not nil.
	AllowedTools []string
	// Repos are the home's git working trees and their file counts.
	Repos map[string]rules.Repo
	// Buckets are the S3 buckets the home declares as the user's own.
	Buckets []string
}

// Options tune Build.
type Options struct {
	// IncludeCanaryValues puts the planted tokens' values in report.json
	// (never in text, SARIF or HTML).
	IncludeCanaryValues bool
	// Extra adds findings before the verdict (the user's rules:
	// userrules.Set.Extra); nil for the built-in rules only.
	Extra rules.Extra
}

// Input returns the rules input for meta and events.
func (m Meta) Input(events []trace.Event) rules.Input {
	return rules.Input{Events: events, Skill: m.Skill, Canaries: m.Canaries, SkillDir: m.SkillDir,
		Home: m.home(), MarkerPath: m.MarkerPath, MarkerToken: m.MarkerToken, AllowedTools: m.AllowedTools,
		Status: string(m.Status), Repos: m.Repos, Buckets: m.Buckets}
}

func (m Meta) home() string {
	if m.Home != "" {
		return m.Home
	}
	return m.Sandbox.Home
}

// Build assembles a report from meta data and the rules' result, whose
// Events is the timeline (canary hits included).
func Build(m Meta, res rules.Result, opt Options) *Report {
	r := &Report{
		SchemaVersion: SchemaVersion,
		TraceID:       m.TraceID,
		Generator:     Generator{Name: "sandboxctl", Version: m.Version},
		Driver:        m.Driver,
		Prompt:        m.Prompt,
		StartedAt:     m.StartedAt.UTC(),
		DurationMS:    m.Duration.Milliseconds(),
		Status:        m.Status,
		Error:         m.Error,
		Verdict:       res.Verdict,
		Reasons:       slices.Clone(res.Reasons),
		Cause:         res.Cause,
		Coverage:      res.Coverage,
		Flows:         res.Flows,
		Sandbox:       m.Sandbox,
		Events:        make([]trace.Event, 0, len(res.Events)),
		Findings:      slices.Clone(res.Findings),
		Analysis: Analysis{SkillDir: m.SkillDir, Home: m.home(), MarkerPath: m.MarkerPath, AllowedTools: m.AllowedTools, Repos: m.Repos,
			Buckets: m.Buckets},
		secrets: &Secrets{Canaries: m.Canaries, MarkerToken: m.MarkerToken},
		raw:     res.Events,
	}
	if r.Status == "" {
		r.Status = StatusCompleted
	}
	if r.Sandbox.Home == "" {
		r.Sandbox.Home = m.home()
	}
	var red *redactor
	if !opt.IncludeCanaryValues {
		red = newRedactor(m.Canaries)
	}
	for _, e := range res.Events {
		r.Events = append(r.Events, red.event(e))
	}
	if r.Findings == nil {
		r.Findings = []rules.Finding{}
	}
	if r.Reasons == nil {
		r.Reasons = []string{}
	}
	if r.Coverage.Steps == nil {
		r.Coverage.Steps = []rules.StepCoverage{}
	}
	rules.SortFindings(r.Findings)
	r.Skill = skillInfo(m.Skill)
	r.ToolCalls = []ToolCall{}
	r.Network = Network{DNS: []DNSEntry{}, HTTP: []HTTPEntry{}, Connections: []ConnEntry{}}
	r.Canaries = Canaries{Planted: []Planted{}, Hits: []Hit{}}
	for _, t := range m.Canaries.Tokens() {
		p := Planted{ID: t.ID, Kind: string(t.Kind), Location: t.Location}
		if opt.IncludeCanaryValues {
			p.Value = t.Value
		}
		r.Canaries.Planted = append(r.Canaries.Planted, p)
	}
	for _, e := range r.Events {
		switch d := e.Data.(type) {
		case *trace.ToolCall:
			r.ToolCalls = append(r.ToolCalls, ToolCall{ID: d.ID, Tool: d.Tool, Arguments: rawOrEmpty(d.Arguments),
				Result: ToolResult{ExitCode: d.ExitCode, Stdout: d.Stdout, Stderr: d.Stderr, Truncated: d.Truncated,
					IsError: d.IsError, Error: d.Error},
				StartedAt: d.Started.UTC(), DurationMS: d.Duration.Milliseconds(), SkillFile: d.SkillFile,
				SkillLine: d.SkillLine, Seq: e.Seq})
		case *trace.DNSQuery:
			r.Network.DNS = append(r.Network.DNS, DNSEntry{Seq: e.Seq, Time: e.Time, Name: d.Name, QType: d.QType,
				Rcode: d.Rcode, Answers: d.Answers, Count: e.Count})
		case *trace.HTTPExchange:
			r.Network.HTTP = append(r.Network.HTTP, HTTPEntry{Seq: e.Seq, Time: e.Time, Method: d.Method, URL: d.URL,
				Status: d.Status, BodySize: d.BodySize, Response: d.Response, TLS: d.TLS})
		case *trace.Connection:
			r.Network.Connections = append(r.Network.Connections, ConnEntry{Seq: e.Seq, Time: e.Time, Proto: d.Proto,
				DstIP: d.DstIP, DstPort: d.DstPort, Name: d.Name, Size: d.Size})
		case *trace.TLSHello:
			r.Network.Connections = append(r.Network.Connections, ConnEntry{Seq: e.Seq, Time: e.Time, Proto: "tls",
				DstIP: d.DstIP, DstPort: d.DstPort, Name: d.SNI})
		case *trace.CanaryHit:
			h := Hit{Seq: e.Seq, TokenID: d.TokenID, Kind: d.Kind, Location: d.Location, Channel: d.Channel,
				Encoding: d.Encoding, Where: d.Where, EventSeq: d.EventSeq, Leaked: trace.LeftSandbox(d.Channel), Spans: d.Spans}
			r.Canaries.Hits = append(r.Canaries.Hits, h)
		}
	}
	// The profile reads the redacted timeline: a planted value in a DNS
	// name or an argument never reaches it, nor the store.
	r.Profile = fingerprint.Build(m.Input(r.Events), r.Events)
	r.Summary = Summary{TotalToolCalls: len(r.ToolCalls), EventCount: len(r.Events), LeakedTokens: leakedTokens(r.Canaries.Hits), Exercised: res.Exercised}
	r.summarize()
	return r
}

// summarize fills the summary's figures that come from the findings and
// the verdict, and groups the findings into incidents.
func (r *Report) summarize() {
	if r.Verdict != rules.Inconclusive {
		r.Cause = ""
	}
	s := r.Summary
	s.FindingCount, s.SeverityMax, s.BySeverity = len(r.Findings), "none", map[string]int{}
	for _, sev := range rules.Severities {
		s.BySeverity[string(sev)] = 0
	}
	for _, f := range r.Findings {
		s.BySeverity[string(f.Severity)]++
		if s.SeverityMax == "none" || f.Severity.Rank() > rules.Severity(s.SeverityMax).Rank() {
			s.SeverityMax = string(f.Severity)
		}
	}
	s.Clean = r.Verdict == rules.Clean
	r.Incidents = Incidents(r)
	s.IncidentCount = len(r.Incidents)
	r.Summary = s
	r.Narrative = Narrative(r, r.Incidents)
}

// leakedTokens counts the tokens hits saw leaving the sandbox: each token
// once per pass (each pass plants its own). Summary.LeakedTokens, the text
// and the HTML read this one count.
func leakedTokens(hits []Hit) int {
	seen := map[[2]string]bool{}
	for _, h := range hits {
		if h.Leaked {
			seen[[2]string{h.Pass, h.TokenID}] = true
		}
	}
	return len(seen)
}

func rawOrEmpty(b json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 || !json.Valid(b) {
		return json.RawMessage("{}")
	}
	return b
}

func skillInfo(s *skill.Skill) SkillInfo {
	if s == nil {
		return SkillInfo{Files: []SkillFile{}}
	}
	si := SkillInfo{Path: s.Path, Name: s.Name, Description: s.Description, SHA256: s.SHA256,
		AllowedTools: s.AllowedTools, Hidden: s.Hidden, Files: []SkillFile{}}
	for _, f := range s.Files {
		sf := SkillFile{Path: f.Path, Size: f.Size, SHA256: f.SHA256, Doc: f.Doc, Binary: f.Binary}
		if !f.Binary && len(f.Content) <= MaxSkillText && !bytes.ContainsRune(f.Content, 0) {
			sf.Text = string(f.Content)
		}
		si.Files = append(si.Files, sf)
	}
	return si
}

// skillFromInfo rebuilds the parts of a skill the rules use from a report.
func skillFromInfo(si SkillInfo) *skill.Skill {
	s := &skill.Skill{Path: si.Path, Name: si.Name, Description: si.Description, SHA256: si.SHA256,
		AllowedTools: si.AllowedTools, Hidden: si.Hidden}
	for _, f := range si.Files {
		s.Files = append(s.Files, skill.File{Path: f.Path, Size: f.Size, SHA256: f.SHA256, Doc: f.Doc,
			Binary: f.Binary, Content: []byte(f.Text)})
	}
	return s
}

// lines splits a skill file's text into lines.
func lines(text string) []string {
	if text == "" {
		return nil
	}
	ls := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range ls {
		ls[i] = strings.TrimSuffix(l, "\r")
	}
	return ls
}
