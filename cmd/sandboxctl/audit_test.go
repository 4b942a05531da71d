package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/monitor"
	"github.com/sandboxctl/sandboxctl/monitor/audit"
)

// writeMonitorFolder writes a monitor folder with an audit log of n
// records and returns its verifier key.
func writeMonitorFolder(t *testing.T, dir string, records []string) string {
	t.Helper()
	os.RemoveAll(filepath.Join(dir, "audit"))
	l, err := audit.Create(filepath.Join(dir, "audit"), "sandboxctl.monitor/test")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, r := range records {
		if err := l.Append([]byte(r)); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := l.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	rep := monitor.Report{Audit: &monitor.Audit{Checkpoint: cp, VerifierKey: l.VerifierKey(), KeyFingerprint: audit.Fingerprint(l.VerifierKey())}}
	b, _ := json.Marshal(rep)
	if err := os.WriteFile(filepath.Join(dir, "monitor.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return l.VerifierKey()
}

// TestAuditTrust: audit verify says it checked consistency only when the
// key comes from the folder, verifies against a pinned key (--key, or its
// fingerprint in the pinned keys file), and catches a log rewritten and
// re-signed with a new key beside it only when the key is pinned.
func TestAuditTrust(t *testing.T) {
	real := []string{`{"run":1,"verdict":"clean"}`, `{"run":2,"verdict":"malicious"}`}
	forged := []string{`{"run":1,"verdict":"clean"}`, `{"run":2,"verdict":"clean"}`}
	cases := []struct {
		name string
		// forge rewrites the log, signs it with a key of its own and puts
		// that key in the folder and the report.
		forge    bool
		pins     string // the pinned keys file; "KEY" is the real key's fingerprint
		keyFile  bool   // --key with the real key
		args     []string
		wantCode int
		want     string
	}{
		{name: "no pin: consistency only", wantCode: exitClean, want: "consistency only"},
		{name: "pinned fingerprint", pins: "# monitor of 2026-11-29\nKEY nightly\n", wantCode: exitClean, want: "verified against the key pinned in"},
		{name: "pinned key file", keyFile: true, wantCode: exitClean, want: "verified against the key in"},
		{name: "another key pinned", pins: "sha256:" + strings.Repeat("ab", 32) + "\n", wantCode: exitClean, want: "consistency only"},
		{name: "required pin missing", args: []string{"--pinned"}, wantCode: exitFindings, want: "is not pinned"},
		{name: "required pin present", pins: "KEY\n", args: []string{"--pinned"}, wantCode: exitClean, want: "verified against"},
		{name: "forged log, no pin: only consistency claimed", forge: true, wantCode: exitClean, want: "consistency only"},
		{name: "forged log, pinned fingerprint", forge: true, pins: "KEY\n", args: []string{"--pinned"}, wantCode: exitFindings, want: "is not pinned"},
		{name: "forged log, pinned key file", forge: true, keyFile: true, wantCode: exitFindings, want: "signature"},
		{name: "malformed pins file", pins: "not a fingerprint\n", wantCode: exitUsage, want: "want sha256:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "mon")
			os.MkdirAll(dir, 0o755)
			key := writeMonitorFolder(t, dir, real)
			if c.forge {
				writeMonitorFolder(t, dir, forged)
			}
			cfg := filepath.Join(root, "config")
			if c.pins != "" {
				os.MkdirAll(filepath.Join(cfg, "sandboxctl"), 0o755)
				pins := strings.ReplaceAll(c.pins, "KEY", audit.Fingerprint(key))
				os.WriteFile(filepath.Join(cfg, "sandboxctl", "audit-keys"), []byte(pins), 0o644)
			}
			args := append([]string{"audit", "verify"}, c.args...)
			if c.keyFile {
				kf := filepath.Join(root, "monitor.vkey")
				os.WriteFile(kf, []byte(key+"\n"), 0o644)
				args = append(args, "--key", kf)
			}
			args = append(args, dir)
			var so, se bytes.Buffer
			code := run(t.Context(), args, env{stdout: &so, stderr: &se, getenv: func(k string) string {
				if k == "XDG_CONFIG_HOME" {
					return cfg
				}
				return ""
			}})
			msg := so.String() + se.String()
			if code != c.wantCode || !strings.Contains(msg, c.want) {
				t.Fatalf("exit %d, want %d with %q:\n%s", code, c.wantCode, c.want, msg)
			}
			if c.wantCode == exitClean && !strings.Contains(msg, "consistency only") && strings.Contains(msg, "consistent:") {
				t.Fatalf("a pinned verify reads as consistency only:\n%s", msg)
			}
		})
	}
}

func TestAuditFingerprintFormat(t *testing.T) {
	fp := audit.Fingerprint(" k+1+abc \n")
	if !strings.HasPrefix(fp, "sha256:") || len(fp) != len("sha256:")+64 || fp != audit.Fingerprint("k+1+abc") {
		t.Fatalf("fingerprint %q", fp)
	}
}
