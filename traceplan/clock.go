package traceplan

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var (
	clockOffsetRe = regexp.MustCompile(`^([+-])(\d{1,6})([smhdwy]?)$`)
	clockTimeRe   = regexp.MustCompile(`^(\d{1,2}):(\d{2})$`)
	weekdays      = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday,
		"wed": time.Wednesday, "thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}
)

// maxClockOffset bounds a fake clock: far enough for "a year from now",
// near enough that certificates and dates stay plausible.
const maxClockOffset = 20 * 365 * 24 * time.Hour

// ClockOffset is how far the clock spec moves the sandbox's time from now,
// read in the sandbox's time zone loc. A spec is one of:
//
//   - an offset: +3d, -2h, +90m, +1w, +1y, +45s (a bare number is seconds);
//   - a time of day, today: 03:00 (the clock reads 03:00 at the start);
//   - a weekday: sat (the next one, at the time of day it is now);
//   - a date, or a date and time: 2027-01-01, 2027-01-01T03:00.
//
// "" is no offset.
func ClockOffset(spec string, now time.Time, loc *time.Location) (time.Duration, error) {
	spec = strings.TrimSpace(strings.ToLower(spec))
	if spec == "" {
		return 0, nil
	}
	if loc == nil {
		loc = time.UTC
	}
	local := now.In(loc)
	var off time.Duration
	switch {
	case clockOffsetRe.MatchString(spec):
		m := clockOffsetRe.FindStringSubmatch(spec)
		n, _ := strconv.Atoi(m[2])
		unit := map[string]time.Duration{"": time.Second, "s": time.Second, "m": time.Minute, "h": time.Hour,
			"d": 24 * time.Hour, "w": 7 * 24 * time.Hour, "y": 365 * 24 * time.Hour}[m[3]]
		if time.Duration(n) > maxClockOffset/unit {
			return 0, fmt.Errorf("clock %q: more than 20 years away", spec)
		}
		off = time.Duration(n) * unit
		if m[1] == "-" {
			off = -off
		}
	case clockTimeRe.MatchString(spec):
		m := clockTimeRe.FindStringSubmatch(spec)
		h, _ := strconv.Atoi(m[1])
		mi, _ := strconv.Atoi(m[2])
		if h > 23 || mi > 59 {
			return 0, fmt.Errorf("clock %q: not a time of day", spec)
		}
		at := time.Date(local.Year(), local.Month(), local.Day(), h, mi, 0, 0, loc)
		off = at.Sub(now)
	case weekdays[spec] != 0 || spec == "sun":
		days := (int(weekdays[spec]) - int(local.Weekday()) + 7) % 7
		off = time.Duration(days) * 24 * time.Hour
	default:
		var at time.Time
		var err error
		if strings.Contains(spec, "t") {
			at, err = time.ParseInLocation("2006-01-02t15:04", spec, loc)
		} else {
			at, err = time.ParseInLocation("2006-01-02", spec, loc)
			if err == nil { // that day, at the time of day it is now
				at = at.Add(time.Duration(local.Hour())*time.Hour + time.Duration(local.Minute())*time.Minute)
			}
		}
		if err != nil {
			return 0, fmt.Errorf("clock %q: want +3d, -2h, 03:00, sat, 2027-01-01 or 2027-01-01T03:00", spec)
		}
		off = at.Sub(now)
	}
	if off > maxClockOffset || off < -maxClockOffset {
		return 0, fmt.Errorf("clock %q: more than 20 years away", spec)
	}
	return off.Truncate(time.Second), nil
}
