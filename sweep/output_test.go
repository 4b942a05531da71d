package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/skill"
	"github.com/sandboxctl/sandboxctl/traceplan"
	"github.com/sandboxctl/sandboxctl/tracing"
)

func TestCompare(t *testing.T) {
	r := func(id, sha, status, verdict string) Result {
		return Result{Skill: ResultSkill{ID: id, SHA256: sha}, Status: status, Outcome: Outcome{Verdict: verdict}}
	}
	prev := []Result{r("a", "1", StatusDone, "clean"), r("b", "2", StatusDone, "clean"), r("c", "3", StatusDone, "suspicious"), r("gone", "4", StatusDone, "clean")}
	cur := []Result{r("a", "1", StatusDone, "clean"), r("b", "9", StatusDone, "malicious"), r("c", "3", StatusFailed, ""), r("new", "5", StatusDone, "malicious")}
	d := Compare(RunInfo{ID: "p"}, prev, cur)
	ids := func(es []DiffEntry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	cases := []struct {
		name string
		got  []string
		want []string
	}{
		{"new malicious", ids(d.NewMalicious), []string{"b", "new"}},
		{"changed verdicts", ids(d.ChangedVerdicts), []string{"b", "c"}},
		{"content changed", ids(d.ContentChanged), []string{"b"}},
		{"added", d.Added, []string{"new"}},
		{"removed", d.Removed, []string{"gone"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Equal(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
	if d.ChangedVerdicts[1].Before != "suspicious" || d.ChangedVerdicts[1].After != StatusFailed {
		t.Errorf("c: %+v", d.ChangedVerdicts[1])
	}
}

func TestIndexSelfContainedAndEscaped(t *testing.T) {
	res := []Result{{Skill: ResultSkill{ID: `evil/<script>alert(1)</script>`, Name: "x\u202ey", SHA256: strings.Repeat("a", 64)},
		Status: StatusDone, Outcome: Outcome{Verdict: "malicious", RunDir: "runs/x", Deciding: []string{"SBX-EXFIL-001"},
			Incidents: []IncidentBrief{{Title: `<img src=x onerror=alert(1)>`, Severity: "critical"}}}}}
	sum := Summarize(RunInfo{ID: "r", Sources: []string{"/src"}}, res, time.Now())
	var b bytes.Buffer
	if err := WriteIndex(&b, sum, res); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "<script>alert") || strings.Contains(page, "<img src=x") {
		t.Error("skill text not escaped")
	}
	// No external asset: every src/href is relative, and only links.
	for _, m := range regexp.MustCompile(`(?i)(src|href)\s*=\s*"([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if m[1] == "src" || strings.Contains(m[2], "//") {
			t.Errorf("external or embedded asset reference %q", m[0])
		}
	}
	if !strings.Contains(page, `href="runs/x/report.html"`) {
		t.Error("no link to the report")
	}
}

// fakeRunDir writes a run folder for a skill, as a trace would.
func fakeRunDir(t *testing.T, dir, traceID, skillPath string, verdict rules.Verdict) {
	t.Helper()
	sk, err := skill.Load(skillPath, skill.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep := &reports.Report{SchemaVersion: "1.1", TraceID: traceID, Verdict: verdict, Status: reports.StatusCompleted,
		Generator: reports.Generator{Name: "sandboxctl", Version: "test"}, Driver: reports.Driver{Kind: "literal"},
		Skill:     reports.SkillInfo{Name: sk.Name, SHA256: sk.SHA256, Path: skillPath},
		StartedAt: time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC), Narrative: "It sent the AWS keys to a webhook.",
		Canaries: reports.Canaries{Planted: []reports.Planted{{ID: "t1", Kind: "aws", Location: "~/.aws/credentials"}}},
	}
	if verdict == rules.Malicious {
		rep.Findings = []rules.Finding{{RuleID: "SBX-EXFIL-001", Severity: rules.Critical, Confidence: rules.ConfHigh}}
		rep.Incidents = []reports.Incident{{ID: "I1", Kind: "exfiltration", Title: "AWS keys sent", Severity: rules.Critical,
			Confidence: rules.ConfHigh, RuleIDs: []string{"SBX-EXFIL-001"}, Tokens: []reports.IncidentToken{{Kind: "aws"}}}}
	}
	if err := reports.WriteRunDir(dir, rep, nil); err != nil {
		t.Fatal(err)
	}
}

func TestExportAndMerge(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "corpus")
	names := []string{"alpha", "evil-beta", "gamma", "evil-delta", "epsilon", "zeta"}
	for _, n := range names {
		writeSkill(t, filepath.Join(src, n), skillMD(n))
	}
	// The tracer writes a real run folder: malicious for evil-*.
	tracer := tracing.Func(func(ctx context.Context, p traceplan.Plan, dir string) (*reports.Report, error) {
		v := rules.Clean
		if strings.Contains(filepath.Base(p.SkillPath), "evil") {
			v = rules.Malicious
		}
		fakeRunDir(t, dir, p.TraceID, p.SkillPath, v)
		return reports.Load(dir)
	})
	sweepOnce := func(dir string, shard Shard) {
		skills, err := Discover(t.Context(), []string{src}, DiscoverOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := OpenStore(t.Context(), filepath.Join(dir, DBFile))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var items []Item
		for _, s := range skills {
			if shard.Holds(s) {
				items = append(items, Item{Skill: s, Key: ResultKey(s.SHA256, strings.Repeat("ab", 32), "sha256:img")})
			}
		}
		run := RunInfo{ID: "run-" + filepath.Base(dir), Started: time.Now(), Sources: []string{src}, PlanHash: strings.Repeat("ab", 32), Image: "sha256:img", Shard: shard.String()}
		if _, err := st.Begin(t.Context(), run, items, BeginOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := Run(t.Context(), Options{Dir: dir, Store: st, RunID: run.ID, Tracer: tracer}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Outputs(t.Context(), st, run.ID, dir, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	whole := filepath.Join(root, "whole")
	sweepOnce(whole, Shard{})

	t.Run("export", func(t *testing.T) {
		to := filepath.Join(root, "export")
		got, err := Export(t.Context(), whole, to, ExportOptions{OSV: true})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, x := range got {
			ids = append(ids, x.SkillID)
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []string{"corpus/evil-beta", "corpus/evil-delta"}) {
			t.Fatalf("exported %v", ids)
		}
		c := jsonschema.NewCompiler()
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ManifestSchema))
		if err != nil {
			t.Fatal(err)
		}
		c.AddResource("manifest.schema.json", doc)
		sch, err := c.Compile("manifest.schema.json")
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range got {
			b, err := os.ReadFile(filepath.Join(x.Dir, FileManifest))
			if err != nil {
				t.Fatal(err)
			}
			v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err := sch.Validate(v); err != nil {
				t.Errorf("%s: manifest invalid: %v", x.SkillID, err)
			}
			var m Manifest
			json.Unmarshal(b, &m)
			if m.Verdict != "malicious" || m.Skill.Files[0].Path != "SKILL.md" || m.Incidents[0].TokenKinds[0] != "aws" {
				t.Errorf("manifest %+v", m)
			}
			if _, err := os.Stat(filepath.Join(x.Dir, ExportSkill, "SKILL.md")); err != nil {
				t.Error(err)
			}
			var osv OSV
			if b, err := os.ReadFile(filepath.Join(x.Dir, FileOSV)); err != nil || json.Unmarshal(b, &osv) != nil || osv.Affected[0].Versions[0] != m.Skill.SHA256 {
				t.Errorf("osv record: %v %+v", err, osv)
			}
		}
		// Filters.
		for _, tc := range []struct {
			name string
			opt  ExportOptions
			want int
		}{
			{"rule that fired", ExportOptions{Rules: []string{"SBX-EXFIL-001"}}, 2},
			{"rule that did not", ExportOptions{Rules: []string{"SBX-PERSIST-001"}}, 0},
			{"confidence met", ExportOptions{MinConfidence: rules.ConfHigh}, 2},
			{"clean ones", ExportOptions{Verdicts: []string{"clean"}}, 4},
		} {
			got, err := Export(t.Context(), whole, filepath.Join(t.TempDir(), "x"), tc.opt)
			if err != nil || len(got) != tc.want {
				t.Errorf("%s: %d exported, want %d (%v)", tc.name, len(got), tc.want, err)
			}
		}
	})

	t.Run("merged shards equal one sweep", func(t *testing.T) {
		s0, s1 := filepath.Join(root, "s0"), filepath.Join(root, "s1")
		sweepOnce(s0, Shard{0, 2})
		sweepOnce(s1, Shard{1, 2})
		merged := filepath.Join(root, "merged")
		if _, err := Merge(t.Context(), merged, []string{s0}, MergeOptions{}); err == nil {
			t.Error("a merge missing a shard was accepted")
		}
		sum, err := Merge(t.Context(), merged, []string{s1, s0}, MergeOptions{RunID: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Total != len(names) || !sum.Complete || sum.ByVerdict["malicious"] != 2 {
			t.Errorf("merged summary %+v", sum)
		}
		if a, b := comparable(t, whole), comparable(t, merged); !slices.Equal(a, b) {
			t.Errorf("merged results differ:\n%v\n%v", a, b)
		}
		res := readResults(t, merged)
		for _, r := range res {
			if _, err := os.Stat(filepath.Join(merged, r.RunDir, reports.FileJSON)); err != nil {
				t.Errorf("%s: run folder not merged: %v", r.Skill.ID, err)
			}
		}
	})
}

func readResults(t *testing.T, dir string) []Result {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, FileResults))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := ReadResults(f)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// comparable is a sweep's results without what differs between runs
// (trace ids, times).
func comparable(t *testing.T, dir string) []string {
	var out []string
	for _, r := range readResults(t, dir) {
		out = append(out, strings.Join([]string{r.Skill.ID, r.Skill.SHA256, r.Key, r.Status, r.Verdict, strings.Join(r.Deciding, ","), r.RunDir}, " "))
	}
	slices.Sort(out)
	return out
}
