package netcapture

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestStubExecutables: a stub package provides the executables the
// configuration names besides its own, and each answers as the image's
// vendor CLI stubs do.
func TestStubExecutables(t *testing.T) {
	t.Parallel() // most of its time is node's and python's
	cfg := testConfig(t).withDefaults()
	cfg.PackageBins = map[string][]string{"npm:@google/gemini-cli": {"gemini"}, "pypi:openai-whisper": {"whisper"}}
	r := newResponder(cfg, time.Now)

	req := httptest.NewRequest("GET", "https://registry.npmjs.org/@google%2fgemini-cli", nil)
	req.Header.Set("User-Agent", "npm/9.2.0")
	var doc struct {
		DistTags map[string]string `json:"dist-tags"`
		Versions map[string]struct {
			Bin  map[string]string `json:"bin"`
			Dist struct{ Tarball string }
		} `json:"versions"`
	}
	if err := json.Unmarshal(r.respond(req, "registry.npmjs.org", nil).Body, &doc); err != nil {
		t.Fatal(err)
	}
	latest := doc.DistTags["latest"]
	v := doc.Versions[latest]
	if diff := cmp.Diff(map[string]string{"gemini-cli": "cli.js", "gemini": "bin/gemini.js"}, v.Bin); diff != "" {
		t.Errorf("bin (-want +got):\n%s", diff)
	}
	treq := httptest.NewRequest("GET", v.Dist.Tarball, nil)
	treq.Header.Set("User-Agent", "npm/9.2.0")
	files := untgz(t, r.respond(treq, "registry.npmjs.org", nil).Body)

	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--version"}, latest + "\n"},
		{nil, "Usage: gemini <command> [options]"},
		{[]string{"-p", "review", "--yolo"}, "gemini review: done\n"},
		{[]string{"--debug", "extensions", "list"}, "gemini extensions: done\n"},
		{[]string{"models", "--output=json"}, "{}\n"},
	}
	t.Run("node", func(t *testing.T) {
		node, err := exec.LookPath("node")
		if err != nil {
			t.Skip("no node")
		}
		js := files["package/bin/gemini.js"]
		if js == nil {
			t.Fatalf("no package/bin/gemini.js in %v", keys(files))
		}
		p := write("gemini.js", js)
		for _, c := range cases {
			out, err := exec.Command(node, append([]string{p}, c.args...)...).Output()
			if err != nil || !strings.HasPrefix(string(out), c.want) {
				t.Errorf("gemini %q: %q (%v), want %q", c.args, out, err, c.want)
			}
		}
	})

	wreq := httptest.NewRequest("GET", "https://files.pythonhosted.org/packages/aa/bb/cc/openai_whisper-"+"1.0.0-py3-none-any.whl", nil)
	wreq.Header.Set("User-Agent", "pip/23.0.1")
	w := r.respond(wreq, "files.pythonhosted.org", nil).Body
	zr, err := zip.NewReader(bytes.NewReader(w), int64(len(w)))
	if err != nil {
		t.Fatal(err)
	}
	wf := map[string][]byte{}
	for _, f := range zr.File {
		rc, _ := f.Open()
		wf[f.Name], _ = io.ReadAll(rc)
		rc.Close()
	}
	if got, want := string(wf["openai_whisper-1.0.0.dist-info/entry_points.txt"]), "[console_scripts]\nopenai-whisper = openai_whisper.__main__:main\nwhisper = openai_whisper.__main__:main\n"; got != want {
		t.Errorf("entry_points.txt = %q, want %q", got, want)
	}
	t.Run("python", func(t *testing.T) {
		py, err := exec.LookPath("python3")
		if err != nil {
			t.Skip("no python3")
		}
		if err := os.Mkdir(filepath.Join(dir, "openai_whisper"), 0o755); err != nil {
			t.Fatal(err)
		}
		write("openai_whisper/__init__.py", wf["openai_whisper/__init__.py"])
		write("openai_whisper/__main__.py", wf["openai_whisper/__main__.py"])
		// A console script calls main() with argv[0] its own path.
		for _, c := range []struct {
			args []string
			want string
		}{{[]string{"--version"}, "1.0.0\n"}, {[]string{"talk.mp3", "--model", "base"}, "whisper talk.mp3: done\n"}, {nil, "Usage: whisper"}} {
			script := "import sys; sys.path.insert(0, " + `"` + dir + `"` + "); sys.argv[0] = '/home/u/.local/bin/whisper'\n" +
				"from openai_whisper.__main__ import main\nsys.exit(main())"
			out, err := exec.Command(py, append([]string{"-c", script}, c.args...)...).Output()
			if err != nil || !strings.HasPrefix(string(out), c.want) {
				t.Errorf("whisper %q: %q (%v), want %q", c.args, out, err, c.want)
			}
		}
	})
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestNPMNameKeepsCase: a name with a capital letter (published before npm
// required lower case, or a look-alike: a capital I for an l) is recorded
// as asked.
func TestNPMNameKeepsCase(t *testing.T) {
	r := newResponder(testConfig(t).withDefaults(), time.Now)
	req := httptest.NewRequest("GET", "https://registry.npmjs.org/react-devtooIs", nil)
	req.Header.Set("User-Agent", "npm/9.2.0")
	resp := r.respond(req, "registry.npmjs.org", nil)
	if len(resp.Extra) == 0 {
		t.Fatalf("no package event: %d %s", resp.Status, resp.Label)
	}
	var doc struct{ Name string }
	_ = json.Unmarshal(resp.Body, &doc)
	if doc.Name != "react-devtooIs" {
		t.Errorf("packument name %q, want react-devtooIs", doc.Name)
	}
}
