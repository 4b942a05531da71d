package orchestrator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUserGIDs pins the groups the agent image lists the writable places
// for to those the sandbox's /etc/group gives the user.
func TestUserGIDs(t *testing.T) {
	want := []int{UserGID, 4, 20, 24, 27, 29, 46, 100, 999}
	if diff := cmp.Diff(want, userGIDs()); diff != "" {
		t.Errorf("userGIDs() mismatch (-want +got):\n%s", diff)
	}
}
