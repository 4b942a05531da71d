package sweep

import "testing"

func TestIdentity(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"mirror-2026-11-29/acme/weather", "acme/weather"},
		{"skills.zip/alice/weather#2", "alice/weather#2"},
		{"weather", ""},
	} {
		if got := Identity(tc.id); got != tc.want {
			t.Errorf("Identity(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
}
