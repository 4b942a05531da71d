package orchestrator_test

import (
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/trace"
)

// TestTraceJailLogBudget floods the DNS sink past a 1 MiB event budget:
// the jail keeps what fits, counts the rest, and the report says so with a
// budget event, a notice marked Incomplete and SBX-BUDGET-001.
func TestTraceJailLogBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("integration")
	}
	dir := writeSkill(t, "dns-warmup", `python3 - <<'PY'
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.2)
for i in range(6000):
    name = b"".join(bytes([len(l)]) + l for l in [b"n%05d" % i, b"cache", b"example", b"org"]) + b"\x00"
    s.sendto(struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0) + name + struct.pack(">HH", 1, 1), ("10.0.0.53", 53))
    try:
        s.recv(512)
    except socket.timeout:
        pass
print("done")
PY`)
	p := basePlan(dir)
	p.Limits.EventBytes = 1 << 20
	out := realRun(t, p)
	var budget *trace.Budget
	var notice string
	queries := 0
	for _, e := range out.Report.Events {
		switch d := e.Data.(type) {
		case *trace.Budget:
			if d.Name == "jail_events" {
				budget = d
			}
		case *trace.Notice:
			if d.Incomplete && strings.Contains(d.Message, "budget") {
				notice = d.Message
			}
		case *trace.DNSQuery:
			queries++
		}
	}
	if budget == nil || budget.Dropped == 0 || budget.Limit != 1<<20 {
		t.Fatalf("budget event %+v, want jail_events with bytes dropped", budget)
	}
	if notice == "" {
		t.Error("no Incomplete notice for the dropped events")
	}
	if queries == 0 || queries >= 6000 {
		t.Errorf("%d queries in the report, want some (what fit the budget) and not all", queries)
	}
	found := false
	for _, f := range out.Report.Findings {
		found = found || f.RuleID == "SBX-BUDGET-001"
	}
	if !found {
		t.Errorf("SBX-BUDGET-001 did not fire")
	}
	t.Logf("%d queries kept, budget %+v", queries, budget)
}
