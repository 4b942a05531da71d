package orchestrator

import (
	"archive/tar"
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/netcapture"
	"github.com/sandboxctl/sandboxctl/trace"
)

// jailTar builds the tar CopyOut returns for JailDir.
func jailTar(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, b := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(b)
	}
	tw.Close()
	return buf.Bytes()
}

// TestReadJailArchive: the event log is read and checked, the ready notice
// dropped, and a token in a spooled request (not in its event) is found and
// attributed to that request once the timeline is numbered.
func TestReadJailArchive(t *testing.T) {
	tok := canary.Token{ID: "aws-1", Kind: canary.AWSAccessKey, Value: "AKIAQSBXCTL7Q2X4ZT3M", Location: "~/.aws/credentials"}
	set := canary.NewSet(tok)
	var log bytes.Buffer
	ew := netcapture.NewEventLog(&log, netcapture.LogOptions{}, nil)
	ew.Emit(trace.Event{Type: trace.TypeJailNotice, Data: &trace.Notice{Message: netcapture.ReadyMessage}})
	ew.Emit(trace.Event{Source: trace.SourceHTTP, Type: trace.TypeHTTP, Data: &trace.HTTPExchange{Method: "GET",
		URL: "http://cdn.example.net/a", Headers: map[string][]string{"X-Pad": {"aaaa…[1048576 bytes]"}},
		HeadersTruncated: true, Spool: "000001.http"}})
	ew.Close()
	spooled := "GET http://cdn.example.net/a HTTP/1.1\r\nX-Pad: " + strings.Repeat("a", 1<<20) + tok.Value + "\r\n\r\n"
	archive := jailTar(t, map[string][]byte{
		"jail/spool/000001.http": []byte(spooled),
		"jail/events.jsonl":      log.Bytes(),
		"jail/spool/000002.tcp":  []byte("nothing here"),
	})
	ev := jailEvidence{hits: map[string][]canary.Hit{}}
	check, found, err := readJailArchive(bytes.NewReader(archive), set, &ev)
	if err != nil || !found {
		t.Fatalf("readJailArchive: found %t, err %v", found, err)
	}
	if p := check.Problems(); p != nil {
		t.Errorf("problems %q", p)
	}
	if len(ev.events) != 1 || ev.events[0].Type != trace.TypeHTTP || ev.events[0].Seq != 0 {
		t.Fatalf("events %+v, want the http event alone, unnumbered", ev.events)
	}
	if len(ev.hits["000001.http"]) == 0 || len(ev.hits) != 1 {
		t.Fatalf("hits %+v, want the token in 000001.http", ev.hits)
	}
	timeline := trace.Merge(ev.events)
	hits := spoolHitEvents(set, timeline, ev.hits)
	if len(hits) == 0 {
		t.Fatal("no hit events")
	}
	h := hits[0].Data.(*trace.CanaryHit)
	if h.TokenID != "aws-1" || h.Channel != "http" || h.EventSeq != timeline[0].Seq {
		t.Errorf("hit %+v, want aws-1 in http event %d", h, timeline[0].Seq)
	}

	// No log in the archive: nothing found, for the caller to report.
	if _, found, _ := readJailArchive(bytes.NewReader(jailTar(t, map[string][]byte{"jail/spool/x": []byte("y")})), set, &ev); found {
		t.Error("found a log in an archive without one")
	}
}

func TestParseLeftovers(t *testing.T) {
	out := `{"pid":120,"ppid":1,"pgid":120,"sid":120,"uid":1000,"argv":["sleep","5"],"call_id":"t001","detached":true}
not json
{"pid":0}
{"pid":121,"ppid":1,"uid":1000,"call_id":"../../etc"}
`
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ev := parseLeftovers(strings.NewReader(out), at)
	if len(ev) != 2 {
		t.Fatalf("%d events, want 2: %+v", len(ev), ev)
	}
	if ev[0].ToolCallID != "t001" || ev[0].PID != 120 || !ev[0].Data.(*trace.Leftover).Detached {
		t.Errorf("first = %+v", ev[0])
	}
	if ev[1].ToolCallID != "" {
		t.Errorf("a call id with a path in it was kept: %q", ev[1].ToolCallID)
	}
}

func FuzzParseLeftovers(f *testing.F) {
	f.Add(`{"pid":120,"ppid":1,"argv":["sleep","5"],"call_id":"t001"}` + "\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, e := range parseLeftovers(strings.NewReader(s), time.Time{}) {
			if e.PID <= 0 {
				t.Fatalf("event with pid %d", e.PID)
			}
		}
	})
}

func TestGraceLeft(t *testing.T) {
	live, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	soon, cancel2 := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel2()
	done, cancel3 := context.WithCancel(t.Context())
	cancel3()
	tests := []struct {
		name        string
		ctx         context.Context
		grace       time.Duration
		interrupted bool
		max         time.Duration
		min         time.Duration
	}{
		{name: "full grace", ctx: live, grace: 8 * time.Second, min: 8 * time.Second, max: 8 * time.Second},
		{name: "cut at the deadline", ctx: soon, grace: 8 * time.Second, max: 2 * time.Second},
		{name: "deadline passed", ctx: done, grace: 8 * time.Second},
		{name: "interrupted", ctx: live, grace: 8 * time.Second, interrupted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := graceLeft(tt.ctx, tt.grace, tt.interrupted)
			if got < tt.min || got > tt.max {
				t.Errorf("graceLeft = %v, want between %v and %v", got, tt.min, tt.max)
			}
		})
	}
}
