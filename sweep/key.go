package sweep

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"strconv"
	"strings"

	"github.com/sandboxctl/sandboxctl/internal/fsutil"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// planIdentity is what of a plan decides a verdict: everything but the
// skill, the trace id and the random seed of the home. Fields are added at
// the end; a new field changes every plan hash, so every skill is judged
// again under it, which is what a change of settings should do.
type planIdentity struct {
	Driver        string           `json:"driver"`
	Provider      string           `json:"provider,omitempty"`
	Model         string           `json:"model,omitempty"`
	BaseURL       string           `json:"base_url,omitempty"`
	Prompt        string           `json:"prompt,omitempty"`
	Limits        traceplan.Limits `json:"limits"`
	User          string           `json:"user,omitempty"`
	Hostname      string           `json:"hostname,omitempty"`
	Seed          string           `json:"seed,omitempty"`
	Persona       string           `json:"persona,omitempty"`
	Stealth       string           `json:"stealth,omitempty"`
	NetworkConfig string           `json:"network_config_sha256,omitempty"`
	Version       string           `json:"version"`
}

// PlanHash is the sha256 of what of p decides a verdict (driver, model,
// prompt, limits, identity, persona, stealth mode, the network
// configuration's content) and of the sandboxctl version, whose rules
// judge: a new version judges again. The API key never enters it.
func PlanHash(p traceplan.Plan, version string) (string, error) {
	id := planIdentity{
		Driver: p.Driver.Kind, Provider: p.Driver.Provider, Model: p.Driver.Model, BaseURL: p.Driver.BaseURL,
		Prompt: p.Prompt, Limits: p.Limits, User: p.User, Hostname: p.Hostname, Persona: p.Persona,
		Stealth: p.Stealth, Version: version,
	}
	if p.Seed != nil {
		s := sha256.Sum256(p.Seed)
		id.Seed = hex.EncodeToString(s[:])
	}
	if p.NetworkConfig != "" {
		sum, err := fsutil.SHA256(p.NetworkConfig)
		if err != nil {
			return "", fmt.Errorf("plan hash: network config: %w", err)
		}
		id.NetworkConfig = sum
	}
	b, err := json.Marshal(id)
	if err != nil {
		return "", fmt.Errorf("plan hash: %w", err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// ResultKey is the key a skill's result is stored under: the sha256 of the
// skill's content digest, the plan hash and the image digest. The same
// key means the same verdict would be computed again.
func ResultKey(skillSHA, planHash, imageDigest string) string {
	s := sha256.Sum256([]byte("sandboxctl-sweep-v1\x00" + skillSHA + "\x00" + planHash + "\x00" + imageDigest))
	return hex.EncodeToString(s[:])
}

// NewItem is s with its result key under the plan hash and image digest;
// a skill the loader refused (no content digest) is keyed by its ID.
func NewItem(s Skill, planHash, imageDigest string) Item {
	sha := s.SHA256
	if s.Refused != "" {
		sha = "refused:" + s.ID
	}
	return Item{Skill: s, Key: ResultKey(sha, planHash, imageDigest)}
}

// A Shard is one part of N of a sweep's skills (Index in [0, Count)).
// The zero Shard is the whole sweep.
type Shard struct {
	Index, Count int
}

// ParseShard reads "i/N" (0 <= i < N).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want i/N", s)
	}
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	switch {
	case err1 != nil || err2 != nil:
		return Shard{}, fmt.Errorf("shard %q: want i/N with whole numbers", s)
	case n < 1 || n > 1_000_000:
		return Shard{}, fmt.Errorf("shard %q: N must be between 1 and 1000000", s)
	case i < 0 || i >= n:
		return Shard{}, fmt.Errorf("shard %q: i must be between 0 and %d", s, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}

func (s Shard) String() string {
	if s.Count <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Holds reports whether the shard holds sk: the first 8 bytes of the
// skill's content digest modulo Count, so a skill stays in its shard
// whatever else the sources hold. A refused skill (no digest) is placed
// by its ID instead.
func (s Shard) Holds(sk Skill) bool {
	if s.Count <= 1 {
		return true
	}
	var h [32]byte
	if b, err := hex.DecodeString(sk.SHA256); err == nil && len(b) >= 8 {
		copy(h[:], b)
	} else {
		h = sha256.Sum256([]byte(sk.ID))
	}
	return binary.BigEndian.Uint64(h[:8])%uint64(s.Count) == uint64(s.Index)
}
