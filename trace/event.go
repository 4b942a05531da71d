package trace

import (
	"encoding/json"
	"fmt"
	"time"
)

// Source says which observer produced an event. The set is closed: the
// report's JSON Schema lists exactly these.
type Source string

// The sources of events.
const (
	SourceTool     Source = "tool"     // the agent's tool calls, as the MCP client saw them
	SourceSyscall  Source = "syscall"  // strace inside the sandbox
	SourceDNS      Source = "dns"      // the jail's DNS sink
	SourceHTTP     Source = "http"     // the jail's HTTP(S) sink
	SourceTCP      Source = "tcp"      // the jail's TCP catch-all
	SourceUDP      Source = "udp"      // the jail's UDP catch-all
	SourceTLS      Source = "tls"      // ClientHellos seen by the jail
	SourceFSDiff   Source = "fsdiff"   // the container's file-system diff, host side
	SourceCanary   Source = "canary"   // a planted token seen somewhere
	SourceResource Source = "resource" // resource figures of the sandbox
	SourceSample   Source = "sample"   // the sandbox's processes, listed periodically (the unwatched pass)
)

// Sources lists every Source, in the order reports present them.
var Sources = []Source{SourceTool, SourceSyscall, SourceDNS, SourceHTTP, SourceTCP,
	SourceUDP, SourceTLS, SourceFSDiff, SourceCanary, SourceResource, SourceSample}

// Type names what happened. Each Type has exactly one payload type (see
// NewData), so an event read back from JSON gets its typed Data again.
type Type string

// Event types. Syscall types are named after the syscall family they stand
// for (openat and open are both TypeOpen).
const (
	TypeToolCall   Type = "tool_call"   // *ToolCall: a call and its result
	TypeExec       Type = "exec"        // *Exec
	TypeOpen       Type = "open"        // *File
	TypeRead       Type = "read"        // *File
	TypeWrite      Type = "write"       // *File
	TypeUnlink     Type = "unlink"      // *File
	TypeRename     Type = "rename"      // *File (Path → NewPath)
	TypeChmod      Type = "chmod"       // *File
	TypeMkdir      Type = "mkdir"       // *File
	TypeConnect    Type = "connect"     // *Net
	TypeBind       Type = "bind"        // *Net
	TypeSendto     Type = "sendto"      // *Net
	TypeClone      Type = "clone"       // *Process (ChildPID set)
	TypeExit       Type = "exit"        // *Process (ExitCode or Signal set)
	TypeDNSQuery   Type = "dns_query"   // *DNSQuery
	TypeHTTP       Type = "http"        // *HTTPExchange
	TypeConnection Type = "connection"  // *Connection (tcp or udp catch-all)
	TypeTLSHello   Type = "tls_hello"   // *TLSHello
	TypeCanaryHit  Type = "canary_hit"  // *CanaryHit
	TypeFSChange   Type = "fs_change"   // *FSChange
	TypeResource   Type = "resource"    // *Resource
	TypeJailNotice Type = "jail_notice" // *Notice: the jail's own messages (ready, lost lines)
	TypeLink       Type = "link"        // *File: a new name (NewPath) for Path; Flags "symlink" for a symbolic one
	TypeDenied     Type = "denied"      // *Denied: a syscall the sandbox refused to the skill
	TypeInode      Type = "inode"       // *Inode: a planted file's identity and times
	TypePackage    Type = "package"     // *PackageFetch: a package registry request the jail answered
	TypeGit        Type = "git"         // *GitExchange: a git smart-HTTP request the jail answered
	TypeMail       Type = "mail"        // *Mail: a message (or attempt) on the jail's SMTP sink
)

// Event types of the jail's and the trace's evidence accounting.
const (
	TypeWSMessage Type = "ws_message" // *WSMessage: one WebSocket message a client sent
	TypeLeftover  Type = "leftover"   // *Leftover: a process still running when the trace ended
	TypeBudget    Type = "budget"     // *Budget: a byte or count budget the trace crossed
)

// NewData returns a fresh payload of the type that events of type t carry,
// or nil for an unknown type.
func NewData(t Type) any {
	switch t {
	case TypeToolCall:
		return new(ToolCall)
	case TypeExec:
		return new(Exec)
	case TypeOpen, TypeRead, TypeWrite, TypeUnlink, TypeRename, TypeChmod, TypeMkdir, TypeLink:
		return new(File)
	case TypeConnect, TypeBind, TypeSendto:
		return new(Net)
	case TypeClone, TypeExit:
		return new(Process)
	case TypeDNSQuery:
		return new(DNSQuery)
	case TypeHTTP:
		return new(HTTPExchange)
	case TypeConnection:
		return new(Connection)
	case TypeTLSHello:
		return new(TLSHello)
	case TypeCanaryHit:
		return new(CanaryHit)
	case TypeFSChange:
		return new(FSChange)
	case TypeResource:
		return new(Resource)
	case TypeJailNotice:
		return new(Notice)
	case TypeWSMessage:
		return new(WSMessage)
	case TypeLeftover:
		return new(Leftover)
	case TypeBudget:
		return new(Budget)
	case TypeDenied:
		return new(Denied)
	case TypeInode:
		return new(Inode)
	case TypePackage:
		return new(PackageFetch)
	case TypeGit:
		return new(GitExchange)
	case TypeMail:
		return new(Mail)
	}
	return nil
}

// An Event is one observation. Seq is assigned by the Timeline; producers
// leave it zero. Data holds the pointer payload NewData(Type) returns.
type Event struct {
	Seq        int64     `json:"seq"`
	Time       time.Time `json:"time"`
	Source     Source    `json:"source"`
	Type       Type      `json:"type"`
	ToolCallID string    `json:"tool_call_id,omitempty"`
	PID        int       `json:"pid,omitempty"`
	PPID       int       `json:"ppid,omitempty"`
	// Count is how many identical events this one stands for after
	// collapsing (0 and 1 both mean one).
	Count int `json:"count,omitempty"`
	Data  any `json:"data,omitempty"`
}

// UnmarshalJSON decodes an event and gives Data its typed payload. An event
// of an unknown type keeps its data as json.RawMessage rather than failing, so
// a newer events.jsonl still loads.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	var aux struct {
		plain
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*e = Event(aux.plain)
	e.Data = nil
	if len(aux.Data) == 0 || string(aux.Data) == "null" {
		return nil
	}
	d := NewData(e.Type)
	if d == nil {
		e.Data = aux.Data
		return nil
	}
	if err := json.Unmarshal(aux.Data, d); err != nil {
		return fmt.Errorf("decode %s event data: %w", e.Type, err)
	}
	e.Data = d
	return nil
}

// ToolCall is one tool call made by the agent and its result.
type ToolCall struct {
	ID        string          `json:"id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	ExitCode  int             `json:"exit_code"`
	Stdout    string          `json:"stdout,omitempty"`
	Stderr    string          `json:"stderr,omitempty"`
	Truncated bool            `json:"truncated,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Error     string          `json:"error,omitempty"`
	Started   time.Time       `json:"started_at"`
	Duration  time.Duration   `json:"duration_ns"`
	// SkillFile and SkillLine point at the part of the skill that asked for
	// this call, when the driver knows it (the literal driver always does).
	SkillFile string `json:"skill_file,omitempty"`
	SkillLine int    `json:"skill_line,omitempty"`
	// PlanReason says why the driver made this call: "code block",
	// "prose path", "bundled entry point", "placeholder filled", "model", ...
	PlanReason string `json:"plan_reason,omitempty"`
}

// Exec is an execve (successful or not).
type Exec struct {
	Path  string   `json:"path"`
	Argv  []string `json:"argv"`
	Cwd   string   `json:"cwd,omitempty"`
	Errno string   `json:"errno,omitempty"` // "" on success, e.g. "ENOENT"
}

// File is a file-system syscall on a resolved path.
type File struct {
	Path    string `json:"path"`
	NewPath string `json:"new_path,omitempty"` // rename target
	Flags   string `json:"flags,omitempty"`    // open flags as strace prints them
	Mode    string `json:"mode,omitempty"`
	Bytes   int64  `json:"bytes,omitempty"` // read/write size
	Errno   string `json:"errno,omitempty"`
	// Write reports whether an open asked for write access.
	Write bool `json:"write,omitempty"`
	// Resolved is the path the kernel gives the file an open returned
	// (strace -yy), when it differs from Path: a symlink, /proc/self/root,
	// /dev/fd/N or ".." in the name asked for all resolve to the file that
	// was really opened.
	Resolved string `json:"resolved,omitempty"`
}

// Net is a socket syscall with its peer address.
type Net struct {
	Family string `json:"family"` // "inet", "inet6", "unix", "netlink"
	Addr   string `json:"addr"`   // IP, or the unix socket path
	Port   int    `json:"port,omitempty"`
	Proto  string `json:"proto,omitempty"` // "tcp", "udp", "" when unknown
	Bytes  int64  `json:"bytes,omitempty"`
	Errno  string `json:"errno,omitempty"`
}

// Process is a fork/clone (ChildPID) or a process end.
type Process struct {
	ChildPID int    `json:"child_pid,omitempty"`
	ExitCode int    `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
}

// DNSQuery is one DNS message the sink received, with the answer it gave.
type DNSQuery struct {
	Transport string   `json:"transport"` // "udp" or "tcp"
	Client    string   `json:"client,omitempty"`
	ID        uint16   `json:"id"`
	Opcode    string   `json:"opcode"`
	Name      string   `json:"name"` // first question, as received
	QType     string   `json:"qtype"`
	Questions []string `json:"questions,omitempty"` // every question as "name TYPE" when more than one
	Rcode     string   `json:"rcode"`
	Answers   []string `json:"answers,omitempty"`
	Malformed string   `json:"malformed,omitempty"` // why the message did not parse
	Raw       []byte   `json:"raw,omitempty"`       // the message bytes when malformed (capped)
}

// HTTPExchange is one HTTP request the sink received and what it served.
type HTTPExchange struct {
	Method        string              `json:"method"`
	URL           string              `json:"url"`
	Host          string              `json:"host"`
	Proto         string              `json:"proto,omitempty"`
	TLS           bool                `json:"tls"`
	SNI           string              `json:"sni,omitempty"`
	Proxy         bool                `json:"proxy,omitempty"` // came as an explicit-proxy request
	Client        string              `json:"client,omitempty"`
	DstIP         string              `json:"dst_ip,omitempty"` // original destination
	DstPort       int                 `json:"dst_port,omitempty"`
	Headers       map[string][]string `json:"headers,omitempty"`
	Body          []byte              `json:"body,omitempty"` // capped
	BodySize      int64               `json:"body_size"`
	BodyTruncated bool                `json:"body_truncated,omitempty"`
	// Digest is the SHA-256 (hex) of the whole body as the client sent
	// it, past the cap: twin traces compare it (rules.CompareTwins).
	Digest   string `json:"digest,omitempty"`
	Status   int    `json:"status"`
	Response string `json:"response,omitempty"` // what was served: "second-stage", "file:zip", "rule:NAME", ...
	RespSize int64  `json:"resp_size,omitempty"`
	// HeadersTruncated says the URL or headers were cut to the per-event
	// budget (the cut values end in a note of their real size).
	HeadersTruncated bool `json:"headers_truncated,omitempty"`
	// Unfinished says the body never completed: the client stopped
	// sending, or the trace ended first.
	Unfinished bool `json:"unfinished,omitempty"`
	// Spool names the file the jail kept the whole request in (request
	// line, headers, body) when the event holds only part of it; its
	// bytes are scanned for planted tokens like the event's own.
	Spool string `json:"spool,omitempty"`
	// SpoolTruncated says the spool file itself was cut (per-request cap
	// or the trace's disk budget): bytes past it were neither kept nor
	// scanned.
	SpoolTruncated bool `json:"spool_truncated,omitempty"`
}

// Connection is a raw TCP or UDP flow caught by a catch-all.
type Connection struct {
	Proto      string `json:"proto"` // "tcp" or "udp"
	Client     string `json:"client,omitempty"`
	DstIP      string `json:"dst_ip"`
	DstPort    int    `json:"dst_port"`
	Name       string `json:"name,omitempty"` // the DNS name the sink gave DstIP, if any
	FirstBytes []byte `json:"first_bytes,omitempty"`
	Size       int64  `json:"size"`
	Truncated  bool   `json:"truncated,omitempty"`
	// Digest is the SHA-256 (hex) of every byte the client sent.
	Digest string `json:"digest,omitempty"`
	Banner string `json:"banner,omitempty"` // what was sent after silence, if anything
	// Probe is the command the catch-all sent to a flow that looked like a
	// shell (a prompt, a shell's warnings, or silence), and ProbeAnswered
	// says the flow sent back the value only running it could compute:
	// whoever is on the skill's side runs what the network sends.
	Probe         string `json:"probe,omitempty"`
	ProbeAnswered bool   `json:"probe_answered,omitempty"`
	// Spool names the file the jail kept the flow's bytes in past
	// FirstBytes; they are scanned like FirstBytes.
	Spool          string `json:"spool,omitempty"`
	SpoolTruncated bool   `json:"spool_truncated,omitempty"`
	// Protocol names what the client spoke, from its first bytes: "ssh",
	// "irc", "redis", "http", "tls", "smtp", "shell", ...; "h2c",
	// "http-trailing" (bytes after the last request a kept-alive
	// connection carried) and "http-malformed" when the HTTP sink gave
	// up on them; "" when unknown.
	Protocol string `json:"protocol,omitempty"`
	// Refused is set when the port was closed: the client got a reset and
	// sent nothing, but the attempt is recorded.
	Refused bool `json:"refused,omitempty"`
}

// TLSHello is a TLS ClientHello, recorded even when the handshake fails.
type TLSHello struct {
	SNI         string   `json:"sni,omitempty"`
	ALPN        []string `json:"alpn,omitempty"`
	Versions    []string `json:"versions,omitempty"`
	DstIP       string   `json:"dst_ip,omitempty"`
	DstPort     int      `json:"dst_port,omitempty"`
	Intercepted bool     `json:"intercepted"` // the handshake completed with a minted leaf
	Error       string   `json:"error,omitempty"`
}

// CanaryHit is a planted token seen somewhere it should not be.
type CanaryHit struct {
	TokenID  string `json:"token_id"`
	Kind     string `json:"kind"`
	Location string `json:"location"` // where it was planted
	Encoding string `json:"encoding"` // "plain", "base64", "hex", ...
	Channel  string `json:"channel"`  // "http", "dns", "tcp", "udp", "file", "argv", "tool_output"
	Where    string `json:"where"`    // the URL, name, path, or argv where it was seen
	Offset   int    `json:"offset"`
	// EventSeq is the Seq of the event the token was found in.
	EventSeq int64 `json:"event_seq"`
	// Spans are the Seqs of every event a token split across several
	// requests or payloads was reassembled from, in order (EventSeq is
	// the first); empty when one event held it.
	Spans []int64 `json:"spans,omitempty"`
}

// FSChange is one entry of the container's file-system diff.
type FSChange struct {
	Path   string `json:"path"`
	Kind   string `json:"kind"` // "added", "modified", "deleted"
	Size   int64  `json:"size,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	Copied string `json:"copied,omitempty"` // path in the run folder, when copied out
	// Head is the start of the file's content (capped by the producer) when
	// it was copied out, so the rules can look for planted tokens in it.
	Head []byte `json:"head,omitempty"`
}

// Resource is the sandbox's resource use over the trace.
type Resource struct {
	PeakMemory  int64   `json:"peak_memory_bytes"`
	MemoryLimit int64   `json:"memory_limit_bytes,omitempty"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	PeakPIDs    int64   `json:"peak_pids"`
	PIDsLimit   int64   `json:"pids_limit,omitempty"`
	OOMKilled   bool    `json:"oom_killed,omitempty"`
	// OutputBytes is how much tool output was produced, and OutputDropped
	// how much of it was not kept.
	OutputBytes   int64    `json:"output_bytes,omitempty"`
	OutputDropped int64    `json:"output_dropped,omitempty"`
	Exceeded      []string `json:"exceeded,omitempty"` // "memory", "pids", "output", "disk"
	// DiskFull names each writable place (a tmpfs with a size: the home,
	// /tmp, /run/lock, ...) that was full when the trace ended, with its
	// use: "/tmp: 268435456 of 268435456 bytes".
	DiskFull []string `json:"disk_full,omitempty"`
}

// Notice is a message from an observer about itself.
type Notice struct {
	Message string `json:"message"`
	Lost    int64  `json:"lost,omitempty"` // events known to be lost
	// Incomplete marks evidence known to be missing (a lost tail, an
	// unreadable line, a budget that dropped bytes): a trace with such a
	// notice cannot be judged clean.
	Incomplete bool `json:"incomplete,omitempty"`
}

// WSMessage is one WebSocket message (or control frame) a client sent,
// reassembled from its frames and unmasked. Frames sent before the
// handshake completed count too.
type WSMessage struct {
	URL     string `json:"url"` // of the Upgrade request
	Client  string `json:"client,omitempty"`
	DstIP   string `json:"dst_ip,omitempty"`
	DstPort int    `json:"dst_port,omitempty"`
	Opcode  string `json:"opcode"` // "text", "binary", "close", "ping", "pong", "continuation"
	Payload []byte `json:"payload,omitempty"`
	Size    int64  `json:"size"`
	// Digest is the SHA-256 (hex) of the whole payload.
	Digest string `json:"digest,omitempty"`
	// Truncated says Payload holds only the start of the message.
	Truncated      bool   `json:"truncated,omitempty"`
	Spool          string `json:"spool,omitempty"`
	SpoolTruncated bool   `json:"spool_truncated,omitempty"`
	// Malformed says why the frame stream could not be read further; the
	// rest of the connection's bytes are in a connection event.
	Malformed string `json:"malformed,omitempty"`
}

// Leftover is a process of the skill seen running after the agent's last
// call: during the grace period (Ended: it exited by itself before the
// period's end), or at its end, recorded just before it was frozen and
// ended.
type Leftover struct {
	PID  int      `json:"pid"`
	PPID int      `json:"ppid"`
	PGID int      `json:"pgid,omitempty"`
	SID  int      `json:"sid,omitempty"`
	UID  int      `json:"uid"`
	Exe  string   `json:"exe,omitempty"` // the kernel's /proc/PID/exe
	Argv []string `json:"argv,omitempty"`
	// State is the process state letter before freezing ("S", "R", ...).
	State string `json:"state,omitempty"`
	// CallID is the tool call whose tracer follows the process: the call
	// that started it, however it detached since.
	CallID string `json:"call_id,omitempty"`
	// Detached says the process left its call's session or process
	// group, or was adopted by the container's init.
	Detached bool `json:"detached,omitempty"`
	// AgeMS is how long the process had been running when first seen
	// after the last call.
	AgeMS int64 `json:"age_ms,omitempty"`
	// Ended says it exited by itself during the grace period; otherwise
	// it was frozen and ended at its end.
	Ended bool `json:"ended,omitempty"`
}

// Budget is a budget of the trace that was crossed: what it bounds, its
// limit, how much was asked for, and what was not kept because of it.
type Budget struct {
	// Name is one of "jail_events", "event_size", "spool", "request_body",
	// "timeline", "path", "syscall_log".
	Name    string `json:"name"`
	Limit   int64  `json:"limit"`
	Used    int64  `json:"used"`              // what the skill produced (bytes or items)
	Dropped int64  `json:"dropped,omitempty"` // bytes or items not kept
	// Summarised counts items kept in part (cut to the budget, the rest
	// spooled or summarised): evidence changed shape, none was lost.
	Summarised int64  `json:"summarised,omitempty"`
	Unit       string `json:"unit"` // "bytes", "events", "paths"
	Message    string `json:"message"`
}

// Denied is a syscall the sandbox refuses to the skill's processes because
// it would act out of the tracer's sight (io_uring, another process's
// memory or descriptors): the call failed with Errno and this records the
// attempt.
type Denied struct {
	Syscall string `json:"syscall"`
	Args    string `json:"args,omitempty"` // as strace printed them (capped)
	Errno   string `json:"errno"`
}

// Inode is the identity (device and inode number) and times of a planted
// file, recorded when the home is unpacked (Phase "planted") and when the
// trace ends (Phase "end"). Whatever name a process used, a read of the
// file shows as a newer Atime, a new name or changed metadata as a newer
// Ctime and Nlink, and the other names it has at the end as Aliases.
type Inode struct {
	Path    string    `json:"path"` // where it was planted
	Phase   string    `json:"phase"`
	Dev     uint64    `json:"dev"`
	Ino     uint64    `json:"ino"`
	Nlink   int       `json:"nlink,omitempty"`
	Atime   time.Time `json:"atime"`
	Ctime   time.Time `json:"ctime"`
	Missing bool      `json:"missing,omitempty"` // gone at the end
	Aliases []string  `json:"aliases,omitempty"` // other paths with the same identity (hard links)
}

// Phases of Inode.
const (
	InodePlanted = "planted"
	InodeEnd     = "end"
)

// PackageFetch is one request to a package registry that the jail answered
// with a harmless stub: the real package (and its install scripts) never
// ran.
type PackageFetch struct {
	Ecosystem string `json:"ecosystem"` // "npm" or "pypi"
	Name      string `json:"name"`
	Version   string `json:"version,omitempty"` // the version served (archives), "" for metadata
	Registry  string `json:"registry"`          // host (and port when not the default) asked
	// Default is set when Registry is the ecosystem's public default
	// (registry.npmjs.org, pypi.org, ...).
	Default bool   `json:"default"`
	What    string `json:"what"` // "metadata", "tarball", "wheel", "sdist"
	URL     string `json:"url"`
	Client  string `json:"client,omitempty"` // the client product from the User-Agent ("npm/9.2.0", "pip/23.0.1")
	// Stub is what was served instead of the real package.
	Stub string `json:"stub,omitempty"`
}

// GitExchange is one git smart-HTTP request the jail answered. Pushes
// carry the updated refs and what the pack held, inflated, so planted
// tokens in pushed files can be found.
type GitExchange struct {
	Service string `json:"service"` // "git-receive-pack" (push) or "git-upload-pack" (clone, fetch)
	Phase   string `json:"phase"`   // "discovery" (info/refs) or "rpc" (the POST)
	Repo    string `json:"repo"`    // host and repository path
	URL     string `json:"url"`
	// User is the Basic user name sent, if any; the full Authorization
	// header is in the HTTP event of the same request.
	User       string `json:"user,omitempty"`
	Authorized bool   `json:"authorized"` // credentials were sent
	// Status is what was answered: 401 asks for credentials.
	Status int `json:"status"`
	// Refs are the updates a push asked for, as "OLD NEW REF".
	Refs     []string `json:"refs,omitempty"`
	PackSize int64    `json:"pack_size,omitempty"`
	Objects  int      `json:"objects,omitempty"`
	// Content is the pack's objects inflated (commits, trees, blobs; capped)
	// and ContentTruncated says the cap or a damaged pack cut it.
	Content          []byte `json:"content,omitempty"`
	ContentTruncated bool   `json:"content_truncated,omitempty"`
	Error            string `json:"error,omitempty"` // why the pack could not be read in full
}

// Mail is one SMTP session on the jail's mail sink: the envelope, the
// credentials offered and the message, recorded whether or not it was
// completed.
type Mail struct {
	Client  string `json:"client,omitempty"`
	DstIP   string `json:"dst_ip,omitempty"`
	DstPort int    `json:"dst_port,omitempty"`
	Name    string `json:"name,omitempty"` // the DNS name the sink gave DstIP, if any
	TLS     bool   `json:"tls,omitempty"`  // implicit TLS (465) or STARTTLS
	Helo    string `json:"helo,omitempty"`
	// AuthMechanism, AuthUser and AuthSecret are what AUTH sent, decoded.
	AuthMechanism string   `json:"auth_mechanism,omitempty"`
	AuthUser      string   `json:"auth_user,omitempty"`
	AuthSecret    string   `json:"auth_secret,omitempty"`
	From          string   `json:"from,omitempty"`
	To            []string `json:"to,omitempty"`
	Subject       string   `json:"subject,omitempty"`
	// Data is the message as sent after DATA (headers and body, capped);
	// Size is its real size.
	Data      []byte `json:"data,omitempty"`
	Size      int64  `json:"size"`
	Truncated bool   `json:"truncated,omitempty"`
	// Digest is the SHA-256 (hex) of the whole message.
	Digest string `json:"digest,omitempty"`
	// Completed is set when the message was accepted (the final "." of DATA).
	Completed bool `json:"completed"`
	// Commands is the session's command lines (AUTH arguments and DATA
	// left out, capped).
	Commands []string `json:"commands,omitempty"`
}
