package sweep

import (
	"crypto/rand"
	"errors"
	"strconv"
	"syscall"
)

func randRead(b []byte) { rand.Read(b) }

// DeadOnHost returns a ClaimOptions.Dead for the host named host: an owner
// of this host whose process no longer exists is dead. Owners of other
// hosts are never known dead (their leases end by expiry).
func DeadOnHost(host string) func(owner string) bool {
	return func(owner string) bool {
		h, p, ok := leaseOwnerHost(owner)
		if !ok || h != host {
			return false
		}
		pid, err := strconv.Atoi(p)
		if err != nil || pid <= 0 {
			return false
		}
		err = syscall.Kill(pid, 0)
		return errors.Is(err, syscall.ESRCH)
	}
}
