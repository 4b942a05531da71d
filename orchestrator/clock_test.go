package orchestrator

import (
	"github.com/sandboxctl/sandboxctl/canaryfs"
	"reflect"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/traceplan"
)

func TestFaketimeSpec(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "+0", time.Hour: "+3600", -90 * time.Second: "-90"} {
		if got := faketimeSpec(d); got != want {
			t.Errorf("faketimeSpec(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestFakeClockFile(t *testing.T) {
	for p, want := range map[string]bool{
		"/dev/shm/faketime_shm_159":    true,
		"/dev/shm/sem.faketime_sem_12": true,
		"/dev/shm/payload":             false,
		"/tmp/faketime_shm_1":          false,
		"/dev/shm/sem.other":           false,
	} {
		if got := fakeClockFile(p); got != want {
			t.Errorf("fakeClockFile(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestLiteralDateFollowsTheClock: the literal driver fills a date
// placeholder with the date the sandbox sees, in its time zone.
func TestLiteralDateFollowsTheClock(t *testing.T) {
	if _, err := time.LoadLocation("Asia/Tokyo"); err != nil {
		t.Skip("no time zone database:", err)
	}
	started := time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC) // 05:00 the next day in Tokyo
	for _, tc := range []struct {
		name, tz string
		off      time.Duration
		want     string
	}{
		{name: "utc, real clock", tz: "UTC", want: "2026-11-27"},
		{name: "tokyo, real clock", tz: "Asia/Tokyo", want: "2026-11-28"},
		{name: "tokyo, a year ahead", tz: "Asia/Tokyo", off: 365 * 24 * time.Hour, want: "2027-11-28"},
		{name: "unknown zone reads as utc", tz: "Nowhere/Atlantis", off: -48 * time.Hour, want: "2026-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &run{started: started, clockOff: tc.off, system: system{TimeZone: tc.tz}, home: &canaryfs.Home{}}
			if got := literalConfig(st).Date; got != tc.want {
				t.Errorf("date %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWarmKeyMonitoring: "hidden" is the default spelled out, so a plan
// that says it takes the default's warm pairs; "visible" does not.
func TestWarmKeyMonitoring(t *testing.T) {
	for _, tc := range []struct {
		name, a, b string
		same       bool
	}{
		{name: "hidden is the default", a: "", b: traceplan.MonitoringHidden, same: true},
		{name: "visible is not", a: "", b: traceplan.MonitoringVisible, same: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reflect.DeepEqual(warmKey(traceplan.Plan{Monitoring: tc.a}), warmKey(traceplan.Plan{Monitoring: tc.b})); got != tc.same {
				t.Errorf("same key for %q and %q: %v, want %v", tc.a, tc.b, got, tc.same)
			}
		})
	}
}
