package userrules_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxctl/sandboxctl/rules"
	"github.com/sandboxctl/sandboxctl/userrules"
)

// TestHostileRuleFiles: rule files written to exhaust the host (YAML alias
// bombs, deep nesting, oversize files, CEL conditions over their cost) are
// refused with a clear error or, for a condition over its cost, load and
// never hold; each is dealt with in bounded time, and a good rule beside a
// costly one still fires.
func TestHostileRuleFiles(t *testing.T) {
	laughs := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		laughs += n + ": &" + n + " [" + strings.Repeat("*"+prev+",", 8) + "*" + prev + "]\n"
		prev = n
	}
	ruleAliases := "rules:\n  - &r {id: A1, title: a, severity: low, on: event, when: 'true'}\n" + strings.Repeat("  - *r\n", 5000)
	deep := "id: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n"
	// 10^6 iterations: far over the cost limit of one evaluation.
	list := "[" + strings.Repeat("1,", 99) + "1]"
	costly := "event.type == 'exec' && " + list + ".all(a, " + list + ".all(b, " + list + ".all(c, a + b + c > 0)))"
	cases := []struct {
		name string
		text string
		size int    // a file of this many bytes instead of text
		err  string // "" when it loads
	}{
		{name: "billion laughs", text: laughs, err: "unknown key"},
		{name: "a rule repeated by aliases", text: ruleAliases, err: "over 50 errors"},
		{name: "deep nesting", text: deep, err: "r.yaml"},
		{name: "oversize file", size: userrules.MaxFileSize + 1, err: "larger than"},
		{name: "a condition over its cost", text: "rules:\n  - id: COSTLY\n    title: costly\n    severity: high\n    on: event\n    when: \"" + costly + "\"\n" +
			"  - id: PLAIN\n    title: plain\n    severity: low\n    on: event\n    when: event.type == 'exec'\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "r.yaml")
			data := []byte(c.text)
			if c.size > 0 {
				data = []byte("# " + strings.Repeat("x", c.size))
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			set, err := userrules.LoadFiles([]string{p})
			if el := time.Since(start); el > 20*time.Second {
				t.Errorf("loading took %v", el)
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				if len(err.Error()) > 64<<10 {
					t.Errorf("the error is %d bytes", len(err.Error()))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			in := rules.Input{Events: timeline("AKIAQSBXCTL7Q2X4ZT3M"), Home: "/home/u", Extra: set.Extra()}
			start = time.Now()
			res := rules.Evaluate(in)
			if el := time.Since(start); el > 20*time.Second {
				t.Errorf("evaluation took %v", el)
			}
			ids := ruleIDs(res.Findings)
			if slices.Contains(ids, "COSTLY") {
				t.Errorf("a condition over its cost held: %v", ids)
			}
			if !slices.Contains(ids, "PLAIN") {
				t.Errorf("the rule beside the costly one did not fire: %v", ids)
			}
		})
	}
}
