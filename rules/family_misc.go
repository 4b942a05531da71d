package rules

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/sandboxctl/sandboxctl/toolspec"
	"github.com/sandboxctl/sandboxctl/trace"
)

// hitStatic records a finding located in the skill text, with no event.
func (c *ctx) hitStatic(r *Rule, key, msg, file string, line int) *Finding {
	k := r.ID + "\x00" + key
	f := c.findMap[k]
	if f == nil {
		f = &Finding{RuleID: r.ID, Title: r.Title, Severity: r.Severity, Confidence: r.Confidence,
			Technique: r.Technique, Harm: r.Harm, Message: c.redact(msg), SkillFile: file, SkillLine: line}
		c.findMap[k] = f
		c.order = append(c.order, k)
		c.byRule[r.ID] = append(c.byRule[r.ID], f)
	}
	return f
}

func hiddenRules() {
	type h struct {
		id, title, help string
		sev             Severity
		conf            Confidence
		kinds           []string
	}
	for _, x := range []h{
		{id: "SBX-HIDDEN-001", title: "Invisible Unicode instructions in the skill", sev: High, conf: ConfHigh,
			kinds: []string{"tag-chars", "bidi"},
			help: "Unicode tag characters or bidirectional overrides: text the model reads and a person " +
				"reviewing the skill does not see."},
		{id: "SBX-HIDDEN-002", title: "Zero-width characters in the skill", sev: Medium, conf: ConfMedium,
			kinds: []string{"zero-width"},
			help:  "Zero-width characters hide or split words so that reviews and filters miss them."},
		{id: "SBX-HIDDEN-003", title: "HTML comment in the skill", sev: Low, conf: ConfLow,
			kinds: []string{"html-comment"},
			help:  "An HTML comment: invisible when the markdown is rendered, read by the model."},
		{id: "SBX-HIDDEN-004", title: "Encoded blob or data URI in the skill", sev: Low, conf: ConfMedium,
			kinds: []string{"base64-blob", "data-uri"},
			help:  "A long base64 blob or a data: URI in an instruction file: a payload a person cannot read."},
	} {
		def(Rule{ID: x.id, Family: "defense-evasion", Title: x.title, Severity: x.sev, Confidence: x.conf,
			Technique: "T1027", Help: x.help},
			func(c *ctx, r *Rule) {
				if c.in.Skill == nil {
					return
				}
				for _, hd := range c.in.Skill.Hidden {
					for _, k := range x.kinds {
						if hd.Kind == k {
							c.hitStatic(r, fmt.Sprintf("%s:%d:%s", hd.File, hd.Line, hd.Kind),
								fmt.Sprintf("%s at %s:%d: %q", hd.Kind, hd.File, hd.Line, capString(hd.Excerpt, 120)), hd.File, hd.Line)
						}
					}
				}
			})
	}
}

// toolNames maps the sandbox's MCP tools to the names allowed-tools uses.
var toolNames = map[string][]string{
	toolspec.Bash:          {"Bash"},
	toolspec.ReadFile:      {"Read"},
	toolspec.WriteFile:     {"Write"},
	toolspec.EditFile:      {"Edit", "MultiEdit"},
	toolspec.ListDirectory: {"LS", "Glob"},
	toolspec.SearchFiles:   {"Grep", "Glob"},
	toolspec.FetchURL:      {"WebFetch"},
}

// allowedEntry is one parsed allowed-tools entry: "Bash(git:*)" gives
// Name "Bash", Spec "git:*".
type allowedEntry struct{ Name, Spec string }

func parseAllowed(list []string) []allowedEntry {
	var out []allowedEntry
	for _, item := range list {
		// entries may be comma- or space-separated in one string; keep
		// parentheses together.
		var cur strings.Builder
		depth := 0
		flush := func() {
			s := strings.TrimSpace(cur.String())
			cur.Reset()
			if s == "" {
				return
			}
			name, spec, _ := strings.Cut(s, "(")
			out = append(out, allowedEntry{Name: strings.TrimSpace(name), Spec: strings.TrimSuffix(strings.TrimSpace(spec), ")")})
		}
		for _, r := range item {
			switch {
			case r == '(':
				depth++
			case r == ')':
				depth--
			case (r == ',' || r == ' ') && depth == 0:
				flush()
				continue
			}
			cur.WriteRune(r)
		}
		flush()
	}
	return out
}

func allows(entries []allowedEntry, tool, command string) bool {
	for _, e := range entries {
		for _, n := range toolNames[tool] {
			if !strings.EqualFold(e.Name, n) {
				continue
			}
			if e.Spec == "" || tool != toolspec.Bash {
				return true
			}
			prefix := strings.TrimSpace(strings.TrimRight(strings.TrimSuffix(strings.TrimSuffix(e.Spec, ":*"), "*"), " :"))
			if prefix == "" || strings.HasPrefix(strings.TrimSpace(command), prefix) {
				return true
			}
		}
	}
	return false
}

func policyRules() {
	def(Rule{ID: "SBX-POLICY-001", Family: "policy", Title: "Tool used outside the skill's allowed-tools",
		Severity: Medium, Confidence: ConfLow, Technique: "T1059",
		Help: "The skill's frontmatter declares allowed-tools, and a tool call used a tool (or a Bash " +
			"command) it does not list. Tools map as bash→Bash, read_file→Read, write_file→Write, " +
			"edit_file→Edit, list_directory→LS/Glob, search_files→Grep/Glob, fetch_url→WebFetch. " +
			"Low confidence: the agent's harness enforces allowed-tools, and a call outside them is " +
			"as often the driver reading the skill loosely as the skill overreaching."},
		func(c *ctx, r *Rule) {
			list := c.in.AllowedTools
			if list == nil && c.in.Skill != nil {
				list = c.in.Skill.AllowedTools
			}
			entries := parseAllowed(list)
			if len(entries) == 0 {
				return
			}
			for i := range c.events {
				e := &c.events[i]
				d, ok := e.Data.(*trace.ToolCall)
				if !ok {
					continue
				}
				cmd := toolCommand(d)
				if !allows(entries, d.Tool, cmd) {
					what := d.Tool
					if cmd != "" {
						what += " " + short(cmd)
					}
					c.hit(r, d.Tool+":"+d.ID, "not in allowed-tools: "+what, e)
				}
			}
		})
}

var reCmdLine = regexp.MustCompile(`(?m)^\s*(?:\$\s+)?((?:curl|wget|bash|sh|python3?|pip3?|npm|npx|node|chmod|git|echo|cat|rm|mv|cp|base64|nc|ssh|scp)\s.{6,})$`)

func remoteRules() {
	def(Rule{ID: "SBX-REMOTE-001", Family: "execution", Title: "Instructions fetched at run time and then followed",
		Severity: High, Confidence: ConfMedium, Technique: "T1105",
		Help: "Content fetched during the run (fetch_url, or curl/wget output shown to the model) held a " +
			"URL or a command that a later tool call used, and the skill text does not hold it: the " +
			"skill's real instructions live on a server and can change between runs."},
		func(c *ctx, r *Rule) {
			skillText := ""
			if c.in.Skill != nil {
				var b strings.Builder
				for _, f := range c.in.Skill.Files {
					b.Write(f.Content)
					b.WriteByte('\n')
				}
				skillText = b.String()
			}
			type item struct {
				s   string
				src *trace.Event
			}
			var items []item
			for i := range c.events {
				e := &c.events[i]
				d, ok := e.Data.(*trace.ToolCall)
				if !ok {
					continue
				}
				a := decodeArgs(d)
				// Does this call act on something fetched earlier?
				text := string(d.Arguments)
				for _, it := range items {
					if it.src.Seq < e.Seq && strings.Contains(text, it.s) {
						c.hit(r, it.src.ToolCallID+"->"+d.ID, fmt.Sprintf("tool call %s uses %q fetched by %s", d.ID, short(it.s), it.src.ToolCallID), it.src, e)
					}
				}
				fetched := ""
				switch {
				case d.Tool == toolspec.FetchURL:
					fetched = d.Stdout
				case d.Tool == toolspec.Bash && fetchCommand(a.Command):
					fetched = d.Stdout
				}
				if fetched == "" {
					continue
				}
				self := a.URL + " " + a.Command
				for _, u := range reURL.FindAllString(fetched, 50) {
					u = strings.TrimRight(u, ".,;:")
					if !strings.Contains(self, u) && !strings.Contains(skillText, u) {
						items = append(items, item{u, e})
					}
				}
				for _, m := range reCmdLine.FindAllStringSubmatch(fetched, 50) {
					line := strings.TrimSpace(m[1])
					if !strings.Contains(skillText, line) && !strings.Contains(self, line) {
						items = append(items, item{line, e})
					}
				}
			}
		})
}

// fetchCommand reports a command whose output is a download shown to the
// model: it starts with curl or wget writing to stdout and runs nothing it
// fetched.
func fetchCommand(cmd string) bool {
	f := analyzeShell(cmd)
	if len(f.Commands) == 0 || (f.Commands[0] != "curl" && f.Commands[0] != "wget") || len(f.Runs) > 0 {
		return false
	}
	for _, d := range f.Downloads {
		if d.Fetcher == f.Commands[0] {
			return false
		}
	}
	return true
}

func exfilRules() {
	def(Rule{ID: "SBX-EXFIL-001", Family: "exfiltration", Title: "Planted secret sent out of the sandbox",
		Severity: Critical, Confidence: ConfHigh, Technique: "T1041", Harm: HarmExfil,
		Help: "A canary token planted in the fake home or environment was seen leaving: in an HTTP URL, " +
			"header or body, in DNS query names (also split over labels and queries), in a raw TCP/UDP " +
			"flow, or in TLS SNI; plain or encoded (base64, hex, URL-encoding, gzip, tar...). The token " +
			"is unique to this trace: this is proof. A project uploaded whole to a hosting platform with " +
			"the secrets its files keep is SBX-EXFIL-011."},
		func(c *ctx, r *Rule) {
			for _, e := range c.hits {
				h := e.Data.(*trace.CanaryHit)
				if !networkChannel(h.Channel) || c.ownServiceUse(h) {
					continue
				}
				if _, _, deploy := c.projectDeploy(h, e); deploy {
					continue
				}
				c.hit(r, h.TokenID+"/"+h.Channel, fmt.Sprintf("%s planted at %s left over %s (%s) to %s",
					h.Kind, h.Location, h.Channel, h.Encoding, c.leftTo(h)), e, c.bySeq[h.EventSeq])
			}
		})
	def(Rule{ID: "SBX-EXFIL-006", Family: "credential-access", Title: "Planted secret used with its own service",
		Severity: Low, Confidence: ConfMedium, Technique: "T1078",
		Help: "A canary token was sent over HTTP, as it is, to the service it belongs to (a GitHub " +
			"token to api.github.com, an OpenAI key to api.openai.com...): the skill used the user's " +
			"credential for what it is for. The service is judged by where the packets went: an API host " +
			"of the token's issuer (rules/data/issuers.tsv, never a whole suffix such as amazonaws.com) " +
			"that the jail's DNS resolved to the address dialled, with the token where the issuer takes " +
			"credentials (its Authorization header...) and nowhere else in the request. Reported so a " +
			"person can judge whether the skill should have used it; sent anywhere else (a raw IP with " +
			"the vendor's Host header, a bucket or instance under amazonaws.com, the body of a message " +
			"or a gist) it is SBX-EXFIL-001. Data signed with the user's AWS key into a bucket the home " +
			"declares as the user's own (its Terraform state backend) is reported here too: it stays the " +
			"user's."},
		func(c *ctx, r *Rule) {
			for _, e := range c.hits {
				h := e.Data.(*trace.CanaryHit)
				if networkChannel(h.Channel) && c.ownServiceUse(h) {
					u, _ := c.ownUseOf(h)
					msg := fmt.Sprintf("%s planted at %s sent as its credential to %s: %s", h.Kind, h.Location, u.dest.host, h.Where)
					if u.bucket != "" {
						msg = fmt.Sprintf("%s planted at %s stored in %s, a bucket the home declares as the user's own, "+
							"signed with the user's AWS key: %s", h.Kind, h.Location, u.bucket, h.Where)
					}
					c.hit(r, h.TokenID, msg, e, c.bySeq[h.EventSeq])
				}
			}
		})
	def(Rule{ID: "SBX-EXFIL-002", Family: "collection", Title: "Planted secret copied into a command line or file",
		Severity: Low, Confidence: ConfHigh, Technique: "T1074.001",
		Help: "A canary token appeared in a process's argv or in content written through a file tool: " +
			"the secret was staged for use. It has not (yet) been seen leaving."},
		func(c *ctx, r *Rule) {
			for _, e := range c.hits {
				h := e.Data.(*trace.CanaryHit)
				if h.Channel == ChannelArgv || h.Channel == ChannelFile {
					c.hit(r, h.TokenID+"/"+h.Channel, fmt.Sprintf("%s planted at %s copied into %s (%s): %s",
						h.Kind, h.Location, h.Channel, h.Encoding, h.Where), e, c.bySeq[h.EventSeq])
				}
			}
		})
	def(Rule{ID: "SBX-EXFIL-003", Family: "collection", Title: "Planted secret shown to the model",
		Severity: Low, Confidence: ConfHigh, Technique: "T1552.001",
		Help: "A canary token appeared in tool output the model saw. A model can repeat what it sees, " +
			"and a skill that makes it read secrets is steering it there."},
		func(c *ctx, r *Rule) {
			for _, e := range c.hits {
				h := e.Data.(*trace.CanaryHit)
				if h.Channel == ChannelToolOutput {
					c.hit(r, h.TokenID, fmt.Sprintf("%s planted at %s shown to the model (%s)", h.Kind, h.Location, h.Encoding),
						e, c.bySeq[h.EventSeq])
				}
			}
		})
	derived := func(id, title, tech, help string, from ...string) {
		def(Rule{ID: id, Family: "exfiltration", Title: title, Severity: High, Confidence: ConfMedium,
			Technique: tech, Help: help, Harm: HarmExfil,
			After: append([]string{"SBX-EXFIL-001", "SBX-NET-001", "SBX-NET-003"}, from...)},
			func(c *ctx, r *Rule) {
				if len(c.found("SBX-EXFIL-001")) > 0 {
					return // the token itself was seen leaving: that finding says it better
				}
				var base, config []*Finding
				for _, id := range from {
					for _, f := range c.found(id) {
						if id != "SBX-CRED-001" || f.Confidence != ConfLow { // not a .env read as configuration
							base = append(base, f)
						} else {
							config = append(config, f)
						}
					}
				}
				if len(base) == 0 {
					// .env files read as configuration count when what the
					// same call's processes then sent went to a raw IP or a
					// drop (judged by what left, whatever read them)
					c.configThenDrop(r, config)
					return
				}
				c.readThenSent(r, base)
			})
	}
	derived("SBX-EXFIL-004", "Credentials read, then data sent out", "T1041",
		"A credential, wallet or browser store was read and later the sandbox sent data out in a part of a "+
			"request its client controls (rules/egress.go): an HTTP body, query, URL path, cookie or header "+
			"holding encoded-looking data (not a short id, a UUID or a digest), a raw flow's bytes, a mail, a "+
			"WebSocket message, a DNS name with a long label or data spread over one zone's names, a TLS "+
			"server name no lookup gave or an unregistered ALPN id. No planted token was recognised in it (it "+
			"may be encrypted or compressed beyond detection). The message names the source the syscall log "+
			"links to the sending process (the file read by it, its shell or a file handed to it), else the "+
			"environment. Confidence is high when the destination is a raw IP or a drop service, a chat "+
			"webhook, bot API or gist whose stored content is opaque (rules/data/dropsites.tsv), or the data "+
			"rode in a part that carries none in normal use (TLS names, ALPN, DNS names spread over a zone).",
		"SBX-CRED-001", "SBX-CRED-002", "SBX-CRED-004", "SBX-CRED-005")
	derived("SBX-EXFIL-005", "Environment harvested, then data sent out", "T1041",
		"The environment was dumped (SBX-ENV-001) and later the sandbox sent data out (as SBX-EXFIL-004 "+
			"counts it). Confidence is high when the destination is a raw IP or a drop service, or the data "+
			"rode in a part that carries none in normal use.",
		"SBX-ENV-001")
}
