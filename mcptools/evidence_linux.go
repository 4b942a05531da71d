package mcptools

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Evidence ends the tracers and writes the evidence archive to w (see
// evidence.go on the order). A step that fails does not stop the others:
// the archive holds what could be read. err is an archive that could not
// be written; warn is what could not be read (the stamp, the log folder)
// or the tracers that had to be killed (ErrTracersKilled).
func Evidence(ctx context.Context, cfg EvidenceConfig, w io.Writer) (warn, err error) {
	var warns []error
	tw := tar.NewWriter(w)
	if cfg.Freeze != nil {
		if err := freezeFirst(ctx, *cfg.Freeze, tw, w); err != nil {
			return nil, err
		}
	}
	var st unix.Stat_t
	stamped := unix.Stat(cfg.Stamp, &st) == nil
	if !stamped {
		warns = append(warns, fmt.Errorf("evidence: no stamp %s: no changes listed", cfg.Stamp))
	}
	since := st.Mtim
	// The counters and the places' use first, as the skill left them.
	head := []struct{ name, body string }{{EvidenceCgroup, cgroupCounters(cfg.Cgroup)}, {EvidenceDisk, diskUse(cfg.Places)}}

	// The tracers end while the file system is listed.
	flushed := make(chan error, 1)
	if cfg.LogDir != "" {
		go func() { flushed <- Flush(ctx, cfg.LogDir) }()
	} else {
		flushed <- nil
	}
	var ids, rootfs strings.Builder
	if cfg.Home != "" {
		Identities(&ids, cfg.Home, MaxIdentities)
	}
	if stamped {
		scanRootfs(&rootfs, cfg.Writable, since, MaxRootfs)
	}

	for _, f := range append(head, []struct{ name, body string }{{EvidenceIdentity, ids.String()}, {EvidenceRootfs, rootfs.String()}}...) {
		if err := writeEntry(tw, f.name, int64(len(f.body)), strings.NewReader(f.body)); err != nil {
			<-flushed
			return errors.Join(warns...), fmt.Errorf("evidence: write %s: %w", f.name, err)
		}
	}
	if err := <-flushed; err != nil {
		warns = append(warns, err)
	}
	if cfg.LogDir != "" {
		if werr, err := archiveDir(tw, cfg.LogDir, EvidenceCalls); err != nil {
			return errors.Join(warns...), fmt.Errorf("evidence: syscall logs: %w", err)
		} else if werr != nil {
			warns = append(warns, fmt.Errorf("evidence: syscall logs: %w", werr))
		}
	}
	if stamped {
		if err := archiveChanged(tw, cfg.Changed, since, cfg.MaxFiles); err != nil {
			return errors.Join(warns...), fmt.Errorf("evidence: changed files: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return errors.Join(warns...), fmt.Errorf("evidence: %w", err)
	}
	return errors.Join(warns...), nil
}

// freezeFirst ends the skill's processes (Freeze) and writes their
// records (EvidenceLeftovers, and EvidenceFreezeError when it failed),
// then flushes w when it can be: the host goes on with the jail's evidence
// as soon as the skill is ended. err is an archive that could not be
// written.
func freezeFirst(ctx context.Context, cfg FreezeConfig, tw *tar.Writer, w io.Writer) error {
	left, ferr := Freeze(ctx, cfg)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, l := range left {
		if err := enc.Encode(l); err != nil {
			return fmt.Errorf("evidence: leftovers: %w", err)
		}
	}
	if err := writeEntry(tw, EvidenceLeftovers, int64(b.Len()), &b); err != nil {
		return fmt.Errorf("evidence: write %s: %w", EvidenceLeftovers, err)
	}
	if ferr != nil {
		msg := ferr.Error()
		if err := writeEntry(tw, EvidenceFreezeError, int64(len(msg)), strings.NewReader(msg)); err != nil {
			return fmt.Errorf("evidence: write %s: %w", EvidenceFreezeError, err)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	if f, ok := w.(interface{ Flush() error }); ok {
		if err := f.Flush(); err != nil {
			return fmt.Errorf("evidence: %w", err)
		}
	}
	return nil
}

// writeEntry writes one regular file of size bytes read from r; a file that
// shrank meanwhile is padded with zeros, one that grew is cut.
func writeEntry(tw *tar.Writer, name string, size int64, r io.Reader) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o600,
		ModTime: time.Unix(0, 0), Format: tar.FormatPAX}); err != nil {
		return err
	}
	n, err := io.Copy(tw, io.LimitReader(r, size))
	if n < size {
		if _, perr := io.CopyN(tw, zeros{}, size-n); perr != nil {
			return perr
		}
	}
	_ = err // a file that could not be read whole is padded, as tar does
	return nil
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// archiveDir archives the regular files of dir (not below it) as
// prefix+name. warn is a folder that cannot be read; err an archive that
// cannot be written.
func archiveDir(tw *tar.Writer, dir, prefix string) (warn, err error) {
	ents, warn := os.ReadDir(dir)
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if err := archiveFile(tw, unix.AT_FDCWD, dir+"/"+e.Name(), prefix+e.Name()); err != nil {
			return warn, err
		}
	}
	return warn, nil
}

// archiveFile archives the regular file name in the folder dirfd as
// entry. A file that cannot be opened is skipped (what `tar
// --ignore-failed-read` does); the error is the archive's, when it cannot
// be written.
func archiveFile(tw *tar.Writer, dirfd int, name, entry string) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	return writeEntry(tw, entry, st.Size, f)
}

// archiveChanged archives, as EvidenceFiles+path (relative to "/"), the
// regular files under roots whose status changed after since, walking each
// root without leaving its file system, at most max of them.
func archiveChanged(tw *tar.Writer, roots []string, since unix.Timespec, max int) error {
	n := 0
	var werr error
	for _, root := range roots {
		walkXdev(root, func(dirfd int, name, p string, st *unix.Stat_t) bool {
			if n >= max || werr != nil {
				return false
			}
			if st.Mode&unix.S_IFMT != unix.S_IFREG || !after(st.Ctim, since) {
				return true
			}
			n++
			werr = archiveFile(tw, dirfd, name, EvidenceFiles+strings.TrimPrefix(p, "/"))
			return werr == nil
		})
	}
	return werr
}

// scanRootfs writes "TYPE SIZE PATH" for each file, folder and link whose
// status changed after since (what `find -xdev -cnewer STAMP -printf '%y %s
// %p'` printed), under the places listed in the writable list, or under /
// without one, at most max lines.
func scanRootfs(w io.Writer, writable string, since unix.Timespec, max int) {
	roots := []string{"/"}
	if b, err := os.ReadFile(writable); err == nil && writable != "" {
		roots = nil
		for _, l := range strings.Split(string(b), "\n") {
			if l != "" {
				roots = append(roots, l)
			}
		}
	}
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	n := 0
	for _, root := range roots {
		walkXdev(root, func(_ int, _, p string, st *unix.Stat_t) bool {
			if n >= max {
				return false
			}
			var typ byte
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFREG:
				typ = 'f'
			case unix.S_IFDIR:
				typ = 'd'
			case unix.S_IFLNK:
				typ = 'l'
			default:
				return true
			}
			if after(st.Ctim, since) {
				fmt.Fprintf(bw, "%c %d %s\n", typ, st.Size, p)
				n++
			}
			return true
		})
	}
}

// after reports whether a is later than b, to the nanosecond.
func after(a, b unix.Timespec) bool {
	return a.Sec > b.Sec || a.Sec == b.Sec && a.Nsec > b.Nsec
}

// walkXdev calls fn for root and everything under it, depth first, with
// the folder holding each entry open (dirfd, name: paths of any length
// and depth can be opened), without following links and without
// descending into folders of another file system than root's (they are
// still reported, as `find -xdev` does). fn returns false to stop the
// walk. Entries that cannot be read are skipped.
func walkXdev(root string, fn func(dirfd int, name, p string, st *unix.Stat_t) bool) {
	var rst unix.Stat_t
	if unix.Lstat(root, &rst) != nil {
		return
	}
	dev := rst.Dev
	stop := false
	var walk func(dirfd int, name, p string, st *unix.Stat_t)
	walk = func(dirfd int, name, p string, st *unix.Stat_t) {
		if !fn(dirfd, name, p, st) {
			stop = true
			return
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Dev != dev {
			return
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		d := os.NewFile(uintptr(fd), p)
		defer d.Close()
		names, _ := d.Readdirnames(-1)
		prefix := p + "/"
		if p == "/" {
			prefix = "/"
		}
		for _, n := range names {
			var cst unix.Stat_t
			if unix.Fstatat(fd, n, &cst, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			walk(fd, n, prefix+n, &cst)
			if stop {
				return
			}
		}
	}
	walk(unix.AT_FDCWD, root, root, &rst)
}

// Identities writes "DEV INO NLINK ATIME CTIME PATH" for each regular file
// under home (what `find HOME -xdev -type f -printf '%D %i %n %A@ %C@ %p'`
// printed), at most max lines.
func Identities(w io.Writer, home string, max int) {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	n := 0
	walkXdev(home, func(_ int, _, p string, st *unix.Stat_t) bool {
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return true
		}
		if n >= max {
			return false
		}
		n++
		fmt.Fprintf(bw, "%d %d %d %d.%09d %d.%09d %s\n", st.Dev, st.Ino, st.Nlink, st.Atim.Sec, st.Atim.Nsec,
			st.Ctim.Sec, st.Ctim.Nsec, p)
		return true
	})
}

// Settle gives every file and folder under home (not home itself, not
// links) an access time between its modification time and now, as on a
// machine in use (an archive unpacks them all at one moment), then writes
// the home's file identities to w (Identities). A file it cannot change is
// left as it is.
func Settle(w io.Writer, home string) {
	now := time.Now().UnixNano()
	walkXdev(home, func(dirfd int, name, p string, st *unix.Stat_t) bool {
		if p == home || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return true
		}
		m := st.Mtim.Nano()
		a := m + int64(float64(now-m)*rand.Float64()*0.9)
		ts := []unix.Timespec{unix.NsecToTimespec(a), st.Mtim}
		_ = unix.UtimesNanoAt(dirfd, name, ts, unix.AT_SYMLINK_NOFOLLOW)
		return true
	})
	Identities(w, home, MaxIdentities)
}

// cgroupCounters reads CgroupFiles under dir, one line "FILE FIELDS..." for
// each readable one (its lines joined by spaces); "" when dir is "".
func cgroupCounters(dir string) string {
	if dir == "" {
		return ""
	}
	var b strings.Builder
	for _, f := range CgroupFiles {
		data, err := readSmall(dir+"/"+f, 16<<10)
		if err != nil {
			continue
		}
		b.WriteString(f + " " + strings.Join(strings.Fields(string(data)), " ") + "\n")
	}
	return b.String()
}

// readSmall reads at most n bytes of the file at path.
func readSmall(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// diskUse is `df -P -B1` of places, without the header: "tmpfs SIZE USED
// AVAIL - PLACE" for each place that statfs answers.
func diskUse(places []string) string {
	var b strings.Builder
	for _, p := range places {
		var fs unix.Statfs_t
		if unix.Statfs(p, &fs) != nil {
			continue
		}
		bs := uint64(fs.Frsize)
		if bs == 0 {
			bs = uint64(fs.Bsize)
		}
		fmt.Fprintf(&b, "tmpfs %d %d %d - %s\n", fs.Blocks*bs, (fs.Blocks-fs.Bfree)*bs, fs.Bavail*bs, p)
	}
	return b.String()
}
