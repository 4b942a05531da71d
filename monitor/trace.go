package monitor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
	"github.com/sandboxctl/sandboxctl/traceplan"
	"github.com/sandboxctl/sandboxctl/tracing"
)

// Run runs the monitor's cells, each run a trace of o.Plan through t, and
// returns the report. A trace that fails ends the monitor with the cells
// done so far and the error.
func Run(ctx context.Context, t tracing.Tracer, o Options) (Report, error) {
	if t == nil || o.TraceID == nil {
		return Report{}, errors.New("monitor: no tracer or no trace ids")
	}
	return runWith(ctx, o.runs(t), o)
}

// runs is the runFunc of Run: each run traces a copy of o.Plan with a
// trace id of its own, under its condition and from the state it is given,
// into its folder Dir/runs/<label>, and observes what it did and the state
// it left.
func (o Options) runs(t tracing.Tracer) runFunc {
	return func(ctx context.Context, s runSpec) (runResult, error) {
		p := o.Plan
		p.TraceID = o.TraceID()
		switch s.Condition.Name {
		case CondTimeZone:
			p.TimeZone = s.Condition.Value
		case CondUser:
			p.User = s.Condition.Value
		case CondHostname:
			p.Hostname = s.Condition.Value
		case CondClock:
			p.Clock = s.Condition.Value
		case CondMonitoring:
			p.Monitoring = s.Condition.Value
		case CondDNS:
			p.DNS = s.Condition.Value
		}
		if err := p.Validate(); err != nil {
			return runResult{}, err
		}
		for _, r := range s.Restore {
			p.Restore = append(p.Restore, traceplan.RestoreFile{Path: r.Path, Mode: r.Mode, Content: r.Content})
		}
		dir := filepath.Join(o.Dir, "runs", s.Label)
		rep, err := t.Trace(ctx, p, dir)
		if err != nil {
			return runResult{}, err
		}
		res := runResult{Observation: Observe(rep, s.Label, dir)}
		res.Changed, err = changedState(dir, rep.Events)
		if err != nil {
			return res, err
		}
		res.Deleted = deletedState(rep.Events, res.Changed)
		if o.Observed == nil {
			return res, nil
		}
		// The observation as the monitor saw it, before any comparison.
		rec := res.Observation
		rec.Label, rec.Written = s.Label, nil
		for _, c := range res.Changed {
			rec.Written = append(rec.Written, c.Path)
		}
		for _, r := range s.Restore {
			rec.Restored = append(rec.Restored, r.Path)
		}
		return res, o.Observed(rec)
	}
}

// changedState is the state a run left: the files it created or changed
// in the home and temp folders, as copied into its run folder.
func changedState(dir string, events []trace.Event) ([]File, error) {
	var out []File
	for _, ev := range events {
		ch, ok := ev.Data.(*trace.FSChange)
		if !ok || ch.Copied == "" || ch.Kind == "deleted" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(ch.Copied)))
		if err != nil {
			return nil, fmt.Errorf("read changed file %s: %w", ch.Path, err)
		}
		mode := int64(0o644)
		if strings.HasPrefix(string(b), "#!") {
			mode = 0o755
		}
		out = append(out, File{Path: ch.Path, Mode: mode, Content: b})
	}
	return out, nil
}

// deletedState are the paths a run removed from the places a chained run
// carries (the home, /tmp, /var/tmp, /dev/shm), as the syscall log saw
// them (unlinks and the sources of renames that succeeded), less those
// it wrote again.
func deletedState(events []trace.Event, changed []File) []string {
	written := map[string]bool{}
	for _, c := range changed {
		written[c.Path] = true
	}
	carried := func(p string) bool {
		for _, pre := range []string{"/home/", "/Users/", "/tmp/", "/var/tmp/", "/dev/shm/"} {
			if strings.HasPrefix(p, pre) {
				return true
			}
		}
		return false
	}
	var out []string
	for _, ev := range events {
		f, ok := ev.Data.(*trace.File)
		if !ok || f.Errno != "" || (ev.Type != trace.TypeUnlink && ev.Type != trace.TypeRename) {
			continue
		}
		p := path.Clean(f.Path)
		if carried(p) && !written[p] && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
