package fingerprint

import (
	"encoding/json"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Path classes of file-system operations.
const (
	ClassHomeSecret = "home_secret" // a planted secret or a credential store of the home
	ClassProject    = "project"     // the rest of the home: the user's projects and documents
	ClassSystem     = "system"      // outside the home
	ClassTemp       = "temp"        // /tmp, /var/tmp, /dev/shm
	ClassSkill      = "skill"       // the skill's own folder
)

// Output patterns.
const (
	OutputData         = "data"         // a tool call returned output
	OutputError        = "error"        // a tool call failed
	OutputRedirect     = "redirect"     // an HTTP sink answered a redirect
	OutputExfiltration = "exfiltration" // a planted token left the sandbox
)

// MaxSeqs caps the events kept per profile entry as evidence.
const MaxSeqs = 5

// CollapseAfter is how many distinct entries of one folder are kept
// literal before they collapse into FOLDER/* (sensitive paths never
// collapse).
const CollapseAfter = 8

// A Profile is what one trace did, by capability class. Every list is
// sorted by its key and holds each key once.
type Profile struct {
	Filesystem  []FileOp   `json:"filesystem"`
	Network     []Target   `json:"network"`
	Environment []EnvUse   `json:"environment"`
	Processes   []ProcExec `json:"processes"`
	Outputs     []Output   `json:"outputs"`
	Resources   Resources  `json:"resources"`
}

// FileOp is one operation on a path pattern: Path is home-relative (~/...)
// or <skill>/... for the skill's folder, and ends in /* when collapsed.
type FileOp struct {
	Op     string  `json:"op"` // read, write, delete, rename, chmod, mkdir, link
	Class  string  `json:"class"`
	Path   string  `json:"path"`
	Failed bool    `json:"failed,omitempty"` // every attempt failed
	Count  int     `json:"count"`
	Seqs   []int64 `json:"seqs"`
}

// Target is one network destination, by the sink that received it.
type Target struct {
	Sink     string  `json:"sink"`     // dns, http, https, tls, tcp, udp, smtp
	Protocol string  `json:"protocol"` // what was spoken: dns, http, tls, ssh, ..., or "" unknown
	Name     string  `json:"name,omitempty"`
	Address  string  `json:"address,omitempty"`
	Port     int     `json:"port,omitempty"`
	Count    int     `json:"count"`
	Seqs     []int64 `json:"seqs"`
}

// EnvUse is one environment variable accessed, and how: "command" (named
// by a command), "environ" (a process's environment read whole: Name "*"),
// "value" (its planted value was seen).
type EnvUse struct {
	Name string   `json:"name"`
	How  []string `json:"how"`
	Seqs []int64  `json:"seqs"`
}

// ProcExec is one program run, by argument shape: flags kept, operands
// replaced by <script> (text with blanks or shell operators), <url>,
// <path> or <arg>.
type ProcExec struct {
	Path   string  `json:"path"`
	Shape  string  `json:"shape"`
	Failed bool    `json:"failed,omitempty"` // every execve failed
	Count  int     `json:"count"`
	Seqs   []int64 `json:"seqs"`
}

// Output is one output pattern and how often it showed.
type Output struct {
	Pattern string  `json:"pattern"`
	Count   int     `json:"count"`
	Seqs    []int64 `json:"seqs"`
}

// Resources are the trace's figures (not capabilities: they never raise
// an anomaly).
type Resources struct {
	ToolCalls      int     `json:"tool_calls"`
	Events         int     `json:"events"`
	PeakMemory     int64   `json:"peak_memory_bytes"`
	CPUSeconds     float64 `json:"cpu_seconds"`
	PeakPIDs       int64   `json:"peak_pids"`
	NetworkBytesUp int64   `json:"network_bytes_out"`
}

// sensitive home paths kept literal and classed as secrets, besides the
// planted files themselves.
var sensitiveHome = []string{"~/.ssh", "~/.aws", "~/.gnupg", "~/.kube", "~/.docker", "~/.azure",
	"~/.config/gcloud", "~/.config/gh", "~/.netrc", "~/.git-credentials", "~/.npmrc", "~/.pypirc",
	"~/.password-store", "~/.local/share/keyrings", "~/.mozilla", "~/.config/google-chrome",
	"~/.config/chromium", "~/.bitcoin", "~/.ethereum", "~/.config/solana", "~/.electrum", "~/.env",
	"~/Library/Keychains", "~/Library/Application Support/Google/Chrome"}

// sensitiveSystem are system paths kept literal.
var sensitiveSystem = regexp.MustCompile(`^(/etc/(shadow|gshadow|passwd|sudoers|ld\.so\.preload|crontab|cron\.|profile|bash\.bashrc|systemd)|/var/spool/cron|/proc/[^/]+/(environ|mem|maps|status|cmdline)|/root|/\.dockerenv|/run/docker\.sock|/var/run/docker\.sock)`)

// gitInternals collapses what git reads and writes inside .git (objects,
// refs, logs, index: content-addressed and different in every repository)
// into .git/*, keeping hooks and the configuration literal: code that runs
// later.
func gitInternals(p string) string {
	i := strings.Index(p, "/.git/")
	if i < 0 {
		return p
	}
	rest := p[i+len("/.git/"):]
	if rest == "config" || rest == "hooks" || strings.HasPrefix(rest, "hooks/") {
		return p
	}
	return p[:i] + "/.git/*"
}

var hexName = regexp.MustCompile(`(^|/)[0-9a-f]{16,}(/|$)`)

// hexNames replaces path components that are long hex strings (hashes,
// content-addressed caches) with <hex>.
func hexNames(p string) string {
	for hexName.MatchString(p) {
		p = hexName.ReplaceAllString(p, "$1<hex>$2")
	}
	return p
}

var procPID = regexp.MustCompile(`^/proc/[0-9]+(/task/[0-9]+)?`)

// classifier maps sandbox paths to classes and patterns.
type classifier struct {
	home, skillDir string
	planted        map[string]bool // home-relative planted paths (~/...)
	repos          []string        // home-relative git working trees, longest first
	memo           map[string]normalized
}

type normalized struct {
	norm, class string
	literal     bool
}

func newClassifier(in rules.Input) classifier {
	c := classifier{home: strings.TrimSuffix(in.Home, "/"), skillDir: strings.TrimSuffix(in.SkillDir, "/"), planted: map[string]bool{},
		memo: map[string]normalized{}}
	if in.Canaries != nil {
		for _, t := range in.Canaries.Tokens() {
			if strings.HasPrefix(t.Location, "~/") {
				c.planted[t.Location] = true
			}
		}
	}
	for dir := range in.Repos {
		if c.home != "" && strings.HasPrefix(dir, c.home+"/") {
			c.repos = append(c.repos, "~"+strings.TrimPrefix(path.Clean(dir), c.home))
		}
	}
	slices.SortFunc(c.repos, func(a, b string) int { return len(b) - len(a) })
	return c
}

// repo replaces the name of the seeded home's git working tree a
// home-relative path is in with <repo>: the home's projects are named
// afresh for every trace, and a skill works in whichever is the main one.
func (c classifier) repo(rel string) string {
	for _, r := range c.repos {
		if rel == r || strings.HasPrefix(rel, r+"/") {
			return path.Dir(r) + "/<repo>" + strings.TrimPrefix(rel, r)
		}
	}
	return rel
}

// normalize turns a sandbox path into the profile's form and class.
// literal says the path must not collapse.
func (c classifier) normalize(p string) (norm, class string, literal bool) {
	n, ok := c.memo[p]
	if !ok {
		n.norm, n.class, n.literal = c.classify(p)
		c.memo[p] = n
	}
	return n.norm, n.class, n.literal
}

func (c classifier) classify(p string) (norm, class string, literal bool) {
	p = path.Clean(p)
	switch {
	case c.skillDir != "" && (p == c.skillDir || strings.HasPrefix(p, c.skillDir+"/")):
		return "<skill>" + strings.TrimPrefix(p, c.skillDir), ClassSkill, false
	case c.home != "" && (p == c.home || strings.HasPrefix(p, c.home+"/")):
		rel := "~" + strings.TrimPrefix(p, c.home)
		if c.planted[rel] {
			return rel, ClassHomeSecret, true
		}
		for _, s := range sensitiveHome {
			if rel == s || strings.HasPrefix(rel, s+"/") || strings.HasPrefix(path.Base(rel), ".env") && !strings.HasSuffix(rel, ".example") {
				return rel, ClassHomeSecret, true
			}
		}
		return gitInternals(hexNames(c.repo(rel))), ClassProject, false
	}
	for _, t := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		if p == t || strings.HasPrefix(p, t+"/") {
			return t + "/*", ClassTemp, false
		}
	}
	p = procPID.ReplaceAllString(p, "/proc/*")
	if sensitiveSystem.MatchString(p) {
		return p, ClassSystem, true
	}
	return p, ClassSystem, false
}

var fileOps = map[trace.Type]string{trace.TypeRead: "read", trace.TypeWrite: "write", trace.TypeUnlink: "delete",
	trace.TypeRename: "rename", trace.TypeChmod: "chmod", trace.TypeMkdir: "mkdir", trace.TypeLink: "link"}

var envRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)|\b(?:printenv|getenv|environ(?:\.get)?|ENV)\s*[\(\[]?\s*["']?([A-Za-z_][A-Za-z0-9_]*)|process\.env\.([A-Za-z_][A-Za-z0-9_]*)`)

// Build computes the behaviour profile of a numbered timeline (canary hits
// included, as rules.Result.Events holds it) with the rules' input for the
// home, the skill's folder and the planted tokens. It reads evidence only:
// syscalls, the jail's sinks, the file diff, canary hits and the tool
// calls' commands and results.
func Build(in rules.Input, events []trace.Event) Profile {
	c := newClassifier(in)
	b := newBuilder()
	// Planted values are replaced before anything is normalised (names
	// are lowercased): none reaches the profile, its findings or the store.
	memo := map[string]string{} // paths and names repeat: redact each once
	red := func(s string) string {
		if in.Canaries == nil || s == "" {
			return s
		}
		r, ok := memo[s]
		if !ok {
			r = rules.Redact(in.Canaries, s)
			memo[s] = r
		}
		return r
	}
	normName := func(n string) string { return normName(red(n)) }
	for _, e := range events {
		switch d := e.Data.(type) {
		case *trace.File:
			op, ok := fileOps[e.Type]
			if e.Type == trace.TypeOpen {
				op, ok = "read", true
				if d.Write {
					op = "write"
				}
			}
			if !ok {
				continue
			}
			p := d.Path
			if d.Resolved != "" {
				p = d.Resolved
			}
			b.file(c, op, red(p), d.Errno != "", e.Seq)
			if e.Type == trace.TypeRename && d.NewPath != "" {
				b.file(c, "write", red(d.NewPath), d.Errno != "", e.Seq)
			}
			if norm, _, _ := c.normalize(p); norm == "/proc/*/environ" || norm == "/proc/self/environ" {
				b.env("*", "environ", e.Seq)
			}
		case *trace.FSChange:
			op := "write"
			if d.Kind == "deleted" {
				op = "delete"
			}
			b.file(c, op, red(d.Path), false, e.Seq)
		case *trace.Exec:
			x := *d
			x.Path, x.Argv = red(d.Path), slices.Clone(d.Argv)
			for i := range x.Argv {
				x.Argv[i] = red(x.Argv[i])
			}
			b.exec(c, &x, e.Seq)
		case *trace.DNSQuery:
			if d.Name != "" {
				b.target(Target{Sink: "dns", Protocol: "dns", Name: normName(d.Name)}, e.Seq)
			}
		case *trace.HTTPExchange:
			sink := "http"
			if d.TLS {
				sink = "https"
			}
			b.target(Target{Sink: sink, Protocol: "http", Name: normName(hostOnly(d.Host)), Port: d.DstPort}, e.Seq)
			if d.Status >= 300 && d.Status < 400 {
				b.output(OutputRedirect, e.Seq)
			}
			b.res.NetworkBytesUp += d.BodySize
		case *trace.TLSHello:
			t := Target{Sink: "tls", Protocol: "tls", Name: normName(d.SNI), Port: d.DstPort}
			if t.Name == "" {
				t.Address = d.DstIP
			}
			b.target(t, e.Seq)
		case *trace.Connection:
			t := Target{Sink: d.Proto, Protocol: d.Protocol, Name: normName(d.Name), Port: d.DstPort}
			if t.Name == "" {
				t.Address = d.DstIP
			}
			t.Protocol = red(t.Protocol)
			b.target(t, e.Seq)
			b.res.NetworkBytesUp += d.Size
		case *trace.Mail:
			t := Target{Sink: "smtp", Protocol: "smtp", Name: normName(d.Name), Port: d.DstPort}
			if t.Name == "" {
				t.Address = d.DstIP
			}
			b.target(t, e.Seq)
		case *trace.ToolCall:
			b.res.ToolCalls++
			if d.IsError || d.ExitCode != 0 || d.Error != "" {
				b.output(OutputError, e.Seq)
			} else if strings.TrimSpace(d.Stdout) != "" {
				b.output(OutputData, e.Seq)
			}
			if d.Tool == "bash" {
				var a struct {
					Command string `json:"command"`
				}
				if json.Unmarshal(d.Arguments, &a) == nil {
					b.envRefs(a.Command, e.Seq)
				}
			}
		case *trace.CanaryHit:
			if rest, ok := strings.CutPrefix(d.Location, "env:"); ok {
				b.env(rest, "value", e.Seq)
			}
			if trace.LeftSandbox(d.Channel) {
				b.output(OutputExfiltration, e.Seq)
			}
		case *trace.Resource:
			b.res.PeakMemory = max(b.res.PeakMemory, d.PeakMemory)
			b.res.CPUSeconds = max(b.res.CPUSeconds, d.CPUSeconds)
			b.res.PeakPIDs = max(b.res.PeakPIDs, d.PeakPIDs)
		}
	}
	b.res.Events = len(events)
	return b.profile()
}

func hostOnly(h string) string {
	if i := strings.LastIndexByte(h, ':'); i > 0 && !strings.Contains(h[i:], "]") {
		return h[:i]
	}
	return h
}

func normName(n string) string { return strings.TrimSuffix(strings.ToLower(n), ".") }

type builder struct {
	files   map[string]*FileOp
	lit     map[string]bool // file keys that must stay literal
	targets map[string]*Target
	envs    map[string]*EnvUse
	procs   map[string]*ProcExec
	outputs map[string]*Output
	res     Resources
}

func newBuilder() *builder {
	return &builder{files: map[string]*FileOp{}, lit: map[string]bool{}, targets: map[string]*Target{},
		envs: map[string]*EnvUse{}, procs: map[string]*ProcExec{}, outputs: map[string]*Output{}}
}

func addSeq(s []int64, seq int64) []int64 {
	if len(s) < MaxSeqs && !slices.Contains(s, seq) {
		s = append(s, seq)
	}
	return s
}

func (b *builder) file(c classifier, op, p string, failed bool, seq int64) {
	if p == "" || !strings.HasPrefix(p, "/") {
		return
	}
	norm, class, literal := c.normalize(p)
	k := op + " " + norm
	f := b.files[k]
	if f == nil {
		f = &FileOp{Op: op, Class: class, Path: norm, Failed: true}
		b.files[k] = f
	}
	f.Count++
	f.Failed = f.Failed && failed
	f.Seqs = addSeq(f.Seqs, seq)
	if literal {
		b.lit[k] = true
	}
}

func (b *builder) target(t Target, seq int64) {
	k := t.key()
	x := b.targets[k]
	if x == nil {
		x = &t
		b.targets[k] = x
	}
	x.Count++
	x.Seqs = addSeq(x.Seqs, seq)
}

func (b *builder) env(name, how string, seq int64) {
	x := b.envs[name]
	if x == nil {
		x = &EnvUse{Name: name}
		b.envs[name] = x
	}
	if !slices.Contains(x.How, how) {
		x.How = append(x.How, how)
		slices.Sort(x.How)
	}
	x.Seqs = addSeq(x.Seqs, seq)
}

// shellVars are the shell's own variables, not the environment's.
var shellVars = map[string]bool{"RANDOM": true, "LINENO": true, "SECONDS": true, "BASH_SOURCE": true,
	"FUNCNAME": true, "PIPESTATUS": true, "REPLY": true, "OPTARG": true, "OPTIND": true, "IFS": true}

func (b *builder) envRefs(cmd string, seq int64) {
	// Variables the command assigns itself (NAME=...) are not the
	// environment's.
	assigned := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:^|[\s;&|(])([A-Za-z_][A-Za-z0-9_]*)=`).FindAllStringSubmatch(cmd, -1) {
		assigned[m[1]] = true
	}
	for _, m := range envRef.FindAllStringSubmatch(cmd, -1) {
		name := m[1] + m[2] + m[3]
		if name == "" || assigned[name] || shellVars[name] {
			continue
		}
		b.env(name, "command", seq)
	}
}

func (b *builder) exec(c classifier, d *trace.Exec, seq int64) {
	p, _, _ := c.normalize(d.Path)
	if !strings.HasPrefix(d.Path, "/") {
		p = d.Path
	}
	shape := argvShape(c, p, d.Argv)
	x := b.procs[shape]
	if x == nil {
		x = &ProcExec{Path: p, Shape: shape, Failed: true}
		b.procs[shape] = x
	}
	x.Count++
	x.Failed = x.Failed && d.Errno != ""
	x.Seqs = addSeq(x.Seqs, seq)
	for _, a := range d.Argv {
		b.envRefs(a, seq)
	}
}

// MaxShape caps the tokens of an argument shape.
const MaxShape = 12

// argvShape is the program and its arguments with operands replaced by
// their kind, consecutive equal kinds merged: "/usr/bin/curl -s -X <arg>
// <url>".
func argvShape(c classifier, p string, argv []string) string {
	parts := []string{p}
	for i, a := range argv {
		if i == 0 || len(parts) >= MaxShape {
			continue
		}
		var t string
		switch {
		case strings.HasPrefix(a, "-") && len(a) <= 32 && !strings.ContainsAny(a, " \n"):
			t, _, _ = strings.Cut(a, "=")
		case strings.ContainsAny(a, " \t\n;|&"):
			t = "<script>"
		case strings.Contains(a, "://"):
			t = "<url>"
		case strings.HasPrefix(a, "/") || strings.HasPrefix(a, "./") || strings.HasPrefix(a, "~/") || strings.HasPrefix(a, "../"):
			t = "<path>"
		default:
			t = "<arg>"
		}
		if t != parts[len(parts)-1] || !strings.HasPrefix(t, "<") {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, " ")
}

func (b *builder) output(p string, seq int64) {
	x := b.outputs[p]
	if x == nil {
		x = &Output{Pattern: p}
		b.outputs[p] = x
	}
	x.Count++
	x.Seqs = addSeq(x.Seqs, seq)
}

// profile collapses and sorts what was gathered.
func (b *builder) profile() Profile {
	p := Profile{Filesystem: collapse(b.files, b.lit), Network: []Target{}, Environment: []EnvUse{},
		Processes: []ProcExec{}, Outputs: []Output{}, Resources: b.res}
	for _, k := range sortedKeys(b.targets) {
		p.Network = append(p.Network, *b.targets[k])
	}
	for _, k := range sortedKeys(b.envs) {
		p.Environment = append(p.Environment, *b.envs[k])
	}
	for _, k := range sortedKeys(b.procs) {
		p.Processes = append(p.Processes, *b.procs[k])
	}
	for _, k := range sortedKeys(b.outputs) {
		p.Outputs = append(p.Outputs, *b.outputs[k])
	}
	return p
}

// collapse merges, per operation and folder, more than CollapseAfter
// distinct non-literal paths into FOLDER/* (Kubescape's rule), and the
// system class's reads below three levels into their first three (library
// and interpreter loads vary with every dependency).
func collapse(files map[string]*FileOp, lit map[string]bool) []FileOp {
	byDir := map[string][]string{}
	for k, f := range files {
		if lit[k] {
			continue
		}
		byDir[f.Op+" "+path.Dir(f.Path)] = append(byDir[f.Op+" "+path.Dir(f.Path)], k)
	}
	out := map[string]*FileOp{}
	merge := func(k string, f FileOp) {
		x := out[k]
		if x == nil {
			f.Seqs = slices.Clone(f.Seqs)
			out[k] = &f
			return
		}
		x.Count += f.Count
		x.Failed = x.Failed && f.Failed
		for _, s := range f.Seqs {
			x.Seqs = addSeq(x.Seqs, s)
		}
	}
	for k, f := range files {
		g := *f
		switch {
		case lit[k]:
		case g.Class == ClassSystem && g.Op == "read" && strings.Count(g.Path, "/") > 3:
			g.Path = strings.Join(strings.SplitN(g.Path, "/", 5)[:4], "/") + "/*"
		case len(byDir[g.Op+" "+path.Dir(g.Path)]) > CollapseAfter:
			g.Path = path.Dir(g.Path) + "/*"
		}
		merge(g.Op+" "+g.Path, g)
	}
	res := []FileOp{}
	for _, k := range sortedKeys(out) {
		slices.Sort(out[k].Seqs)
		res = append(res, *out[k])
	}
	return res
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (t Target) key() string {
	host := t.Name
	if host == "" {
		host = t.Address
	}
	if t.Port != 0 && t.Sink != "dns" {
		return t.Sink + ":" + host + ":" + itoa(t.Port)
	}
	return t.Sink + ":" + host
}
