package orchestrator

import (
	"crypto/rand"
	"fmt"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/netcapture"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// prepare is the plan stage of a pass: it loads the skill, seeds the home
// (its canaries and fixtures), makes the sandbox's system files and the
// jail's configuration, all as plain data in st; nothing runs yet.
func (r *Runner) prepare(st *run) (err error) {
	p := st.plan
	r.phase("load", "%s", p.SkillPath)
	st.skill, err = skill.Load(p.SkillPath, skill.Options{})
	if err != nil {
		return fmt.Errorf("load skill: %w", err)
	}
	if st.warm {
		// A Pool's pair: home, system files and jail are made already.
		st.skillDir = skillDirIn(st.home.HomeDir, skillSlug(st.skill))
		return nil
	}
	if err := r.seedIdentity(st); err != nil {
		return err
	}
	st.skillDir = skillDirIn(st.ident.HomeDir, skillSlug(st.skill))
	contents := make([][]byte, 0, len(st.skill.Files))
	for _, f := range st.skill.Files {
		netcapture.AddPackageHints(&st.jailCfg, f.Content) // versions the skill pins are served
		contents = append(contents, f.Content)
	}
	netcapture.AddPackageBins(&st.jailCfg, contents...) // and the executables it runs after installing them
	return nil
}

// seed makes what a trace needs besides its skill: the seeded home (its
// canaries and fixtures), the sandbox's system files and the jail's
// configuration (its CA and marker), fresh for every trace.
func (r *Runner) seed(st *run) error {
	if err := r.seedIdentity(st); err != nil {
		return err
	}
	return st.homeWait()
}

// seedIdentity is seed with the home's files made in the background: the
// home's identity (st.ident), the system files and the jail's
// configuration are ready when it returns, the home and its fixtures once
// st.homeWait returns nil (the containers start meanwhile; the setup tar
// waits for the home). Whoever calls it calls st.homeWait before the pass
// ends, on every path.
func (r *Runner) seedIdentity(st *run) error {
	p := st.plan
	// Every home is seeded, from a fresh random seed when the plan has
	// none, so that twin traces can make it again (twins.go).
	if st.seed = p.Seed; st.seed == nil {
		st.seed = make([]byte, 32)
		if _, err := rand.Read(st.seed); err != nil {
			st.homeWait = func() error { return err }
			return fmt.Errorf("seed home: %w", err)
		}
	}
	p.Seed = st.seed
	// A twin's home and system are dated from the original trace's start,
	// and its clock starts there (twins.go).
	at := st.started
	var twin *canary.Twin
	if p.Twin != nil {
		if !p.Twin.Start.IsZero() {
			at = p.Twin.Start
		}
		twin = canaryTwin(p.Twin)
	}
	x, err := canaryfs.Begin(canaryfs.Options{User: p.User, Hostname: p.Hostname, Seed: st.seed, Now: at, Persona: p.Persona, Twin: twin})
	if err != nil {
		st.homeWait = func() error { return err }
		return fmt.Errorf("seed home: %w", err)
	}
	st.ident = x.Identity
	var herr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		h, err := x.Finish()
		if err != nil {
			herr = fmt.Errorf("seed home: %w", err)
			return
		}
		f, err := h.AddFixtures()
		if err != nil {
			herr = fmt.Errorf("seed home: %w", err)
			return
		}
		st.home, st.fixtures = h, f
	}()
	st.homeWait = func() error {
		<-done
		return herr
	}
	if st.system, err = newSystem(p, st.ident.Hostname, at); err != nil {
		return err
	}
	if p.Clock != "" || !at.Equal(st.started) {
		if st.clockOff, err = traceplan.ClockOffset(p.Clock, at, st.location()); err != nil {
			return err
		}
		st.clockOff += at.Sub(st.started)
		st.system.Clock = faketimeSpec(st.clockOff)
	}
	st.jailCfg, err = r.jailConfig(p)
	st.jailCfg.ClockOffset = st.clockOff
	return err
}
