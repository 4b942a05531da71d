package netcapture

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/trace"
)

// captureHello returns the bytes a real crypto/tls client sends first.
func captureHello(t testing.TB, conf *tls.Config) []byte {
	t.Helper()
	client, server := net.Pipe()
	done := make(chan []byte)
	go func() {
		_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
		raw, _, _ := readClientHello(server)
		server.Close()
		done <- raw
	}()
	go func() { _ = tls.Client(client, conf).Handshake(); client.Close() }()
	return <-done
}

func TestParseClientHello(t *testing.T) {
	tests := []struct {
		name string
		conf *tls.Config
		want clientHello
	}{
		{name: "sni and alpn", conf: &tls.Config{ServerName: "api.example.org", NextProtos: []string{"h2", "http/1.1"}},
			want: clientHello{SNI: "api.example.org", ALPN: []string{"h2", "http/1.1"}, Versions: []string{"TLS 1.3", "TLS 1.2"}}},
		{name: "tls 1.2 only", conf: &tls.Config{ServerName: "old.example", MaxVersion: tls.VersionTLS12},
			want: clientHello{SNI: "old.example", Versions: []string{"TLS 1.2"}}},
		{name: "no sni", conf: &tls.Config{InsecureSkipVerify: true},
			want: clientHello{Versions: []string{"TLS 1.3", "TLS 1.2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := captureHello(t, tt.conf)
			_, msg, err := readClientHello(bytes.NewReader(raw))
			if err != nil {
				t.Fatalf("readClientHello: %v", err)
			}
			got, err := parseClientHello(msg)
			if err != nil {
				t.Fatalf("parseClientHello: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("hello (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadClientHelloAcrossRecords splits one hello over several records,
// as a client may.
func TestReadClientHelloAcrossRecords(t *testing.T) {
	raw := captureHello(t, &tls.Config{ServerName: "split.example"})
	msg := raw[5:]
	var split []byte
	for len(msg) > 0 {
		n := min(len(msg), 50)
		split = append(split, recordHandshake, 3, 1, byte(n>>8), byte(n))
		split = append(split, msg[:n]...)
		msg = msg[n:]
	}
	got, m, err := readClientHello(bytes.NewReader(split))
	if err != nil || !bytes.Equal(got, split) {
		t.Fatalf("readClientHello: %v (consumed %d of %d)", err, len(got), len(split))
	}
	h, err := parseClientHello(m)
	if err != nil || h.SNI != "split.example" {
		t.Errorf("parse = %+v, %v", h, err)
	}
}

// seedHellos adds hellos captured from crypto/tls clients (stored: seeds
// must be the same in every fuzzing worker, and a live capture is random).
func seedHellos(f *testing.F) {
	f.Add([]byte{recordHandshake, 3, 1, 0, 4, 1, 0, 0, 0})
	files, _ := filepath.Glob(filepath.Join("testdata", "hello", "*.bin"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

func FuzzReadClientHello(f *testing.F) {
	seedHellos(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		raw, msg, err := readClientHello(bytes.NewReader(b))
		if len(raw) > len(b) || len(raw) > maxHelloBytes+5 {
			t.Fatalf("consumed %d bytes of %d", len(raw), len(b))
		}
		if err != nil {
			return
		}
		if _, err := parseClientHello(msg); err != nil {
			return
		}
	})
}

func FuzzParseClientHello(f *testing.F) {
	seedHellos(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 5 {
			b = b[5:] // the seeds are records; the parser takes messages
		}
		h, err := parseClientHello(b)
		if err == nil && len(h.SNI) > len(b) {
			t.Fatalf("SNI longer than the input")
		}
	})
}

func TestMatchConntrack(t *testing.T) {
	line := "ipv4     2 udp      17 30 src=0.0.0.0 dst=198.51.100.9 sport=48362 dport=5555 [UNREPLIED] src=127.0.0.1 dst=0.0.0.0 sport=15002 dport=48362 mark=0 zone=0 use=2"
	// One socket that sent to two ports: NAT gave the second flow another
	// source port in its reply tuple, which is what the catch-all sees.
	remapped := "ipv4     2 udp      17 29 src=172.18.0.3 dst=203.0.113.5 sport=41000 dport=40001 [UNREPLIED] src=172.18.0.2 dst=172.18.0.3 sport=15002 dport=3635 mark=0 zone=0 use=2"
	tests := []struct {
		name, line, client string
		port               uint16
		want               string
	}{
		{name: "match", line: line, client: "127.0.0.1:48362", port: 15002, want: "198.51.100.9:5555"},
		{name: "other client port", line: line, client: "127.0.0.1:48363", port: 15002},
		{name: "other sink port", line: line, client: "127.0.0.1:48362", port: 15003},
		{name: "remapped source port", line: remapped, client: "172.18.0.3:3635", port: 15002, want: "203.0.113.5:40001"},
		{name: "remapped: the socket's own port is not the flow's", line: remapped, client: "172.18.0.3:41000", port: 15002},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := matchConntrack(tt.line, netip.MustParseAddrPort(tt.client), tt.port)
			gotS := ""
			if ok {
				gotS = got.String()
			}
			if gotS != tt.want {
				t.Errorf("matchConntrack = %q, want %q", gotS, tt.want)
			}
		})
	}
}

func FuzzMatchConntrack(f *testing.F) {
	f.Add("ipv4 2 udp 17 30 src=0.0.0.0 dst=198.51.100.9 sport=48362 dport=5555 [UNREPLIED] src=127.0.0.1 dst=0.0.0.0 sport=15002 dport=48362 mark=0")
	f.Add("ipv4 2 tcp 6 src=1.2.3.4")
	f.Fuzz(func(t *testing.T, line string) {
		_, _ = matchConntrack(line, netip.MustParseAddrPort("127.0.0.1:48362"), 15002)
	})
}

func TestEventWriterNumbersWithoutGaps(t *testing.T) {
	var buf syncBuffer
	ew := newEventWriter(&buf)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				ew.Emit(trace.Event{Source: trace.SourceDNS, Type: trace.TypeDNSQuery,
					Data: &trace.DNSQuery{Name: fmt.Sprintf("n%d-%d.example.", i, j)}})
			}
		})
	}
	wg.Wait()
	if err := ew.flush(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(buf.String()))
	seen := map[int64]bool{}
	for sc.Scan() {
		var e trace.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if _, ok := e.Data.(*trace.DNSQuery); !ok || e.Time.IsZero() || seen[e.Seq] {
			t.Fatalf("bad event %+v", e)
		}
		seen[e.Seq] = true
	}
	for i := int64(1); i <= 400; i++ {
		if !seen[i] {
			t.Fatalf("seq %d missing of %d", i, len(seen))
		}
	}
	if len(seen) != 400 || ew.Seq() != 400 || ew.Err() != nil {
		t.Errorf("got %d events, seq %d, err %v", len(seen), ew.Seq(), ew.Err())
	}
	// A failing reader: the error is kept and later events are dropped.
	bad := newEventWriter(failWriter{})
	bad.Emit(trace.Event{Type: trace.TypeJailNotice, Data: &trace.Notice{Message: "x"}})
	if err := bad.flush(); err == nil {
		t.Error("Flush after a failed write = nil")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var _ io.Writer = (*syncBuffer)(nil)
