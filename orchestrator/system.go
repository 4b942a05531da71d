package orchestrator

import (
	"archive/tar"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/persona"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// system is what makes the sandbox's own system files look like one
// installed machine rather than a fresh image: an id of its own, a time
// zone, a hosts file that names it, and the persona's tools. It differs per
// trace (or follows Plan.Seed).
type system struct {
	Persona   string
	Hostname  string
	MachineID string    // 32 lower-case hex digits, a random (version 4) id as systemd writes it
	TimeZone  string    // an IANA name
	Installed time.Time // when the system was set up: the files' mtimes
	// Clock is libfaketime's offset (faketimeSpec) when Plan.Clock moves
	// the clock; "" leaves it real.
	Clock string
}

// timeZones are where a developer plausibly works.
var timeZones = []string{"America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles",
	"America/Toronto", "Europe/London", "Europe/Dublin", "Europe/Berlin", "Europe/Paris", "Europe/Amsterdam",
	"Europe/Warsaw", "Europe/Madrid"}

// newSystem draws the trace's system identity from crypto/rand, or from
// seed when it is set (a seeded trace is reproducible).
func newSystem(p traceplan.Plan, hostname string, now time.Time) (system, error) {
	var r io.Reader = rand.Reader
	if p.Seed != nil {
		r = canary.SeededReader(append([]byte("system\x00"), p.Seed...))
	}
	var b [16 + 4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return system{}, fmt.Errorf("system identity: %w", err)
	}
	id := b[:16]
	id[6] = id[6]&0x0f | 0x40 // version 4
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	days := 90 + (int(b[16])<<8|int(b[17]))%600
	tz := timeZones[int(b[18])%len(timeZones)]
	if p.TimeZone != "" {
		tz = p.TimeZone
	}
	return system{
		Persona:   p.Persona,
		Hostname:  hostname,
		MachineID: hex.EncodeToString(id),
		TimeZone:  tz,
		Installed: now.UTC().Add(-time.Duration(days)*24*time.Hour - time.Duration(b[19])*time.Minute).Truncate(time.Second),
	}, nil
}

// hostsFile is /etc/hosts as the system's installer writes it.
func (s system) hostsFile() string {
	if s.Persona == persona.MacOS {
		return "##\n# Host Database\n#\n# localhost is used to configure the loopback interface\n# when the system is booting.  Do not change this entry.\n##\n127.0.0.1\tlocalhost\n255.255.255.255\tbroadcasthost\n::1             localhost\n"
	}
	return "127.0.0.1\tlocalhost\n127.0.1.1\t" + s.Hostname + "\n\n# The following lines are desirable for IPv6 capable hosts\n::1     localhost ip6-localhost ip6-loopback\nff02::1 ip6-allnodes\nff02::2 ip6-allrouters\n"
}

// hostsStage is where the setup tar leaves the hosts file; the setup
// script copies it over the engine's /etc/hosts (a bind mount, which tar
// cannot replace).
const hostsStage = "/run/agentd/hosts"

// systemPaths are the paths writeSystemTar writes and the folders it
// changes (the shims' among them), for the diff filter.
var systemPaths = []string{"/etc/machine-id", "/etc/timezone", "/etc/localtime", "/var/db", "/var/db/timezone",
	"/var/db/timezone/zoneinfo", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/bin"}

// writeSystemTar writes the system files of s as a tar stream for
// extraction at "/" by root: the machine id, the time zone, the staged
// hosts file and the persona's shims.
func writeSystemTar(w io.Writer, s system) error {
	tw := tar.NewWriter(w)
	file := func(p string, mode int64, content string, mtime time.Time) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(p, "/"), Mode: mode,
			Size: int64(len(content)), Uname: "root", Gname: "root", ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := io.WriteString(tw, content)
		return err
	}
	link := func(p, target string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: strings.TrimPrefix(p, "/"), Linkname: target,
			Mode: 0o777, Uname: "root", Gname: "root", ModTime: s.Installed, Format: tar.FormatPAX})
	}
	dir := func(p string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(p, "/") + "/", Mode: 0o755,
			Uname: "root", Gname: "root", ModTime: s.Installed, Format: tar.FormatPAX})
	}
	if err := file("/etc/machine-id", 0o444, s.MachineID+"\n", s.Installed); err != nil {
		return fmt.Errorf("write system tar: %w", err)
	}
	var err error
	if s.Persona == persona.MacOS {
		// macOS links /etc/localtime into /var/db/timezone.
		for _, d := range []string{"/var/db", "/var/db/timezone"} {
			if err = dir(d); err != nil {
				break
			}
		}
		if err == nil {
			err = link("/var/db/timezone/zoneinfo", "/usr/share/zoneinfo")
		}
		if err == nil {
			err = link("/etc/localtime", "/var/db/timezone/zoneinfo/"+s.TimeZone)
		}
	} else {
		err = file("/etc/timezone", 0o644, s.TimeZone+"\n", s.Installed)
		if err == nil {
			err = link("/etc/localtime", "/usr/share/zoneinfo/"+s.TimeZone)
		}
	}
	if err == nil {
		err = file(hostsStage, 0o644, s.hostsFile(), s.Installed)
	}
	if err == nil && s.Clock != "" {
		// The setup script preloads libfaketime once this is in place.
		err = file(faketimeRC, 0o644, s.Clock+"\n", s.Installed)
	}
	for _, f := range persona.Shims(s.Persona) {
		if err != nil {
			break
		}
		err = file(f.Path, int64(f.Mode.Perm()), string(f.Content), s.Installed)
	}
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return fmt.Errorf("write system tar: %w", err)
	}
	return nil
}
