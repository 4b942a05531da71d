package orchestrator

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"sync"
	"time"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/internal/capbuf"
	"github.com/sandboxctl/sandboxctl/netcapture"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// Jail evidence policy: the jail's events never travel through the
// engine's log driver, which a skill can overflow (megabyte headers made
// event lines of several megabytes and the json-file log rotated under its
// follower). The jail writes them to a log file on its own file system,
// within its budgets, and ends the log with a record of how many events
// it wrote and their digest. At collection the orchestrator asks the jail
// to close the log (SIGTERM: the sinks stop and requests still open are
// recorded; SIGUSR1 with --keep: the log is closed and the sinks keep
// serving), copies the log and the spooled payloads out, and checks the
// log against its end record. Anything missing (no end record, a count or
// digest that differs, a gap, an unreadable line, events or payloads a
// budget dropped) becomes a notice marked Incomplete, so the trace cannot
// be judged clean on partial network evidence. The spooled payloads are
// scanned whole for planted tokens. The container's own output carries
// only the jail's status lines (ready, network set up, log closed).

// Paths of the jail's evidence inside the jail container.
const (
	jailLog   = JailDir + "/events.jsonl"
	jailSpool = JailDir + "/spool"
)

// jailEndWait bounds how long collection waits for the jail to close its
// log.
const jailEndWait = 20 * time.Second

// jailStream follows the jail's status stream: its notices, and the end
// record once the log is closed.
type jailStream struct {
	ready  chan struct{}
	sealed chan struct{} // the jail closed its event log
	done   chan struct{} // the stream ended (the jail exited, or stop)
	stderr *capbuf.Buffer
	cancel context.CancelFunc
}

// followJail starts reading the jail's status stream. The reader ends when
// the jail's main process ends or cancel is called.
func followJail(ctx context.Context, jail Sandbox) *jailStream {
	js := &jailStream{ready: make(chan struct{}), sealed: make(chan struct{}), done: make(chan struct{}),
		stderr: capbuf.New(16 << 10)}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	js.cancel = cancel
	pr, pw := io.Pipe()
	go func() {
		err := jail.Logs(lctx, pw, js.stderr)
		pw.CloseWithError(err)
	}()
	go func() {
		defer close(js.done)
		var readyOnce, sealOnce sync.Once
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 4<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if bytes.HasPrefix(line, []byte(`{"end":`)) {
				sealOnce.Do(func() { close(js.sealed) })
				continue
			}
			var e trace.Event
			if json.Unmarshal(line, &e) != nil {
				continue // status only: the log file is the record
			}
			if n, ok := e.Data.(*trace.Notice); ok && n.Message == netcapture.ReadyMessage {
				readyOnce.Do(func() { close(js.ready) })
			}
		}
		// A line over the cap ends the scanner: keep draining so the
		// engine's stream is not held, until it ends.
		_, _ = io.Copy(io.Discard, pr)
		pr.Close()
	}()
	return js
}

// stop ends the stream and waits for its reader.
func (js *jailStream) stop() {
	js.cancel()
	<-js.done
}

func (js *jailStream) stderrTail() string {
	s := js.stderr.String()
	if s == "" {
		return "no output"
	}
	return tail(s, 500)
}

// jailEvidence is what was read back from the jail.
type jailEvidence struct {
	events []trace.Event
	// hits are the planted tokens found in each spooled payload, by its
	// name in the spool.
	hits map[string][]canary.Hit
}

// jailEvents closes the jail's event log and reads it back with its
// accounting (see the policy above). A log that cannot be read at all is
// an incomplete trace, not a failed one: the notice says why.
func (r *Runner) jailEvents(ctx context.Context, st *run) jailEvidence {
	ev := jailEvidence{hits: map[string][]canary.Hit{}}
	incomplete := func(msg string) {
		ev.events = append(ev.events, trace.Event{Time: r.now(), Source: trace.SourceTCP, Type: trace.TypeJailNotice,
			Data: &trace.Notice{Message: msg, Incomplete: true}})
	}
	sig := "TERM"
	if st.plan.Keep {
		sig = "USR1"
	}
	js := st.jailEv
	select {
	case <-js.done:
		// The jail exited already: whatever it wrote is all there is.
	default:
		if _, err := st.jail.Exec(ctx, ExecSpec{Argv: []string{"/bin/sh", "-c", "kill -s " + sig + " 1"}, User: "0:0",
			Stdout: io.Discard, Stderr: io.Discard}); err != nil {
			r.log().Warn("jail: close the event log", "err", err)
		}
		select {
		case <-js.sealed:
		case <-js.done:
		case <-time.After(jailEndWait):
			r.log().Warn("jail: event log not closed in time", "waited", jailEndWait)
		case <-ctx.Done():
		}
	}
	t0 := time.Now()
	rc, err := st.jail.CopyOut(ctx, JailDir)
	if err != nil {
		incomplete(fmt.Sprintf("the jail's network evidence could not be read: %v (stderr: %s)", err, js.stderrTail()))
		return ev
	}
	defer rc.Close()
	check, found, err := readJailArchive(rc, st.home.Set, &ev)
	r.log().Debug("collect: jail evidence", "took", time.Since(t0), "events", len(ev.events), "spooled", len(ev.hits))
	switch {
	case err != nil:
		incomplete(fmt.Sprintf("the jail's network evidence could not be read whole: %v", err))
	case !found:
		incomplete("the jail wrote no event log: its network evidence is missing (stderr: " + js.stderrTail() + ")")
	}
	if found {
		ev.events = append(ev.events, check.Events(r.now())...)
	}
	return ev
}

// readJailArchive reads the tar of JailDir (untrusted as input, even
// though only the jail writes it): the event log, checked by
// netcapture.ReadLog, and every spooled payload, scanned for set's tokens
// one at a time within the spool's per-file cap.
func readJailArchive(rc io.Reader, set *canary.Set, ev *jailEvidence) (netcapture.LogCheck, bool, error) {
	var check netcapture.LogCheck
	found := false
	tr := tar.NewReader(rc)
	var buf bytes.Buffer
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return check, found, nil
		}
		if err != nil {
			return check, found, fmt.Errorf("read jail archive: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		name := path.Clean(hdr.Name)
		switch {
		case name == path.Base(JailDir)+"/"+path.Base(jailLog) && !found:
			found = true
			check, err = netcapture.ReadLog(tr, 0, func(e trace.Event) {
				if n, ok := e.Data.(*trace.Notice); ok && e.Type == trace.TypeJailNotice && n.Message == netcapture.ReadyMessage {
					return
				}
				e.Seq = 0
				ev.events = append(ev.events, e)
			})
			if err != nil {
				return check, found, err
			}
		case path.Dir(name) == path.Base(JailDir)+"/"+path.Base(jailSpool):
			buf.Reset()
			n, err := io.Copy(&buf, io.LimitReader(tr, netcapture.DefaultSpoolFileCap*2))
			if err != nil {
				return check, found, fmt.Errorf("read spooled %s: %w", path.Base(name), err)
			}
			if set != nil && n >= canary.MinNeedle {
				if hits := set.Find(buf.Bytes()); len(hits) > 0 {
					ev.hits[path.Base(name)] = hits
				}
			}
		}
	}
}

// spoolHitEvents returns the canary hits of spooled payloads as events of
// the timeline, attributed to the event that names each payload.
func spoolHitEvents(set *canary.Set, timeline []trace.Event, hits map[string][]canary.Hit) []trace.Event {
	if len(hits) == 0 {
		return nil
	}
	var out []trace.Event
	for _, e := range timeline {
		name := spoolOf(e)
		if name == "" || len(hits[name]) == 0 {
			continue
		}
		out = append(out, rules.PayloadHits(set, e, hits[name])...)
	}
	return out
}

// spoolOf names the spooled payload of e, or "".
func spoolOf(e trace.Event) string {
	switch d := e.Data.(type) {
	case *trace.HTTPExchange:
		return d.Spool
	case *trace.Connection:
		return d.Spool
	case *trace.WSMessage:
		return d.Spool
	}
	return ""
}

func (r *Runner) jailConfig(p traceplan.Plan) (netcapture.Config, error) {
	cfg := netcapture.DefaultConfig()
	if p.NetworkConfig != "" {
		b, err := os.ReadFile(p.NetworkConfig)
		if err != nil {
			return cfg, fmt.Errorf("network config: %w", err)
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return cfg, fmt.Errorf("network config %s: %w", p.NetworkConfig, err)
		}
	}
	cert, key, err := netcapture.NewCA(caNames[randInt(len(caNames))])
	if err != nil {
		return cfg, fmt.Errorf("trace CA: %w", err)
	}
	cfg.CACert, cfg.CAKey = cert, key
	cfg.Marker = netcapture.Marker{Path: ".cache/." + randHex(4), Token: randHex(16)}
	cfg.SkipNetworkSetup = false
	cfg.DNSMode = cmp.Or(p.DNS, cfg.DNSMode)
	// Evidence goes to the jail's own log, within the trace's budgets.
	cfg.EventLog, cfg.SpoolDir = jailLog, jailSpool
	cfg.LogBudget = cmp.Or(p.Limits.EventBytes, traceplan.DefaultEventBytes)
	cfg.SpoolBudget = cmp.Or(p.Limits.SpoolBytes, traceplan.DefaultSpoolBytes)
	// The versions the home's projects depend on are served, so that an
	// install in the user's project resolves (the home is made meanwhile
	// from the same manifests).
	for _, m := range canaryfs.ProjectManifests() {
		netcapture.AddPackageHints(&cfg, m)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("network config: %w", err)
	}
	return cfg, nil
}

// caNames are subjects a corporate TLS-inspection CA plausibly has.
var caNames = []string{"Corp Root CA G2", "Internal Issuing CA 01", "Enterprise Root Certification Authority", "Zscaler Intermediate Root CA"}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func randInt(n int) int {
	var b [1]byte
	rand.Read(b[:])
	return int(b[0]) % n
}

// createJail creates the jail (not started yet).
func (r *Runner) createJail(ctx context.Context, st *run) error {
	r.phase("jail", "network jail")
	cfg, err := json.Marshal(st.jailCfg)
	if err != nil {
		return fmt.Errorf("encode jail config: %w", err)
	}
	files := []File{{Path: JailConfig, Mode: 0o600, Content: cfg}}
	jail, err := r.Runtime.Create(ctx, jailSpec(st.plan, st.image, st.ident.Hostname, files))
	if err != nil {
		return err
	}
	st.jail = jail
	return nil
}

// startJail starts the jail and follows its status stream.
func (r *Runner) startJail(ctx context.Context, st *run) error {
	if err := st.jail.Start(ctx); err != nil {
		return err
	}
	st.jailEv = followJail(ctx, st.jail)
	return nil
}

// jailReady waits for the jail's sinks to be up.
func (r *Runner) jailReady(ctx context.Context, st *run) error {
	select {
	case <-st.jailEv.ready:
		return nil
	case <-st.jailEv.done:
		return fmt.Errorf("%w: it exited: %s", ErrJailNotReady, st.jailEv.stderrTail())
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%w after 30s: %s", ErrJailNotReady, st.jailEv.stderrTail())
	case <-ctx.Done():
		return ctx.Err()
	}
}
