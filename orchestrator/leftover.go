package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/trace"
)

// maxLeftovers caps the process records read back (a fork bomb at the pids
// limit leaves hundreds; the count is kept beyond the cap).
const maxLeftovers = 512

// The evidence exec (agentd __evidence --freeze-uid) first waits up to the
// grace period while the skill's processes still run (observed all along),
// then stops, records and kills them (mcptools.Freeze). leftoverEvents
// makes a leftover event per process record and a notice summing them up;
// the sandbox's output is untrusted input. A sandbox that cannot do it
// (exhausted, gone) leaves a notice instead (notFrozen): the processes may
// have gone on unrecorded until removal.

// leftoverEvents reads the records (EvidenceLeftovers) of a freeze with
// grace into events.
func leftoverEvents(out string, grace time.Duration, now time.Time) []trace.Event {
	events := parseLeftovers(strings.NewReader(out), now)
	if n := len(events); n > 0 {
		frozen := 0
		for _, e := range events {
			if !e.Data.(*trace.Leftover).Ended {
				frozen++
			}
		}
		events = append(events, trace.Event{Time: now, Source: trace.SourceSyscall, Type: trace.TypeJailNotice,
			Data: &trace.Notice{Message: fmt.Sprintf("%d processes of the skill were running after the last call; %d were still running after the %v grace period: frozen, recorded and ended",
				n, frozen, grace)}})
	}
	return events
}

// notFrozen is the notice of a freeze that failed for reason.
func notFrozen(reason string, now time.Time) trace.Event {
	return trace.Event{Time: now, Source: trace.SourceSyscall, Type: trace.TypeJailNotice,
		Data: &trace.Notice{Message: "the skill's processes left after the last call could not be frozen and recorded: " + reason, Incomplete: true}}
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
