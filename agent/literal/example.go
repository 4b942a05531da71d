package literal

import (
	"path"
	"regexp"
	"strings"

	"github.com/sandboxctl/sandboxctl/skill"
)

// A reference document of a security skill shows attacks to explain them:
// the payload an attacker puts in a pull request's title, the commands a
// compromised runner runs. Its blocks are what the skill teaches the
// agent to recognise, not steps it asks for, and an agent does not run
// them. Run as steps, they made security reviewers look like the attacks
// they describe (a benign GitHub Actions reviewer was malicious by the
// curl | bash and the token exfiltration of its reference pages).
//
// attackExample reports whether block b of a followed reference (never
// the skill's own instructions) is such an example: its leading comments,
// or the prose line that introduces it, speak of an attacker, an attack,
// an exploit, a backdoor, exfiltration or a vulnerable configuration, or
// the reference is a catalogue of threats (threatCatalogue), and they do
// not describe finding, checking or fixing one ("# Find workflows
// vulnerable to injection" runs).
func attackExample(b skill.Block, prose []string, catalogue bool) bool {
	// the labels, nearest first: the block's leading comments, then the
	// prose line that introduces it; the first that speaks of either side
	// decides
	var label []string
	for _, l := range b.Lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#!") {
			continue
		}
		c, ok := commentText(t)
		if !ok {
			break
		}
		label = append(label, c)
	}
	for i := len(prose) - 1; i >= 0; i-- {
		if t := strings.TrimSpace(prose[i]); t != "" {
			label = append(label, t)
			break
		}
	}
	for _, l := range label {
		switch {
		case defenceWordRE.MatchString(l):
			return false
		case attackWordRE.MatchString(l):
			return true
		}
	}
	return catalogue
}

// threatCatalogue reports whether reference f catalogues threats, by its
// name or its title: "threat-model.md", "# Real-World GitHub Actions
// Attacks", "# Common Vulnerability Patterns".
func threatCatalogue(f *skill.File) bool {
	title := ""
	for _, l := range strings.Split(f.Body(), "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "#") {
			title = t
			break
		}
	}
	return catalogueRE.MatchString(path.Base(f.Path)) || catalogueRE.MatchString(title)
}

// commentText is the text of a comment line of a shell, C-like or
// markup block.
func commentText(t string) (string, bool) {
	for _, p := range []string{"#", "//", "<!--", "--", ";"} {
		if s, ok := strings.CutPrefix(t, p); ok {
			return strings.TrimSpace(s), true
		}
	}
	return "", false
}

// threatLine reports whether a prose line speaks of attacks, theft or
// disguise: the paths it names are targets it warns of ("a skill that
// can disguise reads of ~/.ssh/id_rsa"), not files to read.
func threatLine(line string) bool {
	return attackWordRE.MatchString(line) || threatWordRE.MatchString(line)
}

var (
	threatWordRE = regexp.MustCompile(`(?i)\b(?:disguis\w*|steal\w*|stolen|harvest\w*|misaligned|exfil\w*|infostealer\w*|credential[ -]theft)\b`)
	catalogueRE  = regexp.MustCompile(`(?i)threat|attack|vulnerab|exploit|malicious|red[ _-]?team`)
	attackWordRE = regexp.MustCompile(`(?i)\b(?:attackers?|attacker's|attack|malicious|exploit(?:s|ed|ing)?|backdoor(?:s|ed)?|exfiltrat\w*|vulnerable|inject\w*\s+(?:a\s+|the\s+|its\s+)?payload)\b`)
	// verbs of who looks for, checks or repairs: a block so labelled is
	// the skill's own work
	defenceWordRE = regexp.MustCompile(`(?i)\b(?:find|finds|detect\w*|check\w*|scan\w*|audit\w*|search\w*|identify|look\s+for|list|verify|review\w*|fix\w*|mitigat\w*|prevent\w*|harden\w*|secure|safe\w*|remediat\w*|protect\w*|defen[cs]\w*|test\w*)\b`)
)
