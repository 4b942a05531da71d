package orchestrator

import (
	"context"
	"io"
	"time"
)

// LabelTrace is the label every Docker object sandboxctl creates carries,
// with the trace id as its value. gc removes by this label and nothing else.
const LabelTrace = "sandboxctl.trace"

// LabelRole tells the jail from the sandbox container of one trace.
const LabelRole = "sandboxctl.role"

// Container roles.
const (
	RoleJail    = "jail"
	RoleSandbox = "sandbox"
)

// Runtime creates containers and builds the image they run. orchestrator/docker
// implements it on a real engine; orchestrator/runtimetest fakes it.
type Runtime interface {
	// Create creates (but does not start) one container. The returned
	// Sandbox must be Removed by the caller on every path, even when a later
	// step fails.
	Create(ctx context.Context, spec Spec) (Sandbox, error)
	// EnsureImage makes sure the sandbox image exists, building it when its
	// inputs changed, and returns its reference. Progress lines go to
	// progress (nil: discarded).
	EnsureImage(ctx context.Context, progress io.Writer) (string, error)
	// AgentImage makes sure the agent image of spec exists (spec.From, or
	// the sandbox image when it is empty, with the host binary baked in
	// and the trace's lookups done once), building it when its inputs
	// changed, and returns its reference. It answers repeated calls with
	// the same inputs without asking the engine again.
	AgentImage(ctx context.Context, spec AgentImageSpec, progress io.Writer) (string, error)
	// GC removes every object labelled LabelTrace (any value, or only
	// traceID when it is not empty), and returns what it removed.
	GC(ctx context.Context, traceID string) ([]string, error)
}

// AgentImageSpec is the input of Runtime.AgentImage, as plain data.
type AgentImageSpec struct {
	// From is the image the agent image is built on; "" is the sandbox
	// image (EnsureImage).
	From string
	// Binary is the host path of the static sandboxctl binary baked in
	// at AgentBin.
	Binary string
	// UID and GIDs are the skill user's ids at trace time (primary group
	// first): the places they can write are listed at build time for the
	// root file-system scan.
	UID  int
	GIDs []int
}

// A Sandbox is one throwaway container. Remove is idempotent, is safe after
// a failed Start, and must be called with a live context: callers use a
// fresh bounded one so that Ctrl-C still cleans up.
type Sandbox interface {
	ID() string
	Start(ctx context.Context) error
	// Exec runs a process in the running container. Stdin may be nil. It
	// returns the exit code once the process ends and its output is copied,
	// or ctx's error.
	Exec(ctx context.Context, e ExecSpec) (exitCode int, err error)
	// CopyIn extracts the tar stream into dir inside the container.
	CopyIn(ctx context.Context, dir string, tar io.Reader) error
	// CopyOut streams path as a tar archive. Its contents are untrusted.
	CopyOut(ctx context.Context, path string) (io.ReadCloser, error)
	// Logs follows the main process's stdout and stderr until it ends or
	// ctx ends.
	Logs(ctx context.Context, stdout, stderr io.Writer) error
	// Diff is the container's file-system diff against its image, read on
	// the host side (the container cannot tamper with it).
	Diff(ctx context.Context) ([]Change, error)
	// Stats samples resource use now.
	Stats(ctx context.Context) (Stats, error)
	// State reports whether the main process runs, and how it ended.
	State(ctx context.Context) (State, error)
	Remove(ctx context.Context) error
}

// Spec is everything needed to create one container. It is plain data: it is
// printed, diffed in tests and recorded in the report.
type Spec struct {
	Name   string
	Role   string // RoleJail or RoleSandbox
	Image  string
	Labels map[string]string // always includes LabelTrace=<trace id>
	Cmd    []string
	Env    []string
	User   string // user of the main process ("" = image default)
	// Hostname is only valid when the container owns its network
	// namespace: Docker refuses it together with "container:" networking.
	Hostname string
	// NetworkMode is "none" or "container:<id of the jail>"; never "host"
	// and never a bridge: nothing may leave the machine.
	NetworkMode string
	CapAdd      []string
	CapDrop     []string
	// NoNewPrivileges sets the no-new-privileges security option.
	NoNewPrivileges bool
	Memory          int64 // bytes; 0 = no limit
	PIDs            int64 // 0 = no limit
	NanoCPUs        int64 // 1e9 = one CPU; 0 = no limit
	Tmpfs           map[string]string
	ReadOnlyRootfs  bool
	// Files are copied into the container after Create and before Start.
	Files []File
	// Sysctls are set in the container's namespaces (only for the owner of
	// the network namespace).
	Sysctls map[string]string
	// Seccomp is the container's seccomp profile in the JSON form Docker
	// takes; nil leaves the engine's default profile.
	Seccomp []byte
	// LogConfig is the engine's log driver for the main process's output.
	// Every container sets one (bounded), so the host's disk never depends
	// on the engine's defaults; evidence never travels through it.
	LogConfig LogConfig
}

// LogConfig is an engine log driver and its options ("json-file" with
// "max-size" and "max-file").
type LogConfig struct {
	Type   string
	Config map[string]string
}

// File is one file placed into a container before it starts.
type File struct {
	Path    string // absolute path inside the container
	Mode    int64  // permission bits; directories get 0o755 unless listed
	UID     int
	GID     int
	Content []byte
	// HostPath, when set, is read instead of Content (used for the host's
	// own sandboxctl binary).
	HostPath string
	Dir      bool
	ModTime  time.Time // zero: now
}

// ExecSpec is one process started with Sandbox.Exec.
type ExecSpec struct {
	Argv   []string
	User   string // "" = root
	Env    []string
	Dir    string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Change is one entry of a container's file-system diff.
type Change struct {
	Path string
	Kind string // "added", "modified", "deleted"
}

// Stats is one sample of a container's resource use.
type Stats struct {
	Memory     int64 // current usage, bytes
	MaxMemory  int64 // peak usage, bytes, when the engine reports it
	CPUSeconds float64
	PIDs       int64
}

// State is a container's main process state.
type State struct {
	Running   bool
	ExitCode  int
	OOMKilled bool
	Error     string
}
