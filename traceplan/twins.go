package traceplan

import "time"

// Twins modes (Plan.Twins; docs/sandbox.md, "Twin traces").
const (
	TwinsAuto   = ""       // when the orchestrator's twinReason says so
	TwinsAlways = "always" // --twins
	TwinsOff    = "off"
)

// TwinSpec says which twin a plan is (Plan.Twin).
type TwinSpec struct {
	// Role is the twin's role, one of the orchestrator's twin roles.
	Role string `json:"role"`
	// Start is the original trace's start: the twin's home and system
	// files are dated from it and its clock starts there (zero: the
	// pass's own start, its own clock).
	Start time.Time `json:"start"`
	// Entropy is the randomness the twins share (the tool server makes
	// getrandom and the random devices reproducible from it).
	Entropy []byte `json:"-"`
	// Key and Grow make the other twin's secrets (canary.Twin).
	Key  []byte `json:"-"`
	Grow int    `json:"grow,omitempty"`
}
