package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/capbuf"
	"github.com/sandboxctl/sandboxctl/trace"
)

// maxLeftovers caps the process records read back (a fork bomb at the pids
// limit leaves hundreds; the count is kept beyond the cap).
const maxLeftovers = 512

// endSkill runs agentd __freeze as root in the sandbox: it waits up to
// grace while the skill's processes still run (observed all along), then
// stops, records and kills them. It adds a leftover event per process
// and a notice summing them up to the trace; the sandbox's output is
// untrusted input. A sandbox that cannot run it (exhausted, gone) leaves
// a notice: the processes may have gone on unrecorded until removal.
func (r *Runner) endSkill(ctx context.Context, st *run, grace time.Duration) {
	if st.sandbox == nil {
		return
	}
	ev, err := r.freeze(ctx, st, grace)
	if err != nil {
		r.log().Warn("end the skill's processes", "err", err)
		ev = append(ev, trace.Event{Time: r.now(), Source: trace.SourceSyscall, Type: trace.TypeJailNotice,
			Data: &trace.Notice{Message: "the skill's processes left after the last call could not be frozen and recorded: " + err.Error(), Incomplete: true}})
	}
	st.events = append(st.events, ev...)
}

func (r *Runner) freeze(ctx context.Context, st *run, grace time.Duration) ([]trace.Event, error) {
	out, stderr := capbuf.New(1<<20), capbuf.New(4<<10)
	t0 := time.Now()
	code, err := st.sandbox.Exec(ctx, ExecSpec{
		Argv: []string{AgentBin, "__freeze", "--uid", strconv.Itoa(UserUID), "--log-dir", CallLogDir,
			"--grace", grace.String()},
		User: "0:0", Stdout: out, Stderr: stderr,
	})
	r.log().Debug("collect: grace period and freeze", "took", time.Since(t0), "grace", grace)
	if err != nil {
		return nil, fmt.Errorf("end the skill's processes: %w", err)
	}
	events := parseLeftovers(strings.NewReader(out.String()), r.now())
	if code != 0 {
		r.log().Warn("end the skill's processes", "exit", code, "stderr", stderr.String())
	}
	if n := len(events); n > 0 {
		frozen := 0
		for _, e := range events {
			if !e.Data.(*trace.Leftover).Ended {
				frozen++
			}
		}
		events = append(events, trace.Event{Time: r.now(), Source: trace.SourceSyscall, Type: trace.TypeJailNotice,
			Data: &trace.Notice{Message: fmt.Sprintf("%d processes of the skill were running after the last call; %d were still running after the %v grace period: frozen, recorded and ended",
				n, frozen, grace)}})
	}
	return events, nil
}

// parseLeftovers reads the JSON lines of agentd __freeze (untrusted:
// capped, malformed lines skipped) into leftover events.
func parseLeftovers(r io.Reader, at time.Time) []trace.Event {
	var events []trace.Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 256<<10)
	for sc.Scan() && len(events) < maxLeftovers {
		var l trace.Leftover
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.PID <= 0 {
			continue
		}
		if len(l.Argv) > 65 {
			l.Argv = l.Argv[:65]
		}
		events = append(events, trace.Event{Time: at, Source: trace.SourceSyscall, Type: trace.TypeLeftover,
			ToolCallID: capID(l.CallID), PID: l.PID, PPID: l.PPID, Data: &l})
	}
	return events
}

// capID keeps a call id only when it looks like one.
func capID(id string) string {
	if callLogName.MatchString(id + ".log") {
		return id
	}
	return ""
}

// graceLeft is the grace period the trace still has room for: none when
// it was interrupted or ran into its deadline, else at most what is left
// before the deadline.
func graceLeft(tctx context.Context, grace time.Duration, interrupted bool) time.Duration {
	if interrupted || tctx.Err() != nil {
		return 0
	}
	if dl, ok := tctx.Deadline(); ok {
		grace = min(grace, time.Until(dl))
	}
	return max(grace, 0)
}
