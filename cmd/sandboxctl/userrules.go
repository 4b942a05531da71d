package main

import (
	"errors"
	"path/filepath"

	"github.com/sandboxctl/sandboxctl/userrules"
)

// userRulesDir is the folder of the user's own rules, read on every trace,
// report --reprocess and eval when it exists: $XDG_CONFIG_HOME/sandboxctl/rules,
// else ~/.config/sandboxctl/rules (os.UserConfigDir on Linux).
func userRulesDir(e env) string {
	dir := e.getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := e.getenv("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "sandboxctl", "rules")
}

// loadUserRules loads the user's rules: the config folder's (when it
// exists) and --rules DIR's (which must). On a problem it prints each one
// (file:line: what is wrong) and returns false: the caller exits with the
// usage code, and nothing runs with half the rules.
func loadUserRules(e env, flagDir string) (*userrules.Set, bool) {
	var opt []string
	if d := userRulesDir(e); d != "" {
		opt = append(opt, d)
	}
	set, err := userrules.LoadDirs(opt, true)
	if err == nil && flagDir != "" {
		var more *userrules.Set
		more, err = userrules.LoadDirs([]string{flagDir}, false)
		if err == nil {
			set, err = userrules.Merge(set, more)
		}
	}
	if err != nil {
		var errs userrules.Errors
		if errors.As(err, &errs) {
			for _, x := range errs {
				e.errorf("rules: %v", x)
			}
		} else {
			e.errorf("rules: %v", err)
		}
		e.hintf("docs/rules.md describes rule files; sandboxctl rules check DIR checks them")
		return nil, false
	}
	return set, true
}
