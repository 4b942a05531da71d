package docker

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/client"
	sandboxctl "github.com/sandboxctl/sandboxctl"
	"github.com/sandboxctl/sandboxctl/internal/fsutil"
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
// it (absolute path, size, modification time to the nanosecond, inode),
// for the Runtime's cache of content hashes.
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

// binarySum is the sha256 of the binary's content, hashed once per
// Runtime and file version. The agent image is keyed by content, so that
// identical builds (-trimpath builds of one commit: `make build`, each
// test package's own build) share one image.
func (r *Runtime) binarySum(path string) (string, error) {
	key, err := binaryKey(path)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	sum, ok := r.sums[key]
	r.mu.Unlock()
	if ok {
		return sum, nil
	}
	sum, err = r.diskSum(key, path)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	if r.sums == nil {
		r.sums = map[string]string{}
	}
	r.sums[key] = sum
	r.mu.Unlock()
	return sum, nil
}

// diskSum is the sha256 of the binary at path, read from the cache folder
// (WithCacheDir) under its key when it was computed before, else computed
// and kept there. The cache is a convenience: a missing, unreadable or
// malformed entry is computed again, and one that cannot be written is not
// kept.
func (r *Runtime) diskSum(key, path string) (string, error) {
	if r.cfg.cache == "" {
		return fsutil.SHA256(path)
	}
	k := sha256.Sum256([]byte(key))
	file := filepath.Join(r.cfg.cache, "binsum", hex.EncodeToString(k[:16]))
	if b, err := os.ReadFile(file); err == nil {
		if s := strings.TrimSpace(string(b)); isHexSum(s) {
			return s, nil
		}
	}
	sum, err := fsutil.SHA256(path)
	if err != nil {
		return "", err
	}
	if os.MkdirAll(filepath.Dir(file), 0o700) == nil {
		fsutil.WriteAtomic(file, 0o600, func(w io.Writer) error {
			_, err := io.WriteString(w, sum+"\n")
			return err
		})
	}
	return sum, nil
}

func isHexSum(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// agentRef is the tag of the agent image for these inputs.
func agentRef(from, binSum string, files map[string][]byte, spec orchestrator.AgentImageSpec) string {
	h := sha256.New()
	fmt.Fprintf(h, "from %s\nbinary %s\nuser %d %v\ncontext %s\n", from, binSum, spec.UID, spec.GIDs, ContextHash(files, ""))
	return AgentRepo + ":" + hex.EncodeToString(h.Sum(nil))[:12]
}

// prepRef is the tag of the prepared image (Dockerfile.prep) for these
// inputs: it depends on the sandbox image and the user, not on the binary.
func prepRef(from string, files map[string][]byte, spec orchestrator.AgentImageSpec) string {
	h := sha256.New()
	fmt.Fprintf(h, "from %s\nuser %d %v\ncontext %s\n", from, spec.UID, spec.GIDs, ContextHash(files, ""))
	return AgentRepo + ":prep-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// AgentImage returns the agent image for spec (orchestrator.Runtime),
// building what does not exist: spec.From, or the sandbox image
// (EnsureImage) when it is empty, prepared once (Dockerfile.prep: the
// lookups a trace would otherwise do), then with spec.Binary baked in
// (Dockerfile.agent: one COPY per binary). The answer is cached for the
// Runtime's life, keyed by the inputs, so that a long-running caller (a
// pool, an evaluation) asks the engine once.
func (r *Runtime) AgentImage(ctx context.Context, spec orchestrator.AgentImageSpec, progress io.Writer) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	from := spec.From
	if from != "" && !r.imageCached(from) {
		// A published sandbox image (--image) is pulled when absent, once:
		// the agent image is made on it as on a local build.
		if ok, err := r.imageExists(ctx, from); err != nil {
			return "", fmt.Errorf("agent image: %w", err)
		} else if !ok {
			if err := r.pull(ctx, progress, from); err != nil {
				return "", fmt.Errorf("sandbox image %s is not here and could not be pulled: %w (build one with `sandboxctl image build`, or `docker load` it)", from, err)
			}
		}
		r.cacheImage(from)
	}
	if from == "" {
		// The sandbox image as EnsureImage finds or builds it (from a
		// registry's base or debootstrap's): cached for the Runtime's life.
		ref, err := r.EnsureImage(ctx, progress)
		if err != nil {
			return "", err
		}
		from = ref
	}
	binSum, err := r.binarySum(spec.Binary)
	if err != nil {
		return "", fmt.Errorf("agent image: binary: %w", err)
	}
	files, err := AgentContext()
	if err != nil {
		return "", err
	}
	ref := agentRef(from, binSum, files, spec)
	if r.imageCached(ref) {
		return ref, nil
	}
	if ok, err := r.imageExists(ctx, ref); err != nil {
		return "", fmt.Errorf("agent image: %w", err)
	} else if ok {
		r.cacheImage(ref)
		return ref, nil
	}
	// One lock per image: builds of other binaries (other checkouts,
	// other users) go on meanwhile.
	unlock, err := lockFile(ctx, filepath.Join(r.scratchDir(), "sandboxctl-agent-"+strings.TrimPrefix(ref, AgentRepo+":")+".lock"))
	if err != nil {
		return "", fmt.Errorf("agent image: %w", err)
	}
	defer unlock()
	prep := prepRef(from, files, spec)
	uid, gids := strconv.Itoa(spec.UID), joinInts(spec.GIDs)
	labels := map[string]string{LabelImage: "1", LabelAgentSum: binSum}
	if err := r.fastAgentImage(ctx, progress, from, prep, ref, spec.Binary, files, uid, gids, labels); err == nil {
		r.cacheImage(ref)
		r.PruneAgentImages(ctx, AgentImagesKept, AgentImagesMinAge)
		return ref, nil
	} else if ctx.Err() != nil {
		return "", ctx.Err()
	} else {
		// An engine that refuses the archive still builds.
		fmt.Fprintf(progress, "agent image: %v; building it instead\n", err)
	}
	steps := []struct {
		ref, dockerfile string
		args            map[string]*string
		ctx             map[string][]byte
	}{
		{prep, "Dockerfile.prep", map[string]*string{"FROM": &from, "USER_UID": &uid, "USER_GIDS": &gids}, files},
		{ref, "Dockerfile.agent", map[string]*string{"FROM": &prep}, nil},
	}
	for _, s := range steps {
		if ok, err := r.imageExists(ctx, s.ref); err != nil {
			return "", fmt.Errorf("agent image: %w", err)
		} else if ok {
			continue
		}
		bctx := s.ctx
		if bctx == nil {
			if bctx, err = agentBinContext(files, spec.Binary); err != nil {
				return "", fmt.Errorf("agent image: %w", err)
			}
		}
		if err := r.buildDerived(ctx, progress, bctx, s.dockerfile, s.args, s.ref); err != nil {
			return "", fmt.Errorf("agent image: build %s: %w", s.ref, err)
		}
	}
	r.cacheImage(ref)
	// A new binary's image is built: older binaries' images go, but for
	// the newest few and the recent ones. Best effort: a failure to prune
	// never fails the trace (`sandboxctl gc` prunes too).
	r.PruneAgentImages(ctx, AgentImagesKept, AgentImagesMinAge)
	return ref, nil
}

// fastAgentImage makes the agent image without a build (loadLayerImage):
// on the prepared image when an earlier binary left it, else on from with
// the prepared files (prepLists: prepare.sh run in a container, its
// answer cached) and the fast install-ca in the binary's layer.
func (r *Runtime) fastAgentImage(ctx context.Context, progress io.Writer, from, prep, ref, binary string,
	files map[string][]byte, uid, gids string, labels map[string]string) error {
	start := time.Now()
	base := prep
	var extra []layerFile
	if ok, err := r.imageExists(ctx, prep); err != nil {
		return err
	} else if !ok {
		fmt.Fprintf(progress, "preparing %s: the lookups of Dockerfile.prep, in a container\n", from)
		lists, err := r.prepLists(ctx, from, prep, files["prepare.sh"], uid, gids)
		if err != nil {
			return err
		}
		base = from
		extra = append(lists, layerFile{name: agentDir + "install-ca", mode: 0o700, data: files["install-ca"]})
	}
	if err := r.loadLayerImage(ctx, base, binary, extra, ref, labels); err != nil {
		return err
	}
	fmt.Fprintf(progress, "made %s (the binary added to %s) in %s\n", ref, base, time.Since(start).Round(time.Millisecond))
	return nil
}

// agentBinContext is Dockerfile.agent's build context: the Dockerfile and
// the binary.
func agentBinContext(files map[string][]byte, binary string) (map[string][]byte, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("read binary: %w", err)
	}
	return map[string][]byte{"Dockerfile.agent": files["Dockerfile.agent"], agentBinName: bin}, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// buildDerived builds ref from dockerfile in files with the classic
// builder, labelled as sandboxctl's (and, for the agent image, with the
// binary's sha256).
func (r *Runtime) buildDerived(ctx context.Context, progress io.Writer, files map[string][]byte, dockerfile string, args map[string]*string, ref string) error {
	labels := map[string]string{LabelImage: "1"}
	if bin, ok := files[agentBinName]; ok {
		sum := sha256.Sum256(bin)
		labels[LabelAgentSum] = hex.EncodeToString(sum[:])
	}
	fmt.Fprintf(progress, "building %s (%s)\n", ref, dockerfile)
	start := time.Now()
	if err := r.classicBuild(ctx, progress, files, dockerfile, args, labels, ref); err != nil {
		return err
	}
	fmt.Fprintf(progress, "built %s in %s\n", ref, time.Since(start).Round(time.Millisecond))
	return nil
}

func (r *Runtime) imageCached(ref string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.images[ref]
}

func (r *Runtime) uncacheImage(refs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ref := range refs {
		delete(r.images, ref)
	}
}

func (r *Runtime) cacheImage(ref string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.images == nil {
		r.images = map[string]bool{}
	}
	r.images[ref] = true
}

// Agent images kept by PruneAgentImages: the newest few, and any younger
// than a while (another process may be about to start a container from it).
const (
	AgentImagesKept   = 3
	AgentImagesMinAge = time.Hour
)

// PruneAgentImages removes the agent images (one per binary content: they
// pile up as sandboxctl is rebuilt) that no container uses, except the keep
// newest and those created less than minAge ago. It removes only images
// that carry LabelAgentSum in AgentRepo, never the prepared image, the
// sandbox image or anything else, and returns the tags removed; an image
// the engine refuses to remove (a container was just made from it) is
// skipped.
func (r *Runtime) PruneAgentImages(ctx context.Context, keep int, minAge time.Duration) ([]string, error) {
	return r.pruneAgentImages(ctx, AgentRepo, keep, minAge)
}

// pruneAgentImages is PruneAgentImages for the images tagged in repo.
func (r *Runtime) pruneAgentImages(ctx context.Context, repo string, keep int, minAge time.Duration) ([]string, error) {
	il, err := r.cli.ImageList(ctx, client.ImageListOptions{Filters: client.Filters{}.Add("label", LabelAgentSum)})
	if err != nil {
		return nil, fmt.Errorf("prune agent images: list: %w", err)
	}
	cl, err := r.cli.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		return nil, fmt.Errorf("prune agent images: list containers: %w", err)
	}
	used := map[string]bool{}
	for _, c := range cl.Items {
		used[c.ImageID] = true
	}
	var items []image.Summary
	for _, im := range il.Items {
		for _, t := range im.RepoTags {
			if strings.HasPrefix(t, repo+":") && !strings.HasPrefix(t, repo+":prep-") {
				items = append(items, im)
				break
			}
		}
	}
	slices.SortFunc(items, func(a, b image.Summary) int { return cmp.Compare(b.Created, a.Created) })
	var removed []string
	var errs []error
	cutoff := time.Now().Add(-minAge).Unix()
	for i, im := range items {
		if i < keep || used[im.ID] || im.Created > cutoff || im.Labels[LabelAgentSum] == "" {
			continue
		}
		var tags []string
		for _, t := range im.RepoTags {
			if strings.HasPrefix(t, repo+":") && !strings.HasPrefix(t, repo+":prep-") {
				tags = append(tags, t)
			}
		}
		if len(tags) != len(im.RepoTags) || len(tags) == 0 {
			continue // tagged otherwise too: not only ours
		}
		if _, err := r.cli.ImageRemove(ctx, im.ID, client.ImageRemoveOptions{PruneChildren: true}); err != nil {
			if !cerrdefs.IsConflict(err) && !cerrdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("prune agent images: remove %s: %w", tags[0], err))
			}
			continue
		}
		r.uncacheImage(tags...)
		removed = append(removed, tags...)
	}
	return removed, errors.Join(errs...)
}
