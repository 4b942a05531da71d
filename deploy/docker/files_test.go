package docker

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// instruction is one Dockerfile instruction, continuations joined.
type instruction struct {
	cmd, args string
	line      int
}

// parseDockerfile splits a Dockerfile into instructions: comments and
// blank lines dropped, backslash continuations joined, the keyword upper
// case and known.
func parseDockerfile(t *testing.T, b []byte) []instruction {
	t.Helper()
	known := []string{"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}
	var out []instruction
	var cur string
	start := 0
	for i, l := range strings.Split(string(b), "\n") {
		trim := strings.TrimSpace(l)
		if cur == "" && (trim == "" || strings.HasPrefix(trim, "#")) {
			continue
		}
		if cur == "" {
			start = i + 1
		}
		if strings.HasSuffix(trim, "\\") {
			cur += strings.TrimSuffix(trim, "\\") + " "
			continue
		}
		cur += trim
		kw, args, _ := strings.Cut(cur, " ")
		if !slices.Contains(known, kw) {
			t.Fatalf("Dockerfile:%d: unknown instruction %q", start, kw)
		}
		out = append(out, instruction{cmd: kw, args: strings.TrimSpace(args), line: start})
		cur = ""
	}
	if cur != "" {
		t.Fatalf("Dockerfile: a continuation runs off the end")
	}
	return out
}

// TestDockerfile: two stages, the binary built static from the module
// and copied onto an empty base, every path copied from the build stage
// made there, a user that is not root, and serve as the command with a
// data folder and tokens.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	ins := parseDockerfile(t, b)
	var froms []string
	var build, final []instruction
	for _, in := range ins {
		if in.cmd == "FROM" {
			froms = append(froms, in.args)
			continue
		}
		if len(froms) == 1 {
			build = append(build, in)
		} else {
			final = append(final, in)
		}
	}
	if len(froms) != 2 || !strings.HasPrefix(froms[0], "golang:") || !strings.HasSuffix(froms[0], " AS build") || froms[1] != "scratch" {
		t.Fatalf("stages %q: want golang:... AS build, then scratch", froms)
	}
	var runs string
	for _, in := range build {
		if in.cmd == "RUN" {
			runs += in.args + "\n"
		}
	}
	if !strings.Contains(runs, "CGO_ENABLED=0 go build") || !strings.Contains(runs, "./cmd/sandboxctl") || !strings.Contains(runs, "-o /out/sandboxctl") {
		t.Errorf("the build is not a static build of ./cmd/sandboxctl into /out/sandboxctl:\n%s", runs)
	}
	var user, entry, cmd string
	for _, in := range final {
		switch in.cmd {
		case "COPY":
			f := strings.Fields(in.args)
			if len(f) != 3 || f[0] != "--from=build" {
				t.Errorf("line %d: COPY %s: want --from=build SRC DST", in.line, in.args)
				continue
			}
			if src := f[1]; strings.HasPrefix(src, "/out/") && !strings.Contains(runs, src) {
				t.Errorf("line %d: %s is not made by the build stage", in.line, src)
			}
		case "RUN":
			t.Errorf("line %d: RUN in the final stage (scratch has no shell)", in.line)
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entry = in.args
		case "CMD":
			cmd = in.args
		}
	}
	if user == "" || strings.HasPrefix(user, "0") || strings.HasPrefix(user, "root") {
		t.Errorf("USER %q: want an unprivileged user", user)
	}
	if entry != `["/usr/local/bin/sandboxctl"]` {
		t.Errorf("ENTRYPOINT %s", entry)
	}
	for _, want := range []string{`"serve"`, `"--data", "/data"`, `"--tokens"`} {
		if !strings.Contains(cmd, want) {
			t.Errorf("CMD %s lacks %s", cmd, want)
		}
	}
}

type compose struct {
	Name     string `yaml:"name"`
	Services map[string]struct {
		Image           string   `yaml:"image"`
		Command         []string `yaml:"command"`
		Ports           []string `yaml:"ports"`
		Volumes         []string `yaml:"volumes"`
		GroupAdd        []string `yaml:"group_add"`
		Secrets         []string `yaml:"secrets"`
		ReadOnly        bool     `yaml:"read_only"`
		Tmpfs           []string `yaml:"tmpfs"`
		CapDrop         []string `yaml:"cap_drop"`
		SecurityOpt     []string `yaml:"security_opt"`
		Restart         string   `yaml:"restart"`
		StopGracePeriod string   `yaml:"stop_grace_period"`
		Healthcheck     struct {
			Test     []string `yaml:"test"`
			Interval string   `yaml:"interval"`
			Timeout  string   `yaml:"timeout"`
			Retries  int      `yaml:"retries"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
	Secrets map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
}

// TestCompose decodes compose.yaml strictly and checks the serve service:
// the engine's socket, a data volume, the tokens as a secret at the path
// the command reads, the port on the host's loopback only, a locked-down
// container, a stop grace longer than the drain, a health check by the
// binary on loopback.
func TestCompose(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var c compose
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	s, ok := c.Services["serve"]
	if !ok {
		t.Fatalf("no serve service: %v", c.Services)
	}
	cmd := strings.Join(s.Command, " ")
	if s.Command[0] != "serve" || !strings.Contains(cmd, "--data /data") {
		t.Errorf("command %q", cmd)
	}
	if len(s.Secrets) != 1 || !strings.Contains(cmd, "--tokens /run/secrets/"+s.Secrets[0]) || c.Secrets[s.Secrets[0]].File == "" {
		t.Errorf("tokens: command %q, secrets %v, %v", cmd, s.Secrets, c.Secrets)
	}
	if !slices.Contains(s.Volumes, "/var/run/docker.sock:/var/run/docker.sock") {
		t.Errorf("no engine socket: %v", s.Volumes)
	}
	data := false
	for _, v := range s.Volumes {
		name, dst, _ := strings.Cut(v, ":")
		if dst == "/data" {
			_, data = c.Volumes[name]
		}
	}
	if !data {
		t.Errorf("no named volume on /data: %v", s.Volumes)
	}
	for _, p := range s.Ports {
		if !strings.HasPrefix(p, "127.0.0.1:") {
			t.Errorf("port %q is published beyond the host's loopback", p)
		}
	}
	if !s.ReadOnly || !slices.Contains(s.CapDrop, "ALL") || !slices.Contains(s.SecurityOpt, "no-new-privileges:true") || len(s.GroupAdd) != 1 {
		t.Errorf("not locked down: read_only %v, cap_drop %v, security_opt %v, group_add %v", s.ReadOnly, s.CapDrop, s.SecurityOpt, s.GroupAdd)
	}
	grace, err := time.ParseDuration(s.StopGracePeriod)
	if err != nil || grace <= 2*time.Minute {
		t.Errorf("stop_grace_period %q: want longer than the 2m drain", s.StopGracePeriod)
	}
	h := s.Healthcheck.Test
	if len(h) != 4 || h[0] != "CMD" || h[1] != "/usr/local/bin/sandboxctl" || h[2] != "serve-health" || !strings.HasPrefix(h[3], "http://127.0.0.1:8080/") {
		t.Errorf("healthcheck %q", h)
	}
	if !strings.Contains(string(b), "RISK") || !strings.Contains(string(b), "root on the host") {
		t.Errorf("compose.yaml does not state the socket's risk")
	}
}
