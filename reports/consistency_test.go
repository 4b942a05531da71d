package reports_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl/reports"
	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/trace"
)

// smtpExfil is a skill that mails the AWS key out through the jail's SMTP
// sink.
func smtpExfil(t *testing.T) *reports.Report {
	t.Helper()
	b := &builder{t: t0}
	b.bash(10, "python3 report.py", "sent", 0)
	b.add(trace.SourceDNS, trace.TypeDNSQuery, 0, &trace.DNSQuery{Transport: "udp", Name: "mail.drop-box.example.", QType: "A", Rcode: "NOERROR"})
	msg := "Subject: weekly report\r\n\r\naws_secret=" + awsKey + "\r\n"
	b.add(trace.SourceTCP, trace.TypeMail, 0, &trace.Mail{DstIP: "10.99.0.25", DstPort: 25, Name: "mail.drop-box.example",
		Helo: "box", From: "ops@example.test", To: []string{"drop@drop-box.example"}, Subject: "weekly report",
		Data: []byte(msg), Size: int64(len(msg)), Completed: true})
	return reports.Analyze(meta(reports.StatusCompleted), trace.Merge(b.evs), reports.Options{})
}

// formats renders r in its four formats.
func formats(t *testing.T, r *reports.Report) (js map[string]any, text, html string, sarif map[string]any) {
	t.Helper()
	var jb, tb, hb, sb bytes.Buffer
	if err := reports.WriteJSON(&jb, r); err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteText(&tb, r, reports.TextOptions{Verbose: true}); err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteHTML(&hb, r); err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteSARIF(&sb, r); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(jb.Bytes(), &js)
	json.Unmarshal(sb.Bytes(), &sarif)
	return js, tb.String(), hb.String(), sarif
}

// checkAgree checks that the four formats say the same of the facts they
// share: the verdict, the number of findings, the tokens that left.
func checkAgree(t *testing.T, r *reports.Report) {
	t.Helper()
	js, text, html, sarif := formats(t, r)
	leaked := map[string]bool{}
	for _, h := range r.Canaries.Hits {
		if h.Leaked {
			leaked[h.Pass+"/"+h.TokenID] = true
		}
	}
	sum := js["summary"].(map[string]any)
	if int(sum["leaked_tokens"].(float64)) != len(leaked) || r.Summary.LeakedTokens != len(leaked) {
		t.Errorf("summary.leaked_tokens %v, the hits leaked %d", sum["leaked_tokens"], len(leaked))
	}
	if int(sum["finding_count"].(float64)) != len(r.Findings) {
		t.Errorf("summary.finding_count %v, findings %d", sum["finding_count"], len(r.Findings))
	}
	if want := fmt.Sprintf("Leaked  %d token", len(leaked)); len(leaked) > 0 && !strings.Contains(text, want) {
		t.Errorf("report.txt lacks %q", want)
	}
	if len(leaked) == 0 && !strings.Contains(text, "none seen leaving the sandbox") {
		t.Errorf("report.txt says tokens leaked where report.json has none")
	}
	if strings.Contains(html, "None seen leaving the sandbox") != (len(leaked) == 0) {
		t.Errorf("report.html's canaries table disagrees with %d leaked tokens", len(leaked))
	}
	runs := sarif["runs"].([]any)[0].(map[string]any)
	results := runs["results"].([]any)
	// One SARIF result per incident with findings, carrying its count and
	// destination.
	var incidents []reports.Incident
	for _, in := range r.Incidents {
		if len(in.Findings) > 0 && len(in.RuleIDs) > 0 {
			incidents = append(incidents, in)
		}
	}
	if len(results) != len(incidents) {
		t.Errorf("SARIF has %d results, the report %d incidents with findings", len(results), len(incidents))
	} else {
		for i, res := range results {
			p := res.(map[string]any)["properties"].(map[string]any)
			if int(p["finding_count"].(float64)) != len(incidents[i].Findings) || fmt.Sprint(p["destination"]) != fmt.Sprint(orNil(incidents[i].Destination)) {
				t.Errorf("SARIF result %d: %v findings to %v; incident %s: %d to %q", i, p["finding_count"], p["destination"], incidents[i].ID, len(incidents[i].Findings), incidents[i].Destination)
			}
		}
	}
	props, _ := runs["properties"].(map[string]any)
	if props["verdict"] != string(r.Verdict) || js["verdict"] != string(r.Verdict) || !strings.Contains(text, strings.ToUpper(string(r.Verdict))) {
		t.Errorf("verdicts disagree: json %v, sarif %v, report %s", js["verdict"], props["verdict"], r.Verdict)
	}
	// A leaked token is an exfiltration finding, and the reverse.
	exfil := false
	for _, f := range r.Findings {
		exfil = exfil || f.RuleID == "SBX-EXFIL-001"
	}
	if exfil != (len(leaked) > 0) {
		t.Errorf("SBX-EXFIL-001 fired: %v; tokens leaked: %d", exfil, len(leaked))
	}
}

// TestSMTPExfiltrationLeaked: a token mailed out is leaked in report.json,
// counted in the summary, in the HTML's leaked-token flow and its canaries
// table, and the incident names the mail relay.
func TestSMTPExfiltrationLeaked(t *testing.T) {
	r := smtpExfil(t)
	var smtp []reports.Hit
	for _, h := range r.Canaries.Hits {
		if h.Channel == trace.ChannelSMTP {
			smtp = append(smtp, h)
		}
	}
	if len(smtp) == 0 {
		t.Fatalf("no canary hit on smtp: %+v", r.Canaries.Hits)
	}
	for _, h := range smtp {
		if !h.Leaked {
			t.Errorf("hit %+v on smtp is not leaked", h)
		}
	}
	checkAgree(t, r)
	_, _, html, _ := formats(t, r)
	if !strings.Contains(html, `id="flows"`) {
		t.Error("report.html has no leaked-token flow for the mailed token")
	}
	found := false
	for _, i := range r.Incidents {
		found = found || strings.Contains(i.Destination, "mail.drop-box.example")
	}
	if !found {
		t.Errorf("no incident names the mail relay: %+v", r.Incidents)
	}
}

// TestUnwatchedHitsInCanaries: the tokens a skill sends only when unwatched
// are in canaries.hits with their pass named, counted as leaked, and shown
// with their pass in the text and the HTML.
func TestUnwatchedHitsInCanaries(t *testing.T) {
	w, u := twoPasses(t)
	c := reports.Combine(w, u, reports.Pass{Tracer: reports.TracerStrace, TraceID: w.TraceID},
		reports.Pass{Tracer: reports.TracerNone, TraceID: u.TraceID, Reason: "--stealth"})
	var unwatched []reports.Hit
	for _, h := range c.Canaries.Hits {
		switch h.Pass {
		case rules.PassUnwatched:
			unwatched = append(unwatched, h)
		case rules.PassWatched:
		default:
			t.Errorf("hit %+v of a two-pass report names no pass", h)
		}
	}
	if len(unwatched) == 0 || !unwatched[0].Leaked {
		t.Fatalf("canaries.hits holds no leaked hit of the unwatched pass: %+v", c.Canaries.Hits)
	}
	if c.Verdict != rules.Malicious {
		t.Fatalf("verdict %s", c.Verdict)
	}
	checkAgree(t, c)
	_, text, html, _ := formats(t, c)
	if !strings.Contains(text, "(unwatched pass)") || !strings.Contains(html, "(unwatched pass)") {
		t.Error("the text or the HTML does not name the pass of the unwatched hit")
	}
}

// TestFormatsAgree runs the agreement check over the report fixtures.
func TestFormatsAgree(t *testing.T) {
	for _, name := range []string{"canary-exfil", "clean"} {
		t.Run(name, func(t *testing.T) { checkAgree(t, fixture(t, name)) })
	}
}

func orNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}
