package traceplan

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/persona"
)

// Driver kinds.
const (
	DriverLiteral = "literal"
	DriverLLM     = "llm"
	DriverReplay  = "replay"
)

// Plan is everything one trace needs, as plain data: it is validated once,
// printed by --dry-run and recorded in the report.
type Plan struct {
	TraceID string `json:"trace_id"`
	// SkillPath is the skill file or folder on the host.
	SkillPath string `json:"skill_path"`
	Driver    Driver `json:"driver"`
	Prompt    string `json:"prompt,omitempty"`
	// SkillID is the skill's registry identity, as its caller names it
	// (serve's skill_id, a sweep's path in its source, trace --skill-id):
	// a fingerprint store keeps the skill's history under its name and
	// this. It changes nothing the trace does.
	SkillID string `json:"skill_id,omitempty"`
	Limits  Limits `json:"limits"`
	// Image is the sandbox image; "" builds or reuses the image of this
	// binary's embedded build context.
	Image string `json:"image,omitempty"`
	// User and Hostname of the seeded home; "" picks plausible ones.
	User     string `json:"user,omitempty"`
	Hostname string `json:"hostname,omitempty"`
	// TimeZone is the sandbox's time zone (an IANA name); "" picks a
	// plausible one (from Seed when it is set).
	TimeZone string `json:"time_zone,omitempty"`
	// Clock moves the sandbox's clock (docs/sandbox.md, "Fake clock"): an
	// offset (+3d, -2h, +1y), a time of day (03:00), a weekday (sat) or a
	// date (2027-01-01, 2027-01-01T03:00) in the sandbox's time zone; ""
	// is the real time.
	Clock string `json:"clock,omitempty"`
	// Monitoring is what the sandbox shows of being watched: "" (hidden:
	// no /.dockerenv, no security agent) or MonitoringVisible (the
	// engine's /.dockerenv stays, and security agents run in ps).
	Monitoring string `json:"monitoring,omitempty"`
	// DNS is how the jail's resolver answers: "" (as the internet would:
	// reserved and undelegated names do not resolve), DNSAll (every name
	// resolves, as a naive sandbox does) or DNSNone (no name resolves, as
	// on a machine with no network).
	DNS string `json:"dns,omitempty"`
	// Seed makes the seeded home deterministic; nil is random.
	Seed []byte `json:"-"`
	// Keep leaves the containers for debugging.
	Keep bool `json:"keep,omitempty"`
	// NetworkConfig is an optional netcapture rules file (DNS answers,
	// NXDOMAIN names, HTTP responses).
	NetworkConfig string `json:"network_config,omitempty"`
	// Persona is the system the sandbox passes for: "" or persona.Linux
	// (the image as built), persona.MacOS (a Mac's home and tools).
	Persona string `json:"persona,omitempty"`
	// Stealth says when the trace runs a second, unwatched pass without
	// the syscall tracer (docs/sandbox.md, "Stealth pass"): StealthAuto
	// ("") when the watched pass saw the skill read sandbox tells,
	// StealthAlways, or StealthOff.
	Stealth string `json:"stealth,omitempty"`
	// Unwatched runs this plan's tools without the syscall tracer, with
	// process sampling instead: set by orchestrator.Runner.Run for the
	// unwatched pass.
	Unwatched bool `json:"unwatched,omitempty"`
	// Twins says when the trace runs twin traces after it (docs/sandbox.md,
	// "Twin traces"): TwinsAuto ("") when credentials were read and then
	// data the detector could not read left, or a sink saw high-entropy
	// payloads; TwinsAlways; or TwinsOff.
	Twins string `json:"twins,omitempty"`
	// Twin is set by orchestrator.Runner.Run on the plans of twin traces:
	// which twin this is.
	Twin *TwinSpec `json:"twin,omitempty"`
	// Restore are files put into the seeded home and the temp folders at
	// setup, before the skill gets control, owned by the user: the state an
	// earlier trace left (sandboxctl monitor's chained runs). Paths are
	// absolute, under the home or /tmp, /var/tmp, /dev/shm; a restored file
	// replaces a planted one of the same path. A plan with files to
	// restore never takes a warm pair.
	Restore []RestoreFile `json:"restore,omitempty"`
}

// RestoreFile is one file of Plan.Restore.
type RestoreFile struct {
	Path    string `json:"path"`
	Mode    int64  `json:"mode"`
	Content []byte `json:"-"`
}

// Monitoring and DNS modes.
const (
	MonitoringHidden  = "hidden" // the same as ""
	MonitoringVisible = "visible"
	DNSAll            = "all"
	DNSNone           = "none"
)

// Stealth modes.
const (
	StealthAuto   = ""       // a second pass when tells were read
	StealthAlways = "always" // a second pass in every case (--stealth)
	StealthOff    = "off"    // one pass only
)

// Driver says who decides the tool calls.
type Driver struct {
	Kind     string `json:"kind"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	BaseURL  string `json:"base_url,omitempty"`
	// APIKey never reaches a report, a transcript, a log or an error.
	APIKey string `json:"-"`
	// Transcript is the file the replay driver replays.
	Transcript string `json:"transcript,omitempty"`
}

// Limits bound one trace.
type Limits struct {
	Timeout     time.Duration `json:"timeout_ns"`
	ToolTimeout time.Duration `json:"tool_timeout_ns"`
	Turns       int           `json:"turns"`
	Tokens      int           `json:"tokens"`
	OutputBytes int64         `json:"output_bytes"` // tool output kept per call and stream
	Memory      int64         `json:"memory_bytes"`
	PIDs        int64         `json:"pids"`
	NanoCPUs    int64         `json:"nano_cpus"`
	HomeSize    int64         `json:"home_bytes"` // tmpfs size of /home: caps what a skill can write
	TmpSize     int64         `json:"tmp_bytes"`
	// Grace is how long processes the skill left running are watched
	// after the driver's last call, before they are frozen and recorded
	// (0: no wait; they are still frozen and recorded). It never runs
	// past the trace's deadline.
	Grace time.Duration `json:"grace_ns"`
	// EventBytes caps the jail's event log and SpoolBytes the payloads it
	// keeps for scanning (both on the jail's disk); TimelineBytes caps the
	// events of the whole timeline held by the host. 0: the default.
	EventBytes    int64 `json:"event_bytes,omitempty"`
	SpoolBytes    int64 `json:"spool_bytes,omitempty"`
	TimelineBytes int64 `json:"timeline_bytes,omitempty"`
}

// Default budgets of the trace's evidence (see docs/sandbox.md, "What is
// bounded").
const (
	DefaultGrace         = 8 * time.Second
	DefaultEventBytes    = 64 << 20
	DefaultSpoolBytes    = 256 << 20
	DefaultTimelineBytes = 64 << 20
)

// DefaultLimits are the limits of a trace when the user sets none.
func DefaultLimits() Limits {
	return Limits{
		Timeout:       5 * time.Minute,
		ToolTimeout:   2 * time.Minute,
		Turns:         50,
		Tokens:        200_000,
		OutputBytes:   64 << 10,
		Memory:        2 << 30,
		PIDs:          512,
		NanoCPUs:      1_000_000_000,
		HomeSize:      512 << 20,
		TmpSize:       256 << 20,
		Grace:         DefaultGrace,
		EventBytes:    DefaultEventBytes,
		SpoolBytes:    DefaultSpoolBytes,
		TimelineBytes: DefaultTimelineBytes,
	}
}

var timeZoneRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}$`)

var traceIDRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{2,62}$`)

// Validate reports the first problem with p, in words for the user.
func (p Plan) Validate() error {
	switch {
	case p.SkillPath == "":
		return errors.New("no skill given")
	case !traceIDRe.MatchString(p.TraceID):
		return fmt.Errorf("trace id %q: want 3-63 lower-case letters, digits and dashes", p.TraceID)
	case p.Limits.Timeout <= 0:
		return fmt.Errorf("timeout must be positive, got %v", p.Limits.Timeout)
	case p.Limits.ToolTimeout <= 0:
		return fmt.Errorf("tool timeout must be positive, got %v", p.Limits.ToolTimeout)
	case p.Limits.Turns <= 0:
		return fmt.Errorf("turn budget must be positive, got %d", p.Limits.Turns)
	case p.Limits.Memory < 64<<20:
		return fmt.Errorf("memory limit %d bytes is below the 64 MiB a sandbox needs", p.Limits.Memory)
	case p.Limits.PIDs < 16:
		return fmt.Errorf("pids limit %d is below the 16 a sandbox needs", p.Limits.PIDs)
	case p.Limits.OutputBytes <= 0:
		return fmt.Errorf("output cap must be positive, got %d", p.Limits.OutputBytes)
	case p.Limits.Grace < 0:
		return fmt.Errorf("grace period cannot be negative, got %v", p.Limits.Grace)
	case p.Limits.EventBytes < 0 || p.Limits.SpoolBytes < 0 || p.Limits.TimelineBytes < 0:
		return errors.New("evidence budgets cannot be negative")
	case p.Limits.EventBytes > 0 && p.Limits.EventBytes < 1<<20 || p.Limits.TimelineBytes > 0 && p.Limits.TimelineBytes < 1<<20:
		return errors.New("event and timeline budgets below 1 MiB would drop ordinary evidence")
	}
	switch p.Stealth {
	case StealthAuto, StealthAlways, StealthOff:
	default:
		return fmt.Errorf("unknown stealth mode %q (want auto, always or off)", p.Stealth)
	}
	switch p.Twins {
	case TwinsAuto, TwinsAlways, TwinsOff:
	default:
		return fmt.Errorf("unknown twins mode %q (want auto, always or off)", p.Twins)
	}
	if p.TimeZone != "" && (!timeZoneRe.MatchString(p.TimeZone) || strings.Contains(p.TimeZone, "..")) {
		return fmt.Errorf("time zone %q: want an IANA name such as Asia/Tokyo", p.TimeZone)
	}
	if _, err := ClockOffset(p.Clock, time.Now(), nil); err != nil {
		return err
	}
	if p.Monitoring != "" && p.Monitoring != MonitoringHidden && p.Monitoring != MonitoringVisible {
		return fmt.Errorf("unknown monitoring mode %q (want hidden or visible)", p.Monitoring)
	}
	if p.DNS != "" && p.DNS != DNSAll && p.DNS != DNSNone {
		return fmt.Errorf("unknown dns mode %q (want all or none, or empty for the default)", p.DNS)
	}
	if err := persona.Check(p.Persona); err != nil {
		return err
	}
	switch p.Driver.Kind {
	case DriverLiteral:
	case DriverLLM:
		if p.Driver.Model == "" {
			return errors.New("the llm driver needs --model")
		}
	case DriverReplay:
		if p.Driver.Transcript == "" {
			return errors.New("the replay driver needs --transcript FILE")
		}
	default:
		return fmt.Errorf("unknown driver %q (want literal, llm or replay)", p.Driver.Kind)
	}
	return nil
}
