package evaluation_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxctl/sandboxctl/evaluation"
	"github.com/sandboxctl/sandboxctl/rules"
)

func TestParseManifest(t *testing.T) {
	const header = "slug\tlabel\tcategory\tsource_repo\tcommit\tpath\tlicence\tbundled_files\tnotes\tfamily\texpect\n"
	tests := []struct {
		name    string
		in      string
		want    []evaluation.Case
		wantErr string
	}{
		{
			name: "shared corpus columns",
			in: "slug\tlabel\tcategory\tsource_repo\tcommit\tpath\tlicence\tbundled_files\tnotes\n" +
				"weather\tbenign\tweb-api\to/r\tabc\tp\tMIT\t\tcurl to an API\n" +
				"stealer\tmalicious\tother\to/r\tabc\tp\tMIT\t\t\n",
			want: []evaluation.Case{
				{Corpus: "c", Slug: "weather", Label: "benign", Category: "web-api", Notes: "curl to an API"},
				{Corpus: "c", Slug: "stealer", Label: "malicious", Category: "other"},
			},
		},
		{
			name: "family and expect",
			in: header +
				"a\tmalicious\tinstaller\t\t\t\t\t\t\tdropper\tmalicious\n" +
				"b\tbenign\tinstaller\t\t\t\t\t\t\tdropper\tclean | suspicious\n",
			want: []evaluation.Case{
				{Corpus: "c", Slug: "a", Label: "malicious", Category: "installer", Family: "dropper", Expect: []rules.Verdict{rules.Malicious}},
				{Corpus: "c", Slug: "b", Label: "benign", Category: "installer", Family: "dropper", Expect: []rules.Verdict{rules.Clean, rules.Suspicious}},
			},
		},
		{
			name: "columns in any order, short rows, comments, CRLF, BOM",
			in:   "\ufefflabel\tslug\r\n# a comment\r\n\r\nbenign\tx\r\n",
			want: []evaluation.Case{{Corpus: "c", Slug: "x", Label: "benign"}},
		},
		{name: "empty", in: "", wantErr: "empty manifest"},
		{name: "no label column", in: "slug\tcategory\nx\ty\n", wantErr: "lacks the label column"},
		{name: "unknown label", in: "slug\tlabel\nx\tevil\n", wantErr: `2: label "evil"`},
		{name: "slug with a slash", in: "slug\tlabel\n../x\tbenign\n", wantErr: `2: slug "../x"`},
		{name: "empty slug", in: "slug\tlabel\n\tbenign\n", wantErr: `slug ""`},
		{name: "repeated slug", in: "slug\tlabel\nx\tbenign\nx\tbenign\n", wantErr: "3: slug x repeated (first on line 2)"},
		{name: "bad expect", in: "slug\tlabel\texpect\nx\tbenign\tfine\n", wantErr: `expect "fine"`},
		{name: "line too long", in: "slug\tlabel\nx\tbenign\t" + strings.Repeat("a", 70<<10) + "\n", wantErr: "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := evaluation.ParseManifest(strings.NewReader(tt.in), "c")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseManifest() err = %v, want one containing %q", err, tt.wantErr)
				}
				var me *evaluation.ManifestError
				if !errors.As(err, &me) {
					t.Errorf("err %T is not a *ManifestError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseManifest(): %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseManifest() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadManifest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mycorpus")
	if err := os.MkdirAll(filepath.Join(dir, "skills", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(dir, "manifest.tsv")
	write := func(s string) {
		if err := os.WriteFile(m, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("slug\tlabel\na\tbenign\n")
	got, err := evaluation.ReadManifest(m)
	if err != nil {
		t.Fatalf("ReadManifest: %v", err)
	}
	if len(got) != 1 || got[0].Corpus != "mycorpus" || got[0].Dir != filepath.Join(dir, "skills", "a") {
		t.Errorf("ReadManifest = %+v, want corpus mycorpus, dir skills/a", got)
	}

	write("slug\tlabel\na\tbenign\nb\tbenign\n")
	if _, err := evaluation.ReadManifest(m); err == nil || !strings.Contains(err.Error(), "skill b") {
		t.Errorf("ReadManifest with a missing skill folder: err = %v, want one naming skill b", err)
	}
	write("slug\tlabel\na\tnope\n")
	if _, err := evaluation.ReadManifest(m); err == nil || !strings.HasPrefix(err.Error(), m+":2:") {
		t.Errorf("ReadManifest with a bad label: err = %v, want it to start with %s:2:", err, m)
	}
	if _, err := evaluation.ReadManifest(filepath.Join(dir, "none.tsv")); err == nil {
		t.Error("ReadManifest of a missing file: no error")
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add("slug\tlabel\tcategory\nx\tbenign\tweb-api\n")
	f.Add("slug\tlabel\tfamily\texpect\na\tmalicious\tdropper\tmalicious|suspicious\n")
	f.Add("label\tslug\r\n\r\n# c\r\nbenign\ta.b_c\r\n")
	f.Add("slug\tlabel\nx\tbenign\nx\tbenign\n")
	f.Add("\ufeffslug\tlabel\n")
	f.Fuzz(func(t *testing.T, in string) {
		cases, err := evaluation.ParseManifest(strings.NewReader(in), "c")
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, c := range cases {
			if c.Slug == "" || strings.ContainsAny(c.Slug, "/\\") || c.Slug == "." || c.Slug == ".." {
				t.Fatalf("unsafe slug %q accepted", c.Slug)
			}
			if seen[c.Slug] {
				t.Fatalf("slug %q accepted twice", c.Slug)
			}
			seen[c.Slug] = true
			switch c.Label {
			case evaluation.Benign, evaluation.DualUse, evaluation.Malicious:
			default:
				t.Fatalf("label %q accepted", c.Label)
			}
		}
	})
}
