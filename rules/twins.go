package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Twin traces (docs/sandbox.md, "Twin traces"). A skill that encrypts,
// compresses or splits what it sends takes token matching away: the bytes
// that leave hold no planted secret in any encoding a detector can read. So
// the skill runs again, in sandboxes equal in everything but the secrets:
// twins with the original's secrets, and a twin whose every secret has
// another value and a greater length. What leaves is cut into egress units
// (a request's URL, headers or body, the names asked of one DNS zone, a raw
// flow's bytes, a mail) and compared unit by unit: a unit that is the same
// in every run with the original's secrets and differs in the run with
// other secrets depends on the secrets, whatever the cipher. A unit that
// differs between runs with the same secrets is noise (a timestamp, a
// nonce), reported as such and never as proof.

// An EgressUnit is one part of what left a sandbox toward one destination.
type EgressUnit struct {
	Channel string `json:"channel"` // "http", "dns", "tcp", "udp", "tls", "smtp", "ws", "git"
	// Part is which part of the exchange: "url", "headers", "body"
	// (HTTP), "names" (the DNS names asked of one zone, in order),
	// "payload" (a raw flow, a WebSocket message), "sni", "message".
	Part string `json:"part"`
	// Dest is the destination as the packets went: the name the jail's
	// resolver gave the address connected to, or the address and port
	// (the addresses a jail gives names vary between runs; names do not).
	// For DNS it is the zone (the registrable domain) asked.
	Dest string `json:"dest"`
	// Index numbers the units of the same channel, destination and part,
	// in order of time.
	Index int `json:"index"`
	// Size is how many bytes the part held, Digest their SHA-256; Count,
	// for DNS, how many names.
	Size   int64  `json:"size"`
	Digest string `json:"digest,omitempty"`
	Count  int    `json:"count,omitempty"`
	// Where is for people: the URL, the names, the address.
	Where string `json:"where,omitempty"`
	// Seq is the event the unit comes from (the first, for DNS).
	Seq int64 `json:"seq"`
	// claimed says Dest is only the name the client claimed (a Host, an
	// SNI) on a connection to an address the jail gave no name: never the
	// secrets' issuer.
	claimed bool
}

func (u EgressUnit) key() string {
	return fmt.Sprintf("%s|%s|%s|%d", u.Channel, u.Dest, u.Part, u.Index)
}

func (u EgressUnit) group() string { return u.Channel + "|" + u.Dest + "|" + u.Part }

func digestOf(b ...[]byte) string {
	h := sha256.New()
	for _, p := range b {
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Egress cuts a timeline's network events into egress units.
func Egress(events []trace.Event) []EgressUnit {
	names := jailNames(events)
	var out []EgressUnit
	index := map[string]int{}
	add := func(u EgressUnit) {
		g := u.group()
		u.Index = index[g]
		index[g]++
		out = append(out, u)
	}
	type zone struct {
		names []string
		seq   int64
	}
	zones := map[string]*zone{}
	var zoneOrder []string
	for i := range events {
		e := &events[i]
		switch d := e.Data.(type) {
		case *trace.HTTPExchange:
			dest, claimed := destOfClaimed(d.DstIP, d.DstPort, names, d.SNI, normHost(d.Host), urlHost(d.URL))
			add(EgressUnit{Channel: "http", Part: "url", Dest: dest, Size: int64(len(d.Method) + 1 + len(d.URL)),
				Digest: digestOf([]byte(d.Method+" "), []byte(d.URL)), Where: d.Method + " " + d.URL, Seq: e.Seq, claimed: claimed})
			h := []byte(headerText(d.Headers))
			add(EgressUnit{Channel: "http", Part: "headers", Dest: dest, Size: int64(len(h)), Digest: digestOf(h),
				Where: d.Method + " " + d.URL, Seq: e.Seq, claimed: claimed})
			if d.BodySize > 0 {
				dg := d.Digest
				if dg == "" && !d.BodyTruncated {
					dg = digestOf(d.Body)
				}
				add(EgressUnit{Channel: "http", Part: "body", Dest: dest, Size: d.BodySize, Digest: dg,
					Where: d.Method + " " + d.URL, Seq: e.Seq, claimed: claimed})
			}
		case *trace.DNSQuery:
			name := strings.ToLower(strings.TrimSuffix(d.Name, "."))
			if name == "" {
				continue
			}
			z, _ := registrable(name)
			if zones[z] == nil {
				zones[z] = &zone{seq: e.Seq}
				zoneOrder = append(zoneOrder, z)
			}
			zones[z].names = append(zones[z].names, d.QType+" "+name)
		case *trace.Connection:
			if d.Size == 0 || d.Protocol == "http" {
				continue // an HTTP flow is compared by its exchanges
			}
			dg := d.Digest
			if dg == "" && !d.Truncated {
				dg = digestOf(d.FirstBytes)
			}
			add(EgressUnit{Channel: d.Proto, Part: "payload", Dest: destOf(d.DstIP, d.DstPort, names, d.Name),
				Size: d.Size, Digest: dg, Where: fmt.Sprintf("%s %s:%d", d.Proto, d.DstIP, d.DstPort), Seq: e.Seq})
		case *trace.TLSHello:
			if d.SNI == "" && len(d.ALPN) == 0 {
				continue
			}
			v := d.SNI + "|" + strings.Join(d.ALPN, ",")
			add(EgressUnit{Channel: "tls", Part: "sni", Dest: destOf(d.DstIP, d.DstPort, names, d.SNI), Size: int64(len(v)),
				Digest: digestOf([]byte(v)), Where: d.SNI, Seq: e.Seq})
		case *trace.Mail:
			dg := d.Digest
			if dg == "" && !d.Truncated {
				dg = digestOf(d.Data)
			}
			env := d.From + "|" + strings.Join(d.To, ",") + "|" + d.AuthUser + "|" + d.AuthSecret
			add(EgressUnit{Channel: "smtp", Part: "message", Dest: destOf(d.DstIP, d.DstPort, names, d.Name),
				Size: d.Size + int64(len(env)), Digest: digestOf([]byte(env), []byte(dg)),
				Where: "mail to " + strings.Join(d.To, ", "), Seq: e.Seq})
		case *trace.WSMessage:
			dg := d.Digest
			if dg == "" && !d.Truncated {
				dg = digestOf(d.Payload)
			}
			add(EgressUnit{Channel: "ws", Part: "payload", Dest: destOf(d.DstIP, d.DstPort, names, urlHost(d.URL)), Size: d.Size,
				Digest: dg, Where: d.URL, Seq: e.Seq})
		case *trace.GitExchange:
			if d.Service != "git-receive-pack" || d.Phase != "rpc" {
				continue
			}
			add(EgressUnit{Channel: "git", Part: "pack", Dest: urlHost(d.Repo), Size: d.PackSize,
				Digest: digestOf(d.Content, []byte(strings.Join(d.Refs, "\n"))), Where: d.URL, Seq: e.Seq})
		}
	}
	for _, z := range zoneOrder {
		zz := zones[z]
		// The names as a set with their counts, not in the order asked: a
		// resolver asks A and AAAA at once and their order is a race
		// between runs. What a name carries is in the name.
		sorted := slices.Sorted(slices.Values(zz.names))
		joined := strings.Join(sorted, "\n")
		add(EgressUnit{Channel: "dns", Part: "names", Dest: z, Size: int64(len(joined)), Count: len(zz.names),
			Digest: digestOf([]byte(joined)), Where: capString(strings.Join(zz.names, ", "), 200), Seq: zz.seq})
	}
	return out
}

// jailNames maps each address the jail gave a name (its resolver's
// answers, the targets of proxy CONNECTs) to the name.
func jailNames(events []trace.Event) map[string]string {
	m := map[string]string{}
	for ip, ns := range newJailAddrs(events) {
		m[ip] = ns[0]
	}
	return m
}

// destOf names a destination so that it compares between runs: the name
// the jail's resolver gave ip in this trace, else the first name the
// connection was known by (the name the sink recorded, the SNI, the Host),
// else ip:port. The addresses the jail gives names vary from run to run;
// the names a skill asks for, and the raw addresses it dials, do not.
func destOf(ip string, port int, names map[string]string, known ...string) string {
	d, _ := destOfClaimed(ip, port, names, known...)
	return d
}

// destOfClaimed is destOf, and whether the name is only what the client
// claimed (a Host, an SNI) on a connection to an address the jail gave no
// name: a name to compare runs by, never where the packets went.
func destOfClaimed(ip string, port int, names map[string]string, known ...string) (string, bool) {
	if a := net.ParseIP(strings.Trim(ip, "[]")); a != nil {
		if n := names[a.String()]; n != "" {
			return n, false
		}
	}
	for _, k := range known {
		if k != "" && net.ParseIP(k) == nil {
			return strings.ToLower(k), ip != ""
		}
	}
	return fmt.Sprintf("%s:%d", ip, port), false
}

// urlHost is the host of a URL, as the rules read one (hostPath).
func urlHost(u string) string {
	h, _ := hostPath(u)
	return h
}

// A TwinRun is one trace of a twin set: its timeline and its secrets.
type TwinRun struct {
	Name     string
	Events   []trace.Event
	Canaries *canary.Set
}

// A TwinSet is the runs CompareTwins compares: the original trace (real
// randomness), twins with the original's secrets (Same; the first is the
// reference the others control) and twins with other secrets (Other),
// everything else equal.
type TwinSet struct {
	Original TwinRun
	Same     []TwinRun
	Other    []TwinRun
}

// A Dependency is an egress unit that moved with the secrets.
type Dependency struct {
	Unit EgressUnit `json:"unit"` // as in the reference run
	// How: "bytes" (the same in every run with the original's secrets,
	// other bytes with other secrets), "length" (the length moved), "count"
	// (more or fewer units went there).
	How string `json:"how"`
	// Size is the reference's size and OtherSize the other run's; for
	// "count", the numbers of units.
	Size      int64 `json:"size"`
	OtherSize int64 `json:"other_size"`
	// Units is how many units of the group moved (1 for "count").
	Units int `json:"units"`
	// Issuer is set when the destination is where the secrets that could
	// have moved it are meant to go (an AWS key's signature to AWS).
	Issuer string `json:"issuer,omitempty"`
}

// TwinResult is the comparison of a twin set.
type TwinResult struct {
	Units     int          `json:"units"` // egress units of the reference run
	Dependent []Dependency `json:"dependent,omitempty"`
	// Noisy are units that also differ between runs with the same
	// secrets: not proof of anything.
	Noisy []EgressUnit `json:"noisy,omitempty"`
	// NeedControl is set when a unit differed in the other run but only
	// a control twin (a second run with the original's secrets) could
	// tell whether it is noise.
	NeedControl bool `json:"need_control,omitempty"`
	// NeedConfirm is set when a dependency on a destination that is not
	// the secrets' issuer rests on one run with other secrets or on no
	// control twin: chance (a request that timed out in one run and not
	// in another) is ruled out by a second run with other secrets and a
	// control twin, and only what holds against both is proof.
	NeedConfirm bool `json:"need_confirm,omitempty"`
	// Grew is how many characters the secrets of the other run grew, in
	// all, over the planted secrets that were read.
	Grew int `json:"grew,omitempty"`
}

// CompareTwins compares the egress of a twin set, unit by unit. Units of
// one channel, destination and part form a group: a group to which more or
// fewer units went with the other secrets moved by count; otherwise each
// unit is compared, and the group reported once, by its first unit that
// moved (Dependency.Units says how many did). With more than one run with
// other secrets, a destination depends on the secrets only when it does
// against every one of them: a difference that one run with other secrets
// shows and another does not is chance (a request that timed out, a retry),
// not the secrets.
func CompareTwins(set TwinSet) TwinResult {
	var res TwinResult
	if len(set.Same) == 0 || len(set.Other) == 0 {
		return res
	}
	c := newTwinComparer(set)
	res.Units = len(c.ref)
	per := make([]otherComparison, len(set.Other))
	for i, other := range set.Other {
		per[i] = c.against(other)
	}
	noisy := map[string]bool{}
	for _, p := range per {
		res.NeedControl = res.NeedControl || p.needControl
		for _, u := range p.noisy {
			if !noisy[u.group()] {
				noisy[u.group()] = true
				res.Noisy = append(res.Noisy, u)
			}
		}
	}
	for _, d := range per[0].deps {
		if !slices.ContainsFunc(per[1:], func(p otherComparison) bool { return !p.dests[d.Unit.Dest] }) {
			res.Dependent = append(res.Dependent, d)
		}
	}
	// One run with other secrets, or no control twin, leaves chance
	// open: a dependency that would make the trace malicious is confirmed
	// by a second run with other secrets and a control twin
	// (TwinResult.NeedConfirm).
	if len(set.Other) < 2 || len(set.Same) < 2 {
		res.NeedConfirm = slices.ContainsFunc(res.Dependent, func(d Dependency) bool { return d.Issuer == "" })
	}
	return res
}

// twinComparer holds what every comparison of a twin set against one of its
// runs with other secrets shares: the reference run's egress and the
// stability of the runs with the original's secrets.
type twinComparer struct {
	ref        []EgressUnit
	orig       map[string]EgressUnit
	origCount  map[string]int
	refCount   map[string]int
	controls   []map[string]EgressUnit
	ctrlCounts []map[string]int
	issuers    twinIssuers
}

func newTwinComparer(set TwinSet) *twinComparer {
	c := &twinComparer{
		ref:       Egress(set.Same[0].Events),
		orig:      byKey(Egress(set.Original.Events)),
		origCount: groupCounts(set.Original.Events),
		refCount:  groupCounts(set.Same[0].Events),
		issuers:   issuerHosts(set.Same[0].Canaries),
	}
	for _, r := range set.Same[1:] {
		c.controls = append(c.controls, byKey(Egress(r.Events)))
		c.ctrlCounts = append(c.ctrlCounts, groupCounts(r.Events))
	}
	return c
}

// otherComparison is the comparison against one run with other secrets.
type otherComparison struct {
	deps        []Dependency
	dests       map[string]bool // destinations of deps
	noisy       []EgressUnit
	needControl bool
}

// countStable says whether the runs with the original's secrets agree on
// how many units went to group g: the control twins (the same randomness)
// when there are any, else the original trace.
func (c *twinComparer) countStable(g string) bool {
	if len(c.controls) == 0 {
		return c.origCount[g] == c.refCount[g]
	}
	for _, cc := range c.ctrlCounts {
		if cc[g] != c.refCount[g] {
			return false
		}
	}
	return true
}

// unitStable says whether the runs with the original's secrets agree on
// u's bytes and on its size.
func (c *twinComparer) unitStable(u EgressUnit) (byteStable, sizeStable bool) {
	if len(c.controls) == 0 {
		c0, ok := c.orig[u.key()]
		return ok && c0.Digest == u.Digest && u.Digest != "", ok && c0.Size == u.Size
	}
	byteStable, sizeStable = true, true
	for _, m := range c.controls {
		x, ok := m[u.key()]
		byteStable = byteStable && ok && x.Digest == u.Digest && u.Digest != ""
		sizeStable = sizeStable && ok && x.Size == u.Size
	}
	return byteStable, sizeStable
}

// against compares the reference run with one run with other secrets.
func (c *twinComparer) against(other TwinRun) otherComparison {
	res := otherComparison{dests: map[string]bool{}}
	oEgress := Egress(other.Events)
	ou := byKey(oEgress)
	otherCount := groupCounts(other.Events)
	done := map[string]int{} // group -> index in res.deps, +1
	noisy := map[string]bool{}
	markNoisy := func(u EgressUnit) {
		noisy[u.group()] = true
		res.noisy = append(res.noisy, u)
		res.needControl = res.needControl || len(c.controls) == 0
	}
	for _, u := range c.ref {
		g := u.group()
		if k := done[g]; k > 0 {
			res.deps[k-1].Units++
			continue
		}
		if noisy[g] {
			continue
		}
		dep := Dependency{Unit: u, Size: u.Size, Units: 1, Issuer: issuerOf(u, u.Part, c.issuers)}
		if otherCount[g] != c.refCount[g] {
			if !c.countStable(g) {
				markNoisy(u)
				continue
			}
			dep.How, dep.Size, dep.OtherSize = "count", int64(c.refCount[g]), int64(otherCount[g])
			dep.Issuer = issuerOf(u, "", c.issuers)
			if k := done["count|"+u.Channel+"|"+u.Dest]; k > 0 {
				done[g] = k // one exchange more moves its every part
				continue
			}
			res.deps = append(res.deps, dep)
			done[g] = len(res.deps)
			done["count|"+u.Channel+"|"+u.Dest] = done[g]
			continue
		}
		o, ok := ou[u.key()]
		if !ok || o.Digest == u.Digest {
			continue
		}
		byteStable, sizeStable := c.unitStable(u)
		dep.OtherSize = o.Size
		switch {
		case sizeStable && o.Size != u.Size:
			dep.How = "length"
		case byteStable:
			dep.How = "bytes"
		default:
			markNoisy(u)
			continue
		}
		res.deps = append(res.deps, dep)
		done[g] = len(res.deps)
	}
	// Groups only the other run sent to, where no run with the original's
	// secrets sent anything, moved with the secrets too.
	for _, u := range oEgress {
		g := u.group()
		if c.refCount[g] > 0 || done[g] > 0 || done["count|"+u.Channel+"|"+u.Dest] > 0 || (len(c.controls) == 0 && c.origCount[g] > 0) {
			continue
		}
		res.deps = append(res.deps, Dependency{Unit: u, How: "count", OtherSize: int64(otherCount[g]),
			Units: 1, Issuer: issuerOf(u, "", c.issuers)})
		done[g] = len(res.deps)
		done["count|"+u.Channel+"|"+u.Dest] = done[g]
	}
	for _, d := range res.deps {
		res.dests[d.Unit.Dest] = true
	}
	return res
}

func byKey(us []EgressUnit) map[string]EgressUnit {
	m := make(map[string]EgressUnit, len(us))
	for _, u := range us {
		m[u.key()] = u
	}
	return m
}

func groupCounts(events []trace.Event) map[string]int {
	m := map[string]int{}
	for _, u := range Egress(events) {
		if u.Channel == "dns" {
			m[u.group()] += u.Count
		} else {
			m[u.group()]++
		}
	}
	return m
}

// twinIssuers are what the planted secrets of a twin set are meant for:
// the kinds (whose issuers' API hosts are data/issuers.tsv) and the
// servers that credentials naming their server are meant for (a database
// URL's host).
type twinIssuers struct {
	kinds   []string
	servers map[string][]string
}

func issuerHosts(set *canary.Set) twinIssuers {
	ti := twinIssuers{servers: map[string][]string{}}
	if set == nil {
		return ti
	}
	for _, tok := range set.Tokens() {
		if !slices.Contains(ti.kinds, string(tok.Kind)) {
			ti.kinds = append(ti.kinds, string(tok.Kind))
		}
		// A credential that names its server (a database URL) is meant
		// for that server.
		if tok.Kind == canary.DatabaseURL {
			if u, err := url.Parse(tok.Value); err == nil {
				h := strings.ToLower(u.Hostname())
				if h != "" && !slices.Contains(ti.servers[h], string(tok.Kind)) {
					ti.servers[h] = append(ti.servers[h], string(tok.Kind))
				}
			}
		}
	}
	return ti
}

// takesIn reports whether a credential place of data/issuers.tsv is in
// part of the request u (of the egress unit's parts): the Authorization
// and other headers in "headers", a form parameter in "body", a query
// parameter or path prefix in "url" when u's URL has it (an S3 object
// name that changes with the secrets is data; a presigned URL's
// X-Amz-Credential is the credential). Part "" is the whole exchange.
func takesIn(place, part string, u EgressUnit) bool {
	kind, name, _ := strings.Cut(place, ":")
	switch kind {
	case "authorization", "header":
		return part == "" || part == "headers"
	case "form":
		return part == "" || part == "body"
	case "query":
		if part == "" {
			return true
		}
		_, q, _ := strings.Cut(u.Where, "?")
		return part == "url" && strings.Contains("&"+strings.ToLower(q), "&"+name+"=")
	case "path":
		return part == "" || part == "url" && strings.Contains(strings.ToLower(u.Where), "/"+name)
	}
	return false
}

// issuerOf returns the kinds of secret u's destination is the issuer of,
// joined, or "": an API host of their issuer, reached by a name the jail
// resolved, for the part of the request the issuer takes the credential
// in (an AWS signature in the headers; a body to a bucket host is data,
// whoever owns the bucket; "" for the whole exchange, when how many were
// sent moved), or the server a credential names.
func issuerOf(u EgressUnit, part string, ti twinIssuers) string {
	if u.claimed {
		return ""
	}
	host := u.Dest
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(host)
	kinds := slices.Clone(ti.servers[host])
	if u.Channel == "http" {
		for _, k := range ti.kinds {
			for _, is := range issuersOf(k, host) {
				if slices.ContainsFunc(is.places, func(p string) bool { return takesIn(p, part, u) }) {
					kinds = append(kinds, k)
				}
			}
		}
	}
	slices.Sort(kinds)
	return strings.Join(slices.Compact(kinds), ", ")
}

// TwinRuleID is the rule of secret-dependent egress.
const TwinRuleID = "SBX-EXFIL-010"

func twinRules() {
	// Decided by CompareTwins and TwinFindings over twin traces: a single
	// timeline never shows it.
	def(Rule{ID: TwinRuleID, Family: "exfiltration", Title: "Egress depends on the planted secrets",
		Severity: Critical, Confidence: ConfHigh, Technique: "T1048", Harm: HarmExfil,
		Needs: []string{"twin traces"},
		Twins: []string{"a request with a timestamp and a nonce", "an encrypted backup of project files", "a token sent to its issuer"},
		Help: "Twin traces ran the skill again in sandboxes equal in everything but the planted secrets " +
			"(the same home, clock start and randomness; every secret of another value and a greater length). " +
			"What went to this destination was the same in every run with the original secrets and changed " +
			"with the secrets (its bytes, its length, or how much was sent): it carries the secrets, however " +
			"it was encrypted, compressed or split. Sent to the secret's own issuer (an AWS signature to AWS), " +
			"in the part of the request the issuer takes the credential in, by a name the jail resolved, " +
			"it is reported low and proves nothing; a body to a bucket host, or a request to an address " +
			"that only claims the issuer's name, is not the issuer's. A hosting platform's upload endpoint " +
			"(by the name the jail resolved) sent a project by the call that read the project whole, with no " +
			"planted file read outside it, is a deploy that took the project's secret files along: high, as " +
			"SBX-EXFIL-011."},
		func(c *ctx, r *Rule) {})
}

// TwinFindings turns a twin comparison into findings of TwinRuleID, one per
// destination, on the original trace's timeline where it holds the unit
// (Evidence), else marked as the twin's (Pass "twin").
func TwinFindings(set TwinSet, res TwinResult) []Finding {
	r, _ := Lookup(TwinRuleID)
	grew, read := secretsRead(set)
	type dest struct {
		deps   []Dependency
		issuer string
	}
	byDest := map[string]*dest{}
	var order []string
	for _, d := range res.Dependent {
		x := byDest[d.Unit.Dest]
		if x == nil {
			x = &dest{issuer: d.Issuer}
			byDest[d.Unit.Dest] = x
			order = append(order, d.Unit.Dest)
		} else if d.Issuer == "" {
			x.issuer = "" // a part the issuer takes no credential in moved too
		}
		x.deps = append(x.deps, d)
	}
	origEvents := map[int64]*trace.Event{}
	for i := range set.Original.Events {
		origEvents[set.Original.Events[i].Seq] = &set.Original.Events[i]
	}
	orig := byKey(Egress(set.Original.Events))
	var out []Finding
	for _, name := range order {
		x := byDest[name]
		f := Finding{RuleID: r.ID, Title: r.Title, Severity: r.Severity, Confidence: r.Confidence,
			Technique: r.Technique, Harm: r.Harm}
		upload := ""
		if x.issuer != "" {
			f.Severity, f.Confidence, f.Harm = Low, ConfMedium, HarmNone
		} else if dir := projectUpload(set.Original, x.deps, origEvents); dir != "" {
			// What SBX-EXFIL-011 says of a token seen in the archive.
			f.Severity, f.Confidence = High, ConfMedium
			upload = dir
		}
		var parts []string
		for _, d := range x.deps {
			parts = append(parts, describeDependency(d, grew))
			u, ok := orig[d.Unit.key()]
			if !ok {
				continue
			}
			e := origEvents[u.Seq]
			if e == nil || slices.ContainsFunc(f.Evidence, func(v Evidence) bool { return v.Seq == e.Seq }) {
				continue
			}
			if len(f.Evidence) >= MaxEvidence {
				f.More++
				continue
			}
			f.Evidence = append(f.Evidence, Evidence{Seq: e.Seq, Source: e.Source, Type: e.Type, ToolCallID: e.ToolCallID,
				Summary: Summarize(*e)})
			if f.ToolCallID == "" {
				f.ToolCallID = e.ToolCallID
				if f.ToolCallID == "" {
					f.ToolCallID = callAt(set.Original.Events, e)
				}
			}
		}
		if len(f.Evidence) == 0 {
			f.Pass = PassTwin
		}
		if f.ToolCallID != "" {
			f.SkillFile, f.SkillLine = callOrigin(set.Original.Events, f.ToolCallID)
		}
		msg := fmt.Sprintf("what went to %s changed with the planted secrets: %s", name, strings.Join(firstN(uniq(parts), 4), "; "))
		if len(parts) > 4 {
			msg += fmt.Sprintf(" (and %d more)", len(parts)-4)
		}
		if len(read) > 0 {
			msg += "; the secrets that could have moved it, read in the run: " + strings.Join(firstN(read, 6), ", ")
			if len(read) > 6 {
				msg += fmt.Sprintf(" and %d more", len(read)-6)
			}
		}
		if x.issuer != "" {
			msg += " (" + name + " is the issuer of " + x.issuer + ")"
		}
		if upload != "" {
			msg += " (a hosting platform's upload endpoint, sent by the call that read the project " + upload +
				" whole: the secrets its files keep went with it, as a deploy does; worth a look, not proof of theft)"
		}
		if slices.ContainsFunc(x.deps, func(d Dependency) bool { return d.Unit.claimed }) {
			msg += " (" + name + " is only the name the requests claimed: the jail's DNS gave it no address they went to)"
		}
		f.Message = capString(msg, 900)
		out = append(out, f)
	}
	return out
}

// projectUpload returns the folder whose files the tool call that sent
// every dependent unit read whole, when the units went to a hosting
// platform's upload endpoint (deployHosts) by the name the jail resolved,
// the call read at least minUploadFiles files under that folder, and every
// planted file it read is in it (none picked from elsewhere): a deploy
// tool's archive of the project, with the secrets the project keeps (the
// twin-trace form of SBX-EXFIL-011). "" otherwise.
func projectUpload(run TwinRun, deps []Dependency, events map[int64]*trace.Event) string {
	call := ""
	for _, d := range deps {
		u := d.Unit
		host := strings.ToLower(u.Dest)
		if u.claimed || u.Channel != "http" || !isDeployHost(host) {
			return ""
		}
		e := events[u.Seq]
		if e == nil {
			return ""
		}
		id := e.ToolCallID
		if id == "" {
			id = callAt(run.Events, e)
		}
		if id == "" || call != "" && id != call {
			return ""
		}
		call = id
	}
	if call == "" || run.Canaries == nil {
		return ""
	}
	var planted []string // the planted files' paths after "~"
	for _, t := range run.Canaries.Tokens() {
		if rest, ok := strings.CutPrefix(t.Location, "~"); ok {
			planted = append(planted, rest)
		}
	}
	isPlanted := func(p string) bool {
		return slices.ContainsFunc(planted, func(s string) bool { return strings.HasSuffix(p, s) })
	}
	reads := map[string]bool{}
	var secrets []string
	for _, e := range run.Events {
		f, ok := e.Data.(*trace.File)
		if !ok || e.Type != trace.TypeOpen || e.ToolCallID != call || f.Errno != "" || f.Write {
			continue
		}
		reads[f.Path] = true
		if isPlanted(f.Path) {
			secrets = append(secrets, f.Path)
		}
	}
	if len(secrets) == 0 {
		return ""
	}
	// The deepest folder holding every secret read.
	dir := path.Dir(secrets[0])
	for _, p := range secrets[1:] {
		for !underDir(dir, p) && dir != "/" {
			dir = path.Dir(dir)
		}
	}
	n := 0
	for p := range reads {
		if underDir(dir, p) {
			n++
		}
	}
	if n < minUploadFiles || strings.Count(strings.Trim(dir, "/"), "/") < 2 {
		return "" // a few files, or a folder as wide as the home
	}
	return dir
}

// minUploadFiles is how many files of a folder a call reads for its
// upload to be the folder's whole.
const minUploadFiles = 5

// PassTwin marks a finding whose evidence is in a twin trace's timeline.
const PassTwin = "twin"

func describeDependency(d Dependency, grew int) string {
	u := d.Unit
	what := u.Channel + " " + u.Part
	if u.Where != "" {
		what += " (" + capString(u.Where, 120) + ")"
	}
	switch d.How {
	case "bytes":
		return what + ": other bytes, same length"
	case "length":
		s := fmt.Sprintf("%s: length %d, %d with the other secrets (%+d)", what, d.Size, d.OtherSize, d.OtherSize-d.Size)
		if grew > 0 {
			s += fmt.Sprintf(" when the secrets read grew by %d characters", grew)
		}
		return s
	default:
		return fmt.Sprintf("%s: %d sent, %d with the other secrets", what, d.Size, d.OtherSize)
	}
}

// SecretGrowth is how many characters longer the other run's secrets are
// than the reference's, over the secrets the reference run read (planted
// files it opened) and the environment's.
func SecretGrowth(set TwinSet) int {
	n, _ := secretsRead(set)
	return n
}

// secretsRead returns SecretGrowth and the places of the secrets the
// reference run read: the planted files it opened, then the environment's
// planted variables ("the environment (N variables)").
func secretsRead(set TwinSet) (int, []string) {
	if len(set.Same) == 0 || set.Same[0].Canaries == nil {
		return 0, nil
	}
	opened := map[string]bool{}
	for _, e := range set.Same[0].Events {
		if f, ok := e.Data.(*trace.File); ok && e.Type == trace.TypeOpen && f.Errno == "" {
			opened[f.Path] = true
			if f.Resolved != "" {
				opened[f.Resolved] = true
			}
		}
	}
	other := map[string]canary.Token{}
	if len(set.Other) > 0 && set.Other[0].Canaries != nil {
		for _, t := range set.Other[0].Canaries.Tokens() {
			other[t.ID] = t
		}
	}
	n, env := 0, 0
	var places []string
	for _, t := range set.Same[0].Canaries.Tokens() {
		read := false
		if strings.HasPrefix(t.Location, "env:") {
			read = true
			env++
		} else if rel, ok := strings.CutPrefix(t.Location, "~/"); ok {
			for p := range opened {
				if strings.HasSuffix(p, "/"+rel) {
					read = true
					if !slices.Contains(places, t.Location) {
						places = append(places, t.Location)
					}
					break
				}
			}
		}
		if o, ok := other[t.ID]; ok && read {
			n += len(o.Value) - len(t.Value)
		}
	}
	slices.Sort(places)
	if env > 0 {
		places = append(places, fmt.Sprintf("the environment (%d planted variables)", env))
	}
	return n, places
}

// callAt returns the tool call running when e happened in events, or "".
func callAt(events []trace.Event, e *trace.Event) string {
	return trace.NewCallWindows(events).At(e.Time)
}

// callOrigin returns the skill file and line a tool call came from.
func callOrigin(events []trace.Event, id string) (string, int) {
	for _, x := range events {
		if tc, ok := x.Data.(*trace.ToolCall); ok && tc.ID == id {
			return tc.SkillFile, tc.SkillLine
		}
	}
	return "", 0
}

// TwinTrigger says why a trace's findings and timeline call for twin
// traces, or "": credentials or the environment read and then data sent
// that no detector could read (SBX-EXFIL-004, 005), a credential or wallet
// read followed by any egress, or a high-entropy payload at a sink.
func TwinTrigger(fs []Finding, events []trace.Event) string {
	read := false
	for _, f := range fs {
		switch f.RuleID {
		case "SBX-EXFIL-004", "SBX-EXFIL-005":
			return f.RuleID + " (" + f.Title + ")"
		case "SBX-CRED-001", "SBX-CRED-002", "SBX-CRED-004":
			read = read || f.Severity.Rank() >= Medium.Rank()
		}
	}
	units := Egress(events)
	if read && len(units) > 0 {
		return "a credential or wallet read, then egress to " + units[0].Dest
	}
	if u, ok := HighEntropyEgress(events); ok {
		return "a high-entropy payload to " + u
	}
	return ""
}

// HighEntropyEgress returns the first destination that received a payload
// that looks encrypted or compressed: 64 bytes or more, or a run of 48
// base64 or hex characters (24 in DNS names), near the most entropy their
// alphabet allows for their length.
func HighEntropyEgress(events []trace.Event) (string, bool) {
	names := jailNames(events)
	for _, e := range events {
		var b []byte
		dest := ""
		dns := false
		switch d := e.Data.(type) {
		case *trace.HTTPExchange:
			b, dest = append([]byte(d.URL+"\n"), d.Body...), destOf(d.DstIP, d.DstPort, names, d.SNI, normHost(d.Host), urlHost(d.URL))
			if registryArtifact(d.Response) {
				b = d.Body // the path is the registry's own: a content hash the jail's index served
			}
		case *trace.Connection:
			if d.Protocol == "http" {
				continue
			}
			b, dest = d.FirstBytes, destOf(d.DstIP, d.DstPort, names, d.Name)
		case *trace.WSMessage:
			b, dest = d.Payload, destOf(d.DstIP, d.DstPort, names, urlHost(d.URL))
		case *trace.Mail:
			b, dest = d.Data, destOf(d.DstIP, d.DstPort, names, d.Name)
		case *trace.DNSQuery:
			name := strings.TrimSuffix(d.Name, ".")
			z, _ := registrable(strings.ToLower(name))
			sub := strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(name), z), ".")
			b, dest, dns = []byte(strings.ReplaceAll(sub, ".", "")), z, true
		default:
			continue
		}
		if highEntropy(b, dns) {
			return dest, true
		}
	}
	return "", false
}

// registryArtifact says whether the jail answered a request as a package
// file of a registry (a wheel, an sdist, an npm tarball): its URL is one the
// registry's index gave the client, with the file's hash in it, not data of
// the client's.
func registryArtifact(response string) bool {
	switch response {
	case "pypi:wheel", "pypi:sdist", "npm:tarball":
		return true
	}
	return false
}

// highEntropy reports bytes that look encrypted or compressed, or encoded
// from such bytes.
func highEntropy(b []byte, dns bool) bool {
	if !dns && len(b) >= 64 && shannon(b) >= 0.85*math.Log2(min(float64(len(b)), 256)) {
		return true
	}
	minRun := 48
	if dns {
		minRun = 24
	}
	// The runs of hex and of base64 characters: random ones come near the
	// most entropy their alphabet allows for their length.
	for _, alphabet := range []struct {
		in   func(c byte) bool
		size float64
	}{
		{func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }, 16},
		{func(c byte) bool {
			return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '+' || c == '/' || c == '-' || c == '_' || c == '='
		}, 64},
	} {
		size := alphabet.size
		if dns && size > 32 {
			size = 32 // DNS names are case-folded: base32 at most
		}
		start := 0
		for i := 0; i <= len(b); i++ {
			if i < len(b) && alphabet.in(b[i]) {
				continue
			}
			if run := b[start:i]; len(run) >= minRun && shannon(run) >= 0.85*math.Log2(min(float64(len(run)), size)) {
				return true
			}
			start = i + 1
		}
	}
	return false
}

// shannon is the entropy of b in bits per byte.
func shannon(b []byte) float64 {
	if len(b) == 0 {
		return 0
	}
	var n [256]int
	for _, c := range b {
		n[c]++
	}
	h := 0.0
	for _, k := range n {
		if k > 0 {
			p := float64(k) / float64(len(b))
			h -= p * math.Log2(p)
		}
	}
	return h
}
