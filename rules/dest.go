package rules

import (
	"embed"
	"fmt"
	"net"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// Destination reputation: which hosts are vendors' installers and package
// registries, which are code hosts anyone can publish on, and which receive
// stolen data, host payloads or tunnel out. The lists are data
// (rules/data/*.tsv), each entry with the source that names it.

//go:embed data/*.tsv
var dataFS embed.FS

// A Tier ranks a destination for code fetched from it.
type Tier int

// Tiers, most trusted first.
const (
	TierVendor   Tier = iota // a vendor's installer or a package registry
	TierCodeHost             // a code host anyone can publish on
	TierUnknown              // nothing known
	TierBad                  // raw IP, drop, paste, tunnel, look-alike
)

// A Reputation is what the lists say about a destination.
type Reputation struct {
	Tier Tier
	// Kind says what the destination is ("rustup (Rust)", "paste site",
	// "raw IP address", "look-alike of github.com", ...).
	Kind string
	// Severity is how bad contact alone is (bad destinations only).
	Severity Severity
	// Host is the host judged, Entry the list entry that matched.
	Host, Entry, Source string
	// Plain is set when the URL was fetched without TLS (http://, or no
	// scheme, which curl and wget take as http); Opaque when its path has a
	// random-looking segment (/q0c7ew2ro8l2cfqp). Vendors do neither.
	Plain, Opaque bool
	// Named is set when the skill is about the destination's product: its
	// name (the registrable domain's first label) is a word of the skill's
	// name or description, or of its text three times or more outside
	// URLs and host names (aspire.dev for a skill about Aspire).
	Named bool
}

// urlTraits returns whether a URL is fetched without TLS and whether its
// path holds a random-looking segment.
func urlTraits(u string) (plain, opaque bool) {
	l := strings.ToLower(u)
	plain = strings.HasPrefix(l, "http://") || !strings.Contains(l, "://")
	_, p := hostPath(u)
	for _, seg := range strings.Split(p, "/") {
		seg = strings.TrimSuffix(strings.TrimSuffix(seg, ".sh"), ".py")
		if len(seg) >= 12 && encodedPart(seg) {
			opaque = true
		}
	}
	return plain, opaque
}

type destEntry struct {
	host, path, kind, source string
	sev                      Severity
}

var (
	vendorList  = loadDest("data/vendors.tsv", 4)
	codeHosts   = loadDest("data/codehosts.tsv", 3)
	badList     = loadDest("data/destinations.tsv", 5)
	brandGroups = loadBrands("data/brands.tsv")
)

// loadDest reads one embedded list; a malformed line is a bug in the data
// (TestDestinationData reads every line).
func loadDest(name string, cols int) []destEntry {
	b, err := dataFS.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("rules: read %s: %v", name, err))
	}
	var out []destEntry
	for i, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != cols {
			panic(fmt.Sprintf("rules: %s:%d: %d fields, want %d", name, i+1, len(f), cols))
		}
		e := destEntry{host: strings.ToLower(f[0])}
		switch cols {
		case 3:
			e.kind, e.source = f[1], f[2]
		case 4:
			e.path, e.kind, e.source = f[1], f[2], f[3]
		case 5:
			e.path, e.kind, e.source = f[1], f[2], f[4]
			e.sev = Severity(f[3])
			if e.sev.Rank() == 0 {
				panic(fmt.Sprintf("rules: %s:%d: bad severity %q", name, i+1, f[3]))
			}
		}
		if e.path == "-" {
			e.path = ""
		}
		out = append(out, e)
	}
	return out
}

// A brand is a well-known name's registrable domains and their first
// labels.
type brand struct {
	domains []string
	labels  []string
}

func loadBrands(name string) []brand {
	b, err := dataFS.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("rules: read %s: %v", name, err))
	}
	var out []brand
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ds, _, _ := strings.Cut(line, "\t")
		br := brand{domains: strings.Split(ds, ",")}
		for _, d := range br.domains {
			_, l := registrable(d)
			br.labels = append(br.labels, l)
		}
		out = append(out, br)
	}
	return out
}

func (e destEntry) match(host, p string) bool {
	if host != e.host && !strings.HasSuffix(host, "."+e.host) {
		return false
	}
	return e.path == "" || strings.HasPrefix(p, e.path)
}

// normHost lower-cases a host and drops a port, brackets and a final dot.
func normHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	return strings.TrimSuffix(strings.Trim(h, "[]"), ".")
}

// hostPath splits a URL (or a bare host/path, as curl accepts) into host
// and path.
func hostPath(u string) (string, string) {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	u, _, _ = strings.Cut(u, "#")
	u, _, _ = strings.Cut(u, "?")
	host, p, _ := strings.Cut(u, "/")
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:]
	}
	return normHost(host), "/" + p
}

// ReputationOf judges a destination by host and URL path ("" or "/" when
// unknown).
func ReputationOf(host, urlPath string) Reputation {
	host = normHost(host)
	r := Reputation{Host: host, Tier: TierUnknown, Kind: "unknown host"}
	if host == "" {
		return r
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsLoopback() {
			return Reputation{Host: host, Tier: TierCodeHost, Kind: "loopback"}
		}
		return Reputation{Host: host, Tier: TierBad, Kind: "raw IP address", Severity: Medium}
	}
	if host == "localhost" {
		return Reputation{Host: host, Tier: TierCodeHost, Kind: "loopback"}
	}
	for _, e := range vendorList {
		if e.match(host, urlPath) {
			return Reputation{Host: host, Tier: TierVendor, Kind: e.kind, Entry: e.host + e.path, Source: e.source}
		}
	}
	for _, e := range badList {
		if e.match(host, urlPath) {
			return Reputation{Host: host, Tier: TierBad, Kind: e.kind, Severity: e.sev, Entry: e.host + e.path, Source: e.source}
		}
	}
	for _, e := range codeHosts {
		if e.match(host, "") {
			return Reputation{Host: host, Tier: TierCodeHost, Kind: e.kind, Entry: e.host, Source: e.source}
		}
	}
	if of, ok := lookAlike(host); ok {
		return Reputation{Host: host, Tier: TierBad, Kind: "look-alike of " + of, Severity: Medium, Entry: of,
			Source: "rules/data/brands.tsv"}
	}
	return r
}

// registrable returns the registrable domain of host (eTLD+1 by the public
// suffix list) and its first label.
func registrable(host string) (string, string) {
	d, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		// a public suffix itself (github.io, githubusercontent.com) or a
		// single label
		d = host
	}
	label, _, _ := strings.Cut(d, ".")
	return d, label
}

// lookAlike reports a host whose registrable domain imitates a brand's
// without being one of the brand's: the same name under another suffix, a
// typo (a doubled, dropped or swapped letter), a homoglyph (0 for o, 1 for
// l, rn for m), the name joined to a word by a hyphen, or a brand domain
// used as a prefix of another domain (github.com-cdn.io).
// orgPages reports a registrable domain that is an organisation's pages on
// a code host (NAME.github.io, NAME.gitlab.io): the organisation name is
// held by whoever registered it on the code host, usually the project.
func orgPages(reg string) bool {
	return strings.HasSuffix(reg, ".github.io") || strings.HasSuffix(reg, ".gitlab.io")
}

func lookAlike(host string) (string, bool) {
	reg, label := registrable(host)
	for _, br := range brandGroups {
		own := false
		for _, d := range br.domains {
			if reg == d || host == d || strings.HasSuffix(host, "."+d) {
				own = true
			}
		}
		if own {
			continue
		}
		for i, d := range br.domains {
			if strings.HasPrefix(host, d+".") || strings.HasPrefix(host, d+"-") {
				return d, true
			}
			bl := br.labels[i]
			if len(bl) < 5 {
				continue
			}
			switch {
			case label == bl && orgPages(reg):
				// rust-lang.github.io: a project's own pages under its
				// organisation's name, which the project holds
			case label == bl:
				return d, true
			case strings.HasPrefix(label, bl+"-") || strings.HasSuffix(label, "-"+bl):
				return d, true
			case len(bl) >= 6 && typo(label, bl):
				return d, true
			case label != bl && (glyphs.Replace(label) == bl || glyphsI.Replace(label) == bl):
				return d, true
			}
		}
	}
	return "", false
}

// typo reports s being t with one letter doubled, dropped, or two
// neighbours swapped.
func typo(s, t string) bool {
	switch len(s) - len(t) {
	case 1: // a letter added: only a doubled one counts
		for i := 0; i < len(s); i++ {
			if s[:i]+s[i+1:] == t {
				return i > 0 && s[i] == s[i-1] || i+1 < len(s) && s[i] == s[i+1]
			}
		}
	case -1:
		for i := 0; i < len(t); i++ {
			if t[:i]+t[i+1:] == s {
				return true
			}
		}
	case 0:
		for i := 0; i+1 < len(s); i++ {
			if s[i] != t[i] {
				return s[i] == t[i+1] && s[i+1] == t[i] && s[i+2:] == t[i+2:]
			}
		}
	}
	return false
}

// Homoglyphs: digits and letter pairs that read as another letter.
var (
	glyphs  = strings.NewReplacer("0", "o", "1", "l", "3", "e", "5", "s", "rn", "m", "vv", "w", "cl", "d")
	glyphsI = strings.NewReplacer("0", "o", "1", "i", "3", "e", "5", "s", "rn", "m", "vv", "w", "cl", "d")
)
