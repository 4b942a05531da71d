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
	"time"

	"github.com/moby/moby/client"
)

// agentBinPath is where the agent image holds the binary (Dockerfile.agent
// copies it there).
const agentBinPath = "usr/local/lib/agent/agentd"

// loadAgentImage makes the agent image ref from the image from with the
// binary added, as Dockerfile.agent would, without a build: it hands the
// engine an image archive (the format `docker save` writes) holding the new
// image's configuration and one layer, the binary; the layers of from are
// named but not included, since the engine already has them and reads a
// layer's file only when it lacks the layer. A build's commit makes the
// engine compare the container's whole file system with its image's, which
// on storage drivers without a native diff (fuse-overlayfs) walks the 1 GB
// image, twice per build (the copy, then the labels): minutes on a busy
// host, where this takes seconds. labels are added to from's.
func (r *Runtime) loadAgentImage(ctx context.Context, from, binary, ref string, labels map[string]string) error {
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
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: agentBinPath, Mode: 0o700, Size: int64(len(bin)),
		ModTime: time.Unix(0, 0), Format: tar.FormatPAX}); err != nil {
		return err
	}
	if _, err := tw.Write(bin); err != nil {
		return err
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
