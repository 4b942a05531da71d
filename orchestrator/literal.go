package orchestrator

import (
	"maps"
	"strings"

	"github.com/sandboxctl/sandboxctl/agent/literal"
	"github.com/sandboxctl/sandboxctl/canaryfs"
)

// literalConfig tells the literal driver about the seeded home: where the
// skill is, the git project its commands run in (the user's main project,
// with its .env files), the fixture files that fill placeholders, the names
// of the variables the home sets (never their values), and the user's
// identity.
func literalConfig(st *run) literal.Config {
	env := make([]string, 0, len(st.home.Env))
	for _, kv := range st.home.Env {
		name, _, _ := strings.Cut(kv, "=")
		env = append(env, name)
	}
	workdir := st.home.Project
	if workdir == "" {
		workdir = st.fixtures.Paths[canaryfs.FixtureGit]
	}
	// The git projects by kind; the fixtures' Node and Python projects
	// where the home has none of that kind.
	projects := maps.Clone(st.home.Projects)
	if projects == nil {
		projects = map[string]string{}
	}
	for kind, fixture := range map[string]string{"node": canaryfs.FixtureNode, "python": canaryfs.FixturePython} {
		if d := st.fixtures.Paths[fixture]; d != "" && projects[kind] == "" {
			projects[kind] = d
		}
	}
	return literal.Config{
		SkillDir: st.skillDir, Home: st.home.HomeDir, Workdir: workdir, Projects: projects, Fixtures: st.fixtures.Paths, Env: env,
		User: st.home.User, FullName: st.home.FullName, Email: st.fixtures.Email, Domain: st.fixtures.Domain,
		// Today as the sandbox sees it: under a fake clock, the fake date.
		Date: st.started.Add(st.clockOff).In(st.location()).Format("2006-01-02"),
	}
}
