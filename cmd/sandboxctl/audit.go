package main

import (
	"context"
	"encoding/json"
	"errors"
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
log, fails.

Whom the signature proves depends on where the key comes from. The key in DIR
proves only that the log and the report agree: whoever rewrote the log could
rewrite the key beside it. A pinned key proves the log is the one its writer
signed: --key FILE (the verifier key, kept apart from DIR), or the key's
fingerprint (sandboxctl monitor prints it: "audit key sha256:...") on a line
of the pinned keys file ($XDG_CONFIG_HOME/sandboxctl/audit-keys, else
~/.config/sandboxctl/audit-keys; --pins FILE names another). Without either,
verify says it checked consistency only.

Exit 0 when it verifies (consistency only included, unless --pinned), 1 when
it does not, 2 on a usage error.

Examples:
  sandboxctl audit verify /tmp/mon
  sandboxctl audit verify --key monitor.vkey /tmp/mon   # a verifier key kept apart from the folder
  sandboxctl audit verify --pinned /tmp/mon             # fail unless the key is pinned`

// auditPinsPath is the user's pinned audit keys file.
func auditPinsPath(e env) string {
	dir := e.getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := e.getenv("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "sandboxctl", "audit-keys")
}

func runAudit(ctx context.Context, e env, args []string) int {
	help := len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help")
	if !help && (len(args) == 0 || args[0] != "verify") {
		e.errorf("audit needs a subcommand: verify")
		e.hintf("usage: sandboxctl audit verify [flags] DIR")
		return exitUsage
	}
	fs := newFlags(e, "audit verify", auditSynopsis)
	key := fs.String("key", "", "file holding the verifier key, kept apart from DIR (default: a key whose fingerprint is pinned, else the report's own, which proves only that the log and report agree)")
	pinsFile := fs.String("pins", "", "file of pinned key fingerprints, one a line (default: $XDG_CONFIG_HOME/sandboxctl/audit-keys when it exists)")
	pinned := fs.Bool("pinned", false, "fail unless the key is pinned (--key, or its fingerprint in the pinned keys file)")
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
	vkey, trust, ok := auditKey(e, rep.Audit.VerifierKey, *key, *pinsFile)
	if !ok {
		return exitUsage
	}
	fp := audit.Fingerprint(vkey)
	if *pinned && trust == "" {
		e.errorf("the audit key %s is not pinned: give --key FILE, or add its fingerprint to %s if you recorded it when the monitor ran", fp, cmpOr(*pinsFile, auditPinsPath(e)))
		return exitFindings
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
	if trust != "" {
		fmt.Fprintf(e.stdout, "audit log verified against %s (%s): %d records, %d checkpoints (the report's and the log's)\n", trust, fp, res.Records, res.Checkpoints)
		return exitClean
	}
	fmt.Fprintf(e.stdout, "audit log consistent: %d records, %d checkpoints (the report's and the log's)\n", res.Records, res.Checkpoints)
	fmt.Fprintf(e.stdout, "consistency only: the verifier key %s was read from %s itself, so this shows that the log and the report agree, not who wrote them (whoever can rewrite the log can rewrite the key)\n", fp, dir)
	e.hintf("pin the key: --key FILE, or its fingerprint, as the monitor printed it, on a line of %s", cmpOr(*pinsFile, auditPinsPath(e)))
	return exitClean
}

// auditKey is the verifier key the log is checked against, and trust,
// where it came from ("" when from the monitor folder itself): --key FILE,
// else the report's own key, trusted when its fingerprint is pinned. ok is
// false on a usage problem, said.
func auditKey(e env, reportKey, keyFile, pinsFile string) (vkey, trust string, ok bool) {
	if keyFile != "" {
		k, err := os.ReadFile(keyFile)
		if err != nil {
			e.errorf("%v", err)
			return "", "", false
		}
		return string(k), "the key in " + keyFile, true
	}
	path, must := pinsFile, true
	if path == "" {
		path, must = auditPinsPath(e), false
	}
	pins, err := readPins(path, must)
	if err != nil {
		e.errorf("%v", err)
		return "", "", false
	}
	if pins[audit.Fingerprint(reportKey)] {
		return reportKey, "the key pinned in " + path, true
	}
	return reportKey, "", true
}

// readPins reads a pinned keys file; a missing file is no pins unless it
// was named.
func readPins(path string, must bool) (map[string]bool, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) && !must {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pins, err := audit.ParsePins(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pins, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
