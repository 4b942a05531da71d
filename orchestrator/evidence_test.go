package orchestrator_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/netcapture"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/orchestrator/runtimetest"
	"github.com/sandboxctl/sandboxctl/trace"
)

// jailLog is an event log of one DNS query, with or without its end
// record.
func jailLog(t *testing.T, end bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	ew := netcapture.NewEventLog(&buf, netcapture.LogOptions{}, nil)
	ew.Emit(trace.Event{Source: trace.SourceDNS, Type: trace.TypeDNSQuery, Data: &trace.DNSQuery{Name: "c2.example.", QType: "A"}})
	if err := ew.Close(); err != nil {
		t.Fatal(err)
	}
	if !end {
		return bytes.SplitAfter(buf.Bytes(), []byte("\n"))[0]
	}
	return buf.Bytes()
}

func tarOf(t *testing.T, name string, b []byte) io.ReadCloser {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(b)), Typeflag: tar.TypeReg})
	tw.Write(b)
	tw.Close()
	return io.NopCloser(&buf)
}

// TestRunChecksJailEvidence: the jail is told to close its log, the log is
// read back, and a log that lost its tail, or one that cannot be read,
// leaves a notice marked Incomplete in the report.
func TestRunChecksJailEvidence(t *testing.T) {
	tests := []struct {
		name       string
		copyOut    func(t *testing.T) (io.ReadCloser, error)
		incomplete string // in the notice, "" for none
	}{
		{name: "whole log", copyOut: func(t *testing.T) (io.ReadCloser, error) {
			return tarOf(t, "jail/events.jsonl", jailLog(t, true)), nil
		}},
		{name: "tail lost", copyOut: func(t *testing.T) (io.ReadCloser, error) {
			return tarOf(t, "jail/events.jsonl", jailLog(t, false)), nil
		}, incomplete: "no end record"},
		{name: "no log", copyOut: func(t *testing.T) (io.ReadCloser, error) {
			return tarOf(t, "jail/spool/000001.http", []byte("x")), nil
		}, incomplete: "wrote no event log"},
		{name: "copy fails", copyOut: func(t *testing.T) (io.ReadCloser, error) {
			return nil, errors.New("engine gone")
		}, incomplete: "could not be read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var signalled []string
			rt := &runtimetest.Fake{Logs: readyLogs,
				Exec: func(ctx context.Context, sb *runtimetest.Sandbox, e orchestrator.ExecSpec) (int, error) {
					if sb.Spec.Role == orchestrator.RoleJail {
						signalled = append(signalled, strings.Join(e.Argv, " "))
					}
					return deadToolServer(ctx, sb, e)
				},
				CopyOut: func(ctx context.Context, sb *runtimetest.Sandbox, path string) (io.ReadCloser, error) {
					if sb.Spec.Role == orchestrator.RoleJail && path == orchestrator.JailDir {
						return tt.copyOut(t)
					}
					return io.NopCloser(bytes.NewReader(nil)), nil
				}}
			r := &orchestrator.Runner{Runtime: rt, Binary: binary(t)}
			out, _ := r.Run(t.Context(), testPlan(t), "")
			if out.Report == nil {
				t.Fatal("no report")
			}
			if len(signalled) != 1 || !strings.Contains(signalled[0], "kill -s TERM 1") {
				t.Errorf("execs in the jail %q, want one SIGTERM to its main process", signalled)
			}
			var notes []string
			sawQuery := false
			for _, e := range out.Report.Events {
				if n, ok := e.Data.(*trace.Notice); ok && n.Incomplete {
					notes = append(notes, n.Message)
				}
				if d, ok := e.Data.(*trace.DNSQuery); ok && d.Name == "c2.example." {
					sawQuery = true
				}
			}
			switch {
			case tt.incomplete == "" && len(notes) > 0:
				t.Errorf("incomplete notices %q for a whole log", notes)
			case tt.incomplete != "" && (len(notes) != 1 || !strings.Contains(notes[0], tt.incomplete)):
				t.Errorf("incomplete notices %q, want one about %q", notes, tt.incomplete)
			}
			if want := tt.name == "whole log" || tt.name == "tail lost"; sawQuery != want {
				t.Errorf("query in the report: %t, want %t", sawQuery, want)
			}
		})
	}
}
