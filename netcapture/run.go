package netcapture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
	"golang.org/x/sync/errgroup"
)

// Jail policy: fail closed. The namespace's default route points at lo and
// nat OUTPUT redirects every new flow into a sink before anything listens;
// if a rule cannot be installed, Run returns an error and the orchestrator
// must not start the sandbox. DNS (UDP and TCP port 53, to any address) goes
// to the DNS sink first; loopback destinations are then left alone (a
// skill's own local servers keep working and nothing on lo can leave); every
// other TCP flow goes to the transparent listener and every other UDP flow
// to the UDP catch-all. IPv6 must be disabled in the namespace (the
// runtime sets net.ipv6.conf.all.disable_ipv6=1 at create, since /proc/sys
// is read-only in a container); when it is not, Run routes and redirects
// IPv6 the same way with ip6tables, or fails.

// ReadyMessage is the Notice message of the event Run writes once every
// sink listens; the orchestrator starts the sandbox only after it.
const ReadyMessage = "ready"

// Run is the jail's main: it routes the namespace into the sinks, serves
// them until ctx ends, and writes every event as one JSON line (see
// EventWriter) to cfg.EventLog, or to out when that is "" (with a file,
// out gets only the jail's notices). The log ends with its end record once
// every sink has stopped, requests still open included. Run returns nil
// when ctx ends, or the first error.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	return RunWithSeal(ctx, cfg, out, nil)
}

// RunWithSeal is Run, and also closes the event log with its end record
// when seal is closed or receives, while the sinks keep serving (what they
// see afterwards is counted, not recorded): for a jail kept running after
// its trace ended.
func RunWithSeal(ctx context.Context, cfg Config, out io.Writer, seal <-chan struct{}) error {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("jail config: %w", err)
	}
	spool, err := NewSpool(cfg.SpoolDir, cfg.SpoolBudget, cfg.SpoolFileCap)
	if err != nil {
		return fmt.Errorf("jail: %w", err)
	}
	events, opts := out, LogOptions{Budget: cfg.LogBudget, MaxEvent: cfg.MaxEvent}
	if cfg.EventLog != "" {
		f, err := os.OpenFile(cfg.EventLog, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("jail: event log: %w", err)
		}
		defer f.Close()
		events, opts.Status = f, out
	}
	ew := NewEventLog(events, opts, spool)
	notice := func(msg string) {
		ew.Emit(trace.Event{Source: trace.SourceTCP, Type: trace.TypeJailNotice, Data: &trace.Notice{Message: msg}})
	}

	// Listen before redirecting: a flow redirected to a port nobody holds
	// would be refused, not recorded. With IPv6 on, the sinks listen on ::1
	// too, where ip6tables REDIRECT sends IPv6 flows.
	socks := jailSockets{hosts: []string{"127.0.0.1"}}
	if !cfg.SkipNetworkSetup {
		if err := runCmd(ctx, "ip", "link", "set", "lo", "up"); err != nil {
			return fmt.Errorf("jail network: %w", err)
		}
		if !ipv6Disabled() {
			socks.hosts = append(socks.hosts, "::1")
		}
	}
	fail := func(err error) error {
		closeAll(socks.closers)
		notice("jail failed: " + err.Error())
		_ = ew.Close()
		return err
	}
	if err := socks.listenAll(ctx, cfg); err != nil {
		return fail(err)
	}

	sinks := jailSinks{names: NewNames()}
	// Closed ports need the kernel's log of refused SYNs: bind it before
	// any rule sends there, and keep every port open without it.
	openSpecs, err := openPortSpecs(cfg.OpenPorts)
	if err != nil {
		return fail(fmt.Errorf("jail config: %w", err))
	}
	if openSpecs != nil && !cfg.SkipNetworkSetup {
		if sinks.refused, err = openNFLOG(nflogGroup); err != nil {
			notice("closed ports disabled, every port reaches the sinks: " + err.Error())
			openSpecs, sinks.refused = nil, nil
		} else {
			socks.closers = append(socks.closers, sinks.refused)
		}
	}
	if err := sinks.start(ew.Emit, cfg, spool); err != nil {
		return fail(err)
	}

	if !cfg.SkipNetworkSetup {
		steps, err := setupJailNetwork(ctx, cfg, openSpecs)
		if err != nil {
			return fail(err)
		}
		notice("network: " + strings.Join(steps, "; "))
	}

	err = serveJail(ctx, &socks, &sinks, ew, notice, seal)
	for _, e := range socketDrops(socks.dnsPCs, socks.udpPCs, time.Now().UTC()) {
		ew.Emit(e)
	}
	closeAll(socks.closers)
	if cerr := ew.Close(); err == nil {
		err = cerr
	}
	return err
}

// jailSockets are the sockets the jail's sinks listen on, on each of
// hosts, and closers, every socket opened so far.
type jailSockets struct {
	hosts   []string
	lc      net.ListenConfig
	closers []io.Closer

	tcp, dns, proxy net.Listener // proxy: nil with NoProxy
	dnsPCs, udpPCs  []net.PacketConn
}

// listen listens on port on every host: for "udp", one packet socket per
// host; otherwise one TCP listener, accepting on every host.
func (s *jailSockets) listen(ctx context.Context, network string, port int) (net.Listener, []net.PacketConn, error) {
	var ln net.Listener
	var pcs []net.PacketConn
	for _, h := range s.hosts {
		a := net.JoinHostPort(h, strconv.Itoa(port))
		if network == "udp" {
			pc, err := s.lc.ListenPacket(ctx, "udp", a)
			if err != nil {
				return nil, nil, fmt.Errorf("listen udp %s: %w", a, err)
			}
			s.closers = append(s.closers, pc)
			pcs = append(pcs, pc)
			continue
		}
		l, err := s.lc.Listen(ctx, "tcp", a)
		if err != nil {
			return nil, nil, fmt.Errorf("listen tcp %s: %w", a, err)
		}
		s.closers = append(s.closers, l)
		if ln == nil {
			ln = l
		} else {
			ln = &multiListener{ls: []net.Listener{ln, l}}
		}
	}
	return ln, pcs, nil
}

// listenAll opens every socket the sinks serve, on cfg's ports.
func (s *jailSockets) listenAll(ctx context.Context, cfg Config) error {
	var err error
	if s.tcp, _, err = s.listen(ctx, "tcp", cfg.TCPPort); err != nil {
		return err
	}
	if s.dns, _, err = s.listen(ctx, "tcp", cfg.DNSPort); err != nil {
		return err
	}
	if _, s.dnsPCs, err = s.listen(ctx, "udp", cfg.DNSPort); err != nil {
		return err
	}
	if _, s.udpPCs, err = s.listen(ctx, "udp", cfg.UDPPort); err != nil {
		return err
	}
	if !cfg.NoProxy {
		if s.proxy, _, err = s.listen(ctx, "tcp", cfg.ProxyPort); err != nil {
			return err
		}
	}
	return nil
}

// jailSinks are the servers behind the jail's sockets, and the names
// they share. refused, the kernel's log of refused SYNs, is nil when
// every port is open.
type jailSinks struct {
	names   *Names
	refused *nflogSocket
	dns     *DNSSink
	tcp     *Sink
	udp     *UDPCatchAll
}

// start makes the DNS, TCP and UDP sinks, emitting to emit and spooling
// to spool.
func (s *jailSinks) start(emit func(trace.Event), cfg Config, spool *Spool) error {
	dnsSink, err := NewDNSSink(emit, s.names, cfg)
	if err != nil {
		return err
	}
	sink, err := NewSink(emit, s.names, cfg, nil)
	if err != nil {
		return err
	}
	sink.spool, sink.dns = spool, dnsSink
	udp := NewUDPCatchAll(emit, s.names, cfg.FirstBytesCap, nil)
	udp.spool = spool
	s.dns, s.tcp, s.udp = dnsSink, sink, udp
	return nil
}

// setupJailNetwork routes the namespace into the sinks, with the ports
// in open left open, and returns the steps taken, for the jail's notice.
func setupJailNetwork(ctx context.Context, cfg Config, open []string) ([]string, error) {
	steps, err := setupNetwork(ctx, cfg, open)
	if err != nil {
		return nil, fmt.Errorf("jail network: %w", err)
	}
	if err := udpDstAvailable(); err != nil {
		steps = append(steps, "udp original destinations unavailable: "+err.Error())
	} else {
		steps = append(steps, "udp original destinations from conntrack")
	}
	return steps, nil
}

// serveJail serves the sinks on their sockets until ctx ends or one of
// them fails, and returns the first error. Once every sink serves it
// notes ReadyMessage; with seal, it closes ew when seal is closed or
// receives.
func serveJail(ctx context.Context, socks *jailSockets, sinks *jailSinks, ew *EventWriter, notice func(string), seal <-chan struct{}) error {
	dnsSink, udp, sink, refused := sinks.dns, sinks.udp, sinks.tcp, sinks.refused
	tcpLn, dnsLn, proxyLn := socks.tcp, socks.dns, socks.proxy
	g, gctx := errgroup.WithContext(ctx)
	for _, pc := range socks.dnsPCs {
		g.Go(func() error { return dnsSink.Serve(gctx, pc) })
	}
	for _, pc := range socks.udpPCs {
		g.Go(func() error { return udp.Serve(gctx, pc) })
	}
	g.Go(func() error { return dnsSink.ServeTCP(gctx, dnsLn) })
	if refused != nil {
		g.Go(func() error { return serveRefused(gctx, refused, newRefusedLog(ew.Emit, sinks.names)) })
	}
	g.Go(func() error { return sink.ServeTransparent(gctx, tcpLn) })
	if proxyLn != nil {
		g.Go(func() error { return sink.ServeProxy(gctx, proxyLn) })
	}
	notice(ReadyMessage)
	if seal != nil {
		g.Go(func() error { // ends at the seal or when the sinks stop
			select {
			case <-seal:
				return ew.Close()
			case <-gctx.Done():
				return nil
			}
		})
	}
	return g.Wait()
}

// multiListener accepts from several listeners (127.0.0.1 and ::1).
type multiListener struct {
	ls        []net.Listener
	once      sync.Once
	closeOnce sync.Once
	ch        chan acceptResult
	done      chan struct{}
}

type acceptResult struct {
	c   net.Conn
	err error
}

func (m *multiListener) start() {
	m.ch, m.done = make(chan acceptResult), make(chan struct{})
	for _, l := range m.ls {
		go func() {
			for {
				c, err := l.Accept()
				select {
				case m.ch <- acceptResult{c, err}:
				case <-m.done:
					if c != nil {
						c.Close()
					}
					return
				}
				if err != nil && !isTimeout(err) {
					return
				}
			}
		}()
	}
}

func (m *multiListener) Accept() (net.Conn, error) {
	m.once.Do(m.start)
	select {
	case r := <-m.ch:
		return r.c, r.err
	case <-m.done:
		return nil, net.ErrClosed
	}
}

func (m *multiListener) Close() error {
	m.once.Do(m.start)
	m.closeOnce.Do(func() { close(m.done) })
	var errs []error
	for _, l := range m.ls {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

func (m *multiListener) Addr() net.Addr { return m.ls[0].Addr() }

func closeAll(cs []io.Closer) {
	for _, c := range cs {
		c.Close()
	}
}

// setupNetwork installs the route and the redirections, and returns what
// it did, for the notice.
func setupNetwork(ctx context.Context, cfg Config, open []string) ([]string, error) {
	var steps []string
	run := func(argv ...string) error { return runCmd(ctx, argv...) }
	if err := run("ip", "route", "replace", "default", "dev", "lo", "src", "127.0.0.1"); err != nil {
		return nil, err
	}
	steps = append(steps, "default route on lo")

	ipt, err := pickIptables(ctx, run, "iptables")
	if err != nil {
		return nil, err
	}
	if err := installRules(ctx, run, ipt, natRules(cfg, "127.0.0.0/8", open), filterRules(open, "127.0.0.0/8")); err != nil {
		return nil, err
	}
	steps = append(steps, ipt+" nat OUTPUT redirects")
	if open != nil {
		steps = append(steps, "tcp ports outside the open list refused and logged")
	}
	steps = append(steps, hideSinks(run, ipt, cfg, "127.0.0.0/8"))

	if ipv6Disabled() {
		steps = append(steps, "ipv6 disabled")
		return steps, nil
	}
	// IPv6 is on: route and redirect it too, or fail closed.
	if err := run("ip", "-6", "route", "replace", "default", "dev", "lo"); err != nil {
		return nil, fmt.Errorf("ipv6 is enabled and cannot be routed (set net.ipv6.conf.all.disable_ipv6=1): %w", err)
	}
	ip6t, err := pickIptables(ctx, run, "ip6tables")
	if err != nil {
		return nil, fmt.Errorf("ipv6 is enabled and cannot be redirected (set net.ipv6.conf.all.disable_ipv6=1): %w", err)
	}
	if err := installRules(ctx, run, ip6t, natRules(cfg, "::1/128", open), filterRules(open, "::1/128")); err != nil {
		return nil, fmt.Errorf("ipv6 is enabled and cannot be redirected: %w", err)
	}
	steps = append(steps, ip6t+" nat OUTPUT redirects")
	steps = append(steps, hideSinks(run, ip6t, cfg, "::1/128"))
	return steps, nil
}

// filterRules are the filter OUTPUT rules of the closed ports (none when
// every port is open).
func filterRules(open []string, loopback string) [][]string {
	if open == nil {
		return nil
	}
	return closedRules(loopback)
}

// installRules installs the nat and filter OUTPUT rules in one
// transaction with ipt's -restore tool (one exec instead of one per rule:
// about 20 ms each here), or rule by rule when that tool is missing or
// fails.
func installRules(ctx context.Context, run func(...string) error, ipt string, nat, filter [][]string) error {
	restore := strings.Replace(ipt, "tables", "tables-restore", 1) // iptables-nft → iptables-nft-restore
	if _, err := exec.LookPath(restore); err == nil {
		if err := runStdin(ctx, restoreScript(nat, filter), restore, "-w", "5", "--noflush"); err == nil {
			return nil
		}
	}
	for _, rule := range nat {
		if err := run(append([]string{ipt, "-w", "5", "-t", "nat"}, rule...)...); err != nil {
			return err
		}
	}
	for _, rule := range filter {
		if err := run(append([]string{ipt, "-w", "5"}, rule...)...); err != nil {
			return err
		}
	}
	return nil
}

// restoreScript is the input of iptables-restore --noflush for the nat and
// filter rules (argv form, as the rules are written).
func restoreScript(nat, filter [][]string) string {
	var b strings.Builder
	for _, t := range []struct {
		name  string
		rules [][]string
	}{{"nat", nat}, {"filter", filter}} {
		if len(t.rules) == 0 {
			continue
		}
		b.WriteString("*" + t.name + "\n")
		for _, r := range t.rules {
			b.WriteString(strings.Join(r, " ") + "\n")
		}
		b.WriteString("COMMIT\n")
	}
	return b.String()
}

func runStdin(ctx context.Context, stdin string, argv ...string) error {
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// hideSinks refuses direct connections to the sinks' own ports on
// loopback (a redirected flow is DNAT in conntrack and passes), so a skill
// scanning localhost does not find them. It is best effort: the jail works
// without it, so a failure is reported in the notice, not returned.
func hideSinks(run func(...string) error, ipt string, cfg Config, loopback string) string {
	p := strconv.Itoa
	tcp := p(cfg.TCPPort) + "," + p(cfg.DNSPort)
	udp := p(cfg.DNSPort) + "," + p(cfg.UDPPort)
	rules := [][]string{
		{"-A", "OUTPUT", "-d", loopback, "-p", "tcp", "-m", "multiport", "--dports", tcp, "-m", "conntrack", "!", "--ctstate", "DNAT", "-j", "REJECT", "--reject-with", "tcp-reset"},
		{"-A", "OUTPUT", "-d", loopback, "-p", "udp", "-m", "multiport", "--dports", udp, "-m", "conntrack", "!", "--ctstate", "DNAT", "-j", "REJECT"},
	}
	for _, r := range rules {
		if err := run(append([]string{ipt, "-w", "5"}, r...)...); err != nil {
			return "sink ports not hidden: " + err.Error()
		}
	}
	return "sink ports hidden from direct connections"
}

func runCmd(ctx context.Context, argv ...string) error {
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// pickIptables returns the first variant of family ("iptables" or
// "ip6tables") that can read the nat table here. In a container the nft
// variant is the one that works with NET_ADMIN alone: the legacy one needs
// a raw socket (NET_RAW) and the host's ip_tables module.
func pickIptables(ctx context.Context, run func(...string) error, family string) (string, error) {
	var errs []error
	for _, v := range []string{family + "-nft", family, family + "-legacy"} {
		if _, err := exec.LookPath(v); err != nil {
			continue
		}
		if err := run(v, "-w", "5", "-t", "nat", "-S", "OUTPUT"); err != nil {
			errs = append(errs, err)
			continue
		}
		return v, nil
	}
	if len(errs) == 0 {
		return "", fmt.Errorf("no %s binary found", family)
	}
	return "", errors.Join(errs...)
}

// natRules are the nat OUTPUT rules, in order, for one family. open are
// multiport specs of the TCP ports that reach the sink (nil: all); TCP to
// other ports is left for closedRules.
func natRules(cfg Config, loopback string, open []string) [][]string {
	p := strconv.Itoa
	rules := [][]string{
		{"-F", "OUTPUT"},
		{"-A", "OUTPUT", "-p", "udp", "--dport", "53", "-j", "REDIRECT", "--to-ports", p(cfg.DNSPort)},
		{"-A", "OUTPUT", "-p", "tcp", "--dport", "53", "-j", "REDIRECT", "--to-ports", p(cfg.DNSPort)},
		{"-A", "OUTPUT", "-d", loopback, "-j", "RETURN"},
	}
	if open == nil {
		rules = append(rules, []string{"-A", "OUTPUT", "-p", "tcp", "-j", "REDIRECT", "--to-ports", p(cfg.TCPPort)})
	}
	for _, spec := range open {
		rules = append(rules, []string{"-A", "OUTPUT", "-p", "tcp", "-m", "multiport", "--dports", spec, "-j", "REDIRECT", "--to-ports", p(cfg.TCPPort)})
	}
	return append(rules, []string{"-A", "OUTPUT", "-p", "udp", "-j", "REDIRECT", "--to-ports", p(cfg.UDPPort)})
}

// closedRules are the filter OUTPUT rules that refuse TCP the nat rules
// left alone (a closed port: its destination is still not loopback),
// logging each SYN to the NFLOG group the jail reads first.
func closedRules(loopback string) [][]string {
	g := strconv.Itoa(nflogGroup)
	return [][]string{
		{"-A", "OUTPUT", "!", "-d", loopback, "-p", "tcp", "--syn", "-j", "NFLOG", "--nflog-group", g},
		{"-A", "OUTPUT", "!", "-d", loopback, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"},
	}
}

func ipv6Disabled() bool {
	b, err := os.ReadFile("/proc/sys/net/ipv6/conf/all/disable_ipv6")
	if err != nil {
		return true // no IPv6 in this kernel
	}
	return strings.TrimSpace(string(b)) == "1"
}
