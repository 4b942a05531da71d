package orchestrator

import (
	"fmt"
	"strings"
	"time"
)

// A fake clock (Plan.Clock) moves the sandbox's time for every dynamically
// linked program (libfaketime, preloaded through /etc/ld.so.preload with
// its offset in /etc/faketimerc), and the jail's with it: the sinks' Date
// headers and the validity of the certificates they mint. Statically
// linked programs (Go binaries among them) read the kernel's clock and see
// the real time; file times are the kernel's too. The tracer runs with the
// real clock, so evidence keeps real times.

// clockLib is where Debian's libfaketime package puts the library, per
// architecture; the setup script preloads the one that exists.
const clockLib = "/usr/lib/*/faketime/libfaketime.so.1"

// faketimeRC is libfaketime's system-wide configuration: the offset.
// preloadPath is the dynamic loader's list of libraries every program
// loads first.
const (
	faketimeRC  = "/etc/faketimerc"
	preloadPath = "/etc/ld.so.preload"
)

// faketimeSpec is the offset as libfaketime reads it: signed seconds.
func faketimeSpec(off time.Duration) string {
	return fmt.Sprintf("%+d", int64(off/time.Second))
}

// clockEnv is the environment the user's processes get under a fake
// clock: libfaketime keeps the monotonic clock real (it would otherwise
// read like the wall clock, which /proc/uptime contradicts).
func clockEnv(clock string) []string {
	if clock == "" {
		return nil
	}
	return []string{"FAKETIME_DONT_FAKE_MONOTONIC=1"}
}

// fakeClockFile reports the shared memory and semaphore files libfaketime
// leaves in /dev/shm for every process that loads it (the collection's own
// among them): the fake clock's, not the skill's.
func fakeClockFile(p string) bool {
	return strings.HasPrefix(p, "/dev/shm/faketime_shm_") || strings.HasPrefix(p, "/dev/shm/sem.faketime_sem_")
}

// location is the sandbox's time zone, UTC when the host's zone database
// does not know it.
func (st *run) location() *time.Location {
	if loc, err := time.LoadLocation(st.system.TimeZone); err == nil && st.system.TimeZone != "" {
		return loc
	}
	return time.UTC
}
