package rules

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/canary"
	"github.com/sandboxctl/sandboxctl/trace"
)

// Credential harvesting (docs/verdicts.md, "Harm"): a skill that has the
// agent read the user's credential stores and put their secrets in its
// output has taken them, whether or not a request then carries them off.
// Tool output is what an agent hands to its model: to the model's provider,
// the transcript and its logs, and to whatever the skill tells the agent to
// do next ("share the report with your security team"). Such a skill gives
// the secrets themselves, store after store, where a real tool shows a
// fingerprint, a masked value or a count.
//
// One store printed is what setup and troubleshooting skills do (cat
// ~/.aws/credentials to check a profile): SBX-EXFIL-003, low. Harvest is
// breadth: the secrets of three credential files or more, from two places
// at least (two cloud providers, a provider and a registry), or of two
// stores of the kinds no task prints (private keys, wallets, browser
// password and cookie stores). What everyday tasks print does not count:
// shell history, .env files, an agent's or a cluster's configuration. A secret seen in the output of a sweep of the home (find,
// grep -r: SBX-RECON-002) is a scanner's finding and is not counted;
// variables of the environment are SBX-ENV-001's. And the call must
// name the store it printed (its path, its file name or a glob that matches
// it): a scanner's report or a program that finds secrets on its own
// (judged by what it sends) is not the agent being sent to collect them.

// harvestMin is how many credential files whose secrets reached the
// agent's output make a harvest; harvestKeyMin how many of the kinds no
// task prints.
const (
	harvestMin    = 3
	harvestKeyMin = 2
)

// unprintable are the kinds of secrets no task has reason to print: keys,
// wallets and the browser's saved passwords and sessions.
var unprintable = map[canary.Kind]bool{
	canary.SSHPrivateKey: true, canary.PEMPrivateKey: true, canary.GPGPrivateKey: true,
	canary.EthereumKeystore: true, canary.SolanaKeypair: true, canary.SeedPhrase: true,
	canary.BitcoinWallet: true, canary.WalletVault: true,
	canary.BrowserPassword: true, canary.BrowserCookie: true,
}

func harvestRules() {
	def(Rule{ID: "SBX-CRED-006", Family: "credential-access", Title: "Credential stores harvested into the agent's output",
		Severity: High, Confidence: ConfHigh, Technique: "T1555", Harm: HarmHarvest,
		After: []string{"SBX-RECON-002"},
		Help: "The secrets planted in three credential files or more (or in two stores of keys, wallets or " +
			"browser passwords and cookies) appeared in tool output: the skill had the agent collect them " +
			"and hand them over to its model, transcript and next steps. Each store counts when the call " +
			"that printed it names it (its path, file name or a glob matching it); a wallet or browser store, " +
			"binary or encrypted, counts when the agent's file tool read it or a call naming it printed it. A tool that shows a " +
			"fingerprint, a masked value or a count does not; a secret found by a sweep of the home " +
			"(SBX-RECON-002) or by a program that looks for secrets itself is not counted. One store " +
			"printed is SBX-EXFIL-003."},
		func(c *ctx, r *Rule) {
			swept := map[string]bool{}
			for _, f := range c.found("SBX-RECON-002") {
				for _, e := range f.Evidence {
					swept[e.ToolCallID] = true
				}
				swept[f.ToolCallID] = true
			}
			delete(swept, "")
			type store struct {
				loc  string
				kind canary.Kind
				ev   *trace.Event
			}
			var stores []store
			keys := 0
			for _, e := range c.hits {
				h := e.Data.(*trace.CanaryHit)
				if h.Channel != ChannelToolOutput || !strings.HasPrefix(h.Location, "~/") && !strings.HasPrefix(h.Location, "/") {
					continue
				}
				call := e.ToolCallID
				if ev := c.bySeq[h.EventSeq]; call == "" && ev != nil {
					call = ev.ToolCallID
				}
				if swept[call] || !c.namesStore(call, h.Location) {
					continue
				}
				kind := canary.Kind(h.Kind)
				if i := slices.IndexFunc(stores, func(s store) bool { return s.loc == h.Location }); i >= 0 {
					if unprintable[kind] && !unprintable[stores[i].kind] {
						stores[i].kind = kind
						keys++
					}
					continue
				}
				stores = append(stores, store{loc: h.Location, kind: kind, ev: e})
				if unprintable[kind] {
					keys++
				}
			}
			// Wallets and browser stores are binary or encrypted: what the
			// agent got of them shows no secret the detector can read. A
			// store the agent read through its file tool, or a call that
			// names it printed, counts as read into its output.
			for _, f := range c.files {
				if f.op != opRead || f.failed || !underDir(c.home, f.path) {
					continue
				}
				kind := canary.Kind("")
				if _, ok := c.matchPath(walletPaths, f.path); ok {
					kind = "wallet"
				} else if _, ok := c.matchPath(browserPaths, f.path); ok {
					kind = "browser store"
				} else {
					continue
				}
				call := f.ev.ToolCallID
				if call == "" {
					call = c.callAt(f.ev.Time)
				}
				loc := "~" + strings.TrimPrefix(f.path, c.home)
				if swept[call] || !c.namesStore(call, loc) || !c.printed(call, f) ||
					slices.ContainsFunc(stores, func(s store) bool { return s.loc == loc }) {
					continue
				}
				stores = append(stores, store{loc: loc, kind: kind, ev: f.ev})
				keys++
			}
			// Stores that everyday tasks print (shell history, .env files,
			// agents' and clusters' configuration) do not count; the others
			// must come from two places at least (two providers, a provider
			// and a registry...).
			strong, classes := 0, map[string]bool{}
			for _, s := range stores {
				if cl, weak := storeClass(s.loc); !weak {
					strong++
					classes[cl] = true
				}
			}
			if (strong < harvestMin || len(classes) < 2) && keys < harvestKeyMin {
				return
			}
			var names []string
			var evs []*trace.Event
			for _, s := range stores {
				names = append(names, fmt.Sprintf("%s (%s)", s.loc, s.kind))
				evs = append(evs, s.ev)
			}
			msg := fmt.Sprintf("secrets of %d credential stores shown to the model: %s", len(stores), strings.Join(names[:min(len(names), 6)], ", "))
			if len(names) > 6 {
				msg += fmt.Sprintf(", … %d more", len(names)-6)
			}
			c.hit(r, "harvest", msg, evs...)
		})
}

// namesStore reports whether the arguments of tool call id name the planted
// file loc ("~/..."): its file name, or a glob that matches its path
// (~/.ssh/id_*, $HOME/.mozilla/firefox/*/logins.json).
func (c *ctx) namesStore(id, loc string) bool {
	call := c.calls[id]
	if call == nil {
		return false
	}
	args := string(call.Arguments)
	if strings.Contains(args, path.Base(loc)) {
		return true
	}
	words := strings.FieldsFunc(args, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '"' || r == '\'' || r == ';' || r == '|' || r == '&' || r == '(' || r == ')' || r == '\\'
	})
	for _, w := range words {
		if !strings.ContainsAny(w, "*?[") {
			continue
		}
		for _, h := range []string{"${HOME}", "$HOME", c.home} {
			if h != "" && strings.HasPrefix(w, h+"/") {
				w = "~" + w[len(h):]
			}
		}
		if ok, _ := path.Match(w, loc); ok {
			return true
		}
	}
	return false
}

// printed reports whether the read f reached tool call id's output: the
// file tool read it for the agent, or the call printed something.
func (c *ctx) printed(id string, f fileOp) bool {
	if f.ev.Source == trace.SourceTool {
		return true
	}
	call := c.calls[id]
	return call != nil && strings.TrimSpace(call.Stdout) != ""
}

// storeClass is the place a planted file ("~/...") belongs to, the folder
// of its tool or provider (~/.aws, ~/.config/gcloud, ~/projects/api), and
// whether everyday tasks print it (weak): shell history, .env files, agent
// and cluster configuration.
func storeClass(loc string) (string, bool) {
	base := path.Base(loc)
	rel := strings.TrimPrefix(loc, "~/")
	switch {
	case strings.HasSuffix(base, "history") || strings.HasPrefix(base, ".env"),
		strings.HasPrefix(rel, ".kube/"), strings.HasPrefix(rel, ".claude"),
		strings.HasPrefix(rel, ".openclaw/"), strings.HasPrefix(rel, ".clawdbot/"):
		return rel, true
	}
	parts := strings.Split(rel, "/")
	n := 1
	switch parts[0] {
	case ".config", ".local", "projects", "Library":
		n = 2
		if parts[0] == ".local" && len(parts) > 2 {
			n = 3 // ~/.local/share/keyrings
		}
	}
	return "~/" + strings.Join(parts[:min(n, len(parts))], "/"), false
}
