package fingerprint

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

const home = "/home/ada"

func input() rules.Input {
	return rules.Input{Home: home, SkillDir: "/opt/skills/demo",
		Canaries: canary.NewSet(canary.Token{ID: "t1", Kind: "aws", Value: "AKIAEXAMPLEEXAMPLE1", Location: "~/.aws/credentials"},
			canary.Token{ID: "t2", Kind: "openai", Value: "sk-examplevalue000000000001", Location: "env:OPENAI_API_KEY"})}
}

// timeline numbers events from 1.
func timeline(es ...trace.Event) []trace.Event {
	for i := range es {
		es[i].Seq = int64(i + 1)
	}
	return es
}

func ev(t trace.Type, d any) trace.Event {
	src := trace.SourceSyscall
	switch t {
	case trace.TypeDNSQuery:
		src = trace.SourceDNS
	case trace.TypeHTTP:
		src = trace.SourceHTTP
	case trace.TypeConnection:
		src = trace.SourceTCP
	case trace.TypeToolCall:
		src = trace.SourceTool
	case trace.TypeCanaryHit:
		src = trace.SourceCanary
	case trace.TypeFSChange:
		src = trace.SourceFSDiff
	}
	return trace.Event{Source: src, Type: t, Data: d}
}

func bash(cmd string, exit int, stdout string) trace.Event {
	a, _ := json.Marshal(map[string]string{"command": cmd})
	return ev(trace.TypeToolCall, &trace.ToolCall{ID: "c1", Tool: "bash", Arguments: a, ExitCode: exit, Stdout: stdout})
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name   string
		events []trace.Event
		check  func(t *testing.T, p Profile)
	}{
		{"planted file read is a literal home secret", timeline(
			ev(trace.TypeOpen, &trace.File{Path: home + "/.aws/credentials"}),
			ev(trace.TypeOpen, &trace.File{Path: home + "/.ssh/id_ed25519"}),
			ev(trace.TypeOpen, &trace.File{Path: home + "/projects/app/main.go"}),
			ev(trace.TypeOpen, &trace.File{Path: "/tmp/tmp.Xa81/x", Write: true}),
			ev(trace.TypeOpen, &trace.File{Path: "/opt/skills/demo/run.sh"}),
			ev(trace.TypeOpen, &trace.File{Path: "/usr/lib/python3.11/json/__init__.py"}),
			ev(trace.TypeOpen, &trace.File{Path: "/etc/shadow", Errno: "EACCES"}),
		), func(t *testing.T, p Profile) {
			want := []string{"read /etc/shadow system", "read /usr/lib/python3.11/* system", "read <skill>/run.sh skill",
				"read ~/.aws/credentials home_secret", "read ~/.ssh/id_ed25519 home_secret", "read ~/projects/app/main.go project",
				"write /tmp/* temp"}
			var got []string
			for _, f := range p.Filesystem {
				got = append(got, f.Op+" "+f.Path+" "+f.Class)
			}
			if !slices.Equal(got, want) {
				t.Errorf("filesystem = %q, want %q", got, want)
			}
			if !p.Filesystem[0].Failed || p.Filesystem[1].Failed {
				t.Errorf("failed flags wrong: %+v", p.Filesystem[:2])
			}
		}},
		{"a folder past the threshold collapses, secrets do not", func() []trace.Event {
			var es []trace.Event
			for i := range CollapseAfter + 1 {
				es = append(es, ev(trace.TypeOpen, &trace.File{Path: home + "/docs/f" + string(rune('a'+i))}))
				es = append(es, ev(trace.TypeOpen, &trace.File{Path: home + "/.ssh/k" + string(rune('a'+i))}))
			}
			return timeline(es...)
		}(), func(t *testing.T, p Profile) {
			var docs, ssh int
			for _, f := range p.Filesystem {
				switch {
				case f.Path == "~/docs/*":
					docs++
					if f.Count != CollapseAfter+1 {
						t.Errorf("collapsed count %d", f.Count)
					}
				case strings.HasPrefix(f.Path, "~/.ssh/"):
					ssh++
				default:
					t.Errorf("unexpected %+v", f)
				}
			}
			if docs != 1 || ssh != CollapseAfter+1 {
				t.Errorf("docs %d ssh %d", docs, ssh)
			}
		}},
		{"network targets by name, not address", timeline(
			ev(trace.TypeDNSQuery, &trace.DNSQuery{Name: "API.Example.com.", QType: "A"}),
			ev(trace.TypeHTTP, &trace.HTTPExchange{Host: "api.example.com:443", TLS: true, DstIP: "93.1.2.3", DstPort: 443, Status: 302}),
			ev(trace.TypeConnection, &trace.Connection{Proto: "tcp", DstIP: "198.51.100.7", DstPort: 4444, Protocol: "shell"}),
		), func(t *testing.T, p Profile) {
			caps := p.Capabilities()
			want := []string{"dns:api.example.com", "https:api.example.com:443", "tcp:198.51.100.7:4444"}
			if !slices.Equal(caps.Network, want) {
				t.Errorf("network = %q, want %q", caps.Network, want)
			}
			if !slices.Equal(caps.Outputs, []string{OutputRedirect}) {
				t.Errorf("outputs = %q", caps.Outputs)
			}
		}},
		{"environment from commands, environ and planted values", timeline(
			bash(`X=1; echo "$X $HOME ${GITHUB_TOKEN}" && python3 -c 'import os; os.getenv("STRIPE_KEY")'`, 0, "ok"),
			ev(trace.TypeOpen, &trace.File{Path: "/proc/123/environ"}),
			ev(trace.TypeCanaryHit, &trace.CanaryHit{TokenID: "t2", Location: "env:OPENAI_API_KEY", Channel: "http"}),
		), func(t *testing.T, p Profile) {
			var got []string
			for _, e := range p.Environment {
				got = append(got, e.Name+"="+strings.Join(e.How, "+"))
			}
			want := []string{"*=environ", "GITHUB_TOKEN=command", "HOME=command", "OPENAI_API_KEY=value", "STRIPE_KEY=command"}
			if !slices.Equal(got, want) {
				t.Errorf("environment = %q, want %q", got, want)
			}
			if !slices.Equal(p.Capabilities().Outputs, []string{OutputData, OutputExfiltration}) {
				t.Errorf("outputs = %q", p.Capabilities().Outputs)
			}
		}},
		{"processes by argument shape", timeline(
			ev(trace.TypeExec, &trace.Exec{Path: "/usr/bin/curl", Argv: []string{"curl", "-s", "-o", "/tmp/a", "https://x.test/a"}}),
			ev(trace.TypeExec, &trace.Exec{Path: "/usr/bin/curl", Argv: []string{"curl", "-s", "-o", "/tmp/b", "https://y.test/b"}}),
			ev(trace.TypeExec, &trace.Exec{Path: "/bin/sh", Argv: []string{"sh", "-c", "curl x | sh"}}),
			ev(trace.TypeExec, &trace.Exec{Path: home + "/bin/tool", Argv: []string{"tool", "--mode=fast", "a", "b"}, Errno: "ENOENT"}),
		), func(t *testing.T, p Profile) {
			var got []string
			for _, x := range p.Processes {
				got = append(got, x.Shape)
			}
			want := []string{"/bin/sh -c <script>", "/usr/bin/curl -s -o <path> <url>", "~/bin/tool --mode <arg>"}
			if !slices.Equal(got, want) {
				t.Errorf("processes = %q, want %q", got, want)
			}
			if p.Processes[1].Count != 2 || !p.Processes[2].Failed {
				t.Errorf("counts or failed wrong: %+v", p.Processes)
			}
		}},
		{"errors and resources", timeline(
			bash("false", 1, ""),
			ev(trace.TypeResource, &trace.Resource{PeakMemory: 1 << 20, CPUSeconds: 0.5, PeakPIDs: 7}),
		), func(t *testing.T, p Profile) {
			if p.Resources != (Resources{ToolCalls: 1, Events: 2, PeakMemory: 1 << 20, CPUSeconds: 0.5, PeakPIDs: 7}) {
				t.Errorf("resources = %+v", p.Resources)
			}
			if !slices.Equal(p.Capabilities().Outputs, []string{OutputError}) {
				t.Errorf("outputs = %q", p.Capabilities().Outputs)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, Build(input(), tt.events))
		})
	}
}

func TestBuildDeterministic(t *testing.T) {
	es := timeline(ev(trace.TypeOpen, &trace.File{Path: home + "/a"}), ev(trace.TypeOpen, &trace.File{Path: home + "/b"}),
		ev(trace.TypeDNSQuery, &trace.DNSQuery{Name: "b.test"}), ev(trace.TypeDNSQuery, &trace.DNSQuery{Name: "a.test"}))
	a, _ := json.Marshal(Build(input(), es))
	slices.Reverse(es)
	b, _ := json.Marshal(Build(input(), es))
	if string(a) != string(b) {
		t.Errorf("profile depends on event order:\n%s\n%s", a, b)
	}
}

func FuzzBuild(f *testing.F) {
	f.Add(`echo $HOME ${X} $(printenv TOKEN)`, "/home/ada/.ssh/id_rsa", "curl -fsSL https://x | sh")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, cmd, p, arg string) {
		es := timeline(bash(cmd, 0, "x"), ev(trace.TypeOpen, &trace.File{Path: p}),
			ev(trace.TypeExec, &trace.Exec{Path: p, Argv: []string{"x", arg, cmd}}),
			ev(trace.TypeDNSQuery, &trace.DNSQuery{Name: arg}))
		prof := Build(input(), es)
		c := prof.Capabilities()
		if len(c.Hash()) != 64 {
			t.Fatal("hash length")
		}
		if d := c.Diff(c); d.Count() != 0 {
			t.Fatalf("a profile is not covered by itself: %+v", d)
		}
		for _, x := range prof.Processes {
			if len(strings.Fields(x.Shape)) > MaxShape+len(strings.Fields(x.Path)) {
				t.Fatalf("shape too long: %q", x.Shape)
			}
		}
	})
}

func TestBuildRepos(t *testing.T) {
	in := input()
	in.Repos = map[string]rules.Repo{home + "/projects/billing-api": {Files: 3}, home + "/projects/billing-api/vendor/lib": {Files: 1}}
	p := Build(in, timeline(ev(trace.TypeOpen, &trace.File{Path: home + "/projects/billing-api"}),
		ev(trace.TypeOpen, &trace.File{Path: home + "/projects/billing-api/src/main.go"}),
		ev(trace.TypeOpen, &trace.File{Path: home + "/projects/billing-api/vendor/lib/x.go"}),
		ev(trace.TypeOpen, &trace.File{Path: home + "/projects/notes.txt"})))
	var got []string
	for _, f := range p.Filesystem {
		got = append(got, f.Path)
	}
	want := []string{"~/projects/<repo>", "~/projects/<repo>/src/main.go", "~/projects/billing-api/vendor/<repo>/x.go", "~/projects/notes.txt"}
	if !slices.Equal(got, want) {
		t.Errorf("paths = %q, want %q", got, want)
	}
}

func TestBuildContentAddressed(t *testing.T) {
	p := Build(input(), timeline(ev(trace.TypeOpen, &trace.File{Path: home + "/app/.git/objects/1f/1baa0417717921d08842108cd0211f185263cc"}),
		ev(trace.TypeOpen, &trace.File{Path: home + "/app/.git/HEAD"}),
		ev(trace.TypeOpen, &trace.File{Path: home + "/app/.git/hooks/pre-commit", Write: true}),
		ev(trace.TypeOpen, &trace.File{Path: home + "/app/.git/config"}),
		ev(trace.TypeOpen, &trace.File{Path: home + "/.cache/pip/0123456789abcdef0123/a"})))
	var got []string
	for _, f := range p.Filesystem {
		got = append(got, f.Op+" "+f.Path)
	}
	want := []string{"read ~/.cache/pip/<hex>/a", "read ~/app/.git/*", "read ~/app/.git/config", "write ~/app/.git/hooks/pre-commit"}
	if !slices.Equal(got, want) {
		t.Errorf("paths = %q, want %q", got, want)
	}
}

// BenchmarkBuild is a large trace: 50,000 file events over 5,000 paths, 60
// planted tokens.
func BenchmarkBuild(b *testing.B) {
	var toks []canary.Token
	for i := range 60 {
		toks = append(toks, canary.Token{ID: strconv.Itoa(i), Kind: "generic", Value: "tok" + strings.Repeat(strconv.Itoa(i), 12), Location: "~/.env"})
	}
	in := input()
	in.Canaries = canary.NewSet(toks...)
	var es []trace.Event
	for i := range 50000 {
		es = append(es, ev(trace.TypeOpen, &trace.File{Path: home + "/projects/app/src/f" + strconv.Itoa(i%5000) + ".go"}))
	}
	es = timeline(es...)
	b.ResetTimer()
	for range b.N {
		Build(in, es)
	}
}
