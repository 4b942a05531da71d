package docker

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sandboxctl/sandboxctl/internal/capbuf"
	"github.com/sandboxctl/sandboxctl/orchestrator"
)

// Sandbox is one container on the engine. Its methods are safe for
// concurrent use.
type Sandbox struct {
	r    *Runtime
	id   string
	name string

	tmpfs []string // mount points: the engine's copy API cannot see into them

	mu         sync.Mutex
	startFiles []orchestrator.File // placed by Start: they live on a tmpfs
}

// onTmpfs reports whether p is on one of the container's tmpfs mounts.
func (s *Sandbox) onTmpfs(p string) bool {
	return underAny(path.Clean(p), s.tmpfs)
}

func underAny(p string, mounts []string) bool {
	for _, m := range mounts {
		m = strings.TrimRight(path.Clean(m), "/")
		if m == "" {
			continue
		}
		if p == m || strings.HasPrefix(p, m+"/") {
			return true
		}
	}
	return false
}

var _ orchestrator.Sandbox = (*Sandbox)(nil)

// ID is the engine's container id.
func (s *Sandbox) ID() string { return s.id }

// Name is the container's name.
func (s *Sandbox) Name() string { return s.name }

func (s *Sandbox) short() string {
	if s.name != "" {
		return s.name
	}
	return s.id[:min(12, len(s.id))]
}

// Start starts the container's main process, then extracts the files that
// belong on a tmpfs mount (see Runtime.Create) as root inside it.
func (s *Sandbox) Start(ctx context.Context) error {
	if _, err := s.r.cli.ContainerStart(ctx, s.id, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("start container %s: %w", s.short(), err)
	}
	s.mu.Lock()
	files := s.startFiles
	s.startFiles = nil
	s.mu.Unlock()
	if len(files) == 0 {
		return nil
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeFilesTar(pw, files)) }() // ends when the tar is written or the pipe is closed
	defer pr.Close()
	stderr := capbuf.New(4 << 10)
	code, err := s.Exec(ctx, orchestrator.ExecSpec{
		Argv:   []string{"tar", "-x", "-p", "--same-owner", "--numeric-owner", "-f", "-", "-C", "/"},
		User:   "0:0",
		Stdin:  pr,
		Stderr: stderr,
	})
	if err != nil {
		return fmt.Errorf("start container %s: place files: %w", s.short(), err)
	}
	if code != 0 {
		return fmt.Errorf("start container %s: place files: tar exited %d: %s", s.short(), code, stderr.String())
	}
	return nil
}

// Exec runs e.Argv in the running container and waits until it ends and its
// output is copied. When ctx ends first it closes the stream and returns
// ctx's error; the process itself keeps running (the engine forwards no
// signal), so callers enforce time limits inside the container. A goroutine
// copying e.Stdin ends when e.Stdin returns EOF or an error, or when the
// stream is closed.
func (s *Sandbox) Exec(ctx context.Context, e orchestrator.ExecSpec) (int, error) {
	if len(e.Argv) == 0 {
		return -1, fmt.Errorf("exec in %s: empty argv", s.short())
	}
	cr, err := s.r.cli.ExecCreate(ctx, s.id, client.ExecCreateOptions{
		User:         e.User,
		Env:          slices.Clone(e.Env),
		WorkingDir:   e.Dir,
		Cmd:          slices.Clone(e.Argv),
		AttachStdin:  e.Stdin != nil,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return -1, fmt.Errorf("exec %s in %s: %w", e.Argv[0], s.short(), err)
	}
	att, err := s.r.cli.ExecAttach(ctx, cr.ID, client.ExecAttachOptions{})
	if err != nil {
		return -1, fmt.Errorf("exec %s in %s: attach: %w", e.Argv[0], s.short(), err)
	}
	defer att.Close()
	stop := context.AfterFunc(ctx, att.Close)
	defer stop()

	if e.Stdin != nil {
		go func() {
			_, _ = io.Copy(att.Conn, e.Stdin)
			_ = att.CloseWrite()
		}()
	}
	stdout, stderr := e.Stdout, e.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	_, copyErr := stdcopy.StdCopy(stdout, stderr, att.Reader)
	if ctx.Err() != nil {
		return -1, ctx.Err()
	}
	if copyErr != nil {
		return -1, fmt.Errorf("exec %s in %s: read output: %w", e.Argv[0], s.short(), copyErr)
	}
	// The stream ends a moment before the engine records the exit code.
	for {
		ins, err := s.r.cli.ExecInspect(ctx, cr.ID, client.ExecInspectOptions{})
		if err != nil {
			return -1, fmt.Errorf("exec %s in %s: inspect: %w", e.Argv[0], s.short(), err)
		}
		if !ins.Running {
			return ins.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// CopyIn extracts the tar stream into dir inside the container. The
// engine's copy API writes to the image layer, under any tmpfs mount
// (moby/moby#22020), so a dir on a tmpfs is filled by running tar as root
// inside the (running) container instead.
func (s *Sandbox) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	if s.onTmpfs(dir) {
		stderr := capbuf.New(4 << 10)
		code, err := s.Exec(ctx, orchestrator.ExecSpec{
			Argv:   []string{"tar", "-x", "-p", "--same-owner", "--numeric-owner", "-f", "-", "-C", dir},
			User:   "0:0",
			Stdin:  r,
			Stderr: stderr,
		})
		if err != nil {
			return fmt.Errorf("copy into %s:%s: %w", s.short(), dir, err)
		}
		if code != 0 {
			return fmt.Errorf("copy into %s:%s: tar exited %d: %s", s.short(), dir, code, stderr.String())
		}
		return nil
	}
	_, err := s.r.cli.CopyToContainer(ctx, s.id, client.CopyToContainerOptions{
		DestinationPath: dir,
		Content:         r,
	})
	if err != nil {
		return fmt.Errorf("copy into %s:%s: %w", s.short(), dir, err)
	}
	return nil
}

// CopyOut streams p as a tar archive whose entries are named from p's base
// name. Its contents are untrusted: the caller caps and sanitises what it
// reads. A path on a tmpfs mount is archived by tar running as root inside
// the (running) container (see CopyIn); closing the reader early stops it.
func (s *Sandbox) CopyOut(ctx context.Context, p string) (io.ReadCloser, error) {
	if s.onTmpfs(p) {
		return s.copyOutExec(ctx, p)
	}
	res, err := s.r.cli.CopyFromContainer(ctx, s.id, client.CopyFromContainerOptions{SourcePath: p})
	if err != nil {
		return nil, fmt.Errorf("copy out of %s:%s: %w", s.short(), p, err)
	}
	return res.Content, nil
}

func (s *Sandbox) copyOutExec(ctx context.Context, p string) (io.ReadCloser, error) {
	p = path.Clean(p)
	// Fail early, with the engine's wording, when p does not exist.
	stderr := capbuf.New(4 << 10)
	code, err := s.Exec(ctx, orchestrator.ExecSpec{Argv: []string{"test", "-e", p}, User: "0:0", Stderr: stderr})
	if err != nil {
		return nil, fmt.Errorf("copy out of %s:%s: %w", s.short(), p, err)
	}
	if code != 0 {
		return nil, fmt.Errorf("copy out of %s:%s: no such file or directory", s.short(), p)
	}
	pr, pw := io.Pipe()
	go func() { // ends when tar ends, or when the reader is closed (tar's output then fails)
		stderr := capbuf.New(4 << 10)
		code, err := s.Exec(ctx, orchestrator.ExecSpec{
			Argv:   []string{"tar", "-c", "-f", "-", "--numeric-owner", "-C", path.Dir(p), path.Base(p)},
			User:   "0:0",
			Stdout: pw,
			Stderr: stderr,
		})
		if err == nil && code != 0 {
			err = fmt.Errorf("tar exited %d: %s", code, stderr.String())
		}
		if err != nil {
			err = fmt.Errorf("copy out of %s:%s: %w", s.short(), p, err)
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// Logs follows the main process's stdout and stderr, demultiplexed, until
// the process ends or ctx ends (then it returns ctx's error).
func (s *Sandbox) Logs(ctx context.Context, stdout, stderr io.Writer) error {
	rc, err := s.r.cli.ContainerLogs(ctx, s.id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		return fmt.Errorf("logs of %s: %w", s.short(), err)
	}
	defer rc.Close()
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	_, err = stdcopy.StdCopy(stdout, stderr, rc)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("logs of %s: %w", s.short(), err)
	}
	return nil
}

// Diff is the container's file-system diff against its image, as the
// engine sees it, sorted by path.
func (s *Sandbox) Diff(ctx context.Context) ([]orchestrator.Change, error) {
	res, err := s.r.cli.ContainerDiff(ctx, s.id, client.ContainerDiffOptions{})
	if err != nil {
		return nil, fmt.Errorf("diff of %s: %w", s.short(), err)
	}
	out := make([]orchestrator.Change, 0, len(res.Changes))
	for _, c := range res.Changes {
		kind := "modified"
		switch c.Kind {
		case container.ChangeAdd:
			kind = "added"
		case container.ChangeDelete:
			kind = "deleted"
		}
		out = append(out, orchestrator.Change{Path: c.Path, Kind: kind})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Stats samples the container's resource use once. Memory is the usage
// without inactive page cache (as `docker stats` shows it); MaxMemory is the
// engine's peak (cgroup v1 only; 0 on v2).
func (s *Sandbox) Stats(ctx context.Context) (orchestrator.Stats, error) {
	res, err := s.r.cli.ContainerStats(ctx, s.id, client.ContainerStatsOptions{})
	if err != nil {
		return orchestrator.Stats{}, fmt.Errorf("stats of %s: %w", s.short(), err)
	}
	defer res.Body.Close()
	var st container.StatsResponse
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&st); err != nil {
		return orchestrator.Stats{}, fmt.Errorf("stats of %s: decode: %w", s.short(), err)
	}
	// Like `docker stats`: usage without the inactive page cache.
	mem := st.MemoryStats.Usage
	for _, k := range []string{"total_inactive_file", "inactive_file"} {
		if v, ok := st.MemoryStats.Stats[k]; ok && v <= mem {
			mem -= v
			break
		}
	}
	return orchestrator.Stats{
		Memory:     int64(mem),
		MaxMemory:  int64(st.MemoryStats.MaxUsage),
		CPUSeconds: float64(st.CPUStats.CPUUsage.TotalUsage) / 1e9,
		PIDs:       int64(st.PidsStats.Current),
	}, nil
}

// State reports whether the main process runs and how it ended.
func (s *Sandbox) State(ctx context.Context) (orchestrator.State, error) {
	res, err := s.r.cli.ContainerInspect(ctx, s.id, client.ContainerInspectOptions{})
	if err != nil {
		return orchestrator.State{}, fmt.Errorf("inspect %s: %w", s.short(), err)
	}
	st := res.Container.State
	if st == nil {
		return orchestrator.State{}, fmt.Errorf("inspect %s: no state", s.short())
	}
	return orchestrator.State{Running: st.Running, ExitCode: st.ExitCode, OOMKilled: st.OOMKilled, Error: st.Error}, nil
}

// Remove force-removes the container and its anonymous volumes. It is
// idempotent: a container that is already gone counts as removed.
func (s *Sandbox) Remove(ctx context.Context) error {
	if err := removeContainer(ctx, s.r.cli, s.id); err != nil {
		return fmt.Errorf("remove container %s: %w", s.short(), err)
	}
	return nil
}

// removeFresh removes a container after a failed Create, on a fresh bounded
// context so that a cancelled ctx still cleans up.
func (s *Sandbox) removeFresh(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	return s.Remove(cctx)
}

// copyFiles copies files into the (created, not started) container's root.
func (s *Sandbox) copyFiles(ctx context.Context, files []orchestrator.File) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeFilesTar(pw, files)) }() // ends when the tar is written or the pipe is closed
	defer pr.Close()
	_, err := s.r.cli.CopyToContainer(ctx, s.id, client.CopyToContainerOptions{
		DestinationPath: "/",
		Content:         pr,
	})
	if err != nil {
		return fmt.Errorf("copy files: %w", err)
	}
	return nil
}

// writeFilesTar writes files as a tar archive rooted at "/": paths become
// relative, ownership, mode and mtime are kept, and HostPath files are
// streamed from the host. Parent folders that are not listed are left for
// the extractor to create (root-owned, 0755); listing them here would
// overwrite the owner and mode of folders that already exist.
func writeFilesTar(w io.Writer, files []orchestrator.File) error {
	tw := tar.NewWriter(w)
	now := time.Now()
	for _, f := range files {
		name := path.Clean(f.Path)
		if name == "/" {
			continue
		}
		name = name[1:]
		mt := f.ModTime
		if mt.IsZero() {
			mt = now
		}
		hdr := &tar.Header{
			Name:    name,
			Mode:    f.Mode & 0o7777,
			Uid:     f.UID,
			Gid:     f.GID,
			ModTime: mt,
			Format:  tar.FormatPAX,
		}
		if f.Dir {
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
			if hdr.Mode == 0 {
				hdr.Mode = 0o755
			}
			if err := tw.WriteHeader(hdr); err != nil {
				return fmt.Errorf("tar %s: %w", f.Path, err)
			}
			continue
		}
		hdr.Typeflag = tar.TypeReg
		if f.HostPath == "" {
			hdr.Size = int64(len(f.Content))
			if err := tw.WriteHeader(hdr); err != nil {
				return fmt.Errorf("tar %s: %w", f.Path, err)
			}
			if _, err := tw.Write(f.Content); err != nil {
				return fmt.Errorf("tar %s: %w", f.Path, err)
			}
			continue
		}
		if err := tarHostFile(tw, hdr, f.HostPath); err != nil {
			return fmt.Errorf("tar %s from %s: %w", f.Path, f.HostPath, err)
		}
	}
	return tw.Close()
}

func tarHostFile(tw *tar.Writer, hdr *tar.Header, hostPath string) error {
	fh, err := os.Open(hostPath)
	if err != nil {
		return err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	hdr.Size = fi.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, io.LimitReader(fh, fi.Size()))
	if err != nil {
		return err
	}
	if n != fi.Size() {
		return fmt.Errorf("file shrank while copied (%d of %d bytes)", n, fi.Size())
	}
	return nil
}
