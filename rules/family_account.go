package rules

// Account changes through a planted credential (SBX-PERSIST-010). A skill
// that uses the user's token against its own issuer to let someone else in
// (an SSH or deploy key added, a collaborator, an IAM user or access key
// made) has taken the account over: the access outlives the session and
// the machine, as an authorized_keys line does, so its harm class is
// persistence. Which requests change an account is data
// (data/account-changes.tsv, each line with its source); the request must
// be a credential used with its own service (ownservice.go): a token sent
// anywhere else is already SBX-EXFIL-001.

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

// Classes of account-changes.tsv.
const (
	changeKey     = "key"
	changeGrant   = "grant"
	changeSuspect = "suspect"
)

// An accountChange is one line of data/account-changes.tsv.
type accountChange struct {
	host   *regexp.Regexp
	method string
	path   []string // segments; "*" one, a final "**" any rest
	action string   // the Action parameter, "" for none
	param  string   // a parameter the request must also carry
	class  string
	what   string
	source string
}

var accountChanges = mustAccountChanges()

func mustAccountChanges() []accountChange {
	var out []accountChange
	for i, f := range dataLines("data/account-changes.tsv", 7) {
		if !slices.Contains([]string{changeKey, changeGrant, changeSuspect}, f[4]) || f[5] == "" || f[6] == "" || !strings.HasPrefix(f[2], "/") {
			panic(fmt.Sprintf("rules: account-changes.tsv line %d: want host, method, path, action, class (key, grant, suspect), what, source", i+1))
		}
		ac := accountChange{host: hostGlob(f[0]), method: strings.ToUpper(f[1]), class: f[4], what: f[5], source: f[6]}
		ac.path = strings.Split(strings.Trim(f[2], "/"), "/")
		if f[3] != "-" {
			ac.action, ac.param, _ = strings.Cut(f[3], "+")
		}
		out = append(out, ac)
	}
	return out
}

// matchPath reports whether a URL path matches the segments of a line.
func matchPath(want []string, p string) bool {
	got := strings.Split(strings.Trim(p, "/"), "/")
	for i, w := range want {
		if w == "**" && i == len(want)-1 {
			return true
		}
		if i >= len(got) || w != "*" && !strings.EqualFold(w, got[i]) || w == "*" && got[i] == "" {
			return false
		}
	}
	return len(got) == len(want)
}

// requestParams returns the parameters of a query API request: the URL's
// query and a form-encoded body's, first value of each name.
func requestParams(x *trace.HTTPExchange) map[string]string {
	out := map[string]string{}
	add := func(q url.Values) {
		for k, vs := range q {
			if _, ok := out[k]; !ok && len(vs) > 0 {
				out[k] = vs[0]
			}
		}
	}
	if u, err := url.Parse(x.URL); err == nil {
		add(u.Query())
	}
	if q, err := url.ParseQuery(string(x.Body)); err == nil && len(x.Body) > 0 {
		add(q)
	}
	return out
}

// accountChangeOf returns the line x matches, sent to host.
func accountChangeOf(host string, x *trace.HTTPExchange) (accountChange, bool) {
	_, p := hostPath(x.URL)
	var params map[string]string
	for _, ac := range accountChanges {
		if !ac.host.MatchString(host) || ac.method != "*" && !strings.EqualFold(ac.method, x.Method) || !matchPath(ac.path, p) {
			continue
		}
		if ac.action != "" {
			if params == nil {
				params = requestParams(x)
			}
			if params["Action"] != ac.action || ac.param != "" && params[ac.param] == "" {
				continue
			}
		}
		return ac, true
	}
	return accountChange{}, false
}

// keyOrigin says whose key a request that adds a key gives access: the
// home's own ("home"), one ssh-keygen made in this trace ("made"), only a
// documentation placeholder ("placeholder"), or someone else's ("").
func (c *ctx) keyOrigin(x *trace.HTTPExchange) string {
	texts := []string{string(x.Body)}
	for _, p := range requestParts(x) {
		texts = append(texts, p.value)
	}
	blobs := sshBlobs(texts...)
	if len(blobs) == 0 {
		if keys := sshKeysIn(texts); keys.placeholder {
			return "placeholder"
		}
		return ""
	}
	home, made := c.homeKeyBlobs(), c.keygenBlobs()
	origin := "home"
	for _, b := range blobs {
		switch {
		case slices.Contains(home, b):
		case slices.Contains(made, b):
			origin = "made"
		default:
			return ""
		}
	}
	return origin
}

func accountRules() {
	def(Rule{ID: "SBX-PERSIST-010", Family: "persistence", Title: "Account access added through a planted credential",
		Severity: Critical, Confidence: ConfHigh, Technique: "T1098", Harm: HarmPersistence,
		Help: "A planted credential was used with its own issuer's API (the name the jail resolved, the " +
			"credential where the issuer takes it: SBX-EXFIL-006) to change who can get into the account " +
			"(rules/data/account-changes.tsv, each request with its source): an SSH or deploy key added " +
			"(GitHub POST /user/keys, /repos/*/*/keys), a collaborator, an organisation member or an e-mail " +
			"address added, a repository transferred, an IAM user, its password, access key or policy made " +
			"(CreateUser, CreateLoginProfile, CreateAccessKey for a user, AttachUserPolicy...). The access " +
			"outlives the session and the machine, as an authorized_keys line does: harm. A key that is one " +
			"of the home's own is the user's key on the user's account (low); one ssh-keygen made in the " +
			"trace is medium (whoever holds its private half gets in); a documentation placeholder lets " +
			"nobody in (low). Webhooks, signing keys, roles and a new key of the caller's own, which deploy " +
			"and CI setups also make, are high with medium confidence (suspicious). Reading the account " +
			"(GET /user) is not a change."},
		func(c *ctx, r *Rule) {
			// every hit, not SBX-EXFIL-006's evidence: that is capped, and
			// a token used a hundred times before the change would hide it
			for _, e := range c.hits {
				c.accountChange(r, e)
			}
		})
}

// accountChange reports canary hit e when its request changes who can get
// into the account (SBX-PERSIST-010).
func (c *ctx) accountChange(r *Rule, e *trace.Event) {
	h := e.Data.(*trace.CanaryHit)
	u, ok := c.ownUseOf(h)
	if !ok || !u.own {
		return
	}
	ac, ok := accountChangeOf(u.dest.host, u.x)
	if !ok {
		return
	}
	src := c.bySeq[h.EventSeq]
	_, p := hostPath(u.x.URL)
	key := fmt.Sprintf("%d", h.EventSeq)
	msg := fmt.Sprintf("%s with the %s planted at %s: %s %s%s", ac.what, h.Kind, h.Location,
		strings.ToUpper(u.x.Method), u.dest.host, p)
	if ac.action != "" {
		msg += " Action=" + ac.action
	}
	switch ac.class {
	case changeSuspect:
		c.hitAs(r, key, High, ConfMedium, HarmNone, msg, e, src)
	case changeKey:
		switch c.keyOrigin(u.x) {
		case "home":
			c.hitAs(r, key, Low, ConfMedium, HarmNone, msg+" (one of the home's own keys: the user's key on the user's account)", e, src)
		case "made":
			c.hitAs(r, key, Medium, ConfMedium, HarmNone, msg+" (a key ssh-keygen made in this trace: whoever holds its private half gets in)", e, src)
		case "placeholder":
			c.hitAs(r, key, Low, ConfMedium, HarmNone, msg+" (a documentation placeholder key: it lets nobody in)", e, src)
		default:
			c.hit(r, key, msg+" (a key neither the home holds nor the trace made)", e, src)
		}
	default:
		c.hit(r, key, msg, e, src)
	}
}
