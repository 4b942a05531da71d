package netcapture

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// DNS modes of Config.DNSMode.
const (
	DNSAll  = "all"
	DNSNone = "none"
)

// Config is the jail's configuration. It is plain data: the orchestrator
// writes it as JSON to /run/agentd/jail.json inside the jail container, and
// the rules read Marker from the same value to prove a second stage ran.
type Config struct {
	// Ports the sinks listen on, on 127.0.0.1 inside the jail. Zero picks
	// the defaults of DefaultConfig.
	TCPPort   int  `json:"tcp_port"`   // transparent listener: every redirected TCP flow
	DNSPort   int  `json:"dns_port"`   // DNS sink, UDP and TCP
	UDPPort   int  `json:"udp_port"`   // UDP catch-all
	ProxyPort int  `json:"proxy_port"` // explicit HTTP proxy (0 with NoProxy: none)
	NoProxy   bool `json:"no_proxy,omitempty"`

	// CACert and CAKey are the per-trace CA (PEM) from NewCA. Leaves are
	// minted from it per SNI, or per destination IP without SNI.
	CACert []byte `json:"ca_cert"`
	CAKey  []byte `json:"ca_key"`

	// BodyCap caps the bytes of each request body, and FirstBytesCap the
	// bytes of each raw flow, kept in events (the real size is recorded).
	BodyCap       int64 `json:"body_cap"`
	FirstBytesCap int   `json:"first_bytes_cap"`

	// NXDomain lists names answered with NXDOMAIN: exact names, or
	// "*.suffix" for every name under suffix (not suffix itself).
	NXDomain []string `json:"nxdomain,omitempty"`
	// DNSRecords are answers given instead of the fake ones, in zone-file
	// form ("pool.example. 60 IN A 198.51.100.7"). A name with records
	// gets only those (NOERROR with no answer for other types).
	DNSRecords []string `json:"dns_records,omitempty"`

	// HTTPRules are tried in order before the built-in responses.
	HTTPRules []HTTPRule `json:"http_rules,omitempty"`

	// DNSMode is how names the config says nothing about resolve: ""
	// (as the internet would: reserved and undelegated names get
	// NXDOMAIN), DNSAll (every name resolves, as a naive sandbox answers)
	// or DNSNone (no name resolves but localhost and the machine's own, as
	// on a machine with no network).
	DNSMode string `json:"dns_mode,omitempty"`

	// ClockOffset is added to the jail's clock for the Date header and the
	// validity of minted leaves, so they follow the sandbox's faked clock.
	ClockOffset time.Duration `json:"clock_offset_ns,omitempty"`

	// Marker is what the second-stage script writes, so the rules can
	// prove that downloaded code ran.
	Marker Marker `json:"marker"`

	// PublicIP is the address the well-known IP lookups answer with.
	PublicIP string `json:"public_ip,omitempty"`

	// Banners are sent on a raw TCP flow whose client stays silent for
	// BannerDelay, keyed by destination port ("22"), or "*" for any port.
	Banners     map[string]string `json:"banners,omitempty"`
	BannerDelay time.Duration     `json:"banner_delay_ns,omitempty"`

	// OpenPorts are the TCP ports (and "N-M" ranges) that reach the sinks;
	// a connection to any other port is refused and recorded. Empty:
	// DefaultOpenPorts; ["*"]: every port is open.
	OpenPorts []string `json:"open_ports,omitempty"`

	// PackageVersions adds versions to the stub packages the registries
	// serve, keyed "npm:NAME" or "pypi:NAME" (PEP 503 normalised), so an
	// exact pin the skill names resolves: see PackageHints.
	PackageVersions map[string][]string `json:"package_versions,omitempty"`
	// PackageBins adds executables to the stub packages the registries
	// serve, keyed as PackageVersions: the names a skill runs after it
	// installs the package (AddPackageBins). The package's own name is
	// always one.
	PackageBins map[string][]string `json:"package_bins,omitempty"`

	// SkipNetworkSetup leaves routes and iptables alone: for tests that run
	// the sinks on a host's loopback, never for a jail.
	SkipNetworkSetup bool `json:"skip_network_setup,omitempty"`

	// EventLog is the file the jail writes its events to ("": the writer
	// given to Run gets them). With a file, Run's writer only gets the
	// jail's notices, as a live status stream.
	EventLog string `json:"event_log,omitempty"`
	// LogBudget caps the event log's bytes and MaxEvent one event's (0:
	// DefaultLogBudget, DefaultMaxEvent).
	LogBudget int64 `json:"log_budget,omitempty"`
	MaxEvent  int   `json:"max_event,omitempty"`
	// SpoolDir keeps the payloads events hold only in part ("": none are
	// kept, and what is cut is counted as dropped), within SpoolBudget
	// bytes in all and SpoolFileCap per payload (0: the defaults).
	SpoolDir     string `json:"spool_dir,omitempty"`
	SpoolBudget  int64  `json:"spool_budget,omitempty"`
	SpoolFileCap int64  `json:"spool_file_cap,omitempty"`
}

// Marker is the file the second-stage script writes: Path is relative to
// the home directory of whoever runs it, and Token is its content.
type Marker struct {
	Path  string `json:"path"`  // e.g. ".cache/.k3x9q2"
	Token string `json:"token"` // random, unique to the trace
}

// HTTPRule is one configured response. Host and Path are path.Match globs
// ("*.example.org", "/v1/*"); empty matches anything. Method is empty or an
// exact method.
type HTTPRule struct {
	Name    string            `json:"name"`
	Host    string            `json:"host,omitempty"`
	Path    string            `json:"path,omitempty"`
	Method  string            `json:"method,omitempty"`
	Status  int               `json:"status,omitempty"` // 0: 200
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
	// File is a path inside the jail whose content is served instead of Body.
	File string `json:"file,omitempty"`
}

// Default ports inside the jail. They are unprivileged and unlikely to
// collide with anything a skill would expect on its own loopback.
const (
	DefaultTCPPort   = 15001
	DefaultDNSPort   = 15053
	DefaultUDPPort   = 15002
	DefaultProxyPort = 15080
)

// DefaultConfig returns a Config with the default ports, caps and a fresh
// random marker; the caller adds the CA.
func DefaultConfig() Config {
	return Config{
		TCPPort:       DefaultTCPPort,
		DNSPort:       DefaultDNSPort,
		UDPPort:       DefaultUDPPort,
		ProxyPort:     DefaultProxyPort,
		BodyCap:       256 << 10,
		FirstBytesCap: 4096,
		Marker:        Marker{Path: ".cache/." + randHex(4), Token: randHex(16)},
		PublicIP:      "86.14.201.77",
		Banners: map[string]string{
			"22":  "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n",
			"21":  "220 (vsFTPd 3.0.3)\r\n",
			"110": "+OK Dovecot ready.\r\n",
			"143": "* OK [CAPABILITY IMAP4rev1] Dovecot ready.\r\n",
		},
		BannerDelay: 700 * time.Millisecond,
	}
}

// withDefaults fills zero fields from DefaultConfig (but never the marker:
// an empty marker is an error, the rules need it).
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.TCPPort == 0 {
		c.TCPPort = d.TCPPort
	}
	if c.DNSPort == 0 {
		c.DNSPort = d.DNSPort
	}
	if c.UDPPort == 0 {
		c.UDPPort = d.UDPPort
	}
	if c.ProxyPort == 0 {
		c.ProxyPort = d.ProxyPort
	}
	if c.BodyCap <= 0 {
		c.BodyCap = d.BodyCap
	}
	if c.FirstBytesCap <= 0 {
		c.FirstBytesCap = d.FirstBytesCap
	}
	if c.PublicIP == "" {
		c.PublicIP = d.PublicIP
	}
	if c.BannerDelay <= 0 {
		c.BannerDelay = d.BannerDelay
	}
	return c
}

// Validate reports the first problem with c.
func (c Config) Validate() error {
	switch {
	case len(c.CACert) == 0 || len(c.CAKey) == 0:
		return errors.New("no CA given: mint one with NewCA")
	case c.Marker.Path == "" || c.Marker.Token == "":
		return errors.New("no second-stage marker given")
	case !safeMarker(c.Marker.Path) || !safeToken(c.Marker.Token):
		return fmt.Errorf("marker path %q or token has characters a shell would interpret", c.Marker.Path)
	}
	for _, p := range []int{c.TCPPort, c.DNSPort, c.UDPPort, c.ProxyPort} {
		if p < 0 || p > 65535 {
			return fmt.Errorf("port %d out of range", p)
		}
	}
	if c.DNSMode != "" && c.DNSMode != DNSAll && c.DNSMode != DNSNone {
		return fmt.Errorf("dns mode %q: want %q, %q or empty", c.DNSMode, DNSAll, DNSNone)
	}
	if _, err := openPortSpecs(c.OpenPorts); err != nil {
		return err
	}
	for _, r := range c.HTTPRules {
		if r.Status != 0 && (r.Status < 100 || r.Status > 999) {
			return fmt.Errorf("http rule %q: status %d out of range", r.Name, r.Status)
		}
	}
	return nil
}

func safeMarker(p string) bool {
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '/' || r == '_' || r == '-') {
			return false
		}
	}
	return p != "" && p[0] != '/'
}

func safeToken(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// randIntn returns a uniform random int in [0, n).
func randIntn(n int) int {
	if n <= 1 {
		return 0
	}
	v, _ := rand.Int(rand.Reader, big.NewInt(int64(n))) // crypto/rand never fails
	return int(v.Int64())
}
