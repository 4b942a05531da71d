package rules

import (
	"encoding/base64"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

// Download-and-execute: bytes from the network (or decoded from a literal)
// executed by an interpreter. The evidence is the process tree (a network
// client and an interpreter reading stdin alive side by side under one
// shell; a downloaded file later executed) and command text read by a real
// shell parser (shell.go). The destination's reputation (dest.go) sets the
// severity: a vendor's installer is low, a code host suspicious, anything
// else harm.

var (
	reMacOSBase64 = regexp.MustCompile(`\bbase64\s+(?:-[a-zA-Z]*D|--decode)\b`)
	reB64Blob     = regexp.MustCompile(`[A-Za-z0-9+/]{16,}={0,2}`)
	reQuarantine  = regexp.MustCompile(`\bxattr\s+(?:-[a-z]*\s+)*-d\s+com\.apple\.quarantine\b|\bspctl\s+--master-disable\b`)
	reRunsDecoded = regexp.MustCompile(`\b(?:exec|eval|system|popen|spawn|Function)\s*\(|\|\s*(?:ba|z|da)?sh\b|\bsh\s+-c\b|\bbash\s+-c\b`)
)

// codeClass is the severity, confidence and harm of code from rep being
// run: a vendor is low; a code host, or an unknown host that is the
// product the skill is about fetched the way vendors publish (TLS, a
// readable path), high with medium confidence (suspicious: it may be a
// vendor the lists do not know); any other unknown host, an obfuscated
// download, and untrusted destinations (raw IPs, drops, tunnels, paste
// sites, look-alikes) critical.
func codeClass(rep Reputation, obfuscated bool) (Severity, Confidence, Harm) {
	switch {
	case rep.Tier == TierVendor:
		return Low, ConfHigh, HarmNone
	case rep.Tier == TierCodeHost && !obfuscated,
		rep.Tier == TierUnknown && !obfuscated && !rep.Plain && !rep.Opaque && rep.Named:
		return High, ConfMedium, HarmRemoteCode
	}
	return Critical, ConfHigh, HarmRemoteCode
}

var reHostish = regexp.MustCompile(`(?i)\S+://\S+|[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\S*`)

// namedBySkill reports whether host's product is what the skill is about:
// the first label of its registrable domain is a word of the skill's name
// or description, or appears three times or more in its text outside URLs
// and host names.
func (c *ctx) namedBySkill(host string) bool {
	sk := c.in.Skill
	if sk == nil || host == "" {
		return false
	}
	_, label := registrable(normHost(host))
	if len(label) < 3 {
		return false
	}
	if c.skillWords == nil {
		c.skillWords = map[string]int{}
		c.skillHead = map[string]bool{}
		words := func(s string) []string {
			return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
			})
		}
		for _, w := range words(sk.Name + " " + sk.Description) {
			c.skillHead[w] = true
		}
		for _, f := range sk.Files {
			for _, w := range words(reHostish.ReplaceAllString(string(f.Content), " ")) {
				c.skillWords[w]++
			}
		}
	}
	named := func(w string) bool { return len(w) >= 3 && (c.skillHead[w] || c.skillWords[w] >= 3) }
	if named(label) {
		return true
	}
	// the product's name with a usual affix: fluxcd, golang, getsentry
	for _, a := range nameAffixes {
		if w, ok := strings.CutSuffix(label, a); ok && named(w) {
			return true
		}
		if w, ok := strings.CutPrefix(label, a); ok && named(w) {
			return true
		}
	}
	return false
}

var nameAffixes = []string{"cd", "hq", "io", "app", "cli", "dev", "labs", "lang", "js", "sh", "get", "try", "use", "run", "-cli", "-dev", "-sh"}

// shell returns what a command text does (cached per text).
func (c *ctx) shell(text string) *shellFacts {
	if f, ok := c.shCache[text]; ok {
		return f
	}
	f := analyzeShell(text)
	c.shCache[text] = f
	return f
}

// shellAll is shell with the facts of decoded payloads merged in.
func (c *ctx) shellAll(text string) *shellFacts {
	return flattenFacts(c.shell(text))
}

func flattenFacts(f *shellFacts) *shellFacts {
	out := &shellFacts{}
	out.merge(f)
	for _, r := range f.Runs {
		if r.Inner != nil {
			out.merge(flattenFacts(r.Inner))
		}
	}
	return out
}

// callOf returns the tool call an event belongs to.
func (c *ctx) callOf(e *trace.Event) string {
	if e.ToolCallID != "" {
		return e.ToolCallID
	}
	if tc, ok := e.Data.(*trace.ToolCall); ok {
		return tc.ID
	}
	return c.callAt(e.Time)
}

// judge returns the least trusted reputation among urls; when none names a
// host, the HTTP requests made during call decide (a script the jail
// served first); with nothing known the destination is unknown.
func (c *ctx) judge(urls []string, call string) Reputation {
	worst, found := Reputation{}, false
	consider := func(u string) {
		host, p := hostPath(u)
		if host == "" || strings.ContainsAny(host, "$`{}") {
			return
		}
		rep := ReputationOf(host, p)
		rep.Plain, rep.Opaque = urlTraits(u)
		if !found || rep.Tier > worst.Tier || rep.Tier == worst.Tier && (rep.Plain || rep.Opaque) {
			worst, found = rep, true
		}
	}
	for _, u := range urls {
		consider(u)
	}
	if found {
		worst.Named = c.namedBySkill(worst.Host)
		return worst
	}
	if c.httpByCall == nil {
		c.httpByCall = map[string][]*trace.HTTPExchange{}
		for i := range c.events {
			e := &c.events[i]
			if x, ok := e.Data.(*trace.HTTPExchange); ok {
				id := c.callOf(e)
				c.httpByCall[id] = append(c.httpByCall[id], x)
			}
		}
	}
	var served, all []string
	for _, x := range c.httpByCall[call] {
		if call == "" {
			break
		}
		u := exchangeURL(x)
		all = append(all, u)
		if x.Response == "second-stage" || strings.HasPrefix(x.Response, "file:") {
			served = append(served, u)
		}
	}
	for _, u := range cmpOr(served, all) {
		consider(u)
	}
	if found {
		worst.Named = c.namedBySkill(worst.Host)
		return worst
	}
	return Reputation{Tier: TierUnknown, Kind: "destination not known"}
}

// exchangeURL is the URL of a request as the client asked for it, with
// its scheme.
func exchangeURL(x *trace.HTTPExchange) string {
	if strings.Contains(x.URL, "://") {
		return x.URL
	}
	scheme := "http://"
	if x.TLS {
		scheme = "https://"
	}
	return scheme + normHost(x.Host) + urlPathOf(x.URL)
}

func cmpOr(a, b []string) []string {
	if len(a) > 0 {
		return a
	}
	return b
}

func urlPathOf(u string) string {
	_, p := hostPath(u)
	return p
}

// hitAs records a finding whose severity, confidence and harm depend on
// what was matched: the strongest classification seen under the key wins,
// with its message. harm must be "" or the rule's own class.
func (c *ctx) hitAs(r *Rule, key string, sev Severity, conf Confidence, harm Harm, msg string, evs ...*trace.Event) *Finding {
	k := r.ID + "\x00" + key
	_, existed := c.findMap[k]
	f := c.hit(r, key, msg, evs...)
	if harm != HarmNone && harm != r.Harm {
		panic(fmt.Sprintf("rules: %s reports harm %q, not its own %q", r.ID, harm, r.Harm))
	}
	if !existed || stronger(sev, conf, harm, f) {
		f.Severity, f.Confidence, f.Harm, f.Message = sev, conf, harm, c.redact(msg)
	}
	return f
}

func stronger(sev Severity, conf Confidence, harm Harm, f *Finding) bool {
	a := [3]int{sev.Rank(), boolInt(harm != ""), conf.Rank()}
	b := [3]int{f.Severity.Rank(), boolInt(f.Harm != ""), f.Confidence.Rank()}
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func describeRep(rep Reputation) string {
	s := rep.Host
	if s == "" {
		s = "an unknown destination"
	}
	switch rep.Tier {
	case TierVendor:
		return s + " (vendor: " + rep.Kind + ")"
	case TierCodeHost:
		return s + " (code host: " + rep.Kind + ")"
	case TierBad:
		return s + " (" + rep.Kind + ")"
	}
	return s
}

// execRules defines the execution family: code from the network or
// decoded from a literal, run.
func execRules() {
	def(Rule{ID: "SBX-EXEC-001", Family: "execution", Title: "Downloaded code run without saving it",
		Severity: Critical, Confidence: ConfHigh, Technique: "T1059.004", Harm: HarmRemoteCode,
		Help: "Bytes from the network reached an interpreter: a network client's output piped into sh, " +
			"bash, python... (seen in the process tree, or in the command read by a shell parser, so " +
			"quoting, variables, tee and wrappers do not hide it), $(curl ...) given to eval or sh -c, " +
			"bash <(curl ...), source <(curl ...), a here-string, deno run URL, PowerShell iex(iwr ...) or " +
			"Python exec(urlopen(...)). Severity follows the destination (docs/verdicts.md): a vendor's " +
			"installer or a package registry is low; a code host (GitHub, GitLab...) or an unknown host " +
			"fetched over TLS at a readable path high with medium confidence; raw IPs, drops, tunnels, " +
			"paste sites, look-alikes and unknown hosts over plain HTTP or at a random-looking path " +
			"critical."},
		matchRunUnsaved)
	def(Rule{ID: "SBX-EXEC-002", Family: "execution", Title: "Downloaded file executed",
		Severity: Critical, Confidence: ConfHigh, Technique: "T1105", Harm: HarmRemoteCode,
		Help: "A file a network client saved (or one extracted, copied or renamed from it) was later " +
			"executed, sourced or given to an interpreter: droppers that avoid a pipe save the payload " +
			"first. Severity follows the destination as for SBX-EXEC-001. A downloaded file only made " +
			"executable is medium."},
		matchDownloadedRun)
	def(Rule{ID: "SBX-EXEC-003", Family: "execution", Title: "Second-stage payload executed",
		Severity: Critical, Confidence: ConfHigh, Technique: "T1105", Harm: HarmRemoteCode,
		Help: "The harmless second stage the jail serves for script downloads ran: a process wrote its " +
			"marker file, or it called back to /.well-known/<token>. Its text printed, saved or read " +
			"proves nothing and does not count. Severity follows where the script was downloaded " +
			"from, as for SBX-EXEC-001 (the jail serves the stand-in for vendor installers too)."},
		matchSecondStage)
	def(Rule{ID: "SBX-EXEC-004", Family: "execution", Title: "Decoded payload executed",
		Severity: Critical, Confidence: ConfHigh, Technique: "T1027", Harm: HarmRemoteCode,
		Help: "A literal decoded at run time (base64 -d or the macOS base64 -D, xxd -r, gunzip...) was " +
			"fed to an interpreter, eval or sh -c. When the decoded text downloads and runs code the " +
			"severity follows its destination as for SBX-EXEC-001; otherwise it is high with medium " +
			"confidence: obfuscated code ran. macOS droppers use `base64 -D`, which GNU base64 " +
			"rejects: the rule decodes the literal itself and reports what would have run on a Mac."},
		matchDecodedRun)
	def(Rule{ID: "SBX-EXEC-005", Family: "execution", Title: "macOS-only decode or Gatekeeper bypass attempted",
		Severity: Medium, Confidence: ConfMedium, Technique: "T1553.001",
		Help: "`base64 -D` (the macOS spelling, failing on Linux), removal of the quarantine attribute " +
			"(xattr -d com.apple.quarantine) or spctl --master-disable: a payload written for macOS users."},
		matchMacOSTooling)
}

// matchRunUnsaved reports downloaded code run without being saved: a
// network client piped into an interpreter, seen in the command text or
// in the process tree.
func matchRunUnsaved(c *ctx, r *Rule) {
	report := func(run codeRun, call string, evs ...*trace.Event) {
		rep := c.judge(run.URLs, call)
		sev, conf, harm := codeClass(rep, false)
		msg := fmt.Sprintf("%s output run by %s (%s) from %s", orWord(run.Fetcher, "network"), run.Interp, run.How, describeRep(rep))
		c.hitAs(r, call, sev, conf, harm, msg, evs...)
	}
	for _, cm := range c.cmds {
		call := c.callOf(cm.ev)
		missing := c.missingCommand(call)
		for _, run := range c.shellAll(cm.text).Runs {
			if run.How == "decoded" || missing != "" && (run.Interp == missing || run.Fetcher == missing) {
				continue // the interpreter or the client was not there: nothing ran
			}
			report(run, call, cm.ev)
		}
	}
	// Process evidence: an interpreter reading its program from
	// stdin alive at the same time as a sibling network client
	// writing to stdout: the shell's pipe between them.
	for _, pair := range c.pipedPairs() {
		fx := pair.fetch.Data.(*trace.Exec)
		fc := argvCmd(fx.Argv)
		run := codeRun{How: "pipe, from the process tree", Fetcher: fc.Name,
			Interp: argvCmd(pair.interp.Data.(*trace.Exec).Argv).Name, URLs: fetchURLs(fc)}
		report(run, c.callOf(pair.interp), pair.fetch, pair.interp)
	}
}

// matchDownloadedRun reports a downloaded file later executed, sourced
// or given to an interpreter, and one only made executable.
func matchDownloadedRun(c *ctx, r *Rule) {
	dl := c.downloads()
	if len(dl.byPath) == 0 {
		return
	}
	ran := func(p, how string, e *trace.Event) {
		d := dl.lookup(p, e.Seq)
		if d == nil {
			return
		}
		rep := c.judge([]string{d.url}, c.callOf(d.ev))
		sev, conf, harm := codeClass(rep, false)
		c.hitAs(r, d.path, sev, conf, harm, fmt.Sprintf("%s downloaded from %s then %s", d.path, describeRep(rep), how), d.ev, e)
	}
	chmod := func(p string, e *trace.Event) {
		if d := dl.lookup(p, e.Seq); d != nil {
			sev := Medium
			if c.judge([]string{d.url}, c.callOf(d.ev)).Tier == TierVendor {
				sev = Low
			}
			c.hitAs(r, d.path, sev, ConfMedium, HarmNone, fmt.Sprintf("%s downloaded then made executable", d.path), d.ev, e)
		}
	}
	for _, cm := range c.cmds {
		facts := c.shellAll(cm.text)
		for _, fr := range facts.FileRuns {
			ran(c.resolve(fr.Path), "run ("+fr.How+")", cm.ev)
		}
		for _, p := range facts.Chmods {
			chmod(c.resolve(p), cm.ev)
		}
	}
	for i := range c.events {
		e := &c.events[i]
		x, ok := e.Data.(*trace.Exec)
		if !ok || x.Errno != "" || len(x.Argv) == 0 {
			continue
		}
		ran(resolveAt(x.Cwd, x.Path, c.home), "executed", e)
		ac := argvCmd(x.Argv)
		if isInterpreter(ac.Name) {
			if _, _, script := interpInput(ac.Name, ac.argText()); script >= 0 {
				ran(resolveAt(x.Cwd, ac.Args[script].text, c.home), "run by "+ac.Name, e)
			}
		}
	}
	for _, f := range c.files {
		if f.op == opChmod && !f.failed && strings.ContainsAny(f.mode, "1357") {
			chmod(f.path, f.ev)
		}
	}
}

// A proofOf is evidence that the second stage ran: its marker file
// written, or its callback request.
type proofOf struct {
	ev       *trace.Event
	callback string // the host called back to, for a callback
}

// secondStageProofs returns the evidence that the second stage ran, and
// every event offered as evidence, including file-system diff entries
// dropped because something seen at the time proves the run.
func secondStageProofs(c *ctx) ([]proofOf, map[*trace.Event]bool) {
	var proofs []proofOf
	isProof := map[*trace.Event]bool{}
	if tok := c.in.MarkerToken; tok != "" {
		for i := range c.events {
			e := &c.events[i]
			if x, ok := e.Data.(*trace.HTTPExchange); ok && strings.Contains(urlPathOf(x.URL), "/.well-known/"+tok) {
				host, _ := hostPath(x.URL)
				if x.Host != "" {
					host = normHost(x.Host)
				}
				proofs = append(proofs, proofOf{e, host})
				isProof[e] = true
			}
		}
	}
	if isMarker := c.markerMatcher(); isMarker != nil {
		for _, f := range c.files {
			if f.ev.Source == trace.SourceTool {
				continue // the agent writing a file is not the script running
			}
			if (f.op == opWrite || f.op == opRename) && (isMarker(f.path) || isMarker(f.newPath)) {
				proofs = append(proofs, proofOf{ev: f.ev})
				isProof[f.ev] = true
			}
		}
	}
	// The file-system diff is read at the end of the trace: it proves
	// a run only when nothing seen at the time did.
	if slices.ContainsFunc(proofs, func(p proofOf) bool { return p.ev.Source != trace.SourceFSDiff }) {
		proofs = slices.DeleteFunc(proofs, func(p proofOf) bool { return p.ev.Source == trace.SourceFSDiff })
	}
	return proofs, isProof
}

// matchSecondStage reports the second stage the jail serves for script
// downloads running, judged by where the script came from.
func matchSecondStage(c *ctx, r *Rule) {
	proofs, isProof := secondStageProofs(c)
	var served []*trace.Event
	for i := range c.events {
		e := &c.events[i]
		if x, ok := e.Data.(*trace.HTTPExchange); ok && !isProof[e] &&
			(x.Response == "second-stage" || strings.HasPrefix(x.Response, "file:")) {
			served = append(served, e)
		}
	}
	// Each proof is judged by where its script came from: the last
	// download the jail answered with the script before it, from
	// the host it called back to, or in the same tool call.
	for _, p := range proofs {
		call := c.callOf(p.ev)
		var origin *trace.Event
		for _, e := range served {
			if e.Seq >= p.ev.Seq {
				break
			}
			x := e.Data.(*trace.HTTPExchange)
			switch {
			case p.callback != "" && normHost(x.Host) == p.callback,
				p.callback == "" && c.callOf(e) == call:
				origin = e
			case origin == nil && p.callback == "":
				origin = e
			}
		}
		var urls []string
		switch {
		case origin != nil:
			urls = []string{exchangeURL(origin.Data.(*trace.HTTPExchange))}
		case p.callback != "":
			// the callback names the host only; how the script was
			// fetched is unknown, so it counts as neither plain nor opaque
			urls = []string{"https://" + p.callback + "/"}
		}
		rep := c.judge(urls, call)
		sev, conf, harm := codeClass(rep, false)
		what := "its marker file written"
		if p.callback != "" {
			what = "its callback request made"
		}
		c.hitAs(r, "marker:"+rep.Host, sev, conf, harm, fmt.Sprintf("the second stage served for %s ran: %s", describeRep(rep), what),
			p.ev, origin)
	}
}

// matchDecodedRun reports a literal decoded at run time and fed to an
// interpreter, eval or sh -c.
func matchDecodedRun(c *ctx, r *Rule) {
	for _, cm := range c.cmds {
		call := c.callOf(cm.ev)
		var runs []codeRun
		var walk func(f *shellFacts)
		walk = func(f *shellFacts) {
			for _, run := range f.Runs {
				if run.How == "decoded" {
					runs = append(runs, run)
				}
				if run.Inner != nil {
					walk(run.Inner)
				}
			}
		}
		walk(c.shell(cm.text))
		note := ""
		if reMacOSBase64.MatchString(cm.text) {
			note = " (macOS base64 -D form)"
		}
		for _, run := range runs {
			var urls []string
			network := false
			if run.Inner != nil {
				for _, in := range flattenFacts(run.Inner).Runs {
					if in.How != "decoded" {
						urls = append(urls, in.URLs...)
						network = true
					}
				}
			}
			if network {
				rep := c.judge(urls, call)
				sev, conf, harm := codeClass(rep, true)
				c.hitAs(r, call, sev, conf, harm, fmt.Sprintf("decoded payload run by %s downloads and runs code from %s%s: %q",
					run.Interp, describeRep(rep), note, short(run.Decoded)), cm.ev)
				continue
			}
			msg := fmt.Sprintf("decoded payload run by %s%s: %q", run.Interp, note, short(run.Decoded))
			if run.Decoded == "" {
				msg = fmt.Sprintf("decoded bytes run by %s%s (not decodable here)", run.Interp, note)
			}
			c.hitAs(r, call, High, ConfMedium, HarmNone, msg, cm.ev)
		}
		if len(runs) == 0 {
			if d, ok := decodedDropper(cm.text); ok {
				rep := c.judge(flattenFacts(analyzeShell(d)).urls(), call)
				sev, conf, harm := codeClass(rep, true)
				c.hitAs(r, call, sev, conf, harm, fmt.Sprintf("base64 blob decodes to %q, run%s", short(d), note), cm.ev)
			}
		}
	}
}

// matchMacOSTooling reports the macOS spelling of base64 (-D) and
// Gatekeeper bypasses.
func matchMacOSTooling(c *ctx, r *Rule) {
	for _, cm := range c.cmds {
		if reQuarantine.MatchString(cm.text) {
			c.hit(r, cm.ev.ToolCallID, "macOS tooling: "+short(cm.text), cm.ev)
		}
		if len(cm.argv) > 1 && path.Base(cm.argv[0]) == "base64" && slices.Contains(cm.argv[1:], "-D") {
			c.hit(r, cm.ev.ToolCallID, "macOS base64 -D"+failedNote(cm.fail)+": "+short(cm.text), cm.ev)
		}
	}
}

func orWord(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// urls lists the URLs of the facts' network runs.
func (f *shellFacts) urls() []string {
	var out []string
	for _, r := range f.Runs {
		out = append(out, r.URLs...)
	}
	return out
}

// decodedDropper returns the first base64 blob in s that decodes to a
// command downloading and running code, when s also runs decoded text
// (exec(, eval(, system(, | sh, sh -c).
func decodedDropper(s string) (string, bool) {
	if !reRunsDecoded.MatchString(s) {
		return "", false
	}
	for _, blob := range reB64Blob.FindAllString(s, 20) {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
			b, err := enc.DecodeString(blob)
			if err != nil {
				continue
			}
			d := string(b)
			for _, run := range flattenFacts(analyzeShell(d)).Runs {
				if run.How != "decoded" {
					return d, true
				}
			}
		}
	}
	return "", false
}

// markerMatcher returns a test for the second stage's marker file: the
// marker path, or /tmp/<its name> where the script falls back to.
func (c *ctx) markerMatcher() func(string) bool {
	mp := c.in.MarkerPath
	if mp == "" {
		return nil
	}
	base := path.Base(mp)
	return func(p string) bool {
		if p == "" {
			return false
		}
		if p == "/tmp/"+base {
			return true
		}
		if strings.HasPrefix(mp, "/") {
			return p == mp
		}
		// relative: under the home of whoever ran the second stage
		return strings.HasSuffix(p, "/"+strings.TrimPrefix(mp, "./"))
	}
}

// A pipedPair is a network client and an interpreter reading stdin that
// ran side by side as children of one process.
type pipedPair struct{ fetch, interp *trace.Event }

func (c *ctx) pipedPairs() []pipedPair {
	var out []pipedPair
	for i := range c.events {
		e := &c.events[i]
		x, ok := e.Data.(*trace.Exec)
		if !ok || x.Errno != "" || len(x.Argv) == 0 {
			continue
		}
		ic := argvCmd(x.Argv)
		if !isInterpreter(ic.Name) {
			continue
		}
		if in, _, _ := interpInput(ic.Name, ic.argText()); !in {
			continue
		}
		p := c.tree.Procs[e.PID]
		if p == nil || p.PPID == 0 || c.tree.Procs[p.PPID] == nil {
			continue
		}
		for _, sib := range c.tree.Procs[p.PPID].Children {
			sp := c.tree.Procs[sib]
			if sib == e.PID || sp == nil || !overlap(sp, p) {
				continue
			}
			for _, seq := range sp.Execs {
				fe := c.bySeq[seq]
				if fe == nil {
					continue
				}
				fx, ok := fe.Data.(*trace.Exec)
				if !ok || fx.Errno != "" || !netSource(argvCmd(fx.Argv)) {
					continue
				}
				out = append(out, pipedPair{fetch: fe, interp: e})
			}
		}
	}
	return out
}

// overlap reports two processes alive at the same time.
func overlap(a, b *trace.Proc) bool {
	aEnd, bEnd := a.End, b.End
	if !a.Exited {
		aEnd = b.Start.Add(1)
		if b.End.After(aEnd) {
			aEnd = b.End
		}
	}
	if !b.Exited {
		bEnd = a.Start.Add(1)
		if a.End.After(bEnd) {
			bEnd = a.End
		}
	}
	return !a.Start.After(bEnd) && !b.Start.After(aEnd)
}

// resolveAt makes p absolute against cwd (the home when unknown).
func resolveAt(cwd, p, home string) string {
	switch {
	case p == "":
		return ""
	case strings.HasPrefix(p, "/"):
		return path.Clean(p)
	case p == "~" || strings.HasPrefix(p, "~/"):
		return home + p[1:]
	case cwd == "":
		cwd = home
	}
	return path.Join(cwd, p)
}

// A dlFile is a file that holds downloaded bytes.
type dlFile struct {
	path string
	url  string
	ev   *trace.Event
}

type dlSet struct {
	byPath map[string]*dlFile
	byBase map[string]*dlFile
}

// lookup finds a downloaded file by path, or by name when p is not
// absolute, saved at or before seq.
func (s dlSet) lookup(p string, seq int64) *dlFile {
	d := s.byPath[path.Clean(p)]
	if d == nil && !strings.HasPrefix(p, "/") {
		d = s.byBase[path.Base(p)]
	}
	if d == nil || d.ev.Seq > seq {
		return nil
	}
	return d
}

// downloads collects the files holding downloaded bytes: saved by a
// network client (command text or the client's own writes), then extracted,
// copied or renamed from one.
func (c *ctx) downloads() dlSet {
	s := dlSet{byPath: map[string]*dlFile{}, byBase: map[string]*dlFile{}}
	add := func(p, u string, e *trace.Event) {
		if p == "" || p == "-" || strings.HasPrefix(p, "/dev/") {
			return
		}
		p = path.Clean(p)
		if _, ok := s.byPath[p]; ok {
			return
		}
		d := &dlFile{path: p, url: u, ev: e}
		s.byPath[p] = d
		if b := path.Base(p); s.byBase[b] == nil {
			s.byBase[b] = d
		}
	}
	for _, cm := range c.cmds {
		for _, d := range c.shellAll(cm.text).Downloads {
			add(c.resolve(d.Path), d.URL, cm.ev)
		}
	}
	for _, f := range c.files {
		if f.failed || f.ev.Source != trace.SourceSyscall {
			continue
		}
		p := c.tree.Procs[f.ev.PID]
		switch {
		case f.op == opWrite && fetchers[f.proc] && p != nil:
			add(f.path, first(fetchURLs(argvCmd(p.Argv))), f.ev)
		case f.op == opWrite && extractors[f.proc] && p != nil:
			for _, a := range p.Argv[1:] {
				if d := s.lookup(resolveAt("", a, c.home), f.ev.Seq); d != nil {
					add(f.path, d.url, f.ev)
					break
				}
			}
		case f.op == opRename:
			if d := s.lookup(f.path, f.ev.Seq); d != nil {
				add(f.newPath, d.url, f.ev)
			}
		}
	}
	return s
}

// extractors are programs whose output files carry their input's bytes.
var extractors = set("tar", "bsdtar", "unzip", "7z", "7za", "gunzip", "gzip", "bunzip2", "bzip2", "xz", "unxz",
	"zstd", "cpio", "cp", "mv", "install", "ar", "base64", "xxd", "openssl")
