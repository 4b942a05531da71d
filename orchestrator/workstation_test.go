package orchestrator_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/trace"
)

// TestTraceWorkstation checks, in one trace on the real engine, that the
// image's toolset is there and works as the user, that the tools that touch
// the network land in the jail's sinks, and that the system looks like one
// installed machine (its own machine id, a hostname the files agree on, a
// time zone, a locale that exists).
func TestTraceWorkstation(t *testing.T) {
	dir := writeSkill(t, "workstation",
		// t001: every tool is there and the main ones work as the user.
		`set -e
for c in python pip dig nslookup host ifconfig netstat nc socat xxd openssl gpg rsync less vim vi nano make gcc \
  sqlite3 lsof 7z unzip tree gh aws kubectl rg zsh jq ping bc strings tmux htop patch bzip2; do
  command -v $c >/dev/null || { echo "MISSING: $c"; exit 1; }
done
cd /tmp && printf 'int main(void){return 0;}\n' > t.c && gcc -o t t.c && ./t
printf 'abc' | xxd -p | xxd -r -p | grep -q abc
sqlite3 :memory: 'select 40+2' | grep -q 42
7z a -bso0 t.7z t.c && unzip -v >/dev/null && kubectl version --client >/dev/null 2>&1
python -c 'import requests, yaml' && python3 -m venv /tmp/venv && /tmp/venv/bin/python -c 'print("venv ok")'
echo tools-ok`,
		// t002: the system's identity.
		`cat /etc/machine-id /var/lib/dbus/machine-id; hostname; cat /etc/hostname; grep "^127.0.1.1" /etc/hosts; cat /etc/timezone; readlink /etc/localtime`,
		// t003: no locale warning.
		`perl -e 'print "perl-ok\n"' 2>&1; locale 2>&1 | head -1`,
		// t004-t008: network tools in the jail.
		`dig +short mail.northwind-example.org; nslookup api.northwind-example.org | tail -2; host db.northwind-example.org`,
		`printf 'hello-nc\n' | nc -w 3 203.0.113.9 4444; echo nc=$?`,
		`echo hello-socat | socat -t 2 - TCP:203.0.113.10:5555,connect-timeout=3; echo socat=$?`,
		`pip download --no-deps --no-cache-dir -d /tmp/pipdl totally-unknown-pkg 2>&1 | tail -1; echo pip=$?`,
		`gh api user 2>&1 | head -2; aws sts get-caller-identity 2>&1 | head -2; echo done`,
	)
	p := basePlan(dir)
	p.Limits.Timeout = 8 * time.Minute
	p.Limits.ToolTimeout = 4 * time.Minute // gcc, 7z and a venv with pip on a loaded machine
	out := realRun(t, p)
	rep := out.Report
	if rep.Status != reports.StatusCompleted {
		t.Fatalf("status %s (%s), want completed", rep.Status, rep.Error)
	}
	if c := callByID(rep, "t001"); c == nil || !strings.Contains(c.Result.Stdout, "tools-ok") || !strings.Contains(c.Result.Stdout, "venv ok") {
		t.Errorf("toolset: %+v", c)
	}
	c := callByID(rep, "t002")
	if c == nil {
		t.Fatal("no t002")
	}
	lines := strings.Split(strings.TrimSpace(c.Result.Stdout), "\n")
	if len(lines) < 7 {
		t.Fatalf("system identity: %q (stderr %q)", c.Result.Stdout, c.Result.Stderr)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(lines[0]) || lines[1] != lines[0] {
		t.Errorf("machine id %q, dbus %q", lines[0], lines[1])
	}
	if lines[2] != rep.Sandbox.Hostname || lines[3] != rep.Sandbox.Hostname || lines[4] != "127.0.1.1\t"+rep.Sandbox.Hostname {
		t.Errorf("hostname %q, /etc/hostname %q, hosts %q; want %q", lines[2], lines[3], lines[4], rep.Sandbox.Hostname)
	}
	if lines[6] != "/usr/share/zoneinfo/"+lines[5] {
		t.Errorf("timezone %q, localtime -> %q", lines[5], lines[6])
	}
	if c := callByID(rep, "t003"); c == nil || strings.Contains(c.Result.Stdout, "warning") || !strings.Contains(c.Result.Stdout, "perl-ok") ||
		!strings.Contains(c.Result.Stdout, "en_US.UTF-8") {
		t.Errorf("locale: %+v", c)
	}

	names := map[string]bool{}
	conns := map[int]string{}
	hosts := map[string]bool{}
	for _, e := range rep.Events {
		switch d := e.Data.(type) {
		case *trace.DNSQuery:
			names[strings.TrimSuffix(d.Name, ".")] = true
		case *trace.Connection:
			conns[d.DstPort] += string(d.FirstBytes)
		case *trace.HTTPExchange:
			hosts[d.Host] = true
		}
	}
	for _, n := range []string{"mail.northwind-example.org", "api.northwind-example.org", "db.northwind-example.org"} {
		if !names[n] {
			t.Errorf("no DNS query for %s; queries: %v", n, names)
		}
	}
	if !strings.Contains(conns[4444], "hello-nc") || !strings.Contains(conns[5555], "hello-socat") {
		t.Errorf("catch-all connections %v", conns)
	}
	for _, h := range []string{"pypi.org", "api.github.com"} {
		if !hosts[h] {
			t.Errorf("no HTTP request to %s; hosts: %v", h, hosts)
		}
	}
	if !hosts["sts.amazonaws.com"] && !hosts["sts.us-east-1.amazonaws.com"] {
		t.Errorf("no request from aws to STS; hosts: %v", hosts)
	}
	for _, id := range []string{"t004", "t005", "t006", "t007", "t008"} {
		if c := callByID(rep, id); c != nil {
			t.Logf("%s: %s", id, strings.TrimSpace(c.Result.Stdout))
		}
	}
}
