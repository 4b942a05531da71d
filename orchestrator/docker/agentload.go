package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/sandboxctl/sandboxctl/internal/capbuf"
	"github.com/sandboxctl/sandboxctl/internal/fsutil"
	"github.com/sandboxctl/sandboxctl/orchestrator"
)

// agentBinPath is where the agent image holds the binary (Dockerfile.agent
// copies it there).
const agentBinPath = "usr/local/lib/agent/agentd"

// layerFile is a file of a loaded layer, its path relative to "/".
type layerFile struct {
	name string
	mode int64
	data []byte
}

// loadLayerImage makes the agent image ref from the image from with the
// binary (and extra, the prepared files when the prepared image was not
// built) added, as Dockerfile.agent would, without a build: it hands the
// engine an image archive (the format `docker save` writes) holding the new
// image's configuration and one layer, those files; the layers of from are
// named but not included, since the engine already has them and reads a
// layer's file only when it lacks the layer. A build's commit makes the
// engine compare the container's whole file system with its image's, which
// on storage drivers without a native diff (fuse-overlayfs) walks the 1 GB
// image, twice per build (the copy, then the labels): minutes on a busy
// host, where this takes seconds. labels are added to from's.
func (r *Runtime) loadLayerImage(ctx context.Context, from, binary string, extra []layerFile, ref string, labels map[string]string) error {
	ins, err := r.cli.ImageInspect(ctx, from)
	if err != nil {
		return fmt.Errorf("inspect %s: %w", from, err)
	}
	if ins.Config == nil {
		return fmt.Errorf("inspect %s: no configuration", from)
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("read binary: %w", err)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	for _, f := range append(extra, layerFile{agentBinPath, 0o700, bin}) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)),
			ModTime: time.Unix(0, 0), Format: tar.FormatPAX}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	diff := sha256.Sum256(layer.Bytes())
	cfg := *ins.Config
	cfg.Labels = maps.Clone(cfg.Labels)
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	maps.Copy(cfg.Labels, labels)
	diffIDs := append(append([]string(nil), ins.RootFS.Layers...), "sha256:"+hex.EncodeToString(diff[:]))
	conf, err := json.Marshal(map[string]any{
		"architecture": ins.Architecture,
		"variant":      ins.Variant,
		"os":           ins.Os,
		"created":      time.Now().UTC().Format(time.RFC3339Nano),
		"config":       cfg,
		"rootfs":       map[string]any{"type": "layers", "diff_ids": diffIDs},
	})
	if err != nil {
		return err
	}
	confSum := sha256.Sum256(conf)
	confName := hex.EncodeToString(confSum[:]) + ".json"
	layers := make([]string, len(diffIDs))
	for i := range ins.RootFS.Layers {
		layers[i] = fmt.Sprintf("base%d/layer.tar", i) // the engine has it: never read
	}
	layers[len(layers)-1] = "agentd/layer.tar"
	manifest, err := json.Marshal([]map[string]any{{"Config": confName, "RepoTags": []string{ref}, "Layers": layers}})
	if err != nil {
		return err
	}
	var archive bytes.Buffer
	aw := tar.NewWriter(&archive)
	for _, f := range []struct {
		name string
		data []byte
	}{{"manifest.json", manifest}, {confName, conf}, {"agentd/layer.tar", layer.Bytes()}} {
		if err := aw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.data)),
			ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
		if _, err := aw.Write(f.data); err != nil {
			return err
		}
	}
	if err := aw.Close(); err != nil {
		return err
	}
	res, err := r.cli.ImageLoad(ctx, &archive, client.ImageLoadWithQuiet(true))
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer res.Close()
	if err := readJSONMessages(ctx, res, io.Discard); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return nil
}

// prepDir is where prepare.sh writes its lists when run by prepLists.
const prepDir = "/tmp/sandboxctl-prep"

// prepLists runs prepare.sh (Dockerfile.prep's step) in a throwaway
// container of from, as root, with no network, and returns the files it
// writes (certifi-bundles, and writable when the image has setpriv), to be
// added to the agent image's layer: the prepared image's lookups without
// its build, whose commit walks the whole image on fuse-overlayfs. The
// answer is kept in the cache folder under the prepared image's tag (the
// same inputs), so a new binary does not run it again. The container
// carries the trace label "image-prep-TAG" (gc removes it after a crash)
// and is removed on every path.
func (r *Runtime) prepLists(ctx context.Context, from, prep string, script []byte, uid, gids string) ([]layerFile, error) {
	tag := strings.TrimPrefix(prep, AgentRepo+":")
	var cache string
	if r.cfg.cache != "" {
		cache = filepath.Join(r.cfg.cache, "prep", tag)
		if b, err := os.ReadFile(cache); err == nil {
			if files, ok := parsePrepLists(b); ok {
				return files, nil
			}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := string(script) + `
printf '%s\n' '` + prepMark + `certifi-bundles'; cat "$dir/certifi-bundles"
if [ -e "$dir/writable" ]; then printf '%s\n' '` + prepMark + `writable'; cat "$dir/writable"; fi
printf '%s\n' '` + prepMark + `end'`
	res, err := r.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: from, User: "0:0", Cmd: []string{"/bin/sh", "-c", cmd, "prepare.sh", uid, gids, prepDir},
			Labels: map[string]string{orchestrator.LabelTrace: "image-prep-" + tag}},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		return nil, fmt.Errorf("prepare: create: %w", err)
	}
	defer removeContainer(context.WithoutCancel(ctx), r.cli, res.ID)
	wait := r.cli.ContainerWait(ctx, res.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := r.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		return nil, fmt.Errorf("prepare: start: %w", err)
	}
	select {
	case w := <-wait.Result:
		if w.StatusCode != 0 {
			return nil, fmt.Errorf("prepare: exit %d", w.StatusCode)
		}
	case err := <-wait.Error:
		return nil, fmt.Errorf("prepare: wait: %w", err)
	}
	logs, err := r.cli.ContainerLogs(ctx, res.ID, client.ContainerLogsOptions{ShowStdout: true})
	if err != nil {
		return nil, fmt.Errorf("prepare: output: %w", err)
	}
	defer logs.Close()
	out := capbuf.New(4 << 20)
	if _, err := stdcopy.StdCopy(out, io.Discard, logs); err != nil {
		return nil, fmt.Errorf("prepare: output: %w", err)
	}
	files, ok := parsePrepLists([]byte(out.String()))
	if !ok {
		return nil, fmt.Errorf("prepare: output not understood")
	}
	if cache != "" && os.MkdirAll(filepath.Dir(cache), 0o700) == nil {
		fsutil.WriteAtomic(cache, 0o600, func(w io.Writer) error {
			_, err := io.WriteString(w, out.String())
			return err
		})
	}
	return files, nil
}

// prepMark starts the line naming the next list in prepLists' output.
const prepMark = "--- sandboxctl-prep "

// parsePrepLists reads prepLists' output: each list after its mark line,
// the whole ended by the "end" mark.
func parsePrepLists(b []byte) ([]layerFile, bool) {
	var files []layerFile
	var cur *layerFile
	for _, line := range strings.SplitAfter(string(b), "\n") {
		name, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), prepMark)
		switch {
		case ok && name == "end":
			return files, len(files) > 0 && files[0].name == agentDir+"certifi-bundles"
		case ok && (name == "certifi-bundles" || name == "writable"):
			files = append(files, layerFile{name: agentDir + name, mode: 0o600})
			cur = &files[len(files)-1]
		case ok:
			return nil, false
		case cur != nil:
			cur.data = append(cur.data, line...)
		}
	}
	return nil, false
}

// agentDir is the agent's folder in the image, relative to "/".
const agentDir = "usr/local/lib/agent/"
