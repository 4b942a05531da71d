package reports

import (
	"fmt"
	"strings"

	"github.com/sandboxctl/sandboxctl/rules"
)

// writeReasonsText writes why the verdict is what it is, under the banner.
func writeReasonsText(t *textWriter, r *Report) {
	for i, why := range r.Reasons {
		if i == 4 {
			t.para("          ", "            ", fmt.Sprintf("… %d more", len(r.Reasons)-4))
			break
		}
		head := "          "
		if i == 0 {
			head = "Why       "
		}
		t.para(head, "            ", why)
	}
}

// writeCoverageText writes the coverage section: what ran, what did not
// and why.
func writeCoverageText(t *textWriter, r *Report) {
	c := r.Coverage
	t.line("")
	t.line(t.paint(ansiBold, "Coverage"))
	sum := fmt.Sprintf("%d step%s planned, %d sent to the sandbox: %d succeeded, %d failed, %d did not run",
		c.Planned, plural(c.Planned), c.Run, c.Succeeded, c.Failed, c.NotRun)
	if c.Decisive > 0 {
		sum += fmt.Sprintf("; %d of %d decisive step%s did not run", c.DecisiveNotRun, c.Decisive, plural(c.Decisive))
	}
	if c.Stubbed > 0 {
		sum += fmt.Sprintf("; %d step%s ran against a vendor CLI stub", c.Stubbed, plural(c.Stubbed))
	}
	t.para("  ", "  ", sum)
	const max = 8
	for i, s := range c.Steps {
		if i == max {
			t.para("  ", "    ", fmt.Sprintf("… %d more step%s in report.json", len(c.Steps)-max, plural(len(c.Steps)-max)))
			break
		}
		tag := s.Outcome
		if s.Decisive && s.Outcome == rules.OutcomeNotRun {
			tag = t.paint(ansiYellow, "NOT RUN")
		}
		var from []string
		if s.PlanReason != "" {
			from = append(from, s.PlanReason)
		}
		if s.SkillFile != "" {
			loc := s.SkillFile
			if s.SkillLine > 0 {
				loc += fmt.Sprintf(":%d", s.SkillLine)
			}
			from = append(from, loc)
		}
		line := fmt.Sprintf("%s %s %s: %s", s.ToolCallID, tag, s.Reason, s.Summary)
		if len(from) > 0 {
			line += " (" + strings.Join(from, ", ") + ")"
		}
		t.para("  ", "    ", line)
	}
	for _, n := range r.Driver.Notes {
		t.para("  Not planned: ", "    ", n)
	}
}
