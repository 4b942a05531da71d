package orchestrator

import (
	"sync"
	"time"
)

// PhaseTime is how long one stage of a pass took, wall clock.
type PhaseTime struct {
	Phase string        `json:"phase"`
	Took  time.Duration `json:"took_ns"`
}

// phaseClock records the stages of one pass as laps: each lap is the time
// since the previous one. It is the pass's own (a Runner is shared by
// concurrent traces) and safe for concurrent use.
type phaseClock struct {
	mu   sync.Mutex
	last time.Time
	laps []PhaseTime
}

func newPhaseClock() *phaseClock { return &phaseClock{last: time.Now()} }

// lap ends the phase that ran since the previous lap and returns its time.
func (c *phaseClock) lap(phase string) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	d := now.Sub(c.last)
	c.last = now
	c.laps = append(c.laps, PhaseTime{Phase: phase, Took: d})
	return d
}

func (c *phaseClock) all() []PhaseTime {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]PhaseTime(nil), c.laps...)
}

// lap ends a stage of st's pass: its time goes to the Outcome and to the
// debug log (SANDBOXCTL_DEBUG=1 prints "phase" lines).
func (r *Runner) lap(st *run, phase string) {
	d := st.clock.lap(phase)
	r.log().Debug("phase", "trace", st.plan.TraceID, "name", phase, "took", d)
}
