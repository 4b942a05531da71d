package userrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"gopkg.in/yaml.v3"

	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

// What a rule matches on.
const (
	OnEvent    = "event"
	OnIncident = "incident"
)

// A Rule is one user rule, validated and compiled.
type Rule struct {
	ID          string
	Title       string
	Severity    rules.Severity
	Confidence  rules.Confidence
	Harm        rules.Harm
	Technique   string
	Description string
	On          string // OnEvent or OnIncident
	When        string // the CEL condition
	Message     string
	// File and Line say where the rule was defined.
	File string
	Line int

	prg cel.Program
}

// A Set is the rules loaded from some files, in load order.
type Set struct {
	Rules []*Rule
}

// An Error is one problem in a rule file: the file, the line (0 when the
// whole file is at fault) and what is wrong.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Errors is every problem found in a load.
type Errors []*Error

func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// MaxFileSize caps a rule file; MaxRules the rules of one load.
const (
	MaxFileSize = 1 << 20
	MaxRules    = 1000
)

// costLimit bounds one evaluation of a condition (CEL's cost units).
const costLimit = 100_000

// idRe is what a user rule id looks like: letters, digits and dashes,
// starting with a letter; the built-in SBX- prefix is refused.
var idRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{1,63}$`)

// LoadDirs reads every *.yaml and *.yml file of the folders, in folder then
// name order. A folder that does not exist is skipped when optional is
// true (the user's config folder), an error otherwise. All problems are
// returned together as Errors; a load with any problem returns no rules.
func LoadDirs(dirs []string, optional bool) (*Set, error) {
	var files []string
	var errs Errors
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) && optional {
			continue
		}
		if err != nil {
			errs = append(errs, &Error{File: d, Msg: fmt.Sprintf("read rules folder: %v", err)})
			continue
		}
		var names []string
		for _, e := range entries {
			if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			files = append(files, filepath.Join(d, n))
		}
	}
	set, err := LoadFiles(files)
	if err != nil {
		var more Errors
		if errors.As(err, &more) {
			errs = append(errs, more...)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return set, nil
}

// LoadFiles reads and validates rule files.
func LoadFiles(files []string) (*Set, error) {
	env, err := newEnv()
	if err != nil {
		return nil, fmt.Errorf("cel environment: %w", err)
	}
	set := &Set{}
	var errs Errors
	seen := map[string]*Rule{}
	for _, f := range files {
		data, err := readCapped(f)
		if err != nil {
			errs = append(errs, &Error{File: f, Msg: err.Error()})
			continue
		}
		rs, ferrs := Parse(f, data, env)
		errs = append(errs, ferrs...)
		for _, r := range rs {
			if prev := seen[r.ID]; prev != nil {
				errs = append(errs, &Error{File: r.File, Line: r.Line, Msg: fmt.Sprintf("rule id %s is already defined at %s:%d", r.ID, prev.File, prev.Line)})
				continue
			}
			seen[r.ID] = r
			set.Rules = append(set.Rules, r)
		}
	}
	if len(set.Rules) > MaxRules {
		errs = append(errs, &Error{File: files[len(files)-1], Msg: fmt.Sprintf("%d rules, more than %d", len(set.Rules), MaxRules)})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return set, nil
}

func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("larger than %d bytes", MaxFileSize)
	}
	return b, nil
}

// newEnv is the CEL environment conditions are checked in: `event` and
// `incident` (maps, see docs/rules.md), `skill`, and CEL's standard
// library with the strings, lists and sets extensions.
func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("event", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("incident", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("skill", cel.MapType(cel.StringType, cel.DynType)),
		ext.Strings(),
		ext.Lists(),
		ext.Sets(),
	)
}

// ruleDoc is a rule as written.
type ruleDoc struct {
	ID          string `yaml:"id"`
	Title       string `yaml:"title"`
	Severity    string `yaml:"severity"`
	Confidence  string `yaml:"confidence"`
	Harm        string `yaml:"harm"`
	Technique   string `yaml:"technique"`
	Description string `yaml:"description"`
	On          string `yaml:"on"`
	When        string `yaml:"when"`
	Message     string `yaml:"message"`
}

var ruleKeys = []string{"id", "title", "severity", "confidence", "harm", "technique", "description", "on", "when", "message"}

// Parse validates the rules of one file: either a mapping with a `rules`
// list, or a single rule mapping. env nil means a fresh environment.
func Parse(file string, data []byte, env *cel.Env) ([]*Rule, Errors) {
	if env == nil {
		var err error
		if env, err = newEnv(); err != nil {
			return nil, Errors{{File: file, Msg: err.Error()}}
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, Errors{{File: file, Line: yamlErrLine(err), Msg: "not valid YAML: " + yamlErrMsg(err)}}
	}
	if len(doc.Content) == 0 {
		return nil, Errors{{File: file, Msg: "empty file: want a rule, or rules: [...]"}}
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, Errors{{File: file, Line: top.Line, Msg: "want a mapping: a rule, or rules: [...]"}}
	}
	var nodes []*yaml.Node
	if v := mapValue(top, "rules"); v != nil {
		if len(top.Content) != 2 {
			return nil, Errors{{File: file, Line: top.Line, Msg: "a file with rules: holds nothing else"}}
		}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			return nil, Errors{{File: file, Line: v.Line, Msg: "rules: want a list of rules"}}
		}
		nodes = v.Content
	} else {
		nodes = []*yaml.Node{top}
	}
	var out []*Rule
	var errs Errors
	for _, n := range nodes {
		if len(errs) >= maxFileErrors {
			// A file of thousands of broken rules (aliases of one, say)
			// gets a screenful, not a megabyte.
			errs = append(errs, &Error{File: file, Line: n.Line, Msg: fmt.Sprintf("over %d errors: the rest of the file is not checked", maxFileErrors)})
			break
		}
		r, es := parseRule(file, n, env)
		errs = append(errs, es...)
		if r != nil {
			out = append(out, r)
		}
	}
	return out, errs
}

// maxFileErrors bounds the errors reported for one file.
const maxFileErrors = 50

func parseRule(file string, n *yaml.Node, env *cel.Env) (*Rule, Errors) {
	bad := func(line int, format string, a ...any) Errors {
		return Errors{{File: file, Line: line, Msg: fmt.Sprintf(format, a...)}}
	}
	if n.Kind != yaml.MappingNode {
		return nil, bad(n.Line, "a rule is a mapping of id, title, severity, on, when, ...")
	}
	var errs Errors
	lines := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !slices.Contains(ruleKeys, k.Value) {
			errs = append(errs, bad(k.Line, "unknown key %q (want one of %s)", k.Value, strings.Join(ruleKeys, ", "))...)
			continue
		}
		if v.Kind != yaml.ScalarNode {
			errs = append(errs, bad(v.Line, "%s: want a string", k.Value)...)
			continue
		}
		lines[k.Value] = v.Line
	}
	if len(errs) > 0 {
		return nil, errs
	}
	var d ruleDoc
	if err := n.Decode(&d); err != nil {
		return nil, bad(n.Line, "%s", yamlErrMsg(err))
	}
	r := &Rule{ID: d.ID, Title: strings.TrimSpace(d.Title), Technique: d.Technique, Description: strings.TrimSpace(d.Description),
		On: d.On, When: d.When, Message: strings.TrimSpace(d.Message), File: file, Line: n.Line}
	line := func(k string) int {
		if l := lines[k]; l > 0 {
			return l
		}
		return n.Line
	}
	switch {
	case d.ID == "":
		errs = append(errs, bad(n.Line, "the rule has no id")...)
	case !idRe.MatchString(d.ID):
		errs = append(errs, bad(line("id"), "id %q: want letters, digits, dots, dashes or underscores, 2 to 64, starting with a letter", d.ID)...)
	case strings.HasPrefix(strings.ToUpper(d.ID), "SBX-"):
		errs = append(errs, bad(line("id"), "id %q: the SBX- prefix is the built-in rules'; choose another", d.ID)...)
	}
	if r.Title == "" {
		errs = append(errs, bad(n.Line, "rule %s has no title", d.ID)...)
	}
	sev, err := rules.ParseSeverity(d.Severity)
	if d.Severity == "" {
		errs = append(errs, bad(n.Line, "rule %s has no severity (critical, high, medium, low or info)", d.ID)...)
	} else if err != nil {
		errs = append(errs, bad(line("severity"), "%v", err)...)
	}
	r.Severity = sev
	r.Confidence = rules.ConfMedium
	if d.Confidence != "" {
		c := rules.Confidence(strings.ToLower(d.Confidence))
		if c.Rank() == 0 {
			errs = append(errs, bad(line("confidence"), "unknown confidence %q (want high, medium or low)", d.Confidence)...)
		}
		r.Confidence = c
	}
	if d.Harm != "" {
		h := rules.Harm(strings.ToLower(d.Harm))
		if !slices.Contains(rules.Harms, h) {
			var hs []string
			for _, x := range rules.Harms {
				hs = append(hs, string(x))
			}
			errs = append(errs, bad(line("harm"), "unknown harm %q (want one of %s)", d.Harm, strings.Join(hs, ", "))...)
		}
		r.Harm = h
	}
	switch d.On {
	case OnEvent, OnIncident:
	case "":
		errs = append(errs, bad(n.Line, "rule %s has no on: (event or incident)", d.ID)...)
	default:
		errs = append(errs, bad(line("on"), "on: %q: want event or incident", d.On)...)
	}
	if strings.TrimSpace(d.When) == "" {
		errs = append(errs, bad(n.Line, "rule %s has no when: condition", d.ID)...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	ast, iss := env.Compile(d.When)
	if iss != nil && iss.Err() != nil {
		return nil, bad(line("when"), "when: %s", oneLine(iss.Err().Error()))
	}
	if !ast.OutputType().IsExactType(types.BoolType) && !ast.OutputType().IsExactType(types.DynType) {
		return nil, bad(line("when"), "when: the condition is a %s, want a bool", ast.OutputType())
	}
	// A rule on events must not name the incident, and the reverse: the
	// other variable is empty there, so the condition could never hold.
	other := map[string]string{OnEvent: "incident", OnIncident: "event"}[d.On]
	if refersTo(ast, other) {
		return nil, bad(line("when"), "when: a rule on %s cannot read %s (on: %s rules see %s and skill)", d.On, other, d.On, d.On)
	}
	prg, err := env.Program(ast, cel.CostLimit(costLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, bad(line("when"), "when: %v", err)
	}
	r.prg = prg
	return r, nil
}

// refersTo reports whether a checked expression reads the variable name.
func refersTo(ast *cel.Ast, name string) bool {
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == name {
			return true
		}
	}
	return false
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

var yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): `)

func yamlErrLine(err error) int {
	if m := yamlLineRe.FindStringSubmatch(err.Error()); m != nil {
		var n int
		fmt.Sscan(m[1], &n)
		return n
	}
	return 0
}

func yamlErrMsg(err error) string {
	return yamlLineRe.ReplaceAllString(strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  "), "")
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// Extra is the rules.Extra that runs the set's rules. It is nil for an empty
// set, so that no hook runs at all.
func (s *Set) Extra() rules.Extra {
	if s == nil || len(s.Rules) == 0 {
		return nil
	}
	return s.evaluate
}

// maxEventEvals caps the events one rule is evaluated on: a timeline is
// bounded already, this bounds the work of a thousand rules over it.
const maxEventEvals = 200_000

// evaluate runs every rule; it is a rules.Extra.
func (s *Set) evaluate(in rules.Input, events []trace.Event, findings []rules.Finding) []rules.Finding {
	skill := map[string]any{}
	if in.Skill != nil {
		skill = map[string]any{"name": in.Skill.Name, "description": in.Skill.Description, "path": in.Skill.Path}
	}
	calls := map[string]*trace.ToolCall{}
	for _, e := range events {
		if d, ok := e.Data.(*trace.ToolCall); ok {
			calls[d.ID] = d
		}
	}
	red := func(x string) string { return rules.Redact(in.Canaries, x) }
	var out []rules.Finding
	var evVals []map[string]any
	var incs []reports.Incident
	var incVals []map[string]any
	for _, r := range s.Rules {
		switch r.On {
		case OnEvent:
			if evVals == nil {
				evVals = make([]map[string]any, len(events))
			}
			// one finding per tool call (or per pass outside any)
			byCall := map[string]*rules.Finding{}
			var order []string
			for i, e := range events {
				if i == maxEventEvals {
					break
				}
				if evVals[i] == nil {
					evVals[i] = eventValue(e)
				}
				if !r.holds(map[string]any{"event": evVals[i], "incident": map[string]any{}, "skill": skill}) {
					continue
				}
				f := byCall[e.ToolCallID]
				if f == nil {
					f = r.finding(e.ToolCallID)
					if c := calls[e.ToolCallID]; c != nil {
						f.SkillFile, f.SkillLine = c.SkillFile, c.SkillLine
					}
					f.Message = r.message(red(rules.Summarize(e)))
					byCall[e.ToolCallID] = f
					order = append(order, e.ToolCallID)
				}
				if len(f.Evidence) < rules.MaxEvidence {
					f.Evidence = append(f.Evidence, rules.Evidence{Seq: e.Seq, Source: e.Source, Type: e.Type,
						ToolCallID: e.ToolCallID, Summary: red(rules.Summarize(e))})
				} else {
					f.More++
				}
			}
			for _, k := range order {
				out = append(out, *byCall[k])
			}
		case OnIncident:
			if incVals == nil {
				incs = reports.GroupIncidents(events, findings, in.Home)
				incVals = make([]map[string]any, len(incs))
				for i, inc := range incs {
					incVals[i] = jsonValue(inc)
				}
			}
			for i, inc := range incs {
				if !r.holds(map[string]any{"incident": incVals[i], "event": map[string]any{}, "skill": skill}) {
					continue
				}
				call := ""
				if len(inc.ToolCallIDs) > 0 {
					call = inc.ToolCallIDs[0]
				}
				f := r.finding(call)
				if len(inc.Locations) > 0 {
					f.SkillFile, f.SkillLine = inc.Locations[0].File, inc.Locations[0].Line
				}
				f.Pass = inc.Pass
				f.Message = r.message(red(inc.Title))
				// the capped evidence keeps the canary hits first (they say
				// which tokens went where), in timeline order
				ev := slices.Clone(inc.Evidence)
				slices.SortStableFunc(ev, func(a, b rules.Evidence) int {
					return cmpBool(a.Type == trace.TypeCanaryHit, b.Type == trace.TypeCanaryHit)
				})
				if len(ev) > rules.MaxEvidence {
					f.More = len(ev) - rules.MaxEvidence + inc.More
					ev = ev[:rules.MaxEvidence]
				}
				slices.SortFunc(ev, func(a, b rules.Evidence) int { return int(a.Seq - b.Seq) })
				f.Evidence = ev
				out = append(out, *f)
			}
		}
	}
	return out
}

// holds evaluates the rule's condition; an evaluation error (a missing
// key, a cost limit) is a condition that does not hold.
func (r *Rule) holds(vars map[string]any) bool {
	v, _, err := r.prg.Eval(vars)
	if err != nil {
		return false
	}
	b, ok := v.Value().(bool)
	return ok && b
}

func (r *Rule) finding(call string) *rules.Finding {
	return &rules.Finding{RuleID: r.ID, Title: r.Title, Severity: r.Severity, Confidence: r.Confidence,
		Technique: r.Technique, Harm: r.Harm, ToolCallID: call, Evidence: []rules.Evidence{}}
}

func (r *Rule) message(what string) string {
	m := r.Message
	if m == "" {
		m = r.Title
	}
	return m + " (user rule " + r.ID + ", " + filepath.Base(r.File) + "): " + what
}

// eventValue is what a condition sees as `event`: the event's fields
// (seq, time as an RFC 3339 string, source, type, tool_call_id, pid,
// ppid, count), its payload as `data` (the field names of events.jsonl)
// and `summary`, the one-line summary reports show.
func eventValue(e trace.Event) map[string]any {
	return map[string]any{
		"seq": e.Seq, "time": e.Time.UTC().Format(time.RFC3339Nano), "source": string(e.Source), "type": string(e.Type),
		"tool_call_id": e.ToolCallID, "pid": int64(e.PID), "ppid": int64(e.PPID), "count": int64(max(e.Count, 1)),
		"data": jsonValue(e.Data), "summary": rules.Summarize(e),
	}
}

// jsonValue turns v into what its JSON encoding decodes to, with whole
// numbers as int64 (so `event.pid == 12` compares ints), and a map when v
// encodes to something else than an object.
func jsonValue(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return map[string]any{}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return map[string]any{}
	}
	m, ok := ints(x).(map[string]any)
	if !ok {
		return map[string]any{}
	}
	return m
}

func ints(x any) any {
	switch t := x.(type) {
	case map[string]any:
		for k, v := range t {
			t[k] = ints(v)
		}
		return t
	case []any:
		for i, v := range t {
			t[i] = ints(v)
		}
		return t
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		if f, err := t.Float64(); err == nil && !math.IsInf(f, 0) {
			return f
		}
		return t.String()
	}
	return x
}

// Merge joins two loaded sets (the config folder's and --rules'): an id in
// both is an error naming both places.
func Merge(a, b *Set) (*Set, error) {
	out := &Set{}
	seen := map[string]*Rule{}
	var errs Errors
	for _, s := range []*Set{a, b} {
		if s == nil {
			continue
		}
		for _, r := range s.Rules {
			if prev := seen[r.ID]; prev != nil {
				errs = append(errs, &Error{File: r.File, Line: r.Line, Msg: fmt.Sprintf("rule id %s is already defined at %s:%d", r.ID, prev.File, prev.Line)})
				continue
			}
			seen[r.ID] = r
			out.Rules = append(out.Rules, r)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// cmpBool orders true before false.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}
