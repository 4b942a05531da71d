package rules

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/sandboxctl/sandboxctl/trace"
)

// reSafeguardsOff finds settings that switch an agent's safeguards off:
// permission prompts bypassed or every tool allowed (Claude Code), approval
// never asked and the sandbox off (Codex), "yolo" modes (Gemini CLI,
// Cursor), sandboxing disabled.
var reSafeguardsOff = regexp.MustCompile(`(?i)bypassPermissions|dangerously[-_]?skip[-_]?permissions|skipDangerousModePermissionPrompt|` +
	`"allow"\s*:\s*\[\s*"(?:\*|Bash|Bash\(\*(?::\*)?\)|\*\(\*\))"|` +
	`approval_policy\s*=\s*"never"|danger-full-access|"?(?:yolo|yoloMode|autoAccept)"?\s*[:=]\s*true|` +
	`"sandbox"\s*:\s*\{[^}]*"enabled"\s*:\s*false|"enableAllProjectMcpServers"\s*:\s*true|` +
	`"(?:default|defaultPolicy|defaultAction|policy)"\s*:\s*"allow(?:[-_ ]?all)?"|` +
	`"(?:allow_?all_?tools|allowAllTools|skip_?confirmations?|skipConfirmations?|auto_?approve(?:_?all)?|autoApprove(?:All)?|confirm_?nothing)"\s*:\s*true`)

// safeguardPaths are agent configuration files that hold permission and
// sandbox settings.
var safeguardPaths = pathSet{
	"**/.claude/settings.json", "**/.claude/settings.local.json", "~/.claude.json", "**/.mcp.json",
	"~/.codex/**", "~/.gemini/**", "**/.gemini/settings.json", "~/.cursor/**", "**/.cursor/**",
	"~/.openclaw/**", "~/.clawdbot/**", "**/.vscode/settings.json",
}

func agentRules() {
	def(Rule{ID: "SBX-AGENT-001", Family: "defense-evasion", Title: "Agent safeguards disabled",
		Severity: Critical, Confidence: ConfHigh, Technique: "T1562.001", Harm: HarmSafeguards,
		Help: "The skill wrote agent configuration that switches the agent's own safeguards off: " +
			"permission prompts bypassed (defaultMode bypassPermissions, --dangerously-skip-permissions), " +
			"every tool or every command allowed (\"allow\": [\"*\"], Bash(*), allow_all_tools, skip_confirmation: true), approvals never asked or " +
			"the sandbox turned off (Codex approval_policy never, danger-full-access; sandbox enabled " +
			"false), \"yolo\" modes, or an allow-all default policy. Judged on what was written (file " +
			"tool content, the command that wrote the file, the changed file's head)."},
		func(c *ctx, r *Rule) {
			for _, f := range c.files {
				if f.op != opWrite && f.op != opRename {
					continue
				}
				target := f.path
				if f.op == opRename {
					target = f.newPath
				}
				if _, ok := c.matchPath(safeguardPaths, target); !ok || c.underSkill(target) {
					continue
				}
				for _, text := range c.writtenText(f.ev, target) {
					if m := reSafeguardsOff.FindString(text); m != "" {
						msg := fmt.Sprintf("%s written with %s%s", target, capString(m, 60), failedNote(f.failed))
						if tempPath(target) {
							// a container's or a staged copy's home: no
							// agent of the user's loads it from there
							c.hitAs(r, target, Low, ConfMedium, r.Harm, msg+" (in a temporary folder: no agent of the user's loads it)", f.ev)
							break
						}
						c.hit(r, target, msg, f.ev)
						break
					}
				}
			}
		})
}

// writtenText returns what may have been written to p by the action of
// event e: a file tool's content, the commands of e's tool call, the head
// of the changed file in the file-system diff.
func (c *ctx) writtenText(e *trace.Event, p string) []string {
	if c.callText == nil {
		// one pass: the texts of each call and the heads of changed files
		c.callText, c.heads = map[string][]string{}, map[string][]string{}
		for i := range c.events {
			x := &c.events[i]
			switch d := x.Data.(type) {
			case *trace.ToolCall:
				// the arguments as sent, and the text a file tool wrote
				// or a command ran, unescaped: JSON escapes the quotes
				// that settings are written with
				c.callText[d.ID] = append(c.callText[d.ID], string(d.Arguments))
				if a := decodeArgs(d); a.Content != "" || a.Command != "" {
					c.callText[d.ID] = append(c.callText[d.ID], a.Content+a.Command)
				}
			case *trace.Exec:
				if x.ToolCallID != "" && len(c.callText[x.ToolCallID]) < 200 {
					c.callText[x.ToolCallID] = append(c.callText[x.ToolCallID], strings.Join(d.Argv, " "))
				}
			case *trace.FSChange:
				if len(d.Head) > 0 {
					c.heads[d.Path] = append(c.heads[d.Path], string(d.Head))
					if int64(len(d.Head)) >= d.Size {
						if c.whole == nil {
							c.whole = map[string]bool{}
						}
						c.whole[d.Path] = true
					}
				}
			}
		}
	}
	var out []string
	if call := c.callOf(e); call != "" {
		out = append(out, c.callText[call]...)
	}
	return append(out, c.heads[p]...)
}

// callNames says whether the text of the call that made e names the file p
// (its base name): a shell's echo, tee or redirect into it does; a program
// that writes files of its own (python3 -m venv writing setuptools' .pth)
// does not.
func (c *ctx) callNames(e *trace.Event, p string) bool {
	c.writtenText(e, p) // fills callText
	call := c.callOf(e)
	return call != "" && slices.ContainsFunc(c.callText[call], func(t string) bool { return strings.Contains(t, path.Base(p)) })
}
