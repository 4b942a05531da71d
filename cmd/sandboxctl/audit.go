package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sandboxctl/sandboxctl/monitor"
	"github.com/sandboxctl/sandboxctl/monitor/audit"
)

func init() {
	register(command{name: "audit", short: "verify a monitor's audit log (audit verify DIR)", run: runAudit})
}

const auditSynopsis = `verify [flags] DIR

Checks the audit log of the monitor folder DIR (written by sandboxctl monitor
--out DIR): the signature of the checkpoint in DIR/monitor.json and of the
log's own checkpoint, that the log holds every record they cover unchanged
and in order (inclusion of each record; consistency from each checkpoint to
the log as it is). A rewritten, removed or reordered record, or a truncated
log, fails. Exit 0 when it verifies, 1 when it does not.

Examples:
  sandboxctl audit verify /tmp/mon
  sandboxctl audit verify --key monitor.vkey /tmp/mon   # a verifier key kept apart from the folder`

func runAudit(ctx context.Context, e env, args []string) int {
	help := len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help")
	if !help && (len(args) == 0 || args[0] != "verify") {
		e.errorf("audit needs a subcommand: verify")
		e.hintf("usage: sandboxctl audit verify [flags] DIR")
		return exitUsage
	}
	fs := newFlags(e, "audit verify", auditSynopsis)
	key := fs.String("key", "", "file holding the verifier key (default: the key in the report, which proves only that the log and report agree)")
	rest := args[1:]
	if help {
		rest = args // prints the usage
	}
	if code, ok := parseFlags(fs, interspersed(fs, rest)); !ok {
		return code
	}
	if fs.NArg() != 1 {
		e.errorf("audit verify needs exactly one monitor folder DIR")
		return exitUsage
	}
	dir := fs.Arg(0)
	b, err := os.ReadFile(filepath.Join(dir, "monitor.json"))
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	var rep monitor.Report
	if err := json.Unmarshal(b, &rep); err != nil || rep.Audit == nil {
		e.errorf("%s/monitor.json holds no audit checkpoint (%v)", dir, err)
		return exitFindings
	}
	vkey := rep.Audit.VerifierKey
	if *key != "" {
		k, err := os.ReadFile(*key)
		if err != nil {
			e.errorf("%v", err)
			return exitUsage
		}
		vkey = string(k)
	}
	logDir := filepath.Join(dir, "audit")
	own, err := os.ReadFile(filepath.Join(logDir, audit.CheckpointFile))
	if err != nil {
		e.errorf("%v", err)
		return exitFindings
	}
	res, err := audit.Verify(logDir, vkey, rep.Audit.Checkpoint, string(own))
	if err != nil {
		e.errorf("%v", err)
		return exitFindings
	}
	fmt.Fprintf(e.stdout, "audit log verified: %d records, %d checkpoints (the report's and the log's)\n", res.Records, res.Checkpoints)
	return exitClean
}
