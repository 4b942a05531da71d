package orchestrator

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/persona"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// untar reads a setup tar into name → entry.
func untar(t *testing.T, b []byte) map[string]*tar.Header {
	t.Helper()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		h.PAXRecords = map[string]string{"body": string(body)}
		out["/"+strings.TrimSuffix(h.Name, "/")] = h
	}
}

var machineIDRe = regexp.MustCompile(`^[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}$`)

func TestNewSystem(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	seeded := traceplan.Plan{Seed: []byte("x")}
	a, err := newSystem(seeded, "jdoe-xps13", now)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newSystem(seeded, "jdoe-xps13", now)
	if a != b {
		t.Errorf("a seeded system differs between runs: %+v, %+v", a, b)
	}
	ids := map[string]bool{}
	for range 20 {
		s, err := newSystem(traceplan.Plan{}, "h", now)
		if err != nil {
			t.Fatal(err)
		}
		if !machineIDRe.MatchString(s.MachineID) {
			t.Errorf("machine id %q is not a random (v4) systemd id", s.MachineID)
		}
		ids[s.MachineID] = true
		if age := now.Sub(s.Installed); age < 90*24*time.Hour || age > 700*24*time.Hour {
			t.Errorf("installed %v before the trace", age)
		}
		if s.TimeZone == "" {
			t.Error("no time zone")
		}
	}
	if len(ids) != 20 {
		t.Errorf("%d distinct machine ids in 20 traces", len(ids))
	}
	for _, p := range []traceplan.Plan{{TimeZone: "Asia/Tokyo"}, {TimeZone: "Asia/Tokyo", Seed: []byte("x")}} {
		if s, err := newSystem(p, "h", now); err != nil || s.TimeZone != "Asia/Tokyo" {
			t.Errorf("plan's time zone: %q, %v", s.TimeZone, err)
		}
	}
}

func TestWriteSystemTar(t *testing.T) {
	tests := []struct {
		name      string
		persona   string
		localtime string
		want      []string
		absent    []string
		hosts     string
	}{
		{name: "linux", persona: "", localtime: "/usr/share/zoneinfo/Europe/Berlin",
			want:   []string{"/etc/machine-id", "/etc/timezone", hostsStage},
			absent: []string{"/usr/bin/security", "/usr/local/bin/base64"}, hosts: "127.0.1.1\tjdoe-xps13\n"},
		{name: "macos", persona: persona.MacOS, localtime: "/var/db/timezone/zoneinfo/Europe/Berlin",
			want:   []string{"/etc/machine-id", "/var/db/timezone/zoneinfo", "/usr/bin/security", "/usr/bin/osascript", "/usr/bin/sw_vers", "/usr/local/bin/base64", "/usr/local/bin/uname", "/bin/launchctl"},
			absent: []string{"/etc/timezone"}, hosts: "255.255.255.255\tbroadcasthost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := system{Persona: tt.persona, Hostname: "jdoe-xps13", MachineID: "0123456789ab4def8123456789abcdef",
				TimeZone: "Europe/Berlin", Installed: time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)}
			var buf bytes.Buffer
			if err := writeSystemTar(&buf, s); err != nil {
				t.Fatal(err)
			}
			got := untar(t, buf.Bytes())
			for _, p := range tt.want {
				if got[p] == nil {
					t.Errorf("no %s", p)
				}
			}
			for _, p := range tt.absent {
				if got[p] != nil {
					t.Errorf("%s written for persona %q", p, tt.persona)
				}
			}
			if h := got["/etc/machine-id"]; h == nil || h.PAXRecords["body"] != s.MachineID+"\n" || h.Mode != 0o444 || !h.ModTime.Equal(s.Installed) {
				t.Errorf("machine-id entry %+v", h)
			}
			if h := got["/etc/localtime"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != tt.localtime {
				t.Errorf("localtime entry %+v", h)
			}
			if h := got[hostsStage]; h == nil || !strings.Contains(h.PAXRecords["body"], tt.hosts) {
				t.Errorf("hosts %q lacks %q", h.PAXRecords["body"], tt.hosts)
			}
			for p, h := range got {
				if _, shim := persona.IsShim(p); shim && (h.Mode != 0o755 || h.Uname != "root") {
					t.Errorf("shim %s: mode %o owner %s", p, h.Mode, h.Uname)
				}
			}
		})
	}
}

func TestSetupPathSystemFiles(t *testing.T) {
	for _, p := range []string{"/etc/machine-id", "/etc/localtime", "/usr/bin/security", "/usr/local/bin/uname", "/Users", "/usr/bin"} {
		if !setupPath(p) {
			t.Errorf("%s is not filtered from the diff", p)
		}
	}
	for _, p := range []string{"/usr/bin/evil", "/etc/cron.d/x", "/Users/jdoe/.zshrc"} {
		if setupPath(p) {
			t.Errorf("%s is filtered from the diff", p)
		}
	}
}
