package rules

import (
	"encoding/base64"
	"encoding/binary"
	"regexp"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

// Persistence judged on what was written where it can be read: a shell rc
// line, an agent hook or an instruction file that runs fetched or decoded
// code, or tells the agent to hide or skip its checks, is harm with high
// confidence; content that is known and does none of that (a PATH export,
// a formatter hook, project notes) is reported at low confidence; unknown
// content keeps the rule's own severity.

// rePersistBad finds what makes written persistence dangerous: code from
// the network or decoded at run time, programs in temporary or hidden
// places, detached background jobs, and instructions that turn the agent
// against its user.
var (
	rePersistCode = regexp.MustCompile(`(?i)\b(?:curl|wget|nc|ncat|socat)\b[^\n]*(?:https?://|\d+\.\d+\.\d+\.\d+)|base64\s+-[dD]|\bxxd\s+-r|/dev/tcp/|` +
		`(?:^|[\s;"'=])(?:/tmp|/dev/shm|/var/tmp|~/\.[a-z0-9_-]+/\.)[^\s"']*|\bnohup\b|\bsetsid\b|\bdisown\b|python3?\s+-c|\bLD_PRELOAD\b|` +
		`\balias\s+(?:sudo|ssh|git|ls|cd)=`)
	rePersistInstr = regexp.MustCompile(`(?i)ignore (?:all )?(?:previous|prior|earlier) instructions|do not (?:tell|inform|mention|show)|without (?:asking|confirm|telling|notif)|` +
		`pre-?approved|auto-?approve|always (?:approve|allow|run|accept)|never ask|skip (?:the )?(?:confirmation|review|checks?)|` +
		`(?:send|post|upload|forward)[^\n]{0,60}(?:https?://|webhook|endpoint)|exfiltrat|` +
		`(?:disable|turn off|bypass)[^\n]{0,40}(?:safety|security|guard|sandbox|permission)|` +
		`(?:perform|run|execut|do|done|collect|gather|read|sen[dt]|upload|carri)\w*\s+(?:silently|covertly|secretly)|` +
		`(?:silently|covertly|secretly)\s+(?:run|read|collect|gather|send|upload|execute|perform|include|post|copy)|` +
		`same authority as (?:the )?user|(?:hide|conceal)[^\n]{0,30}from the user`)
)

// rePlaceholder finds example entries: a scheduled command that is a
// documentation placeholder (/path/to/script.sh, <your-script>) installs
// nothing anyone wrote.
var rePlaceholder = regexp.MustCompile(`(?i)/path/to/|<[a-z][a-z0-9 _-]*>|\byour[_-](?:script|command|job|task)\b`)

// persistHit records a write to a persistence surface, rated by what was
// written (SBX-PERSIST-001, -002, -003, -006, -008 and git hooks of -005;
// the others keep their rating).
func (c *ctx) persistHit(r *Rule, target string, f fileOp) {
	msg := "write to " + target + failedNote(f.failed)
	// An agent loads its project files (.mcp.json, CLAUDE.md, .vscode/)
	// from the folder it works in: a copy staged in a temporary folder (a
	// deploy tool unpacking the project to archive it) is loaded by none.
	if slices.Contains([]string{"SBX-PERSIST-006", "SBX-PERSIST-007", "SBX-PERSIST-008"}, r.ID) && tempPath(target) {
		c.hitAs(r, target, Low, ConfMedium, r.Harm, msg+" (in a temporary folder: a staged copy no agent loads)", f.ev)
		return
	}
	switch {
	case slices.Contains([]string{"SBX-PERSIST-001", "SBX-PERSIST-002", "SBX-PERSIST-003", "SBX-PERSIST-006", "SBX-PERSIST-008"}, r.ID):
	case r.ID == "SBX-PERSIST-005" && strings.Contains(target, "/.git/hooks/"):
		// a hook is a script: judged on what it runs, like an rc file
	case r.ID == "SBX-PERSIST-004":
		c.writtenText(f.ev, target) // fills c.callText
		if keys := sshKeysIn(c.callText[c.callOf(f.ev)]); keys.placeholder && !keys.real {
			c.hitAs(r, target, Low, ConfMedium, r.Harm, msg+" (a documentation placeholder key: it lets nobody in)", f.ev)
			return
		}
		c.hit(r, target, msg, f.ev)
		return
	default:
		c.hit(r, target, msg, f.ev)
		return
	}
	// what it runs includes a script the trace wrote that it names (a
	// hook calling ./scripts/check.sh)
	texts := c.writtenText(f.ev, target)
	c.ratePersistence(r, target, msg, append(texts, c.referencedHeads(texts)...), f.ev)
}

// persistCmdHit records a command that installs persistence (crontab,
// systemctl enable, git config hooks), rated by what it installs.
func (c *ctx) persistCmdHit(r *Rule, cm cmdRef) {
	key, msg := "cmd:"+cm.ev.ToolCallID, "command: "+short(cm.text)
	switch r.ID {
	case "SBX-PERSIST-002", "SBX-PERSIST-003":
		texts := c.shellAll(cm.text).CronLines
		if len(texts) == 0 {
			texts = []string{cm.text}
		}
		c.ratePersistence(r, key, msg, texts, cm.ev)
	default:
		c.hit(r, key, msg, cm.ev)
	}
}

// ratePersistence rates a persistence finding by the texts that may have
// been installed: harmful content is high with high confidence; for
// scheduled tasks and services, a documentation placeholder is low and
// other content keeps high with medium confidence; for rc files, agent
// configuration and memory, known harmless content is medium with low
// confidence; unknown content keeps the rule's rating.
func (c *ctx) ratePersistence(r *Rule, key, msg string, texts []string, ev *trace.Event) {
	scheduled := r.ID == "SBX-PERSIST-002" || r.ID == "SBX-PERSIST-003"
	known := false
	for _, t := range texts {
		if strings.TrimSpace(t) == "" {
			continue
		}
		known = true
		bad := rePersistCode.FindString(t)
		if bad == "" && r.ID == "SBX-PERSIST-008" {
			bad = rePersistInstr.FindString(t)
		}
		if bad == "" && len(c.shellAll(t).Runs) > 0 {
			bad = "code fetched or decoded at run time"
		}
		if bad != "" {
			c.hitAs(r, key, High, ConfHigh, r.Harm, msg+": "+capString(oneLine(bad), 60), ev)
			return
		}
	}
	switch {
	case scheduled && known && slices.ContainsFunc(texts, rePlaceholder.MatchString):
		c.hitAs(r, key, Low, ConfMedium, r.Harm, msg+" (a documentation placeholder)", ev)
	case scheduled:
		c.hitAs(r, key, High, ConfMedium, r.Harm, msg, ev)
	case known:
		c.hitAs(r, key, Medium, ConfLow, r.Harm, msg+" (nothing in it runs fetched code or turns the agent against its user)", ev)
	default:
		c.hit(r, key, msg, ev)
	}
}

// reSSHKey finds public keys as authorized_keys lines write them: a type
// and a base64 blob (or what stands for one in documentation).
var reSSHKey = regexp.MustCompile(`\b(ssh-(?:rsa|dss|ed25519)|ecdsa-sha2-nistp(?:256|384|521)|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)\s+([A-Za-z0-9+/=.]+)`)

type keyKinds struct{ real, placeholder bool }

// sshKeysIn reports whether texts hold a public key that could let someone
// in (its blob decodes and names its own type, as ssh-keygen writes it)
// or only placeholders ("ssh-rsa AAAA...", "ssh-ed25519 AAAAC3...xyz").
func sshKeysIn(texts []string) keyKinds {
	var k keyKinds
	for _, t := range texts {
		for _, m := range reSSHKey.FindAllStringSubmatch(t, -1) {
			if validKeyBlob(m[1], m[2]) {
				k.real = true
			} else {
				k.placeholder = true
			}
		}
	}
	return k
}

// validKeyBlob reports whether blob is the base64 of an SSH public key of
// type typ: a length-prefixed type name first, then key material.
func validKeyBlob(typ, blob string) bool {
	b, err := base64.StdEncoding.DecodeString(blob)
	if err != nil || len(b) < 4+len(typ)+16 {
		return false
	}
	n := int(binary.BigEndian.Uint32(b))
	return n == len(typ) && string(b[4:4+n]) == typ
}

// tempPath reports whether p is in a system temporary folder.
func tempPath(p string) bool {
	for _, d := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}
