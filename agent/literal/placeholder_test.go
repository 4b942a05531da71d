package literal

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func testValues() *values {
	cfg := corpusConfig
	cfg.SkillDir = "/home/mwalker/.claude/skills/demo"
	v := &values{cfg: cfg, env: map[string]bool{}, skillFiles: map[string]bool{"references/api.md": true, "scripts/run.sh": true}, skillDirs: map[string]bool{"scripts": true}}
	for _, e := range cfg.Env {
		v.env[e] = true
	}
	return v
}

func TestFill(t *testing.T) {
	tests := []struct {
		name, in, want string
		unfilled       int
	}{
		{name: "angle with extension", in: "python3 x.py <input.pptx>", want: "python3 x.py /home/mwalker/Documents/Q3-roadmap.pptx"},
		{name: "single letter", in: "gh issue view <N>", want: "gh issue view 42"},
		{name: "path-to", in: "cat /path/to/file.pdf", want: "cat /home/mwalker/Documents/architecture-overview.pdf"},
		{name: "path-to dir", in: "ls path/to/output/", want: "ls /home/mwalker/output"},
		{name: "path-to skill", in: "audit <path-to-skill>", want: "audit /home/mwalker/.claude/skills/demo"},
		{name: "planted key by host", in: `curl https://api.openai.com/v1/models -H "Authorization: Bearer YOUR_API_KEY"`, want: `curl https://api.openai.com/v1/models -H "Authorization: Bearer $OPENAI_API_KEY"`},
		{name: "planted key in single quotes", in: `curl -H 'x-api-key: <anthropic-api-key>' https://api.anthropic.com`, want: `curl -H 'x-api-key: '"$ANTHROPIC_API_KEY"'' https://api.anthropic.com`},
		{name: "made-up key", in: "export ACME_KEY=your-key-here", want: "export ACME_KEY=" + token("your-key-hereACME_KEY")},
		{name: "mustache", in: "echo {{PROJECT_NAME}}", want: "echo demo"},
		{name: "go template kept", in: `docker ps --format "{{.Names}}"`, want: `docker ps --format "{{.Names}}"`},
		{name: "github expression kept", in: `echo ${{ github.sha }}`, want: `echo ${{ github.sha }}`},
		{name: "markup kept", in: `echo "<div>hi</div>" > x.html`, want: `echo "<div>hi</div>" > x.html`},
		{name: "redirections kept", in: "sort <in.txt >out.txt", want: "sort <in.txt >out.txt"},
		{name: "heredoc kept", in: "cat <<EOF>x\nEOF", want: "cat <<EOF>x\nEOF"},
		{name: "label kept", in: `echo "[DOWN] host"`, want: `echo "[DOWN] host"`},
		{name: "bracket", in: "scan [FILE]", want: "scan /home/mwalker/Documents/meeting-notes.txt"},
		{name: "optional parts dropped", in: "init.py <skill-name> [--examples] [--force]", want: "init.py demo"},
		{name: "glob kept", in: "ls [abc]*", want: "ls [abc]*"},
		{name: "unit file sections kept", in: "cat > ~/x.service <<'U'\n[Unit]\nDescription=x\n\n[Service]\nExecStart=/bin/true\n  [Install]\nWantedBy=default.target\nU",
			want: "cat > ~/x.service <<'U'\n[Unit]\nDescription=x\n\n[Service]\nExecStart=/bin/true\n  [Install]\nWantedBy=default.target\nU"},
		{name: "ini sections kept", in: "cat >> ~/.aws/config <<EOF\n[default]\nregion = us-east-1\n[DEFAULT]\nEOF", want: "cat >> ~/.aws/config <<EOF\n[default]\nregion = us-east-1\n[DEFAULT]\nEOF"},
		{name: "comment kept", in: "ls # list <dir>", want: "ls # list <dir>"},
		{name: "usage line kept", in: `echo "Usage: $0 <file>"`, want: `echo "Usage: $0 <file>"`},
		{name: "skill dir", in: "bash {baseDir}/scripts/run.sh", want: "bash /home/mwalker/.claude/skills/demo/scripts/run.sh"},
		{name: "foreign install path", in: "bash /app/skills/demo/scripts/run.sh", want: "bash /home/mwalker/.claude/skills/demo/scripts/run.sh"},
		{name: "skill file", in: "cat <references/api.md>", want: "cat /home/mwalker/.claude/skills/demo/references/api.md"},
		{name: "generic input name", in: "convert document.pdf -o out.docx", want: "convert /home/mwalker/Documents/architecture-overview.pdf -o out.docx"},
		{name: "generic output name kept", in: "convert in.md -o document.pdf", want: "convert in.md -o document.pdf"},
		{name: "alternatives", in: "./afl++ <host/docker> afl-fuzz", want: "./afl++ host afl-fuzz"},
		{name: "owner/repo", in: "gh repo view <owner/repo>", want: "gh repo view corvexa/weather-cli"},
		{name: "repo url", in: "git clone <repo-url>", want: "git clone https://github.com/corvexa/weather-cli.git"},
		{name: "phrase quoted", in: "git commit -m <message>", want: "git commit -m 'weekly status update'"},
		{name: "metavar", in: "convert.py INPUT --to FORMAT", want: "convert.py /home/mwalker/Documents/meeting-notes.txt --to FORMAT"},
		{name: "command", in: `bash -c "<command>"`, want: `bash -c "<command>"`, unfilled: 1},
		{name: "no fixture", in: "ffmpeg -i <video-file>", want: "ffmpeg -i <video-file>", unfilled: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := testValues().fill(tt.in, true)
			if got.text != tt.want || len(got.unfilled) != tt.unfilled {
				t.Errorf("fill(%q) = %q (unfilled %q), want %q (%d unfilled)", tt.in, got.text, got.unfilled, tt.want, tt.unfilled)
			}
		})
	}
}

func TestParseHelp(t *testing.T) {
	tests := []struct {
		name, help string
		want       []argSpec
		ok         bool
	}{
		{name: "argparse", ok: true, help: "usage: analyze.py [-h] [--verbose] --out OUT deck\n\nAnalyse.\n\npositional arguments:\n  deck         the .pptx file\n\noptions:\n  -h, --help   show this help\n  --out OUT    report file\n",
			want: []argSpec{{flag: "--out", name: "OUT", desc: "report file"}, {name: "deck", desc: "the .pptx file"}}},
		{name: "wrapped", ok: true, help: "usage: tool.py [-h] [--format {json,text}]\n               input_file\n",
			want: []argSpec{{name: "input_file"}}},
		{name: "click", ok: true, help: "Usage: cli.py [OPTIONS] SOURCE\n\nOptions:\n  --help  Show this message and exit.\n",
			want: []argSpec{{name: "SOURCE"}}},
		{name: "commander", ok: true, help: "Usage: sync [options] <file>\n\nArguments:\n  file   the CSV export\n",
			want: []argSpec{{name: "<file>", desc: "the CSV export"}}},
		{name: "subcommands", ok: true, help: "usage: x.py [-h] {scan,report} ...\n", want: []argSpec{{name: "scan", choice: "scan"}}},
		{name: "interpreter", ok: true, help: "Usage: python3 run.py <url> [--depth N]\n", want: []argSpec{{name: "<url>"}}},
		{name: "none", help: "Traceback (most recent call last):\n  File \"x.py\"\nKeyError: 'X'\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseHelp(tt.help)
			if ok != tt.ok {
				t.Fatalf("ok = %v", ok)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(argSpec{})); diff != "" {
				t.Errorf("parseHelp mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStaticUsage(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string // rendered names
		probe     bool
	}{
		{name: "no arguments", src: "import os\nprint(os.getcwd())\n"},
		{name: "sys.argv", src: "import sys\npath = sys.argv[1]\nmode = sys.argv[2]\n", want: []string{"path", "mode"}, probe: true},
		{name: "process.argv", src: "const url = process.argv[2];\n", want: []string{"url"}, probe: true},
		{name: "shell", src: "#!/bin/sh\nf=\"$1\"\n", want: []string{"f"}, probe: true},
		{name: "argparse optional positional skipped", src: "import argparse\np.add_argument('src')\np.add_argument('dst', nargs='?')\np.add_argument('--key', required=True)\n", want: []string{"src", "key"}, probe: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := staticUsage(tt.src)
			var got []string
			for _, a := range u.args {
				got = append(got, a.name)
			}
			if !cmp.Equal(tt.want, got) || u.probe != tt.probe {
				t.Errorf("staticUsage = %v probe %v, want %v probe %v", got, u.probe, tt.want, tt.probe)
			}
		})
	}
}

func TestEnvReads(t *testing.T) {
	src := "import os\nurl = os.environ['ACME_URL']\nk = os.getenv(\"ACME_API_KEY\")\nos.environ['LOCAL_URL'] = 'x'\nprint(os.environ.get('HOME'))\n"
	if got := envReads(src, false); !cmp.Equal(got, []string{"ACME_URL", "ACME_API_KEY"}) {
		t.Errorf("envReads(python) = %v", got)
	}
	sh := `X_URL=a; curl "$X_URL" "$HOOK_URL" "${DEF_URL:-http://x}"`
	if got := envReads(sh, true); !cmp.Equal(got, []string{"HOOK_URL"}) {
		t.Errorf("envReads(shell) = %v", got)
	}
	for name, role := range map[string]string{"SLACK_WEBHOOK_URL": kindWebhook, "API_ENDPOINT": kindURL, "DB_HOST": kindHost,
		"ACME_API_KEY": kindKey, "GH_PAT": kindKey, "CLAUDE_PLUGIN_ROOT": kindSkillDir, "OUTPUT_DIR": "", "VERBOSE": ""} {
		if got := envRole(name); got != role {
			t.Errorf("envRole(%s) = %q, want %q", name, got, role)
		}
	}
}

func FuzzFill(f *testing.F) {
	for _, s := range []string{"python3 x.py <input.pptx> --out <dir>", "curl -H 'k: YOUR_KEY' {{x}} [FILE] $ARGUMENTS path/to/a.pdf", "<<EOF>", "<a|b/c>", "[--x <y>] [z]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := testValues()
		got := v.fill(s, true)
		if len(got.unfilled) == 0 && len(got.filled) == 0 && got.text != s {
			t.Errorf("text changed with nothing filled: %q → %q", s, got.text)
		}
		v.fill(s, false)
		parseHelp(s)
		staticUsage(s)
		envReads(s, true)
		for _, f := range got.filled {
			if f != "skill path" && !strings.Contains(s, f) {
				t.Errorf("filled %q, which is not in %q", f, s)
			}
		}
	})
}

func FuzzParseHelp(f *testing.F) {
	f.Add("usage: x.py [-h] --out OUT deck\n\npositional arguments:\n  deck   a file\n")
	f.Add("Usage: cli [OPTIONS] {a,b}\n")
	f.Fuzz(func(t *testing.T, s string) {
		args, _ := parseHelp(s)
		testValues().render(args, "")
	})
}

func TestQuotingAt(t *testing.T) {
	tests := []struct {
		prefix string
		want   shellQuoting
	}{
		{prefix: `curl -H 'Authorization: Bearer `, want: shellQuoting{single: true}},
		{prefix: `echo "Hello, `, want: shellQuoting{double: true}},
		{prefix: `echo "it's `, want: shellQuoting{double: true}},
		{prefix: `echo 'say "hi' `},
		{prefix: `echo \" \' `},
		{prefix: `echo 'a\' `}, // no escapes inside single quotes
		{prefix: `echo "a\" `, want: shellQuoting{double: true}},
		{prefix: `# run it with `, want: shellQuoting{comment: true}},
		{prefix: `ls  # list `, want: shellQuoting{comment: true}},
		{prefix: `# "note `, want: shellQuoting{double: true, comment: true}},
		{prefix: `echo a#b `},
		{prefix: `echo '# not a comment' `},
		{prefix: `echo \# `},
	}
	for _, tc := range tests {
		if got := quotingAt(tc.prefix); got != tc.want {
			t.Errorf("quotingAt(%q) = %+v, want %+v", tc.prefix, got, tc.want)
		}
	}
}

func FuzzQuotingAt(f *testing.F) {
	for _, s := range []string{`curl -H 'k: `, `echo "a \"b\" `, `ls # "x `, `a\`, `'"'"'`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := quotingAt(s)
		if q.single && q.double {
			t.Errorf("quotingAt(%q) is inside single and double quotes at once", s)
		}
		if !strings.ContainsAny(s, `'"#`) && q != (shellQuoting{}) {
			t.Errorf("quotingAt(%q) = %+v with no quote or #", s, q)
		}
		// A closed quote, after text that ends outside quotes and escapes,
		// leaves the quoting as it was.
		if !q.single && !q.double && !strings.HasSuffix(s, `\`) {
			for _, closed := range []string{` 'a b'`, ` "a b"`} {
				if got := quotingAt(s + closed); got.single || got.double {
					t.Errorf("quotingAt(%q) = %+v after a closed quote", s+closed, got)
				}
			}
		}
	})
}
