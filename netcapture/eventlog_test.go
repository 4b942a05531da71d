package netcapture

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
	"github.com/sandboxctl/sandboxctl/trace"
)

func dnsEvent(name string) trace.Event {
	return trace.Event{Source: trace.SourceDNS, Type: trace.TypeDNSQuery, Data: &trace.DNSQuery{Name: name, QType: "A"}}
}

// writeLog writes n DNS events and closes the log.
func writeLog(t *testing.T, opts LogOptions, n int) []byte {
	t.Helper()
	var buf syncBuffer
	ew := NewEventLog(&buf, opts, nil)
	for i := range n {
		ew.Emit(dnsEvent(fmt.Sprintf("q%d.example.", i)))
	}
	if err := ew.Close(); err != nil {
		t.Fatal(err)
	}
	return []byte(buf.String())
}

func readAll(t *testing.T, log []byte) ([]trace.Event, LogCheck) {
	t.Helper()
	var got []trace.Event
	c, err := ReadLog(bytes.NewReader(log), 0, func(e trace.Event) { got = append(got, e) })
	if err != nil {
		t.Fatal(err)
	}
	return got, c
}

// TestEventLogWholeAndDamaged: a whole log checks clean against its end
// record; every way of losing part of it (a lost tail, a lost line in the
// middle, a changed line, a cut line, no end record) is named by Problems
// and becomes an Incomplete notice.
func TestEventLogWholeAndDamaged(t *testing.T) {
	log := writeLog(t, LogOptions{}, 5)
	lines := strings.SplitAfter(string(log), "\n")
	lines = lines[:len(lines)-1] // the empty string after the last newline
	if len(lines) != 6 || !strings.HasPrefix(lines[5], `{"end":`) {
		t.Fatalf("log = %q, want 5 event lines and the end record", log)
	}
	got, c := readAll(t, log)
	if len(got) != 5 || got[0].Seq != 1 || got[4].Seq != 5 {
		t.Fatalf("read %d events %+v", len(got), got)
	}
	if p := c.Problems(); p != nil {
		t.Errorf("whole log: problems %q", p)
	}
	if ev := c.Events(got[0].Time); len(ev) != 0 {
		t.Errorf("whole log: events %+v, want none", ev)
	}
	join := func(ls ...string) []byte { return []byte(strings.Join(ls, "")) }
	tests := []struct {
		name string
		log  []byte
		want string
	}{
		{name: "tail lost", log: join(lines[:3]...), want: "no end record"},
		{name: "line lost", log: join(append(append([]string{}, lines[:2]...), lines[3:]...)...), want: "wrote 5 events and 4 arrived"},
		{name: "line changed", log: join(lines[0], strings.Replace(lines[1], "q1", "q9", 1), lines[2], lines[3], lines[4], lines[5]), want: "digest"},
		{name: "line cut short", log: join(lines[0], lines[1][:10]), want: "unreadable"},
		{name: "garbage line", log: join(lines[0], "not json\n", lines[1]), want: "unreadable"},
		{name: "after the end", log: join(append(append([]string{}, lines...), lines[0])...), want: "after the end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := readAll(t, tt.log)
			p := strings.Join(c.Problems(), "; ")
			if !strings.Contains(p, tt.want) {
				t.Errorf("problems %q, want one about %q", p, tt.want)
			}
			ev := c.Events(got[0].Time)
			if len(ev) == 0 {
				t.Fatal("no events for a damaged log")
			}
			if n, ok := ev[0].Data.(*trace.Notice); !ok || !n.Incomplete {
				t.Errorf("first event %+v, want an Incomplete notice", ev[0])
			}
		})
	}
}

// TestEventLogBudget: past the log's budget events are counted, not
// written; the end record and the check say how many, and the budget
// becomes a budget event and an Incomplete notice.
func TestEventLogBudget(t *testing.T) {
	log := writeLog(t, LogOptions{Budget: 1000}, 40)
	got, c := readAll(t, log)
	if p := c.Problems(); p != nil {
		t.Fatalf("problems %q: a log cut by its budget is still whole", p)
	}
	if c.End.Dropped == 0 || c.End.Dropped+int64(len(got)) != 40 || c.End.DroppedTypes["dns_query"] != c.End.Dropped {
		t.Errorf("end = %+v after %d events written, want the rest of 40 dropped", c.End, len(got))
	}
	if c.Bytes > 1000 {
		t.Errorf("log bytes %d over the 1000-byte budget", c.Bytes)
	}
	var kinds []string
	for _, e := range c.Events(got[0].Time) {
		switch d := e.Data.(type) {
		case *trace.Budget:
			kinds = append(kinds, "budget:"+d.Name)
		case *trace.Notice:
			kinds = append(kinds, fmt.Sprintf("notice:%t", d.Incomplete))
		}
	}
	if diff := cmp.Diff([]string{"budget:jail_events", "notice:true"}, kinds); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestEventLogCutsBigEvents: an event over the per-event budget is cut to
// it. With its payload spooled nothing is lost; without, the cut is counted
// and reported as incomplete.
func TestEventLogCutsBigEvents(t *testing.T) {
	big := strings.Repeat("\x80", 300<<10) // JSON-escapes to six bytes each
	for _, spooled := range []bool{true, false} {
		t.Run(fmt.Sprintf("spooled=%t", spooled), func(t *testing.T) {
			var buf syncBuffer
			ew := NewEventLog(&buf, LogOptions{MaxEvent: 64 << 10}, nil)
			ex := &trace.HTTPExchange{Method: "GET", URL: "http://x.example/", Headers: http.Header{"X-Pad": {big}},
				Body: []byte(big), BodySize: int64(len(big))}
			if spooled {
				ex.Spool = "000001.http"
			}
			ew.Emit(trace.Event{Source: trace.SourceHTTP, Type: trace.TypeHTTP, Data: ex})
			if err := ew.Close(); err != nil {
				t.Fatal(err)
			}
			got, c := readAll(t, []byte(buf.String()))
			if len(got) != 1 {
				t.Fatalf("%d events, want the cut event", len(got))
			}
			line := strings.SplitN(buf.String(), "\n", 2)[0]
			if len(line) >= 64<<10 {
				t.Errorf("event line of %d bytes, over the 64 KiB budget", len(line))
			}
			d, ok := got[0].Data.(*trace.HTTPExchange)
			if !ok || !d.HeadersTruncated || !d.BodyTruncated || d.BodySize != int64(len(big)) {
				t.Errorf("cut event %+v, want headers and body marked cut, the real size kept", got[0].Data)
			}
			if (c.End.Cut == 0) == !spooled {
				t.Errorf("end.Cut = %d with spooled=%t", c.End.Cut, spooled)
			}
		})
	}
}

// TestEventLogStatusStream: notices go to the status stream too, then the
// end record; other events do not.
func TestEventLogStatusStream(t *testing.T) {
	var log, status syncBuffer
	ew := NewEventLog(&log, LogOptions{Status: &status}, nil)
	ew.Emit(trace.Event{Type: trace.TypeJailNotice, Data: &trace.Notice{Message: ReadyMessage}})
	ew.Emit(dnsEvent("a.example."))
	ew.Close()
	ew.Emit(dnsEvent("late.example."))
	lines := strings.Split(strings.TrimSpace(status.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], ReadyMessage) || !strings.HasPrefix(lines[1], `{"end":`) {
		t.Errorf("status stream = %q, want the ready notice and the end record", status.String())
	}
	if strings.Contains(log.String(), "late.example") {
		t.Errorf("an event emitted after Close was written")
	}
}

// TestSpool: files keep what fits in their cap and the budget, count the
// rest, and the stats add up; without a folder everything is counted.
func TestSpool(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	sp, err := NewSpool(dir, 100, 60)
	if err != nil {
		t.Fatal(err)
	}
	a := sp.Create("http")
	a.Write(bytes.Repeat([]byte("a"), 50))
	a.Write(bytes.Repeat([]byte("a"), 20)) // 10 over the file cap
	nameA, cutA := a.Close()
	b := sp.Create("tcp")
	b.Write(bytes.Repeat([]byte("b"), 50)) // 10 over the budget
	nameB, cutB := b.Close()
	if nameA != "000001.http" || !cutA || nameB != "000002.tcp" || !cutB {
		t.Errorf("files %q %t, %q %t; want both named and cut", nameA, cutA, nameB, cutB)
	}
	if fa, _ := os.ReadFile(filepath.Join(dir, nameA)); len(fa) != 60 {
		t.Errorf("file a holds %d bytes, want 60", len(fa))
	}
	want := SpoolStats{Dir: dir, Budget: 100, FileCap: 60, Files: 2, Bytes: 100, DroppedBytes: 20, TruncatedFiles: 2}
	if diff := cmp.Diff(want, sp.Stats()); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	none, _ := NewSpool("", 0, 0)
	f := none.Create("http")
	f.Write([]byte("lost"))
	if name, cut := f.Close(); name != "" || !cut || none.Stats().DroppedBytes != 4 {
		t.Errorf("spool without a folder: %q %t %+v", name, cut, none.Stats())
	}
}

func FuzzReadLog(f *testing.F) {
	var buf syncBuffer
	ew := newEventWriter(&buf)
	ew.Emit(dnsEvent("a.example."))
	ew.Emit(trace.Event{Type: trace.TypeHTTP, Data: &trace.HTTPExchange{URL: "http://b/"}})
	ew.Close()
	f.Add([]byte(buf.String()))
	f.Add([]byte(`{"end":{"events":3}}` + "\n" + `{"seq":1}`))
	f.Add([]byte(`{"seq":9,"type":"dns_query","data":{"name":1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ReadLog(bytes.NewReader(b), 1<<10, func(trace.Event) {})
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Problems()
		_ = c.Events(trace.Event{}.Time)
	})
}

func FuzzParseUDPDrops(f *testing.F) {
	f.Add("   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n" +
		" 1283: 0100007F:3ACD 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 48113 2 0000000000000000 17\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, n := range parseUDPDrops(strings.NewReader(s)) {
			if n <= 0 {
				t.Fatalf("non-positive drop count %d", n)
			}
		}
		_ = listenDrops(strings.NewReader(s))
	})
}

func TestKernelCounters(t *testing.T) {
	udp := "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n" +
		" 1283: 0100007F:3ACD 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 48113 2 0000000000000000 17\n" +
		" 1284: 0100007F:3A9A 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 48114 2 0000000000000000 0\n"
	if diff := cmp.Diff(map[uint64]int64{48113: 17}, parseUDPDrops(strings.NewReader(udp))); diff != "" {
		t.Errorf("parseUDPDrops (-want +got):\n%s", diff)
	}
	netstat := "TcpExt: SyncookiesSent ListenOverflows ListenDrops\nTcpExt: 0 3 5\nIpExt: InNoRoutes\nIpExt: 0\n"
	if got := listenDrops(strings.NewReader(netstat)); got != 5 {
		t.Errorf("listenDrops = %d, want 5", got)
	}
}

// TestRunWritesLogFile: with an event log, Run's writer gets only the
// status lines; the log gets the events and, on seal, its end record while
// the sinks keep serving (what they see afterwards is not in the log);
// the log read back is whole.
func TestRunWritesLogFile(t *testing.T) {
	cfg := testConfig(t)
	cfg.SkipNetworkSetup = true
	cfg.TCPPort, cfg.DNSPort, cfg.UDPPort, cfg.ProxyPort = freePort(t), freePort(t), freePort(t), freePort(t)
	dir := t.TempDir()
	cfg.EventLog, cfg.SpoolDir = filepath.Join(dir, "events.jsonl"), filepath.Join(dir, "spool")
	var status syncBuffer
	seal := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- RunWithSeal(ctx, cfg, &status, seal) }()
	t.Cleanup(func() { cancel(); <-done })
	waitStatus := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(status.String(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q on the status stream: %q", what, status.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitStatus(ReadyMessage)
	query := func(name string) {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		if _, _, err := (&dns.Client{Timeout: 3 * time.Second}).Exchange(m, net.JoinHostPort("127.0.0.1", itoa(cfg.DNSPort))); err != nil {
			t.Fatalf("query: %v", err)
		}
	}
	query("before.seal.example.")
	close(seal)
	waitStatus(`{"end":`)
	query("after.seal.example.")
	if strings.Contains(status.String(), "before.seal") {
		t.Errorf("a query reached the status stream: %q", status.String())
	}
	b, err := os.ReadFile(cfg.EventLog)
	if err != nil {
		t.Fatal(err)
	}
	got, c := readAll(t, b)
	if p := c.Problems(); p != nil {
		t.Errorf("problems %q", p)
	}
	var names []string
	for _, e := range got {
		if d, ok := e.Data.(*trace.DNSQuery); ok {
			names = append(names, d.Name)
		}
	}
	if strings.Join(names, ",") != "before.seal.example." {
		t.Errorf("queries in the log %q, want only the one before the seal", names)
	}
}

// TestEventLogFloodKeepsWhatDecides (issue 29, class 8): a flood of DNS
// queries past the log's budget stops at three quarters of it, and the
// POST that comes after it is still written (the last quarter is kept for
// types that wrote little); the flood's own type is dropped past that.
func TestEventLogFloodKeepsWhatDecides(t *testing.T) {
	var buf syncBuffer
	ew := NewEventLog(&buf, LogOptions{Budget: 64 << 10}, nil)
	for i := range 5000 {
		ew.Emit(dnsEvent(fmt.Sprintf("q%d.flood.example.", i)))
	}
	ew.Emit(trace.Event{Source: trace.SourceHTTP, Type: trace.TypeHTTP, Data: &trace.HTTPExchange{Method: "POST",
		URL: "http://203.0.113.9/u", Host: "203.0.113.9", Body: []byte("aws_secret_access_key=wJalrXUtnFEMI"), BodySize: 35}})
	if err := ew.Close(); err != nil {
		t.Fatal(err)
	}
	got, c := readAll(t, []byte(buf.String()))
	var post bool
	for _, e := range got {
		if e.Type == trace.TypeHTTP {
			post = true
		}
	}
	if !post {
		t.Errorf("the POST after the flood was dropped; end %+v", c.End)
	}
	if c.End.DroppedTypes["dns_query"] == 0 || c.Bytes > 64<<10 {
		t.Errorf("flood not bounded: end %+v, %d bytes", c.End, c.Bytes)
	}
}
