package monitor

// Output determinism: each tool call's output (stdout and stderr) is
// hashed after its volatile parts are replaced by placeholders, so that two
// runs doing the same thing hash the same even though the clock, the temp
// names and the process ids moved on. What is normalised: timestamps (ISO
// 8601 and RFC 3339, RFC 1123, `date` and `ls -l` forms, clock times, Unix
// epoch seconds to nanoseconds of this era), temp names (mktemp's
// tmp.XXXXXXXXXX, a random-looking component under /tmp, /var/tmp or
// /dev/shm), UUIDs, long hex ids, process ids in their common forms and
// decimal durations ("0.123s", "1m0.5s", "12ms"). The user and host names
// are not: every run of a monitor shares them. A hash that differs between
// runs is variation (MARGINAL), never a deviation on its own: output is
// where a benign skill is noisiest.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
)

// maxNormalise caps the output normalised per stream; the rest is hashed
// as it is (outputs are capped by the trace already).
const maxNormalise = 1 << 20

const (
	monthRE  = `(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*`
	dayRE    = `(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*`
	zoneName = `(?:UTC|GMT|[ECMP][SD]T|CES?T|EES?T|WES?T|BST|IST|JST|KST|HKT|SGT|MSK|AE[SD]T|NZ[SD]T)\b`
	zoneRE   = `(?:Z|[+-]\d{2}:?\d{2}|\s?` + zoneName + `)?`
)

// volatile are the replacements, in order: the longer forms first, so a
// date's parts are not taken by the shorter forms.
var volatile = []struct {
	re   *regexp.Regexp
	with string
	fn   func(string) string // instead of with
}{
	{re: regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), with: "<uuid>"},
	// RFC 1123 and the like: "Fri, 27 Nov 2026 06:19:33 GMT".
	{re: regexp.MustCompile(`\b` + dayRE + `,?\s+\d{1,2}[ -]` + monthRE + `[ -]\d{2,4}\s+\d{2}:\d{2}(?::\d{2})?` + zoneRE), with: "<time>"},
	// date(1): "Fri Nov 27 06:19:33 UTC 2026", "Fri 27 Nov 06:19:33 UTC 2026".
	{re: regexp.MustCompile(`\b` + dayRE + `\s+(?:` + monthRE + `\s+\d{1,2}|\d{1,2}\s+` + monthRE + `)\s+\d{1,2}:\d{2}:\d{2}(?:\s+[AP]M)?(?:\s+` + zoneName + `)?(?:\s+\d{4})?`), with: "<time>"},
	// ISO 8601 and RFC 3339, with or without a time; compact forms.
	{re: regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?` + zoneRE + `)?`), with: "<time>"},
	{re: regexp.MustCompile(`\b\d{8}T\d{6}(?:\.\d+)?Z?\b`), with: "<time>"},
	// ls -l: "Nov 27 06:19", "Nov 27  2025".
	{re: regexp.MustCompile(`\b` + monthRE + `\s+\d{1,2}\s+(?:\d{1,2}:\d{2}|\d{4})\b`), with: "<time>"},
	{re: regexp.MustCompile(`\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b`), with: "<time>"},
	// Epoch seconds, milliseconds, microseconds and nanoseconds of the
	// years 2020 to 2036 (1.58e9 to 2.1e9 seconds).
	{re: regexp.MustCompile(`\b(?:1[6-9]|20)\d{8}(?:\d{3}){0,3}(?:\.\d+)?\b`), with: "<epoch>"},
	// mktemp and Python's tempfile names, anywhere.
	{re: regexp.MustCompile(`\btmp\.[A-Za-z0-9]{6,}`), with: "tmp.<rand>"},
	{re: regexp.MustCompile(`\btmp[a-z0-9_]{8}\b`), with: "tmp<rand>"},
	// Long hex ids (letters and digits both: a long plain number is a
	// value, or an epoch above).
	{re: regexp.MustCompile(`\b[0-9a-fA-F]{16,}\b`), fn: func(h string) string {
		if strings.ContainsAny(h, "abcdefABCDEF") && strings.ContainsAny(h, "0123456789") {
			return "<hex>"
		}
		return h
	}},
	{re: regexp.MustCompile(`(?i)\b(p?pid|process|job)(\s*[:=#]\s*|\s+)\d+\b`), with: "$1$2<pid>"},
	{re: regexp.MustCompile(`\b([A-Za-z][\w.-]*)\[\d+\]`), with: "$1[<pid>]"},
	{re: regexp.MustCompile(`/proc/\d+\b`), with: "/proc/<pid>"},
	{re: regexp.MustCompile(`(?m)^\[\d+\][+-]?\s+\d+$`), with: "[<job>] <pid>"},
	// Durations: decimal with a unit, Go's composite ones, and integer
	// sub-second ones.
	{re: regexp.MustCompile(`\b(?:\d+h)?(?:\d+m)?\d+\.\d+\s?(?:ns|µs|us|ms|s|sec|secs|seconds|m|min|h)\b`), with: "<dur>"},
	{re: regexp.MustCompile(`\b\d+h\d+m\d+s\b|\b\d+m\d+s\b`), with: "<dur>"},
	{re: regexp.MustCompile(`\b\d+\s?(?:ns|µs|us|ms|milliseconds)\b`), with: "<dur>"},
}

// tempPath is a path under a temp folder; tempRandom a component of it
// that looks random (letters and digits mixed, six or more).
var (
	tempPath   = regexp.MustCompile(`(?:/tmp|/var/tmp|/dev/shm)(?:/[A-Za-z0-9._+<>-]+)+`)
	tempRandom = regexp.MustCompile(`[A-Za-z0-9_]{6,}`)
)

// NormaliseOutput replaces the volatile parts of a tool call's output with
// placeholders (see the top of this file). It is safe on any input and
// idempotent: NormaliseOutput(NormaliseOutput(s)) == NormaliseOutput(s).
func NormaliseOutput(s string) string {
	if len(s) > maxNormalise {
		return NormaliseOutput(s[:maxNormalise]) + s[maxNormalise:]
	}
	// A placeholder makes a new word boundary, which can make a new
	// match: normalise to a fixed point (two or three passes in practice).
	for range 8 {
		n := normaliseOnce(s)
		if n == s {
			break
		}
		s = n
	}
	return s
}

func normaliseOnce(s string) string {
	for _, v := range volatile {
		if v.fn != nil {
			s = v.re.ReplaceAllStringFunc(s, v.fn)
		} else {
			s = v.re.ReplaceAllString(s, v.with)
		}
	}
	return tempPath.ReplaceAllStringFunc(s, func(p string) string {
		return tempRandom.ReplaceAllStringFunc(p, func(c string) string {
			if strings.ContainsAny(c, "0123456789") && strings.IndexFunc(c, isLetter) >= 0 {
				return "<rand>"
			}
			return c
		})
	})
}

func isLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// OutputHash is the short hash of a tool call's normalised output: 16 hex
// digits of the SHA-256 of its normalised stdout and stderr.
func OutputHash(stdout, stderr string) string {
	h := sha256.New()
	h.Write([]byte(NormaliseOutput(stdout)))
	h.Write([]byte{0})
	h.Write([]byte(NormaliseOutput(stderr)))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// maxCall caps a call's summary in an observation.
const maxCall = 160

// observeCalls sets the observation's calls and output hashes, one per
// tool call in the report's order.
func observeCalls(o *Observation, r *reports.Report) {
	o.Calls, o.OutputHashes = []string{}, []string{}
	for _, c := range r.ToolCalls {
		call := c.Tool
		if cmd := rules.ToolCommand(c.Tool, c.Arguments); cmd != "" {
			call += " " + strings.Join(strings.Fields(cmd), " ")
		}
		if len(call) > maxCall {
			call = strings.ToValidUTF8(call[:maxCall], "") + "…"
		}
		o.Calls = append(o.Calls, call)
		o.OutputHashes = append(o.OutputHashes, OutputHash(c.Result.Stdout, c.Result.Stderr))
	}
}

// outputVaried lists the tool calls whose output hash differs between
// runs: per call, the runs whose hash is not the one most runs share.
func outputVaried(runs []Observation) []string {
	var out []string
	n := 0
	for _, o := range runs {
		n = max(n, len(o.OutputHashes))
	}
	for i := range n {
		count := map[string]int{}
		var order []string
		for _, o := range runs {
			if i < len(o.OutputHashes) {
				h := o.OutputHashes[i]
				if count[h] == 0 {
					order = append(order, h)
				}
				count[h]++
			}
		}
		if len(order) < 2 {
			continue
		}
		common := order[0] // the most common; the earliest of equals
		for _, h := range order {
			if count[h] > count[common] {
				common = h
			}
		}
		var differ []int
		for k, o := range runs {
			if i < len(o.OutputHashes) && o.OutputHashes[i] != common {
				differ = append(differ, k+1)
			}
		}
		what := fmt.Sprintf("%s %d", outputOfCall, i+1)
		if c := callOf(runs, i); c != "" {
			what += " (" + c + ")"
		}
		out = append(out, fmt.Sprintf("%s: differs in run %s", what, ints(differ)))
	}
	return out
}

// callOf is call i's summary in the first run that made it.
func callOf(runs []Observation, i int) string {
	for _, o := range runs {
		if i < len(o.Calls) {
			c := o.Calls[i]
			if len(c) > 60 {
				c = strings.ToValidUTF8(c[:60], "") + "…"
			}
			return c
		}
	}
	return ""
}
