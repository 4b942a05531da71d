package traceplan

import (
	"testing"
	"time"
)

func TestClockOffset(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	// A Wednesday, 10:30 in Tokyo.
	now := time.Date(2026, 11, 25, 1, 30, 15, 0, time.UTC)
	for _, tc := range []struct {
		name, spec string
		loc        *time.Location
		want       time.Duration
		wantErr    bool
	}{
		{name: "empty", spec: "", want: 0},
		{name: "days ahead", spec: "+3d", want: 72 * time.Hour},
		{name: "hours back", spec: "-2h", want: -2 * time.Hour},
		{name: "bare seconds", spec: "+45", want: 45 * time.Second},
		{name: "a year", spec: "+1y", want: 365 * 24 * time.Hour},
		{name: "weeks", spec: "+2w", want: 14 * 24 * time.Hour},
		{name: "time of day later", spec: "12:30", loc: tokyo, want: 2*time.Hour - 15*time.Second},
		{name: "time of day earlier", spec: "03:00", loc: tokyo, want: -(7*time.Hour + 30*time.Minute + 15*time.Second)},
		{name: "time of day in utc", spec: "03:00", want: time.Hour + 29*time.Minute + 45*time.Second},
		{name: "weekday ahead", spec: "sat", loc: tokyo, want: 3 * 24 * time.Hour},
		{name: "same weekday", spec: "Wed", loc: tokyo, want: 0},
		{name: "sunday", spec: "sun", loc: tokyo, want: 4 * 24 * time.Hour},
		{name: "date and time", spec: "2026-11-26T03:00", loc: tokyo, want: 16*time.Hour + 29*time.Minute + 45*time.Second},
		{name: "date keeps time of day", spec: "2026-11-27", loc: tokyo, want: 2*24*time.Hour - 15*time.Second},
		{name: "too far", spec: "+25y", wantErr: true},
		{name: "overflowing number", spec: "+999999y", wantErr: true},
		{name: "date too far", spec: "2070-01-01", wantErr: true},
		{name: "no sign", spec: "3d", wantErr: true},
		{name: "bad hour", spec: "25:00", wantErr: true},
		{name: "unknown unit", spec: "+3q", wantErr: true},
		{name: "word", spec: "tomorrow", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ClockOffset(tc.spec, now, tc.loc)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ClockOffset(%q) error %v, want error %v", tc.spec, err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("ClockOffset(%q) = %v, want %v", tc.spec, got, tc.want)
			}
		})
	}
}
func FuzzClockOffset(f *testing.F) {
	for _, s := range []string{"+3d", "03:00", "sat", "2027-01-01T03:00", "-999999y", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 25, 1, 30, 15, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		off, err := ClockOffset(s, now, time.UTC)
		if err == nil && (off > maxClockOffset || off < -maxClockOffset) {
			t.Errorf("ClockOffset(%q) = %v, beyond the bound", s, off)
		}
	})
}
