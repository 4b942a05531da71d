package rules

// A planted credential sent to its own service is the user's credential
// used for what it is for (SBX-EXFIL-006, low); sent anywhere else it is
// exfiltration (SBX-EXFIL-001). Whose service a request reached is judged
// by where its packets went, never by what the client wrote:
//
//   - the destination is the address the connection was dialled to (the
//     jail's original destination), named only by a name the jail's DNS
//     answered with that address in this trace (or the target of a proxy
//     CONNECT, which the proxy resolves itself). A Host header, a URL or an
//     SNI that names a vendor on a connection to an address typed in, or to
//     an address the jail gave another name, is a claim: the request went to
//     that address (docs/sandbox.md, "Own service judged by where the
//     packets went");
//   - the issuer's hosts are its API endpoints (data/issuers.tsv), never a
//     whole suffix its customers get names under: an attacker's bucket
//     host, EC2 instance or API gateway under amazonaws.com is the
//     attacker's server;
//   - the credential must sit where the issuer takes it (the Authorization
//     header, the issuer's own header, query or form parameter) and nowhere
//     else in the request: a token in a message body, a file upload or a
//     gist, even to its issuer, is data stored in whatever account the
//     request was made with, maybe the attacker's.
//
// Requests that change who can get into the account (an SSH or deploy key
// added, an IAM user made) through a credential used with its own service
// are SBX-PERSIST-010 (family_account.go).

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/trace"
)

// An issuer is one line of data/issuers.tsv.
type issuer struct {
	kinds  []string
	host   *regexp.Regexp
	glob   string
	places []string
	source string
}

var issuerList = mustIssuers()

func mustIssuers() []issuer {
	var out []issuer
	for i, f := range dataLines("data/issuers.tsv", 4) {
		if f[0] == "" || f[1] == "" || f[2] == "" || f[3] == "" {
			panic(fmt.Sprintf("rules: issuers.tsv line %d: want kinds, host, places, source", i+1))
		}
		is := issuer{kinds: strings.Split(f[0], ","), host: hostGlob(f[1]), glob: f[1], source: f[3]}
		for _, p := range strings.Split(f[2], ",") {
			if !validPlace(p) {
				panic(fmt.Sprintf("rules: issuers.tsv line %d: unknown place %q", i+1, p))
			}
			is.places = append(is.places, strings.ToLower(p))
		}
		out = append(out, is)
	}
	return out
}

// dataLines returns the tab-separated fields of each line of an embedded
// list that is neither empty nor a comment; a line with another number of
// fields is a bug in the data (the package does not load).
func dataLines(name string, cols int) [][]string {
	b, err := dataFS.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("rules: read %s: %v", name, err))
	}
	var out [][]string
	for i, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != cols {
			panic(fmt.Sprintf("rules: %s:%d: %d fields, want %d", name, i+1, len(f), cols))
		}
		out = append(out, f)
	}
	return out
}

func validPlace(p string) bool {
	if p == "authorization" {
		return true
	}
	kind, name, ok := strings.Cut(p, ":")
	return ok && name != "" && slices.Contains([]string{"header", "query", "form", "path"}, kind)
}

// awsRegion matches an AWS region name: us-east-1, eu-central-2,
// us-gov-west-1, cn-north-1, us-isob-east-1.
const awsRegion = `[a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-[0-9]+`

// hostGlob compiles a host pattern of the data: "*" is one label, a
// leading "**" one label or more, "{region}" an AWS region name.
func hostGlob(p string) *regexp.Regexp {
	const label = `[a-z0-9_-]+`
	var parts []string
	for i, l := range strings.Split(strings.ToLower(p), ".") {
		switch {
		case l == "**" && i == 0:
			parts = append(parts, label+`(?:\.`+label+`)*`)
		case l == "*":
			parts = append(parts, label)
		default:
			q := regexp.QuoteMeta(l)
			parts = append(parts, strings.ReplaceAll(q, regexp.QuoteMeta("{region}"), awsRegion))
		}
	}
	return regexp.MustCompile(`^` + strings.Join(parts, `\.`) + `$`)
}

// issuersOf returns the issuer lines of kind whose host is host.
func issuersOf(kind, host string) []issuer {
	var out []issuer
	for _, is := range issuerList {
		if slices.Contains(is.kinds, kind) && is.host.MatchString(host) {
			out = append(out, is)
		}
	}
	return out
}

// issuerDomain reports whether host is under the domain (its last two
// labels) of one of the API hosts of the issuer of kind.
func issuerDomain(kind, host string) bool {
	last2 := func(h string) string {
		l := strings.Split(h, ".")
		return strings.Join(l[max(0, len(l)-2):], ".")
	}
	for _, is := range issuerList {
		if slices.Contains(is.kinds, kind) && host != "" && last2(is.glob) == last2(host) {
			return true
		}
	}
	return false
}

// isIssuerHost reports whether host is an API host of the issuer of kind.
func isIssuerHost(kind, host string) bool { return len(issuersOf(kind, host)) > 0 }

// An httpDest is where an HTTP request went, judged by its packets.
type httpDest struct {
	// host names where the packets went: the name the request claims when
	// the jail's DNS answered it with the address dialled (verified), else
	// a name the jail gave that address, else "" (an address no name of
	// the trace resolved to: typed in).
	host string
	// addr is the address dialled ("ip:port"), "" when the jail did not
	// record it.
	addr string
	// claimed is the name the request claims (its Host, URL, SNI) when
	// that is not where it went; "" otherwise.
	claimed  string
	verified bool
	// known says the address was recorded, so the judgement is the
	// packets'; unknown only in timelines made by hand or explicit-proxy
	// requests that name the host alone.
	known bool
}

// jailAddrs maps each address the jail gave a name in this trace (its DNS
// answers, the targets of proxy CONNECTs it resolved itself) to the names.
type jailAddrs map[string][]string

func newJailAddrs(events []trace.Event) jailAddrs {
	m := jailAddrs{}
	add := func(name, ip string) {
		a := net.ParseIP(strings.Trim(ip, "[]"))
		name = normHost(name)
		if a == nil || name == "" {
			return
		}
		if k := a.String(); !slices.Contains(m[k], name) {
			m[k] = append(m[k], name)
		}
	}
	for i := range events {
		switch d := events[i].Data.(type) {
		case *trace.DNSQuery:
			for _, ans := range d.Answers {
				// answers read "TYPE VALUE" (or just the value)
				f := strings.Fields(ans)
				if len(f) == 0 || len(f) > 1 && f[0] != "A" && f[0] != "AAAA" {
					continue
				}
				add(d.Name, f[len(f)-1])
			}
		case *trace.HTTPExchange:
			// A CONNECT the jail hijacked: it gave the tunnel the address
			// of the name asked for, as a proxy resolves it.
			if strings.EqualFold(d.Method, "CONNECT") && d.Response == "connect-intercept" {
				if h, _ := hostPath(d.URL); net.ParseIP(h) == nil {
					add(h, d.DstIP)
				}
			}
		}
	}
	return m
}

// gave reports whether the jail gave ip to name.
func (j jailAddrs) gave(name, ip string) bool {
	a := net.ParseIP(strings.Trim(ip, "[]"))
	return a != nil && slices.Contains(j[a.String()], normHost(name))
}

// nameOf returns the first name the jail gave ip, or "".
func (j jailAddrs) nameOf(ip string) string {
	if a := net.ParseIP(strings.Trim(ip, "[]")); a != nil && len(j[a.String()]) > 0 {
		return j[a.String()][0]
	}
	return ""
}

// claimedHost returns the name an HTTP request claims and whether its
// claims agree: the URL's host, the Host header and the TLS SNI (when the
// client sent one) name the same host.
func claimedHost(x *trace.HTTPExchange) (string, bool) {
	name, _ := hostPath(x.URL)
	hh := normHost(x.Host)
	if name == "" {
		name = hh
	}
	agree := name != "" && (hh == "" || hh == name)
	if x.SNI != "" && normHost(x.SNI) != name {
		agree = false // the TLS handshake named another host: domain fronting
	}
	return name, agree
}

// destOfHTTP judges where x went.
func (j jailAddrs) destOfHTTP(x *trace.HTTPExchange) httpDest {
	name, agree := claimedHost(x)
	d := httpDest{}
	if x.DstIP == "" {
		// An explicit-proxy request names its host alone and the proxy
		// resolves it: the name is where it goes. Anything else without
		// an address was not recorded by the jail.
		d.host, d.known = name, x.Proxy
		d.verified = x.Proxy && agree && net.ParseIP(name) == nil
		return d
	}
	d.known = true
	d.addr = net.JoinHostPort(strings.Trim(x.DstIP, "[]"), strconv.Itoa(x.DstPort))
	if x.DstPort == 0 {
		d.addr = strings.Trim(x.DstIP, "[]")
	}
	if agree && net.ParseIP(name) == nil && j.gave(name, x.DstIP) {
		d.host, d.verified = name, true
		return d
	}
	d.host = j.nameOf(x.DstIP)
	if name != "" && net.ParseIP(name) == nil && name != d.host {
		d.claimed = name
	}
	if sni := normHost(x.SNI); sni != "" && sni != d.host && d.claimed == "" {
		d.claimed = sni
	}
	return d
}

// String says where the request went, with its claim: "api.github.com",
// or "203.0.113.7:443 claiming api.github.com".
func (d httpDest) String() string {
	where := d.host
	if !d.verified && d.addr != "" {
		where = d.addr
		if d.host != "" {
			where += " (" + d.host + ")"
		}
	}
	if d.claimed != "" && d.claimed != d.host {
		where += " claiming " + d.claimed
	}
	return where
}

// httpDest judges where the HTTP request x went in this trace.
func (c *ctx) httpDest(x *trace.HTTPExchange) httpDest {
	if c.addrs == nil {
		c.addrs = newJailAddrs(c.events)
	}
	return c.addrs.destOfHTTP(x)
}

// A Destination is where a network event went, judged by its packets (for
// reports): Host is the name the connection went to ("" for an address no
// name of the trace resolved to); Addr, set only when the event claims a
// name that is not where it went (or none), the address dialled; Claimed
// that name (a Host header, a URL, an SNI).
type Destination struct {
	Host, Addr, Claimed string
}

// Destinations judges where the network events of one timeline went, as
// the rules judge it.
type Destinations struct{ j jailAddrs }

// NewDestinations reads the addresses the jail gave names in events.
func NewDestinations(events []trace.Event) Destinations {
	return Destinations{newJailAddrs(events)}
}

// HTTP says where request x went. A request whose address the jail did not
// record keeps the name it claims.
func (ds Destinations) HTTP(x *trace.HTTPExchange) Destination {
	d := ds.j.destOfHTTP(x)
	if !d.known || d.verified {
		return Destination{Host: d.host}
	}
	ip, _, err := net.SplitHostPort(d.addr)
	if err != nil {
		ip = d.addr
	}
	return Destination{Host: d.host, Addr: ip, Claimed: d.claimed}
}

// Named says where a connection to ip went that the client names claim
// (a TLS SNI, the name a raw flow was recorded under).
func (ds Destinations) Named(claim, ip string) Destination {
	claim = normHost(claim)
	if ip == "" || claim != "" && (net.ParseIP(claim) != nil || ds.j.gave(claim, ip)) {
		return Destination{Host: claim}
	}
	d := Destination{Host: ds.j.nameOf(ip), Claimed: claim}
	if d.Host == "" || d.Claimed != "" {
		d.Addr = strings.Trim(ip, "[]")
	}
	return d
}

// A reqPart is one place of a request that can carry a credential: its
// place name (data/issuers.tsv) and value, as the server reads it.
type reqPart struct {
	place, value string
}

// requestParts cuts x into the places a server reads: the URL's host,
// path segments and query parameters, each header (the Authorization
// header also Basic-decoded), and the body's form parameters or the body
// whole.
func requestParts(x *trace.HTTPExchange) []reqPart {
	var out []reqPart
	if u, err := url.Parse(x.URL); err == nil {
		out = append(out, reqPart{"host", u.Host})
		if u.User != nil {
			out = append(out, reqPart{"userinfo", u.User.String()})
		}
		for _, seg := range strings.Split(u.Path, "/") {
			if seg != "" {
				out = append(out, reqPart{"path", seg})
			}
		}
		if q, err := url.ParseQuery(u.RawQuery); err == nil {
			for k, vs := range q {
				for _, v := range vs {
					out = append(out, reqPart{"query:" + strings.ToLower(k), v}, reqPart{"query-name", k})
				}
			}
		} else {
			out = append(out, reqPart{"query", u.RawQuery})
		}
	} else {
		out = append(out, reqPart{"url", x.URL})
	}
	for k, vs := range x.Headers {
		name := strings.ToLower(k)
		for _, v := range vs {
			if name == "authorization" {
				out = append(out, reqPart{"authorization", v})
				scheme, cred, _ := strings.Cut(strings.TrimSpace(v), " ")
				if dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred)); err == nil && strings.EqualFold(scheme, "basic") {
					out = append(out, reqPart{"authorization", string(dec)})
				}
				continue
			}
			out = append(out, reqPart{"header:" + name, v}, reqPart{"header-name", k})
		}
	}
	if len(x.Body) > 0 {
		// curl -d labels any body a form: JSON stays a body whatever its
		// label ("+" in a key or a token is not a space there)
		ct := strings.ToLower(strings.Join(headerValues(x.Headers, "Content-Type"), ","))
		trimmed := bytes.TrimSpace(x.Body)
		json := len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')
		if q, err := url.ParseQuery(string(x.Body)); err == nil && !json && strings.Contains(ct, "application/x-www-form-urlencoded") {
			for k, vs := range q {
				for _, v := range vs {
					out = append(out, reqPart{"form:" + strings.ToLower(k), v}, reqPart{"form-name", k})
				}
			}
		} else {
			out = append(out, reqPart{"body", string(x.Body)})
		}
	}
	return out
}

// headerValues returns the values of header name, whatever its case.
func headerValues(h map[string][]string, name string) []string {
	var out []string
	for k, vs := range h {
		if strings.EqualFold(k, name) {
			out = append(out, vs...)
		}
	}
	return out
}

// inPlace reports whether part p is one of the credential places.
func inPlace(p reqPart, places []string) bool {
	for _, pl := range places {
		if kind, prefix, ok := strings.Cut(pl, ":"); ok && kind == "path" {
			if p.place == "path" && strings.HasPrefix(strings.ToLower(p.value), prefix) {
				return true
			}
			continue
		}
		if p.place == pl {
			return true
		}
	}
	return false
}

// tokenNeedles are the strings of tok a plain sighting is one of.
func tokenNeedles(tok canary.Token) []string {
	var out []string
	for _, n := range append([]string{tok.Value}, tok.Needles...) {
		if len(n) >= canary.MinNeedle && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// credentialUse says where in x the token sits: in one of the places
// (asCredential), and anywhere else (asData).
func credentialUse(x *trace.HTTPExchange, tok canary.Token, places []string) (asCredential, asData bool) {
	needles := tokenNeedles(tok)
	holds := func(v string) bool {
		return slices.ContainsFunc(needles, func(n string) bool { return strings.Contains(v, n) })
	}
	for _, p := range requestParts(x) {
		if !holds(p.value) {
			continue
		}
		if inPlace(p, places) {
			asCredential = true
		} else {
			asData = true
		}
	}
	return asCredential, asData
}

// ownUse is the judgement of one canary hit in an HTTP request.
type ownUse struct {
	x    *trace.HTTPExchange
	dest httpDest
	// issuer: the request's host, where it went, is an API host of the
	// token's issuer; own: the token is used there as the credential and
	// carried nowhere else in the request.
	issuer, own bool
	// claimsIssuer: the request claims one of the issuer's hosts, or went
	// to another host of the issuer's domain (a customer's server under
	// amazonaws.com).
	claimsIssuer bool
	// data: the token also sits elsewhere in the request than where the
	// issuer takes credentials.
	data bool
	// bucket: the request stored it in this bucket, one the home declares
	// as the user's own, signed with the user's AWS key.
	bucket string
}

// ownUseOf judges canary hit h: is it the credential used with its own
// service? Only plain (or percent-encoded) sightings in an HTTP request
// can be.
func (c *ctx) ownUseOf(h *trace.CanaryHit) (ownUse, bool) {
	if h.Channel != ChannelHTTP || (h.Encoding != string(canary.Plain) && h.Encoding != string(canary.URL)) {
		return ownUse{}, false
	}
	src := c.bySeq[h.EventSeq]
	if src == nil {
		return ownUse{}, false
	}
	x, ok := src.Data.(*trace.HTTPExchange)
	if !ok {
		return ownUse{}, false
	}
	u := ownUse{x: x, dest: c.httpDest(x)}
	claim, _ := claimedHost(x)
	u.claimsIssuer = isIssuerHost(h.Kind, claim) || issuerDomain(h.Kind, u.dest.host)
	if !u.dest.verified {
		return u, true
	}
	if b := c.ownBucket(x, u.dest.host); b != "" {
		u.issuer, u.own, u.bucket = true, true, b
		return u, true
	}
	iss := issuersOf(h.Kind, u.dest.host)
	if len(iss) == 0 {
		return u, true
	}
	u.issuer = true
	tok, found := c.in.Canaries.Lookup(h.TokenID)
	if !found {
		return u, true
	}
	var places []string
	for _, is := range iss {
		places = append(places, is.places...)
	}
	cred, data := credentialUse(x, tok, places)
	u.data = data
	u.own = cred && !data
	return u, true
}

// toOwnService reports a planted token used, as the credential it is,
// with its issuer's API, reached at a name the jail resolved.
func (c *ctx) toOwnService(h *trace.CanaryHit) bool {
	u, ok := c.ownUseOf(h)
	return ok && u.own
}

// leftTo says where the request carrying hit h went, for a finding's
// message, when that is not simply where the hit was seen: the address
// dialled when the name it claims was not resolved to it, and the token
// carried as data when it went to its issuer.
func (c *ctx) leftTo(h *trace.CanaryHit) string {
	u, ok := c.ownUseOf(h)
	if !ok || !u.dest.known {
		return h.Where
	}
	switch {
	case !u.dest.verified && u.dest.addr != "":
		return fmt.Sprintf("%s (sent to %s, not an address the jail's DNS gave %s)", h.Where, u.dest, orWord(u.dest.claimed, "any name"))
	case u.issuer && u.data:
		return h.Where + " (carried in the request as data, not only as its credential)"
	case u.claimsIssuer && !u.issuer:
		return fmt.Sprintf("%s (%s is not an API host of the issuer of %s)", h.Where, u.dest.host, h.Kind)
	}
	return h.Where
}

// s3Bucket returns the bucket an S3 request addresses: the labels before
// ".s3." or ".s3-" of a virtual host, or the first path segment of a
// path-style request to s3.amazonaws.com, s3.REGION... ("" for none).
func s3Bucket(host, urlPath string) string {
	if !isIssuerHost(string(canary.AWSAccessKey), host) {
		return ""
	}
	for _, sep := range []string{".s3.", ".s3-"} {
		if i := strings.Index(host, sep); i > 0 {
			return host[:i]
		}
	}
	if host == "s3.amazonaws.com" || strings.HasPrefix(host, "s3.") || strings.HasPrefix(host, "s3-") {
		seg, _, _ := strings.Cut(strings.TrimPrefix(urlPath, "/"), "/")
		return seg
	}
	return ""
}

// ownBucket returns the bucket x stores data in when it is one the home
// declares as the user's own (Input.Buckets) and the request is signed
// with a planted AWS access key: the user's data in the user's storage.
func (c *ctx) ownBucket(x *trace.HTTPExchange, host string) string {
	if len(c.in.Buckets) == 0 || c.in.Canaries == nil {
		return ""
	}
	_, p := hostPath(x.URL)
	b := s3Bucket(host, p)
	if b == "" || !slices.Contains(c.in.Buckets, b) {
		return ""
	}
	places := []string{"authorization", "query:x-amz-credential"}
	for _, t := range c.in.Canaries.Tokens() {
		if t.Kind != canary.AWSAccessKey {
			continue
		}
		if cred, _ := credentialUse(x, t, places); cred {
			return b
		}
	}
	return ""
}

// sshBlobs returns the base64 blobs of the SSH public keys in texts (keys
// that could let someone in: placeholders left out).
func sshBlobs(texts ...string) []string {
	var out []string
	for _, t := range texts {
		for _, m := range reSSHKey.FindAllStringSubmatch(t, -1) {
			if validKeyBlob(m[1], m[2]) && !slices.Contains(out, m[2]) {
				out = append(out, m[2])
			}
		}
	}
	return out
}

// homeKeyBlobs returns the public halves of the home's planted SSH keys.
func (c *ctx) homeKeyBlobs() []string {
	if c.in.Canaries == nil {
		return nil
	}
	var out []string
	for _, t := range c.in.Canaries.Tokens() {
		if t.Kind != canary.SSHPrivateKey {
			continue
		}
		out = append(out, sshBlobs(canary.SSHPublicKey(t.Value))...)
	}
	return out
}

// keygenBlobs returns the public keys ssh-keygen (the system's) wrote in
// this trace, read from the file-system diff.
func (c *ctx) keygenBlobs() []string {
	made := map[string]bool{}
	for _, f := range c.files {
		if f.op == opWrite && !f.failed && f.proc == "ssh-keygen" {
			made[f.path] = true
		}
	}
	var out []string
	for i := range c.events {
		if d, ok := c.events[i].Data.(*trace.FSChange); ok && made[d.Path] && len(d.Head) > 0 {
			out = append(out, sshBlobs(string(bytes.TrimSpace(d.Head)))...)
		}
	}
	return out
}
