package orchestrator

import (
	"slices"
	"testing"

	"github.com/sandboxctl/sandboxctl/traceplan"
)

// TestJailServesProjectDependencies: the jail's registry is told the
// versions the home's projects depend on, so that npm install and pip
// install -r in the user's project resolve (express ^4.21.1 is not on the
// ladder a stub package otherwise has).
func TestJailServesProjectDependencies(t *testing.T) {
	cfg, err := (&Runner{}).jailConfig(traceplan.Plan{})
	if err != nil {
		t.Fatal(err)
	}
	for key, v := range map[string]string{"npm:express": "4.21.1", "npm:stripe": "17.3.1", "pypi:pandas": "2.2.3", "pypi:boto3": "1.35.60"} {
		if !slices.Contains(cfg.PackageVersions[key], v) {
			t.Errorf("%s: versions %q, want %s among them", key, cfg.PackageVersions[key], v)
		}
	}
}
