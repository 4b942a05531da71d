package rules

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/sandboxctl/sandboxctl/trace"
)

// Package rules read the jail's package events (trace.PackageFetch): the
// registries answer npm, pip, uv and the like with harmless stubs, so an
// install completes and is on record, but the real package, and its
// install scripts, never ran. An install from a registry the public one or
// a private mirror over TLS is not harm: suspicious at most. A package
// archive fetched to install from an untrusted destination is code from it
// run, as curl | sh would be (SBX-PKG-004).

var (
	//go:embed data/popular-npm.txt
	popularNPMText string
	//go:embed data/popular-pypi.txt
	popularPyPIText string

	popularPkgs = map[string][]string{"npm": readNameList(popularNPMText), "pypi": readNameList(popularPyPIText)}

	//go:embed data/confusables.txt
	confusablesText string
	confusables     = readConfusables(confusablesText)

	// popularSkeletons maps each popular name's skeleton to the name.
	popularSkeletons = func() map[string]map[string]string {
		m := map[string]map[string]string{}
		for eco, list := range popularPkgs {
			m[eco] = map[string]string{}
			for _, p := range list {
				if _, dup := m[eco][pkgKey(eco, skeleton(p))]; !dup {
					m[eco][pkgKey(eco, skeleton(p))] = p
				}
			}
		}
		return m
	}()
)

// readConfusables reads Unicode's confusables.txt format (SOURCE ;
// TARGET ; type # comment, code points in hex) into source → target.
func readConfusables(text string) map[rune]string {
	m := map[rune]string{}
	for _, l := range strings.Split(text, "\n") {
		l, _, _ = strings.Cut(l, "#")
		f := strings.Split(l, ";")
		if len(f) < 2 {
			continue
		}
		src, err := strconv.ParseUint(strings.TrimSpace(f[0]), 16, 32)
		if err != nil {
			continue
		}
		var tgt strings.Builder
		for _, h := range strings.Fields(f[1]) {
			if r, err := strconv.ParseUint(h, 16, 32); err == nil {
				tgt.WriteRune(rune(r))
			}
		}
		m[rune(src)] = tgt.String()
	}
	return m
}

// skeleton is a name as it looks: UTS #39's skeleton (NFD, each
// confusable character replaced by its prototype from confusables.txt,
// NFD again) taken once more after lower-casing, since package names are
// compared without case: "react-devtooIs" (a capital I) and "g00gle" read
// as "react-devtools" and "google", "rnongoose" as "mongoose", a Cyrillic
// "а" as a Latin "a".
func skeleton(s string) string {
	mapOnce := func(s string) string {
		var b strings.Builder
		for _, r := range norm.NFD.String(s) {
			if t, ok := confusables[r]; ok {
				b.WriteString(t)
			} else {
				b.WriteRune(r)
			}
		}
		return norm.NFD.String(b.String())
	}
	return mapOnce(strings.ToLower(mapOnce(s)))
}

// homoglyphOf returns the popular package name is written like, with
// look-alike characters in place of some of its own, or "".
func homoglyphOf(eco, name string) string {
	k := pkgKey(eco, name)
	if len(k) < 4 {
		return ""
	}
	pop, ok := popularSkeletons[eco][pkgKey(eco, skeleton(name))]
	if !ok || pop == k {
		return ""
	}
	return pop
}

// readNameList reads one name a line, skipping blank lines and # comments.
func readNameList(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, strings.ToLower(l))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

var pyRunes = regexp.MustCompile(`[-_.]+`)

// pkgKey is a name as its ecosystem compares them (PEP 503 for PyPI).
func pkgKey(eco, name string) string {
	name = strings.ToLower(name)
	if eco == "pypi" {
		return pyRunes.ReplaceAllString(name, "-")
	}
	return name
}

// lookalike returns the popular package name is one edit away from
// (insertion, deletion, substitution, or two neighbours swapped), or "".
// Names shorter than 4 characters and popular names themselves are left
// alone.
func lookalike(eco, name string) string {
	k := pkgKey(eco, name)
	list := popularPkgs[eco]
	if len(k) < 4 {
		return ""
	}
	if _, found := slices.BinarySearch(list, k); found {
		return ""
	}
	for _, p := range list {
		if len(p) >= 4 && oneEdit(k, p) {
			return p
		}
	}
	return ""
}

// oneEdit reports whether a and b differ by exactly one insertion,
// deletion, substitution or transposition of neighbours.
func oneEdit(a, b string) bool {
	if a == b {
		return false
	}
	la, lb := len(a), len(b)
	switch {
	case la == lb:
		i := 0
		for i < la && a[i] == b[i] {
			i++
		}
		if a[i+1:] == b[i+1:] {
			return true // substitution
		}
		return i+1 < la && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	case la == lb+1:
		a, b = b, a
		fallthrough
	case lb == la+1:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		return a[i:] == b[i+1:]
	}
	return false
}

func pkgRules() {
	def(Rule{ID: "SBX-PKG-001", Family: "execution", Title: "Package installed from a registry (stub served)",
		Severity: Info, Confidence: ConfHigh, Technique: "T1195.002",
		Help: "The skill fetched packages from npm or PyPI (or a registry it named). The jail answers " +
			"registries with harmless stub packages so the flow goes on: the real package, and its " +
			"install scripts, were not run, so what they would have done is not in this trace."},
		func(c *ctx, r *Rule) {
			for i := range c.events {
				e := &c.events[i]
				if p, ok := e.Data.(*trace.PackageFetch); ok {
					c.hit(r, p.Ecosystem+":"+p.Name, fmt.Sprintf("%s package %s fetched from %s (stub served: the real package and its install scripts were not run)",
						p.Ecosystem, p.Name, p.Registry), e)
				}
			}
		})
	def(Rule{ID: "SBX-PKG-002", Family: "initial-access", Title: "Package fetched from a non-default registry",
		Severity: Medium, Confidence: ConfMedium, Technique: "T1195.002",
		Help: "A package was requested from a registry other than the ecosystem's public one " +
			"(registry.npmjs.org, pypi.org) or a well-known public mirror (rules/data/vendors.tsv): a private " +
			"registry, or one the skill's author controls " +
			"serving code that never went through the public registry's checks."},
		func(c *ctx, r *Rule) {
			for i := range c.events {
				e := &c.events[i]
				if p, ok := e.Data.(*trace.PackageFetch); ok && !p.Default && ReputationOf(normHost(p.Registry), "/").Tier != TierVendor {
					c.hit(r, p.Ecosystem+":"+p.Registry+":"+p.Name, fmt.Sprintf("%s package %s fetched from %s, not the public registry",
						p.Ecosystem, p.Name, p.Registry), e)
				}
			}
		})
	def(Rule{ID: "SBX-PKG-004", Family: "execution", Title: "Package installed from an untrusted registry",
		Severity: Critical, Confidence: ConfHigh, Technique: "T1195.002", Harm: HarmRemoteCode,
		Help: "A package manager downloaded a package archive (a wheel, an sdist, an npm tarball) to install " +
			"it, from a registry or by URL (pip install https://host/pkg.tar.gz, seen by its User-Agent), from a " +
			"destination that is untrusted: a raw IP, a tunnel, drop or paste service, a " +
			"look-alike domain, or an unknown host reached over plain HTTP, at a random-looking path, or that " +
			"the skill is not about (its name is not a word of the skill's name or description). An " +
			"installer runs what it installs (install scripts, then every import), so this is code from an " +
			"untrusted destination executed, as curl | sh from it would be; the jail served a harmless stub, " +
			"so the real package's behaviour is not in the trace. A registry over TLS of the company the " +
			"skill is about, or a well-known mirror, is SBX-PKG-002 (suspicious) or nothing."},
		func(c *ctx, r *Rule) {
			for i := range c.events {
				e := &c.events[i]
				var p *trace.PackageFetch
				switch d := e.Data.(type) {
				case *trace.PackageFetch:
					p = d
				case *trace.HTTPExchange:
					// pip install https://host/x.tar.gz: the installer fetches an
					// archive by URL, no registry involved
					p = installerDownload(d)
				}
				if p == nil || p.Default || p.What == "metadata" {
					continue
				}
				host, path := hostPath(p.URL)
				if host == "" {
					host, path = normHost(p.Registry), "/"
				}
				rep := ReputationOf(host, path)
				rep.Plain, rep.Opaque = urlTraits(p.URL)
				if rep.Tier == TierUnknown && !rep.Plain && !rep.Opaque {
					rep.Named = c.namedBySkill(rep.Host)
				}
				// As for code piped into a shell (docs/verdicts.md): an unknown
				// registry is trusted only over TLS, at a readable path, when
				// it is the product or company the skill is about.
				if rep.Tier != TierBad && (rep.Tier != TierUnknown || !rep.Plain && !rep.Opaque && rep.Named) {
					continue
				}
				why := rep.Kind
				switch {
				case rep.Tier == TierUnknown && rep.Plain:
					why = "unknown host over plain HTTP"
				case rep.Tier == TierUnknown && rep.Opaque:
					why = "unknown host, random-looking path"
				case rep.Tier == TierUnknown:
					why = "unknown host the skill is not about"
				}
				c.hit(r, p.Ecosystem+":"+p.Registry+":"+p.Name, fmt.Sprintf("%s package %s %s downloaded for install from %s (%s)",
					p.Ecosystem, p.Name, p.What, p.Registry, why), e)
			}
		})
	def(Rule{ID: "SBX-PKG-003", Family: "initial-access", Title: "Package name one edit away from a popular package",
		Severity: High, Confidence: ConfMedium, Technique: "T1195.002",
		Help: "A package whose name is one typo away from a popular one (a letter added, dropped, changed " +
			"or swapped), or that is written like one with look-alike characters (a capital I or a 1 for an l, " +
			"0 for o, rn for m, vv for w, a Cyrillic letter for a Latin one): the shape of typosquatting. The " +
			"popular names are data (rules/data/popular-*.txt, source named there), and so are the look-alike " +
			"characters (rules/data/confusables.txt, from Unicode's confusables.txt)."},
		func(c *ctx, r *Rule) {
			for i := range c.events {
				e := &c.events[i]
				if p, ok := e.Data.(*trace.PackageFetch); ok {
					if pop := homoglyphOf(p.Ecosystem, p.Name); pop != "" {
						c.hit(r, p.Ecosystem+":"+p.Name, fmt.Sprintf("%s package %s is written like the popular %s with look-alike characters (fetched from %s)",
							p.Ecosystem, p.Name, pop, p.Registry), e)
					} else if pop := lookalike(p.Ecosystem, p.Name); pop != "" {
						c.hit(r, p.Ecosystem+":"+p.Name, fmt.Sprintf("%s package %s is one edit away from the popular %s (fetched from %s)",
							p.Ecosystem, p.Name, pop, p.Registry), e)
					}
				}
			}
		})
}

// installerClients are the User-Agent products of package managers.
var installerClients = map[string]string{"pip": "pypi", "uv": "pypi", "poetry": "pypi", "pdm": "pypi", "npm": "npm",
	"pnpm": "npm", "yarn": "npm", "bun": "npm"}

// installerDownload returns an HTTP request a package manager made for a
// package archive by URL (pip install https://host/pkg.tar.gz), as a
// package fetch from that host, or nil.
func installerDownload(x *trace.HTTPExchange) *trace.PackageFetch {
	ua := ""
	if v := x.Headers["User-Agent"]; len(v) > 0 {
		ua = strings.ToLower(v[0])
	}
	prod, _, _ := strings.Cut(ua, "/")
	eco, ok := installerClients[prod]
	if !ok || x.Method != "GET" || strings.HasPrefix(x.Response, "pypi:") || strings.HasPrefix(x.Response, "npm:") {
		return nil // the registry stub answered: its package event says it
	}
	u := exchangeURL(x)
	_, p := hostPath(u)
	base := p[strings.LastIndexByte(p, '/')+1:]
	what := ""
	switch {
	case strings.HasSuffix(base, ".whl"):
		what = "wheel"
	case strings.HasSuffix(base, ".tar.gz"), strings.HasSuffix(base, ".zip"), strings.HasSuffix(base, ".tar.bz2"):
		what = "sdist"
	case strings.HasSuffix(base, ".tgz"):
		what = "tarball"
	default:
		return nil
	}
	host := normHost(x.Host)
	def := ReputationOf(host, p).Tier == TierVendor
	return &trace.PackageFetch{Ecosystem: eco, Name: base, Registry: host, Default: def, What: what, URL: u}
}
