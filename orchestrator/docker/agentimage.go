package docker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"

	sandboxctl "github.com/sandboxctl/sandboxctl"
	"github.com/sandboxctl/sandboxctl/orchestrator"
)

// AgentRepo is the repository of the agent images (Dockerfile.agent): a
// sandbox image with the host's sandboxctl binary baked in.
const AgentRepo = "sandboxctl-agent"

// agentContextDir is the agent image's build context in the embedded files.
const agentContextDir = "sandbox-image/agent"

// agentBinName is the binary's name in the agent image's build context.
const agentBinName = "agentd"

// LabelAgentSum records, on an agent image, the sha256 of the binary baked
// into it.
const LabelAgentSum = "sandboxctl.agent.sha256"

// AgentContext is the agent image's build context without the binary:
// Dockerfile.agent and the scripts beside it, as name → content.
func AgentContext() (map[string][]byte, error) {
	sub, err := fs.Sub(sandboxctl.ImageContext, agentContextDir)
	if err != nil {
		return nil, fmt.Errorf("read embedded agent context: %w", err)
	}
	out := map[string][]byte{}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		out[p], err = fs.ReadFile(sub, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read embedded agent context: %w", err)
	}
	if _, ok := out["Dockerfile.agent"]; !ok {
		return nil, fmt.Errorf("read embedded agent context: no Dockerfile.agent")
	}
	return out, nil
}

// binaryKey identifies a host binary by what its file system says about
// it (absolute path, size, modification time to the nanosecond, inode):
// hashing 20-35 MB on every trace would cost it up to a second on a busy
// machine, while any rebuild or copy of the binary changes the key. The
// content's sha256 is recorded on the image when it is built.
func binaryKey(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", abs)
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("%s %d %d %d", abs, fi.Size(), fi.ModTime().UnixNano(), ino), nil
}

// agentRef is the tag of the agent image for these inputs.
func agentRef(from, binKey string, files map[string][]byte, spec orchestrator.AgentImageSpec) string {
	h := sha256.New()
	fmt.Fprintf(h, "from %s\nbinary %s\nuser %d %v\ncontext %s\n", from, binKey, spec.UID, spec.GIDs, ContextHash(files, ""))
	return AgentRepo + ":" + hex.EncodeToString(h.Sum(nil))[:12]
}

// AgentImage returns the agent image for spec (orchestrator.Runtime),
// building it when it does not exist: spec.From, or the sandbox image
// (EnsureImage) when it is empty, with spec.Binary baked in. The answer is
// cached for the Runtime's life, keyed by the inputs, so that a long-running
// caller (a pool, an evaluation) asks the engine once.
func (r *Runtime) AgentImage(ctx context.Context, spec orchestrator.AgentImageSpec, progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	from := spec.From
	if from == "" {
		var err error
		if from, err = ImageRef(r.cfg.base); err != nil {
			return "", err
		}
	}
	binKey, err := binaryKey(spec.Binary)
	if err != nil {
		return "", fmt.Errorf("agent image: binary: %w", err)
	}
	files, err := AgentContext()
	if err != nil {
		return "", err
	}
	ref := agentRef(from, binKey, files, spec)
	if r.imageCached(ref) {
		return ref, nil
	}
	if ok, err := r.imageExists(ctx, ref); err != nil {
		return "", fmt.Errorf("agent image: %w", err)
	} else if ok {
		r.cacheImage(ref)
		return ref, nil
	}
	if spec.From == "" {
		if _, err := r.EnsureImage(ctx, progress); err != nil {
			return "", err
		}
	}
	unlock, err := lockFile(ctx, filepath.Join(r.scratchDir(), "sandboxctl-image.lock"))
	if err != nil {
		return "", fmt.Errorf("agent image: %w", err)
	}
	defer unlock()
	if ok, err := r.imageExists(ctx, ref); err != nil {
		return "", fmt.Errorf("agent image: %w", err)
	} else if !ok {
		if err := r.buildAgent(ctx, progress, files, from, ref, spec); err != nil {
			return "", fmt.Errorf("agent image: build %s: %w", ref, err)
		}
	}
	r.cacheImage(ref)
	return ref, nil
}

// buildAgent builds the agent image ref from Dockerfile.agent on from.
func (r *Runtime) buildAgent(ctx context.Context, progress io.Writer, files map[string][]byte, from, ref string, spec orchestrator.AgentImageSpec) error {
	bin, err := os.ReadFile(spec.Binary)
	if err != nil {
		return fmt.Errorf("read binary: %w", err)
	}
	sum := sha256.Sum256(bin)
	all := map[string][]byte{agentBinName: bin}
	for n, b := range files {
		all[n] = b
	}
	tarball, err := contextTar(all)
	if err != nil {
		return fmt.Errorf("build context: %w", err)
	}
	gids := make([]string, 0, len(spec.GIDs))
	for _, g := range spec.GIDs {
		gids = append(gids, strconv.Itoa(g))
	}
	uid, gidList := strconv.Itoa(spec.UID), strings.Join(gids, ",")
	fmt.Fprintf(progress, "building %s from %s with %s\n", ref, from, spec.Binary)
	res, err := r.cli.ImageBuild(ctx, bytes.NewReader(tarball), client.ImageBuildOptions{
		Tags:        []string{ref},
		Dockerfile:  "Dockerfile.agent",
		BuildArgs:   map[string]*string{"FROM": &from, "USER_UID": &uid, "USER_GIDS": &gidList},
		Labels:      map[string]string{LabelImage: "1", LabelAgentSum: hex.EncodeToString(sum[:])},
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
	})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	return readJSONMessages(ctx, res.Body, progress)
}

func (r *Runtime) imageCached(ref string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.images[ref]
}

func (r *Runtime) cacheImage(ref string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.images == nil {
		r.images = map[string]bool{}
	}
	r.images[ref] = true
}
