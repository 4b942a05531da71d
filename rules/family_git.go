package rules

import (
	"fmt"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

// GitHosts are the hosts a repository is pushed to for what they are for,
// beside the code hosts and vendors of data/codehosts.tsv and vendors.tsv:
// the forges and the hosting services' git endpoints. netcapture's
// forgeHost lists the same (a test of netcapture keeps the two equal):
// those hosts ask who pushes; any other reads the push before it asks.
var GitHosts = []string{"github.com", "gitlab.com", "bitbucket.org", "codeberg.org", "sr.ht", "dev.azure.com",
	"visualstudio.com", "heroku.com", "huggingface.co", "gitee.com", "amazonaws.com", "source.developers.google.com",
	"ghe.com", "gitea.com", "pagure.io", "launchpad.net", "salsa.debian.org", "sourceforge.net"}

// pushedForUse says whether a push to host is a push to a code host or a
// vendor's git endpoint.
func pushedForUse(host string) bool {
	if hostIn(host, GitHosts) {
		return true
	}
	switch ReputationOf(host, "").Tier {
	case TierVendor, TierCodeHost:
		return true
	}
	return false
}

// docHosts are names reserved for documentation and tests (RFC 2606,
// RFC 6761): a push there is a placeholder the driver kept, not a place.
var docHosts = []string{"example.com", "example.org", "example.net", "example", "test", "invalid", "localhost"}

// hostIn says whether host is one of list or under one of them.
func hostIn(host string, list []string) bool {
	host = normHost(host)
	for _, h := range list {
		if host == h || strings.HasSuffix(host, "."+h) {
			return true
		}
	}
	return false
}

func gitRules() {
	def(Rule{ID: "SBX-EXFIL-008", Family: "exfiltration", Title: "Repository pushed to a host that is not a code host",
		Severity: High, Confidence: ConfHigh, Technique: "T1567.001", Harm: HarmExfil,
		Help: "A git push sent commits (a pack, or refs) to a host that is not a forge or a hosting " +
			"service's git endpoint (GitHub, GitLab, Bitbucket, Codeberg, Azure DevOps, Heroku, Hugging " +
			"Face, CodeCommit, ...): the user's repository, its history and whatever was ever committed to " +
			"it, handed to a server nobody configured as one of its remotes. The jail's git sink takes a " +
			"push to such a host without credentials, as a server set up to receive repositories does, " +
			"so the push and its objects are on record. To a name reserved for documentation " +
			"(example.com, *.test) it is a placeholder the driver kept: medium, no harm."},
		func(c *ctx, r *Rule) {
			for i := range c.events {
				e := &c.events[i]
				g, ok := e.Data.(*trace.GitExchange)
				if !ok || g.Service != "git-receive-pack" || g.Phase != "rpc" || len(g.Refs) == 0 && g.PackSize == 0 {
					continue
				}
				host, _ := hostPath(g.Repo)
				if host == "" || pushedForUse(host) {
					continue
				}
				msg := fmt.Sprintf("git push of %d ref(s), %d objects (%d bytes) to %s", len(g.Refs), g.Objects, g.PackSize, g.Repo)
				if hostIn(host, docHosts) {
					c.hitAs(r, host, Medium, ConfMedium, HarmNone, msg+" (a documentation name: a placeholder)", e)
					continue
				}
				c.hit(r, host, msg, e)
			}
		})
}
