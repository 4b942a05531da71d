package canary

import (
	"fmt"
	"strings"
)

// Planted is what a report may say about a token: everything but the
// secret.
type Planted struct {
	ID       string `json:"id"`
	Kind     Kind   `json:"kind"`
	Location string `json:"location"`
	Hint     string `json:"hint"` // Redacted(Value)
}

// Planted lists the set's tokens without their values, in set order.
func (s *Set) Planted() []Planted {
	var out []Planted
	for _, t := range s.Tokens() {
		out = append(out, Planted{ID: t.ID, Kind: t.Kind, Location: t.Location, Hint: Redacted(t.Value)})
	}
	return out
}

// Redacted returns a hint of a secret that is safe to print: its first
// characters (at most a quarter of it, and at most 12, within the first
// line) and its length, e.g. "ghp_R8x… (40 chars)".
func Redacted(v string) string {
	line, _, _ := strings.Cut(v, "\n")
	n := min(len(v)/4, 12, len(line))
	return fmt.Sprintf("%s… (%d chars)", v[:n], len(v))
}
