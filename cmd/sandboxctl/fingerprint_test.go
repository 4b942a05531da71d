package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sandboxctl/sandboxctl/fingerprint"
	"github.com/sandboxctl/sandboxctl/fingerprint/store"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

// fpStore makes a store with a stable v1 and a v2 that adds a host.
func fpStore(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fp.db")
	st, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k := fingerprint.Key{Skill: "demo", Identity: "alice/demo", Driver: "literal", Cell: "persona=linux"}
	prof := func(hosts ...string) fingerprint.Profile {
		var p fingerprint.Profile
		for _, h := range hosts {
			p.Network = append(p.Network, fingerprint.Target{Sink: "dns", Protocol: "dns", Name: h, Count: 1, Seqs: []int64{3}})
		}
		return p
	}
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		if _, err := st.Record(t.Context(), k, strings.Repeat("a", 64), fingerprint.Run{TraceID: "r", At: at.Add(time.Duration(i) * time.Minute),
			Profile: prof("api.test")}, fingerprint.Rule{Threshold: 3, Streak: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Record(t.Context(), k, strings.Repeat("b", 64), fingerprint.Run{TraceID: "r2", At: at.Add(time.Hour),
		MaxSeverity: rules.Medium, Profile: prof("api.test", "c2.test")}, fingerprint.DefaultRule); err != nil {
		t.Fatal(err)
	}
	return path
}

func fpCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(t.Context(), args, env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

func TestFingerprintShowSchema(t *testing.T) {
	b, err := os.ReadFile("../../fingerprint/schema/show.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("show.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("show.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	path := fpStore(t)
	code, out, stderr := fpCLI(t, "fingerprint", "show", "demo", "--format", "json", "--store", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("fingerprint show's JSON does not match its schema: %v\n%s", err, out)
	}
	var v fingerprintShow
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Fingerprints) != 2 || len(v.Runs) != 4 ||
		v.Fingerprints[0].State != fingerprint.Stable || len(v.Runs[0].Anomalies) != 2 {
		t.Fatalf("show = %+v, %v", v, err)
	}
	// The schema rejects what it should: a short hash.
	bad := strings.Replace(out, v.Fingerprints[0].Hash, "abcd", 1)
	inst, _ = jsonschema.UnmarshalJSON(strings.NewReader(bad))
	if sch.Validate(inst) == nil {
		t.Error("the schema accepts a 16-bit capability hash")
	}
}

func TestFingerprintCommands(t *testing.T) {
	path := fpStore(t)
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"list", []string{"list"}, 0, []string{"demo", "aaaaaaaaaaaa", "stable", "bbbbbbbbbbbb", "learning"}},
		{"show text", []string{"show", "demo"}, 0, []string{"dns:c2.test", "new_network_target (medium)", "capability hash"}},
		{"show unknown", []string{"show", "nope"}, exitUsage, nil},
		{"diff default versions", []string{"diff", "demo"}, 0, []string{"aaaaaaaaaaaa -> bbbbbbbbbbbb", "removed:", "dns:api.test"}},
		{"diff json", []string{"diff", "demo", "--from", "a", "--to", "b", "--format", "json"}, 0, []string{`"added"`, `"removed"`}},
		{"diff unknown version", []string{"diff", "demo", "--from", "zz"}, exitUsage, nil},
		{"accept", []string{"accept", "demo"}, 0, []string{"accepted demo bbbbbbbbbbbb", "stable, 2 capabilities"}},
		{"diff after accept", []string{"diff", "demo"}, 0, []string{"added:", "dns:c2.test"}},
		{"evict nothing", []string{"evict", "--older-than", "36500d"}, 0, []string{"removed 0 fingerprint(s)"}},
		{"evict needs an age", []string{"evict"}, exitUsage, nil},
		{"bad age", []string{"evict", "--older-than", "3x"}, exitUsage, nil},
		{"reset", []string{"reset", "demo", "--format", "json"}, 0, []string{`"removed": 2`}},
		{"list after reset", []string{"list", "--format", "json"}, 0, []string{`"fingerprints": []`}},
		{"no subcommand", []string{}, exitUsage, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := fpCLI(t, append(append([]string{"fingerprint"}, tt.args...), "--store", path)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s%s", code, tt.code, out, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	if code, _, _ := fpCLI(t, "fingerprint", "list", "--store", filepath.Join(t.TempDir(), "none.db")); code != exitUsage {
		t.Errorf("a missing store: exit %d", code)
	}
}

// TestFingerprintHelpNamesItsSubcommands: every subcommand the top-level
// help names for fingerprint is one the command takes.
func TestFingerprintHelpNamesItsSubcommands(t *testing.T) {
	short := commands["fingerprint"].short
	list, _, _ := strings.Cut(short, " skills'")
	verbs := strings.FieldsFunc(strings.ReplaceAll(list, " or ", ","), func(r rune) bool { return r == ',' || r == ' ' })
	if len(verbs) < 5 {
		t.Fatalf("could not read the subcommands of %q", short)
	}
	store := filepath.Join(t.TempDir(), "none.db")
	for _, v := range verbs {
		t.Run(v, func(t *testing.T) {
			taken := false
			for _, args := range [][]string{{v}, {v, "x"}} {
				var se bytes.Buffer
				run(t.Context(), append([]string{"fingerprint", "--store", store}, args...), env{stdout: &bytes.Buffer{}, stderr: &se, getenv: func(string) string { return "" }})
				if !strings.Contains(se.String(), "fingerprint needs one of") {
					taken = true
				}
			}
			if !taken {
				t.Fatalf("the help names %q, which fingerprint does not take", v)
			}
		})
	}
}

// TestFingerprintKeyHasNoPath: the key of a trace names the skill and its
// identity, never the folder it was traced from: the same skill from two
// folders (a new unpacking of the same upload) gets the same key.
func TestFingerprintKeyHasNoPath(t *testing.T) {
	cases := []struct {
		name     string
		id1, id2 string
		same     bool
	}{
		{"name only", "", "", true},
		{"same identity", "acme/weather", "acme/weather", true},
		{"same identity, spelt with slashes", "/acme/weather/", "acme/weather", true},
		{"other identity", "acme/weather", "other/weather", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p1 := traceplan.Plan{SkillPath: "/tmp/upload-1/weather", Driver: traceplan.Driver{Kind: "literal"}}
			p2 := traceplan.Plan{SkillPath: "/srv/mirror/acme/weather", Driver: traceplan.Driver{Kind: "literal"}}
			k1, err1 := fingerprintKey(p1, "weather", c.id1)
			k2, err2 := fingerprintKey(p2, "weather", c.id2)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if (k1 == k2) != c.same {
				t.Fatalf("keys %+v and %+v: same %v, want %v", k1, k2, k1 == k2, c.same)
			}
			for _, k := range []string{k1.Identity, k2.Identity} {
				if strings.Contains(k, "tmp") || strings.Contains(k, "srv") {
					t.Errorf("a folder in the key: %q", k)
				}
			}
		})
	}
	if _, err := fingerprintKey(traceplan.Plan{}, "weather", "../etc"); err == nil {
		t.Error("an identity with .. was taken")
	}
}
