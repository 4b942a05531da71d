package mcptools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/internal/testenv"
	"github.com/sandboxctl/sandboxctl/mcptools"
	"github.com/sandboxctl/sandboxctl/orchestrator"
)

// randomPrograms are the image's programs a skill draws randomness from,
// each printing one line. Each runs once per server, in this order, so
// that twins run the same command lines.
var randomPrograms = []struct{ name, cmd string }{
	{"openssl rand", `openssl rand -hex 16`},
	{"python os.urandom", `python3 -c 'import os; print(os.urandom(16).hex())'`},
	{"python random.random", `python3 -c 'import random; print(random.random())'`},
	{"python uuid4", `python3 -c 'import uuid; print(uuid.uuid4())'`},
	{"python secrets", `python3 -c 'import secrets; print(secrets.token_urlsafe(16))'`},
	{"python hash seed", `python3 -c 'print(hash("twin"))'`},
	{"node randomBytes", `node -e 'console.log(require("crypto").randomBytes(16).toString("hex"))'`},
	{"node Math.random", `node -e 'console.log(Math.random())'`},
	{"node randomUUID", `node -e 'console.log(require("crypto").randomUUID())'`},
	{"perl rand", `perl -e 'print rand(), "\n"'`},
	{"perl hash order", `perl -e '%h = map { $_ => 1 } "a".."p"; print keys %h, "\n"'`},
	{"gpg gen-random", `gpg --homedir "$(mktemp -d)" --gen-random 1 16 2>/dev/null | od -An -tx1 | tr -d ' \n'; echo`},
	{"mktemp", `mktemp -u`},
	{"shuf", `shuf -i 1-1000000 -n 3 | tr '\n' ' '; echo`},
	{"bash SRANDOM", `bash -c 'echo $SRANDOM'`},
	{"bash RANDOM", `bash -c 'echo $RANDOM'`},
	{"head /dev/urandom", `head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; echo`},
	{"head /dev/random", `head -c 16 /dev/random | od -An -tx1 | tr -d ' \n'; echo`},
	{"tr /dev/urandom password", `tr -dc 'A-Za-z0-9' </dev/urandom | head -c 20; echo`},
	{"static Go", randProbePath},
}

// reproducible are the programs whose output Entropy makes the same in
// twins. The others mix in what no seed reaches (docs/sandbox.md, "Twin
// traces: reproducible randomness"): OpenSSL 3's DRBG nonce (pid, thread
// id, the nanosecond clock), which node's crypto and Math.random draw on; libgcrypt's fast poll (time, pid, resource usage);
// bash's $RANDOM (time and pid); Go's runtime seed (AT_RANDOM).
var reproducible = []string{
	"python os.urandom", "python random.random", "python uuid4", "python secrets", "python hash seed",
	"perl rand", "perl hash order", "mktemp", "shuf", "bash SRANDOM",
	"head /dev/urandom", "head /dev/random", "tr /dev/urandom password",
	"go-crypto-rand", "go-crypto-rand-text",
}

// randProbePath is where the static Go probe (testdata/randprobe) goes in
// the container.
const randProbePath = "/usr/local/bin/randprobe"

// TestEntropyInContainer runs the tool server with Entropy in fresh sandbox
// containers and compares what the image's programs draw: with one seed in
// two containers, the reproducible programs print the same; with another
// seed, something else; without a seed the server changes nothing (the
// devices stay character devices, no filter is added, and the programs
// print real randomness).
func TestEntropyInContainer(t *testing.T) {
	ref := testenv.Image(t)
	rt := testenv.RequireDocker(t)
	probe := buildRandProbe(t)
	seedA, seedB := []byte("twin trace seed A"), []byte("twin trace seed B")

	// Container 1: seed A. Container 2: no seed first, then seed A (its
	// pids and clock differ from container 1's). Container 3: seed B. The
	// containers run at once.
	var a1, a2, b, none drawn
	t.Run("containers", func(t *testing.T) {
		t.Run("1", func(t *testing.T) {
			t.Parallel()
			a1 = newEntropySandbox(t, rt, ref, probe).serve(t, seedA)
		})
		t.Run("2", func(t *testing.T) {
			t.Parallel()
			c2 := newEntropySandbox(t, rt, ref, probe)
			none = c2.serve(t, nil)
			a2 = c2.serve(t, seedA)
		})
		t.Run("3", func(t *testing.T) {
			t.Parallel()
			b = newEntropySandbox(t, rt, ref, probe).serve(t, seedB)
		})
	})
	if t.Failed() {
		return
	}

	var table strings.Builder
	fmt.Fprintf(&table, "%-26s %-9s %-9s %s\n", "program", "A = A'", "A != B", "seed A / seed B / no seed")
	for _, name := range append(programNames(), "go-math-rand", "go-map-order") {
		fmt.Fprintf(&table, "%-26s %-9v %-9v %.36s / %.36s / %.36s\n", name, a1.out[name] == a2.out[name], a1.out[name] != b.out[name], a1.out[name], b.out[name], none.out[name])
	}
	t.Logf("what each program printed:\n%s", table.String())

	for _, name := range reproducible {
		if a1.out[name] == "" {
			t.Errorf("%s printed nothing", name)
			continue
		}
		if a1.out[name] != a2.out[name] {
			t.Errorf("%s: %q and %q in two containers with one seed", name, a1.out[name], a2.out[name])
		}
		if a1.out[name] == b.out[name] {
			t.Errorf("%s: %q with both seeds", name, a1.out[name])
		}
		if a1.out[name] == none.out[name] {
			t.Errorf("%s: %q with seed A and without a seed", name, a1.out[name])
		}
	}
	// Without a seed, nothing changed.
	if none.devices != "character special file character special file" {
		t.Errorf("without a seed the devices are %q", none.devices)
	}
	if a1.devices != "regular file regular file" {
		t.Errorf("with a seed the devices are %q", a1.devices)
	}
	if a1.filters != none.filters+1 {
		t.Errorf("seccomp filters of a call: %d with a seed, %d without; want one more", a1.filters, none.filters)
	}
	// The user sees the same shim command line, and nothing of the seed
	// or the socket in its environment.
	if a1.shim != none.shim {
		t.Errorf("shim command lines: %q without a seed, %q with", none.shim, a1.shim)
	}
	if a1.env != "" || none.env != "" {
		t.Errorf("the user's environment names %q with a seed, %q without", a1.env, none.env)
	}
}

func programNames() []string {
	var out []string
	for _, p := range randomPrograms {
		if p.cmd != randProbePath {
			out = append(out, p.name)
		}
	}
	return append(out, "go-crypto-rand", "go-crypto-rand-text")
}

// buildRandProbe builds testdata/randprobe static.
func buildRandProbe(t testing.TB) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "randprobe")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./testdata/randprobe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build randprobe: %v\n%s", err, b)
	}
	return out
}

type entropySandbox struct {
	sb   orchestrator.Sandbox
	user string
	home string
}

func newEntropySandbox(t testing.TB, rt orchestrator.Runtime, ref, probe string) *entropySandbox {
	t.Helper()
	id := testenv.TraceID(t)
	testenv.CleanupLabel(t, id)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sb, err := rt.Create(ctx, orchestrator.Spec{
		Name:        id,
		Role:        orchestrator.RoleSandbox,
		Image:       ref,
		Labels:      map[string]string{orchestrator.LabelTrace: id, "sandboxctl.test": "1"},
		Cmd:         []string{"sleep", "infinity"},
		NetworkMode: "none",
		// The sandbox's capabilities (orchestrator's sandboxCaps).
		CapDrop:         []string{"ALL"},
		CapAdd:          []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SETUID", "SETGID", "SYS_PTRACE"},
		NoNewPrivileges: true,
		PIDs:            512,
		Files: []orchestrator.File{
			{Path: mcptools.DefaultSelf, Mode: 0o755, HostPath: self},
			{Path: randProbePath, Mode: 0o755, HostPath: probe},
		},
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() {
		rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
		defer rcancel()
		if err := sb.Remove(rctx); err != nil {
			t.Errorf("remove: %v", err)
		}
	})
	if err := sb.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	var pw bytes.Buffer
	if code, err := sb.Exec(ctx, orchestrator.ExecSpec{Argv: []string{"getent", "passwd", "1000"}, Stdout: &pw}); err != nil || code != 0 {
		t.Fatalf("getent passwd 1000: %d %v", code, err)
	}
	f := strings.Split(strings.TrimSpace(pw.String()), ":")
	if len(f) < 6 {
		t.Fatalf("passwd line %q", pw.String())
	}
	return &entropySandbox{sb: sb, user: f[0], home: f[5]}
}

// A drawn is what one server's call saw.
type drawn struct {
	out     map[string]string // program -> its line
	devices string            // stat -c %F of /dev/urandom and /dev/random
	filters int               // Seccomp_filters of the call's shell
	shim    string            // the shim's command line
	env     string            // SANDBOXCTL_ variables in the call's environment
}

// start runs a tool server with seed in the sandbox; stop ends it.
func (s *entropySandbox) start(tb testing.TB, ctx context.Context, seed []byte) (c *mcptools.Client, stop func()) {
	tb.Helper()
	cfg := mcptools.Config{User: s.user, UID: 1000, GID: 1000, Home: s.home, Entropy: seed}
	cj, err := json.Marshal(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var serverErr bytes.Buffer
	served := make(chan error, 1)
	go func() {
		_, err := s.sb.Exec(ctx, orchestrator.ExecSpec{
			Argv:  []string{mcptools.DefaultSelf, "__mcp"},
			Env:   []string{testConfigVar + "=" + string(cj)},
			Stdin: inR, Stdout: outW, Stderr: &serverErr,
		})
		outW.Close()
		served <- err
	}()
	c, err = mcptools.NewClient(ctx, inW, outR)
	if err != nil {
		tb.Fatalf("NewClient: %v (server stderr: %s)", err, serverErr.String())
	}
	return c, func() {
		c.Close()
		inW.Close()
		select {
		case err := <-served:
			if err != nil {
				tb.Errorf("server exec: %v (stderr %s)", err, serverErr.String())
			}
		case <-time.After(30 * time.Second):
			tb.Error("server did not end after the client closed")
		}
	}
}

// serve runs a tool server with seed in the sandbox, makes the calls and
// stops the server.
func (s *entropySandbox) serve(t *testing.T, seed []byte) drawn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c, stop := s.start(t, ctx, seed)
	defer stop()
	var script strings.Builder
	for _, p := range randomPrograms {
		if p.cmd == randProbePath {
			script.WriteString(p.cmd + "\n")
			continue
		}
		fmt.Fprintf(&script, "printf '%%s: %%s\\n' %q \"$( %s 2>&1 | tr -d '\\n' )\"\n", p.name, p.cmd)
	}
	script.WriteString(`printf 'devices: %s %s\n' "$(stat -c %F /dev/urandom)" "$(stat -c %F /dev/random)"` + "\n")
	script.WriteString(`grep Seccomp_filters /proc/self/status` + "\n")
	script.WriteString(`printf 'shim: %s\n' "$(tr '\0' ' ' </proc/$PPID/cmdline)"` + "\n")
	script.WriteString(`printf 'env: %s\n' "$(env | grep ^SANDBOXCTL_ | tr '\n' ' ')"` + "\n")
	r, err := c.Call(ctx, "draw", "bash", json.RawMessage(mustJSON(t, map[string]any{"command": script.String()})))
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("draw: %+v %v", r, err)
	}
	d := drawn{out: map[string]string{}}
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			k, v, _ = strings.Cut(line, ":")
		}
		v = strings.TrimSpace(v)
		switch k {
		case "devices":
			d.devices = v
		case "Seccomp_filters":
			fmt.Sscan(v, &d.filters)
		case "shim":
			d.shim = v
		case "env":
			d.env = v
		default:
			d.out[k] = v
		}
	}
	for _, name := range programNames() {
		if _, ok := d.out[name]; !ok {
			t.Errorf("no line for %s in %q (stderr %q)", name, r.Stdout, r.Stderr)
		}
	}
	return d
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkEntropyCost is what reproducible randomness costs a call in a
// sandbox container: process starts (glibc asks getrandom once per
// process, for malloc) and a program that draws twenty thousand times. Compare
// "seed" with "none", measured in the same run.
func BenchmarkEntropyCost(b *testing.B) {
	ref := testenv.Image(b)
	rt := testenv.RequireDocker(b)
	s := newEntropySandbox(b, rt, ref, buildRandProbe(b))
	work := []struct{ name, cmd string }{
		{"50 process starts", "for i in $(seq 50); do /bin/true; done"},
		{"20000 draws", `python3 -c 'import os
for _ in range(20000): os.urandom(16)'`},
	}
	for _, w := range work {
		for _, seed := range []struct {
			name string
			seed []byte
		}{{"none", nil}, {"seed", []byte("bench seed")}} {
			b.Run(w.name+"/"+seed.name, func(b *testing.B) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				c, stop := s.start(b, ctx, seed.seed)
				defer stop()
				args := json.RawMessage(mustJSON(b, map[string]any{"command": w.cmd}))
				for b.Loop() {
					if r, err := c.Call(ctx, "", "bash", args); err != nil || r.ExitCode != 0 {
						b.Fatalf("%+v %v", r, err)
					}
				}
			})
		}
	}
}
