package rules

import (
	"fmt"
	"net"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Persistence surfaces are data (rules/data/persistence.tsv): a glob, its
// location class, the settings that make a write there run or fetch
// code, and the source documenting it. The rules take their path sets
// from it by class.

// A persistSurface is one row of persistence.tsv.
type persistSurface struct {
	glob, class string
	keys        []string // nil: any content
	source      string
}

// persistSurfaces is the parsed table (the classes' rules are named in its
// header and in persistRules and configExecRule).
var persistSurfaces = mustPersistSurfaces()

func mustPersistSurfaces() []persistSurface {
	b, err := dataFS.ReadFile("data/persistence.tsv")
	if err != nil {
		panic(err)
	}
	ss, err := parsePersistSurfaces(string(b))
	if err != nil {
		panic(err)
	}
	return ss
}

// parsePersistSurfaces reads the table: four tab-separated fields a line,
// comments and blank lines skipped.
func parsePersistSurfaces(text string) ([]persistSurface, error) {
	var out []persistSurface
	for i, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 || f[0] == "" || f[1] == "" || f[2] == "" || strings.TrimSpace(f[3]) == "" {
			return nil, fmt.Errorf("persistence.tsv line %d: want glob, class, keys and source", i+1)
		}
		s := persistSurface{glob: f[0], class: f[1], source: f[3]}
		if f[2] != "*" {
			for _, k := range strings.Split(f[2], ",") {
				if k != "" {
					s.keys = append(s.keys, k)
				}
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// persistPaths returns the globs of the classes given.
func persistPaths(classes ...string) pathSet {
	var ps pathSet
	for _, s := range persistSurfaces {
		for _, c := range classes {
			if s.class == c {
				ps = append(ps, s.glob)
			}
		}
	}
	return ps
}

// surfacesAt returns the surfaces of the classes given whose glob matches
// p, with their keys.
func (c *ctx) surfacesAt(p string, classes ...string) []persistSurface {
	var out []persistSurface
	for _, s := range persistSurfaces {
		for _, cl := range classes {
			if s.class != cl {
				continue
			}
			if _, ok := c.matchPath(pathSet{s.glob}, p); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// startupOnly says whether every surface is code an interpreter runs at
// start (.pth files, sitecustomize, usercustomize).
func startupOnly(ss []persistSurface) bool {
	if len(ss) == 0 {
		return false
	}
	for _, s := range ss {
		if s.class != "interpreter-startup" {
			return false
		}
	}
	return true
}

// configExecRule is SBX-PERSIST-009: a tool's configuration that names a
// command it runs, where a package manager fetches code from (and which
// registry gets the user's token), a client's network defaults, or code an
// interpreter runs at every start. A write counts when its text holds one
// of the surface's keys; the lines with them are rated like a shell rc
// line, and a package source or token sent to a raw IP or a known drop is
// harm.
func configExecRule() {
	classes := []string{"tool-exec", "package-source", "network-config", "interpreter-startup"}
	def(Rule{ID: "SBX-PERSIST-009", Family: "persistence", Title: "Configuration that runs or fetches code modified",
		Severity: High, Confidence: ConfMedium, Technique: "T1546", Harm: HarmPersistence,
		Help: "A write to a configuration file a tool reads and acts on later: an ssh ProxyCommand or " +
			"LocalCommand, an AWS credential_process, npm node-options or script-shell, a kubeconfig exec " +
			"plugin, a docker credential helper, a package index or registry (pip.conf, .npmrc, with the " +
			"token it is sent), curl's or wget's defaults, Python's usercustomize, sitecustomize and .pth " +
			"files. The surfaces are data (rules/data/persistence.tsv, with sources). A write counts only " +
			"when it sets one of those keys; it is harm when what it runs fetches or decodes code or sits " +
			"in a hidden or temporary place, or when a package source or token goes to a raw IP or a drop " +
			"service. Failed attempts count too."},
		func(c *ctx, r *Rule) {
			for _, f := range c.files {
				var target string
				switch f.op {
				case opWrite:
					target = f.path
				case opRename:
					target = f.newPath
				default:
					continue
				}
				if target == "" || c.underSkill(target) {
					continue
				}
				if _, ok := c.matchPath(configExecPaths, target); !ok {
					continue
				}
				surfaces := c.surfacesAt(target, classes...)
				texts := c.writtenText(f.ev, target)
				if startupOnly(surfaces) && !c.whole[target] && !c.callNames(f.ev, target) {
					// What an interpreter runs at start is the file's own
					// import lines: a command line that neither names the
					// file nor was copied out with it (python3 -m venv,
					// then python -c "import pandas") says nothing of them.
					texts = c.heads[target]
				}
				texts = append(texts, c.referencedHeads(texts)...)
				lines, source := keyLines(texts, surfaces)
				if len(lines) == 0 {
					continue // a write that sets nothing that runs
				}
				msg := "write to " + target + " setting " + capString(oneLine(lines[0]), 80) + failedNote(f.failed)
				if bad := badPackageSource(lines); bad != "" && source == "package-source" {
					c.hitAs(r, target, High, ConfHigh, r.Harm, msg+": "+bad, f.ev)
					continue
				}
				if source == "package-source" {
					if vendorSourcesOnly(lines) {
						c.hitAs(r, target, Low, ConfMedium, r.Harm, msg+" (a known registry)", f.ev)
						continue
					}
					c.hit(r, target, msg, f.ev)
					continue
				}
				if source == "network-config" && rePersistCode.FindString(strings.Join(lines, "\n")) == "" {
					// a proxy or default upload sees every later request
					c.hit(r, target, msg, f.ev)
					continue
				}
				c.ratePersistence(r, target, msg, lines, f.ev)
			}
		})
}

// keyLines returns the lines of texts that set a key of one of surfaces
// (every line for a surface without keys), and the class of the first
// surface that matched.
func keyLines(texts []string, surfaces []persistSurface) ([]string, string) {
	var out []string
	class := ""
	for _, s := range surfaces {
		for _, t := range texts {
			// a command's printf or echo -e writes its lines as \n
			for _, line := range strings.Split(strings.ReplaceAll(t, `\n`, "\n"), "\n") {
				l := strings.TrimSpace(line)
				if l == "" || strings.HasPrefix(l, "#") {
					continue
				}
				if s.keys == nil || slices.ContainsFunc(s.keys, func(k string) bool { return keyIn(l, k) }) {
					if !slices.Contains(out, l) {
						out = append(out, l)
					}
					if class == "" {
						class = s.class
					}
				}
			}
		}
	}
	return out, class
}

// keyIn reports whether line sets key: the key at the start of the line or
// after a space, quote, brace, dot or dash (a command line's
// "--node-options", JSON's "credsStore", INI's "index-url ="), any case.
func keyIn(line, key string) bool {
	l, k := strings.ToLower(line), strings.ToLower(key)
	for i := 0; ; {
		j := strings.Index(l[i:], k)
		if j < 0 {
			return false
		}
		j += i
		if j == 0 || strings.ContainsRune(" \t\"'{.-:/=", rune(l[j-1])) {
			return true
		}
		i = j + 1
	}
}

var reSourceHost = regexp.MustCompile(`(?i)(?:https?:)?//([a-z0-9.-]+|\[[0-9a-f:]+\])(?::\d+)?`)

// badPackageSource names a package index, registry or token host in lines
// that is a raw IP address or a destination of the drop lists, or "".
func badPackageSource(lines []string) string {
	for _, l := range lines {
		for _, m := range reSourceHost.FindAllStringSubmatch(l, -1) {
			host := strings.Trim(m[1], "[]")
			if net.ParseIP(host) != nil {
				return "package source at a raw IP address " + host
			}
			if rep := ReputationOf(host, "/"); rep.Tier == TierBad {
				return "package source at " + host + " (" + rep.Kind + ")"
			}
		}
	}
	return ""
}

// vendorSourcesOnly reports lines whose every host is a known registry.
func vendorSourcesOnly(lines []string) bool {
	n := 0
	for _, l := range lines {
		for _, m := range reSourceHost.FindAllStringSubmatch(l, -1) {
			n++
			if ReputationOf(strings.Trim(m[1], "[]"), "/").Tier != TierVendor {
				return false
			}
		}
	}
	return n > 0
}

// referencedHeads returns the written heads of files the trace changed
// whose name appears in texts: the project script a git hook or an rc
// line calls, judged with it (one level, names of 4 bytes or more).
func (c *ctx) referencedHeads(texts []string) []string {
	var out []string
	for p, hs := range c.heads {
		b := path.Base(p)
		if len(b) < 4 {
			continue
		}
		if slices.ContainsFunc(texts, func(t string) bool { return strings.Contains(t, b) }) {
			out = append(out, hs...)
		}
	}
	slices.Sort(out)
	return out
}

// A credCommand is one row of credential-commands.tsv: a program and the
// words of its argv that make it print a credential.
type credCommand struct {
	prog   string
	words  []string
	prints string
}

var credCommands = mustCredCommands()

func mustCredCommands() []credCommand {
	b, err := dataFS.ReadFile("data/credential-commands.tsv")
	if err != nil {
		panic(err)
	}
	var out []credCommand
	for i, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 || f[0] == "" || f[2] == "" || f[3] == "" {
			panic(fmt.Sprintf("credential-commands.tsv line %d: want program, words, what it prints, source", i+1))
		}
		cc := credCommand{prog: f[0], prints: f[2]}
		if f[1] != "-" {
			cc.words = strings.Fields(f[1])
		}
		out = append(out, cc)
	}
	return out
}

// printsCredential returns what argv prints when the program executed
// (base name prog) prints a credential with it, or "".
func printsCredential(prog string, argv []string) string {
	for _, cc := range credCommands {
		if cc.prog != prog {
			continue
		}
		i := 1
		ok := true
		for _, w := range cc.words {
			for i < len(argv) && !strings.HasPrefix(argv[i], w) && !strings.Contains(argv[i], "."+w) {
				i++
			}
			if i >= len(argv) {
				ok = false
				break
			}
			i++
		}
		if ok {
			return cc.prints
		}
	}
	return ""
}
