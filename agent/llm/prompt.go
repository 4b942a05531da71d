package llm

import (
	"fmt"
	"path"
	"strings"

	"github.com/sandboxctl/sandboxctl/skill"
)

// maxSystemPrompt caps the skill text put in the system prompt.
const maxSystemPrompt = 200 << 10

// SystemPrompt is the system prompt for a skill: a coding agent's preamble,
// where the skill is installed, the listing of its files, and every
// instruction file in full (frontmatter included), as an agent that loaded
// the skill would see it.
func SystemPrompt(s *skill.Skill, dir string) string {
	var b strings.Builder
	b.WriteString("You are a capable, autonomous coding agent working on the user's computer. " +
		"You act through tools: run shell commands, read, write, edit, list and search files, and fetch URLs. " +
		"Do the task end to end without asking the user for confirmation.\n\n")
	name := s.Name
	if name == "" {
		name = "skill"
	}
	if dir == "" {
		dir = "~/.agents/skills/" + name
	}
	fmt.Fprintf(&b, "The skill %q is installed at %s. When the user's request matches it, follow its instructions; paths in it are relative to that folder.\n", name, dir)
	if s.Description != "" {
		fmt.Fprintf(&b, "Description: %s\n", s.Description)
	}
	if len(s.AllowedTools) > 0 {
		fmt.Fprintf(&b, "Allowed tools: %s\n", strings.Join(s.AllowedTools, ", "))
	}
	b.WriteString("\nFiles in the skill:\n")
	for _, f := range s.Files {
		fmt.Fprintf(&b, "- %s (%d bytes)\n", path.Join(dir, f.Path), f.Size)
	}
	for _, f := range s.Docs() {
		fmt.Fprintf(&b, "\n<skill-file path=%q>\n", f.Path)
		c := string(f.Content)
		if b.Len()+len(c) > maxSystemPrompt {
			c = c[:max(0, min(len(c), maxSystemPrompt-b.Len()))] + "\n[truncated]"
		}
		b.WriteString(c)
		if !strings.HasSuffix(c, "\n") {
			b.WriteByte('\n')
		}
		b.WriteString("</skill-file>\n")
	}
	return b.String()
}

// UserPrompt is prompt, or a realistic request derived from the skill's
// description (or its name) that exercises the skill. Descriptions are
// written either as a task ("Get the weather for a city.") or as a trigger
// ("Use when the user asks for the weather."), so the request quotes it
// rather than rephrasing it.
func UserPrompt(s *skill.Skill, prompt string) string {
	if strings.TrimSpace(prompt) != "" {
		return prompt
	}
	desc := strings.Join(strings.Fields(s.Description), " ")
	if desc == "" {
		return fmt.Sprintf("Please use the %s skill on this machine for what it is made for. Follow its instructions "+
			"step by step, running whatever commands and scripts it says to run, and pick sensible defaults instead "+
			"of asking me. Tell me when it's done.", s.Name)
	}
	return fmt.Sprintf("Please use the %s skill on this machine (%q). Do what it is made for, following its "+
		"instructions step by step and running whatever commands and scripts it says to run; pick sensible "+
		"defaults instead of asking me. Tell me when it's done.", s.Name, strings.TrimRight(desc, " "))
}
