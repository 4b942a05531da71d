package netcapture

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAddPackageHints(t *testing.T) {
	var cfg Config
	AddPackageHints(&cfg, []byte("Run:\n\n    pip install requests==2.31.0 'Flask_Login>=0.6' numpy~=1.26\n"+
		"    npm i -g @acme/cli@^3.4.1 lodash.debounce@4.0.8 left-pad@1\n    uvx ruff==0.4.4\n"))
	AddPackageHints(&cfg, []byte(`{"dependencies": {"express": "^4.18.2", "@types/node": "~20.11"}}`))
	AddPackageHints(&cfg, []byte("boto3==1.34.162\npandas>=2\n# mail dev@corp.com, git@github.com:x/y\n"))
	want := map[string][]string{
		"pypi:requests": {"2.31.0"}, "pypi:flask-login": {"0.6"}, "pypi:numpy": {"1.26"}, "pypi:ruff": {"0.4.4"},
		"pypi:boto3": {"1.34.162"}, "pypi:pandas": {"2.0", "2"},
		"npm:@acme/cli": {"3.4.1"}, "npm:lodash.debounce": {"4.0.8"}, "npm:left-pad": {"1.0.0"},
		"npm:express": {"4.18.2"}, "npm:@types/node": {"20.11.0"},
	}
	if diff := cmp.Diff(want, cfg.PackageVersions); diff != "" {
		t.Errorf("hints (-want +got):\n%s", diff)
	}
}

func FuzzAddPackageHints(f *testing.F) {
	f.Add([]byte("pip install a==1 b@2.3.4"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var cfg Config
		AddPackageHints(&cfg, b)
		if hintCount(&cfg) > maxHints {
			t.Fatalf("%d hints", hintCount(&cfg))
		}
	})
}

func TestAddPackageBins(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		want  map[string][]string
	}{
		{name: "scoped cli package run by its product name",
			files: []string{"```bash\nnpm install -g @google/gemini-cli\ngemini -p \"review this\"\n```\n"},
			want:  map[string][]string{"npm:@google/gemini-cli": {"gemini"}}},
		{name: "the part before a generic suffix",
			files: []string{"Install: `npm i -g @anthropic-ai/claude-code`, then:\n\n    $ claude mcp add x\n"},
			want:  map[string][]string{"npm:@anthropic-ai/claude-code": {"claude"}}},
		{name: "a package named cli provides its scope's tool",
			files: []string{"npm install --global @devcontainers/cli\ndevcontainer up --workspace-folder .\n"},
			want:  map[string][]string{"npm:@devcontainers/cli": {"devcontainer"}}},
		{name: "the install in SKILL.md, the call in a bundled script",
			files: []string{"pip install openai-whisper\n", "import subprocess\nsubprocess.run([\"whisper\", path])\n"},
			want:  map[string][]string{"pypi:openai-whisper": {"whisper"}}},
		{name: "its own name after pipx, uv tool and uvx",
			files: []string{"pipx install Sem_Grep\nsem_grep scan\nuv tool install ruff-lsp\nruff-lsp --stdio | tee log\nuvx --from ast-grep-cli sg\n"},
			want:  map[string][]string{"pypi:sem-grep": {"sem_grep"}, "pypi:ruff-lsp": {"ruff-lsp"}}},
		{name: "after && and in $( )",
			files: []string{"npm i -g vercel-cli-tool && echo $(vercel whoami)\n"},
			want:  map[string][]string{"npm:vercel-cli-tool": {"vercel"}}},
		{name: "a local install provides nothing to PATH",
			files: []string{"npm install gemini-cli\ngemini run\n"}},
		{name: "a name the system has is never given",
			files: []string{"npm i -g git-flow-helper node-dev-tools\ngit status\nnode index.js\nflow start\n"},
			want:  map[string][]string{"npm:git-flow-helper": {"flow"}}},
		{name: "a name only in prose is not run",
			files: []string{"npm i -g @acme/widget-cli\nThe widget service is fast; see the widget docs.\n"}},
		{name: "requirements files, paths and URLs are not packages",
			files: []string{"pip install -r requirements.txt ./local-tool https://x.example/y.whl\nrequirements run\nlocal-tool\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg Config
			var files [][]byte
			for _, f := range tt.files {
				files = append(files, []byte(f))
			}
			AddPackageBins(&cfg, files...)
			if diff := cmp.Diff(tt.want, cfg.PackageBins); diff != "" {
				t.Errorf("bins (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzAddPackageBins(f *testing.F) {
	f.Add([]byte("npm i -g @a/b-cli\nb x\n"), []byte("pip install c-tool\nc\n"))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var cfg Config
		AddPackageBins(&cfg, a, b)
		n := 0
		for _, vs := range cfg.PackageBins {
			n += len(vs)
			if len(vs) > maxBinsPerPackage {
				t.Fatalf("%d bins for one package", len(vs))
			}
			for _, v := range vs {
				if !validBin(v) {
					t.Fatalf("invalid bin %q", v)
				}
			}
		}
		if n > maxBinHints {
			t.Fatalf("%d bins", n)
		}
	})
}

// BenchmarkAddPackageBinsLarge: a skill that brings megabytes of text
// naming many packages (a lock file, a dataset) costs one pass over the
// text, not one per candidate name (that took minutes).
func BenchmarkAddPackageBinsLarge(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 4<<20; i++ {
		fmt.Fprintf(&sb, "pip install tool-%d-cli acme-%d-sdk\nnpm i -g @scope%d/widget-cli\n", i, i, i)
	}
	text := []byte(sb.String())
	b.ResetTimer()
	for range b.N {
		var cfg Config
		AddPackageBins(&cfg, text)
	}
}
