package orchestrator

import (
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/trace"
)

// The identities of the home's files are listed, as root, by agentd at
// setup (__settle) and at collection (__evidence), one line "DEV INO NLINK
// ATIME CTIME PATH" for every regular file of the home
// (mcptools.Identities). Hard links cannot leave the home's file system, so
// the home holds every name a planted file can have.

// A fileID is one line of the identity listing.
type fileID struct {
	dev, ino     uint64
	nlink        int
	atime, ctime time.Time
	path         string
}

// parseIdentities reads the identity listing (untrusted: a skill can
// name files with newlines, so a line that does not parse is skipped and a
// path is taken as it is).
func parseIdentities(out string) []fileID {
	var ids []fileID
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, " ", 6)
		if len(f) != 6 || !strings.HasPrefix(f[5], "/") {
			continue
		}
		dev, err1 := strconv.ParseUint(f[0], 10, 64)
		ino, err2 := strconv.ParseUint(f[1], 10, 64)
		n, err3 := strconv.Atoi(f[2])
		at, ok1 := epoch(f[3])
		ct, ok2 := epoch(f[4])
		if err1 != nil || err2 != nil || err3 != nil || !ok1 || !ok2 {
			continue
		}
		ids = append(ids, fileID{dev: dev, ino: ino, nlink: n, atime: at, ctime: ct, path: path.Clean(f[5])})
	}
	return ids
}

// epoch reads find's "%A@" form, seconds with a fraction.
func epoch(s string) (time.Time, bool) {
	sec, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, false
	}
	var ns int64
	if frac != "" {
		if len(frac) > 9 {
			frac = frac[:9]
		}
		v, err := strconv.ParseInt(frac, 10, 64)
		if err != nil {
			return time.Time{}, false
		}
		for i := len(frac); i < 9; i++ {
			v *= 10
		}
		ns = v
	}
	return time.Unix(n, ns).UTC(), true
}

// plantedPaths are the absolute paths of the files the home's tokens were
// planted in.
func plantedPaths(h *canaryfs.Home) []string {
	var ps []string
	for _, t := range h.Set.Tokens() {
		loc := t.Location
		switch {
		case strings.HasPrefix(loc, "~/"):
			loc = h.HomeDir + loc[1:]
		case strings.HasPrefix(loc, "/"):
		default:
			continue // env:NAME and the like
		}
		if loc = path.Clean(loc); !slices.Contains(ps, loc) {
			ps = append(ps, loc)
		}
	}
	slices.Sort(ps)
	return ps
}

// plantedEvents records the identity of every planted file as unpacked.
func plantedEvents(h *canaryfs.Home, ids []fileID, now time.Time) []trace.Event {
	by := map[string]fileID{}
	for _, id := range ids {
		by[id.path] = id
	}
	var evs []trace.Event
	for _, p := range plantedPaths(h) {
		id, ok := by[p]
		if !ok {
			continue
		}
		evs = append(evs, trace.Event{Time: now, Source: trace.SourceFSDiff, Type: trace.TypeInode,
			Data: &trace.Inode{Path: p, Phase: trace.InodePlanted, Dev: id.dev, Ino: id.ino, Nlink: id.nlink, Atime: id.atime, Ctime: id.ctime}})
	}
	return evs
}

// endEvents records, for each planted file, its state at the end: its
// times and link count, and every other name it has (hard links made by the
// skill), found by its identity whatever the names.
func endEvents(planted []trace.Event, ids []fileID, now time.Time) []trace.Event {
	type key struct{ dev, ino uint64 }
	names := map[key][]fileID{}
	for _, id := range ids {
		k := key{id.dev, id.ino}
		names[k] = append(names[k], id)
	}
	var evs []trace.Event
	for _, e := range planted {
		p, ok := e.Data.(*trace.Inode)
		if !ok || p.Phase != trace.InodePlanted {
			continue
		}
		d := &trace.Inode{Path: p.Path, Phase: trace.InodeEnd, Dev: p.Dev, Ino: p.Ino}
		same := names[key{p.Dev, p.Ino}]
		if len(same) == 0 {
			d.Missing = true
		}
		for _, id := range same {
			d.Nlink, d.Atime, d.Ctime = id.nlink, id.atime, id.ctime
			if id.path != p.Path && !slices.Contains(d.Aliases, id.path) {
				d.Aliases = append(d.Aliases, id.path)
			}
		}
		slices.Sort(d.Aliases)
		evs = append(evs, trace.Event{Time: now, Source: trace.SourceFSDiff, Type: trace.TypeInode, Data: d})
	}
	return evs
}
