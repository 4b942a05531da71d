package rules

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/persona"
	"github.com/sandboxctl/sandboxctl/trace"
)

// macOS rules: what a skill written for a Mac asks of macOS's own tools.
// They match on the command, so they fire under either persona (on Linux
// the command is missing and the attempt alone is the evidence); under the
// macOS persona the tool is a recording shim and the attempt succeeds.

var (
	// reKeychainRead asks the keychain for secrets: a password printed (-w,
	// -g), every item with its data (dump-keychain -d), or the keychain
	// exported.
	reKeychainRead = regexp.MustCompile(`\bsecurity\s+(?:-\S+\s+)*(?:find-(?:generic|internet)-password\b[^|;&]*\s-[a-zA-Z]*[wg][a-zA-Z]*\b|dump-keychain\b[^|;&]*\s-[a-z]*d[a-z]*\b|export\b)`)
	// rePasswordPrompt is a dialog asking for a password (or a hidden
	// answer) through AppleScript, or a password checked against the
	// directory service: how macOS stealers phish the login password.
	rePasswordPrompt = regexp.MustCompile(`(?is)\bosascript\b.*\bdisplay\s+dialog\b.*(?:hidden\s+answer|pass(?:word|code|phrase))|\bdscl\s+\S+\s+-?authonly\b`)
)

func macRules() {
	def(Rule{ID: "SBX-MAC-001", Family: "credential-access", Title: "macOS keychain secrets requested",
		Severity: High, Confidence: ConfMedium, Technique: "T1555.001",
		Help: "`security find-generic-password -w` (or -g), `find-internet-password -w`, `dump-keychain -d` " +
			"or `security export`: the command-line way to take passwords, browser keys (\"Chrome Safe " +
			"Storage\") and tokens out of the login keychain. Under --persona macos the keychain holds " +
			"planted secrets, so whether they then leave shows in the canary findings."},
		commandMatch(reKeychainRead, "", "keychain read: "))
	def(Rule{ID: "SBX-MAC-002", Family: "credential-access", Title: "Password asked for in a dialog (AppleScript)",
		Severity: High, Confidence: ConfMedium, Technique: "T1056.002",
		Help: "An `osascript` dialog asking for a password or a hidden answer, or `dscl . -authonly` " +
			"checking one: macOS stealers phish the login password this way to unlock the keychain. Under " +
			"--persona macos the dialog answers with a planted password, so its later use or exfiltration " +
			"shows."},
		commandMatch(rePasswordPrompt, "", "password prompt: "))
	def(Rule{ID: "SBX-MAC-003", Family: "environment", Title: "macOS tool emulated by the sandbox",
		Severity: Info, Confidence: ConfHigh, Technique: "T1082",
		Help: "The skill ran a macOS command (security, osascript, sw_vers, uname, base64, launchctl, ...) " +
			"that the macOS persona provides as a recording shim. What the shim answered is the sandbox's, " +
			"not a real Mac's: judge later steps with that in mind."},
		func(c *ctx, r *Rule) {
			used := map[string][]*trace.Event{}
			for i := range c.events {
				e := &c.events[i]
				if d, ok := e.Data.(*trace.Exec); ok && d.Errno == "" {
					if cmd, shim := persona.IsShim(d.Path); shim {
						used[cmd] = append(used[cmd], e)
					}
				}
			}
			names := make([]string, 0, len(used))
			for n := range used {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, n := range names {
				evs := used[n]
				c.hit(r, n, fmt.Sprintf("%s (%s) ran %d time(s) as the persona's shim: %s", n,
					path.Clean(evs[0].Data.(*trace.Exec).Path), len(evs), short(strings.Join(evs[0].Data.(*trace.Exec).Argv, " "))), evs...)
			}
		})
}
