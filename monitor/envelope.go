package monitor

// The constraint envelope is what a skill declares it will do: its
// allowed-tools (read as SBX-POLICY-001 reads them) and, when its
// frontmatter declares them, a network scope (keys network, domains or
// hosts) and a filesystem scope (keys filesystem or paths), at the top
// level or under metadata. Each run's tool calls, network targets and file
// operations are checked against it. A scope that is not declared is not
// checked; one declared empty (or false, or "none") allows nothing. Being
// outside the envelope in every run is reported; a run outside it where
// the runs before it were not is a deviation (outside_envelope).
//
// What the filesystem scope is checked against: paths in the home, and
// writes anywhere but the temp folders. The skill's own folder, the temp
// folders and the system files programs read to start are always within.

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxctl/sandboxctl/rules"
)

// Declared is the envelope a skill's frontmatter declares.
type Declared struct {
	AllowedTools []string `json:"allowed_tools,omitempty"`
	Network      []string `json:"network,omitempty"`
	Filesystem   []string `json:"filesystem,omitempty"`
	// From are the frontmatter keys the envelope was read from
	// ("allowed-tools", "metadata.domains", ...); a scope with a key here
	// and no entries allows nothing.
	From []string `json:"from"`
}

// Envelope is the declared envelope and what the runs did outside it.
type Envelope struct {
	Declared Declared  `json:"declared"`
	Outside  []Outside `json:"outside"`
}

// Outside is one thing runs did outside the envelope: "tool bash curl
// ...", "net https:collect.example:443", "file write ~/.bashrc".
type Outside struct {
	What string   `json:"what"`
	Runs []string `json:"runs"` // labels, in the order they ran
	// EveryRun: every run of the cells (confirmation runs aside) did it.
	EveryRun bool `json:"every_run,omitempty"`
}

var scopeKeys = map[string]string{"network": "network", "domains": "network", "hosts": "network",
	"filesystem": "filesystem", "paths": "filesystem"}

// DeclaredEnvelope reads the envelope from a skill's allowed-tools and its
// raw frontmatter (skill.Skill's AllowedTools and Frontmatter).
func DeclaredEnvelope(allowedTools []string, frontmatter map[string]any) Declared {
	d := Declared{AllowedTools: slices.Clone(allowedTools), From: []string{}}
	if len(allowedTools) > 0 {
		d.From = append(d.From, "allowed-tools")
	}
	read := func(prefix string, m map[string]any) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			scope, ok := scopeKeys[strings.ToLower(k)]
			if !ok {
				continue
			}
			list, bounded := scopeList(m[k])
			if !bounded {
				continue
			}
			d.From = append(d.From, prefix+k)
			if scope == "network" {
				d.Network = append(d.Network, list...)
			} else {
				d.Filesystem = append(d.Filesystem, list...)
			}
		}
	}
	read("", frontmatter)
	if md, ok := frontmatter["metadata"].(map[string]any); ok {
		read("metadata.", md)
	}
	return d
}

// scopeList reads a scope's value: a list, a string of entries separated
// by commas or blanks, a mapping of lists (allow: [...]), false or "none"
// (nothing). bounded is false for a value that does not bound anything
// (true, "*", "any", null).
func scopeList(v any) (list []string, bounded bool) {
	switch t := v.(type) {
	case bool:
		return nil, !t
	case string:
		switch s := strings.ToLower(strings.TrimSpace(t)); s {
		case "*", "any", "all", "unrestricted":
			return nil, false
		case "", "none", "false", "no":
			return nil, true
		}
		return strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }), true
	case []any:
		for _, x := range t {
			l, b := scopeList(x)
			if !b {
				return nil, false // "*" among the entries
			}
			list = append(list, l...)
		}
		return list, true
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			switch strings.ToLower(k) {
			case "allow", "allowed", "domains", "hosts", "paths", "read", "write", "egress":
				l, b := scopeList(t[k])
				if !b {
					return nil, false
				}
				list, bounded = append(list, l...), true
			}
		}
		return list, bounded
	}
	return nil, false
}

// declares says whether the envelope bounds scope ("network", "filesystem").
func (d Declared) declares(scope string) bool {
	for _, k := range d.From {
		if scopeKeys[strings.ToLower(k[strings.LastIndex(k, ".")+1:])] == scope {
			return true
		}
	}
	return false
}

// outside lists what o did outside the envelope, sorted.
func (d Declared) outside(o Observation) []string {
	var out []string
	if tools := rules.ParseAllowedTools(d.AllowedTools); !tools.Empty() {
		for _, c := range o.Calls {
			tool, cmd, _ := strings.Cut(c, " ")
			if !tools.Allows(tool, cmd) {
				out = append(out, "tool "+c)
			}
		}
	}
	if d.declares("network") {
		for _, k := range o.Capabilities.Network {
			if !hostWithin(targetHost(k), d.Network) {
				out = append(out, "net "+k)
			}
		}
	}
	if d.declares("filesystem") {
		for _, k := range o.Capabilities.Filesystem {
			op, p, _ := strings.Cut(k, " ")
			if !pathWithin(op, p, d.Filesystem) {
				out = append(out, "file "+k)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// targetHost is the host of a network capability, SINK:HOST[:PORT].
func targetHost(k string) string {
	_, h, _ := strings.Cut(k, ":")
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		if _, err := strconv.Atoi(h[i+1:]); err == nil {
			h = h[:i]
		}
	}
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// hostWithin says whether host is one of the declared entries, or under
// one: "example.com", "*.example.com" and ".example.com" cover
// api.example.com; a URL or host:port entry is taken by its host.
// Loopback is always within.
func hostWithin(host string, entries []string) bool {
	if host == "localhost" || host == "::1" || strings.HasPrefix(host, "127.") {
		return true
	}
	for _, e := range entries {
		e = strings.ToLower(strings.TrimSpace(e))
		if u, err := url.Parse(e); err == nil && u.Host != "" {
			e = u.Hostname()
		} else if h, _, ok := strings.Cut(e, ":"); ok && !strings.Contains(e, "::") {
			e = h
		}
		e = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(e, "*"), "."), ".")
		if e != "" && (host == e || strings.HasSuffix(host, "."+e)) {
			return true
		}
	}
	return false
}

var tempDirs = []string{"/tmp", "/var/tmp", "/dev/shm"}

// pathWithin says whether a file operation on p (the profile's form:
// ~/..., <skill>/..., absolute; /* when collapsed) is within the entries.
func pathWithin(op, p string, entries []string) bool {
	p = strings.TrimSuffix(p, "/*")
	under := func(p, dir string) bool { return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/") }
	if strings.HasPrefix(p, "<skill>") {
		return true
	}
	for _, t := range tempDirs {
		if under(p, t) {
			return true
		}
	}
	if !strings.HasPrefix(p, "~") && op == "read" {
		return true // a system file a program reads to start
	}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		switch {
		case strings.HasPrefix(e, "$HOME"):
			e = "~" + strings.TrimPrefix(e, "$HOME")
		case strings.HasPrefix(e, "./"):
			e = "~/" + strings.TrimPrefix(e, "./") // the tools' working folder is the home
		case e == ".":
			e = "~"
		case !strings.HasPrefix(e, "/") && !strings.HasPrefix(e, "~"):
			e = "~/" + e
		}
		e = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(e, "/**"), "/*"), "/")
		if e == "" || under(p, e) {
			return true
		}
		if ok, _ := path.Match(e, p); ok {
			return true
		}
	}
	return false
}

// tracer returns t with each observation's outside_envelope set.
func (d Declared) tracer(t runFunc) runFunc {
	return func(ctx context.Context, s runSpec) (runResult, error) {
		res, err := t(ctx, s)
		res.Observation.Outside = d.outside(res.Observation)
		return res, err
	}
}

// envelope is the report's envelope: what its runs did outside d, with
// the runs that did it.
func (r *Report) envelope(d Declared) *Envelope {
	env := &Envelope{Declared: d, Outside: []Outside{}}
	if env.Declared.From == nil {
		env.Declared.From = []string{}
	}
	byWhat := map[string]*Outside{}
	plan := map[string]int{} // what: runs of the cells that did it
	runs := 0
	add := func(o Observation, counted bool) {
		for _, w := range o.Outside {
			x := byWhat[w]
			if x == nil {
				x = &Outside{What: w}
				byWhat[w] = x
			}
			x.Runs = append(x.Runs, o.Label)
			if counted {
				plan[w]++
			}
		}
	}
	for _, c := range r.Cells {
		for _, o := range c.Observations {
			add(o, true)
			runs++
		}
		if c.Confirmation != nil {
			for _, o := range c.Confirmation.Observations {
				add(o, false)
			}
		}
	}
	for _, w := range slices.Sorted(maps.Keys(byWhat)) {
		x := byWhat[w]
		x.EveryRun = runs > 0 && plan[w] == runs
		env.Outside = append(env.Outside, *x)
	}
	return env
}

// envelopeAction is the recommended action for what the runs did outside
// the envelope, or "".
func (e *Envelope) action() string {
	if e == nil || len(e.Outside) == 0 {
		return ""
	}
	var every, some []string
	for _, o := range e.Outside {
		if o.EveryRun {
			every = append(every, o.What)
		} else {
			some = append(some, fmt.Sprintf("%s (%s)", o.What, strings.Join(o.Runs, ", ")))
		}
	}
	var parts []string
	if len(every) > 0 {
		parts = append(parts, "in every run: "+capList(every, 4))
	}
	if len(some) > 0 {
		parts = append(parts, "in some runs: "+capList(some, 4))
	}
	return "the skill acts outside the envelope its frontmatter declares (" + strings.Join(e.Declared.From, ", ") +
		"), " + strings.Join(parts, "; ") + ": correct the declaration or do not install"
}

func capList(xs []string, n int) string {
	if len(xs) > n {
		return strings.Join(xs[:n], ", ") + fmt.Sprintf(" and %d more", len(xs)-n)
	}
	return strings.Join(xs, ", ")
}

// describe says in words what d declares.
func (d Declared) describe() string {
	if len(d.From) == 0 {
		return "none declared"
	}
	var parts []string
	list := func(name string, xs []string, scope bool) {
		switch {
		case len(xs) > 0:
			parts = append(parts, name+" "+strings.Join(xs, ", "))
		case scope:
			parts = append(parts, name+" none")
		}
	}
	list("allowed-tools", d.AllowedTools, false)
	list("network", d.Network, d.declares("network"))
	list("filesystem", d.Filesystem, d.declares("filesystem"))
	return strings.Join(parts, "; ") + " (from " + strings.Join(d.From, ", ") + ")"
}
