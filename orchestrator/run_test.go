package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/netcapture"
	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/orchestrator/runtimetest"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/trace"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

var idRe = regexp.MustCompile(`[^a-z0-9]+`)

func testPlan(t *testing.T) traceplan.Plan {
	p := traceplan.Plan{
		TraceID:   "test-" + strings.Trim(idRe.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-"),
		SkillPath: "testdata/skill",
		Driver:    traceplan.Driver{Kind: traceplan.DriverLiteral},
		Limits:    traceplan.DefaultLimits(),
		Seed:      []byte("seed"),
	}
	p.Limits.Timeout = 20 * time.Second
	if len(p.TraceID) > 60 {
		p.TraceID = p.TraceID[:60]
	}
	return p
}

// jailStopped is closed for a fake jail told to close its log, keyed by the
// fake sandbox (ids repeat across fakes).
var jailStopped sync.Map

func stoppedChan(sb *runtimetest.Sandbox) chan struct{} {
	ch, _ := jailStopped.LoadOrStore(sb, make(chan struct{}))
	return ch.(chan struct{})
}

// readyLogs plays a jail that signals readiness, stays up, and exits when
// told to close its log.
func readyLogs(ctx context.Context, sb *runtimetest.Sandbox, stdout, stderr io.Writer) error {
	if sb.Spec.Role != orchestrator.RoleJail {
		<-ctx.Done()
		return nil
	}
	b, _ := json.Marshal(trace.Event{Seq: 1, Time: time.Now(), Source: trace.SourceDNS, Type: trace.TypeJailNotice,
		Data: &trace.Notice{Message: netcapture.ReadyMessage}})
	stdout.Write(append(b, '\n'))
	select {
	case <-ctx.Done():
	case <-stoppedChan(sb):
	}
	return nil
}

// deadToolServer plays a sandbox whose tool server exits at once; every other
// exec succeeds (a jail told to close its log exits).
func deadToolServer(ctx context.Context, sb *runtimetest.Sandbox, e orchestrator.ExecSpec) (int, error) {
	if sb.Spec.Role == orchestrator.RoleJail && len(e.Argv) == 3 && strings.HasPrefix(e.Argv[2], "kill -s ") {
		ch := stoppedChan(sb)
		select {
		case <-ch:
		default:
			close(ch)
		}
		return 0, nil
	}
	if slices.Contains(e.Argv, "__mcp") {
		io.WriteString(e.Stderr, "tool server: cannot start\n")
		return 1, nil
	}
	if e.Stdin != nil {
		io.Copy(io.Discard, e.Stdin)
	}
	return 0, nil
}

func binary(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "agentd")
	if err := os.WriteFile(p, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunRemovesContainersOnEveryPath fails each step in turn and checks that
// nothing the trace created is left, and that the error says so.
func TestRunRemovesContainersOnEveryPath(t *testing.T) {
	for _, step := range []string{"", runtimetest.StepImage, runtimetest.StepCreate, runtimetest.StepStart,
		runtimetest.StepExec, runtimetest.StepLogs, runtimetest.StepCopyOut, runtimetest.StepDiff} {
		t.Run("fail="+step, func(t *testing.T) {
			rt := &runtimetest.Fake{FailAt: step, Logs: readyLogs, Exec: deadToolServer}
			r := &orchestrator.Runner{Runtime: rt, Binary: binary(t), Teardown: 5 * time.Second, EngineDiff: true}
			dir := t.TempDir()
			out, err := r.Run(t.Context(), testPlan(t), dir)
			calls, live := rt.Snapshot()
			if live != 0 {
				t.Errorf("%d containers left after Run; calls: %q", live, calls)
			}
			// The fake's Exec answers no MCP handshake, so even the
			// unfailed run ends in an error: the tool server never answers.
			if err == nil {
				t.Errorf("Run() err = nil, want an error (calls: %q)", calls)
			}
			if out.Report == nil {
				t.Fatalf("Run() returned no report; err = %v", err)
			}
			if out.Report.Status != reports.StatusError {
				t.Errorf("status = %q, want %q", out.Report.Status, reports.StatusError)
			}
			if out.Report.Verdict != "inconclusive" {
				t.Errorf("verdict = %q, want inconclusive (nothing ran)", out.Report.Verdict)
			}
			if _, err := os.Stat(filepath.Join(dir, "report.json")); err != nil {
				t.Errorf("run folder has no report.json: %v", err)
			}
		})
	}
}

// TestRunCancelledStillCleansUp cancels the trace while the jail starts.
func TestRunCancelledStillCleansUp(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	rt := &runtimetest.Fake{Logs: func(lctx context.Context, sb *runtimetest.Sandbox, stdout, stderr io.Writer) error {
		cancel() // Ctrl-C while waiting for the jail
		<-lctx.Done()
		return nil
	}}
	r := &orchestrator.Runner{Runtime: rt, Binary: binary(t), Teardown: 5 * time.Second}
	out, err := r.Run(ctx, testPlan(t), "")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run() err = %v, want context.Canceled", err)
	}
	if calls, live := rt.Snapshot(); live != 0 {
		t.Errorf("%d containers left after a cancelled Run; calls: %q", live, calls)
	}
	if out.Report == nil || out.Report.Status != reports.StatusCancelled {
		t.Errorf("report status = %v, want cancelled", out.Report)
	}
}

func TestRunKeepLeavesContainers(t *testing.T) {
	rt := &runtimetest.Fake{Logs: readyLogs, Exec: deadToolServer}
	p := testPlan(t)
	p.Keep = true
	r := &orchestrator.Runner{Runtime: rt, Binary: binary(t), Teardown: 5 * time.Second}
	out, _ := r.Run(t.Context(), p, "")
	_, live := rt.Snapshot()
	if live != 2 || len(out.Kept) != 2 {
		t.Errorf("kept %d (%q), live %d; want 2 containers kept", len(out.Kept), out.Kept, live)
	}
	rt.GC(context.Background(), p.TraceID)
}

// TestRunPanicStillCleansUp: a panic inside the pipeline, on the pass's
// goroutine (the setup exec), on one of collection's own (the
// jail's evidence) or on the sandbox evidence's exec, becomes an error, and the
// containers are still removed.
func TestRunPanicStillCleansUp(t *testing.T) {
	for _, tc := range []struct{ name, argv string }{
		{name: "setting the sandbox up", argv: "__settle"},
		{name: "the jail's evidence", argv: "kill -s"},
		{name: "sandbox evidence", argv: "__evidence"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &runtimetest.Fake{Logs: readyLogs, Exec: func(ctx context.Context, sb *runtimetest.Sandbox, e orchestrator.ExecSpec) (int, error) {
				if strings.Contains(strings.Join(e.Argv, " "), tc.argv) {
					panic("boom in collection")
				}
				return deadToolServer(ctx, sb, e)
			}}
			r := &orchestrator.Runner{Runtime: rt, Binary: binary(t), Teardown: 5 * time.Second}
			out, err := r.Run(t.Context(), testPlan(t), "")
			if !errors.Is(err, orchestrator.ErrInternal) {
				t.Errorf("Run() err = %v, want ErrInternal", err)
			}
			if calls, live := rt.Snapshot(); live != 0 {
				t.Errorf("%d containers left after a panic; calls: %q", live, calls)
			}
			if out.Report == nil {
				t.Errorf("no report after a panic")
			}
		})
	}
}
