package netcapture

import (
	"regexp"
	"slices"
	"strings"
)

// Package version hints: npm and pip never tell the registry which
// version they want (they fetch the whole version list and choose), so an
// exact pin the stub registry does not list fails. The orchestrator reads
// the skill's files with AddPackageHints before the jail starts, so the
// versions a skill names (`pip install x==1.2.3`, `npm i x@1.2.3`, a
// requirements line, a package.json dependency) are among those served.
// The lower bound of a range (^1.2.3, >=2.31) is added too, which
// satisfies it.

const maxHints = 512

var (
	// name==1.2.3, name~=1.2, name>=2.31 (pip, requirements, uv).
	pyPin = regexp.MustCompile(`(?m)(?:^|[\s'"\[,])([A-Za-z0-9][A-Za-z0-9._-]{0,99})\s*(?:\[[^\]]*\])?\s*(===?|~=|>=)\s*v?([0-9]+(?:\.[0-9]+){0,3}(?:[a-z]+[0-9]*)?)`)
	// name@1.2.3, @scope/name@^1.2.3 (npm, npx, pnpm, yarn, bun).
	npmPin = regexp.MustCompile(`(?:^|[\s'"(])((?:@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]{0,213})@[\^~=v]*([0-9]+(?:\.[0-9]+){0,2}(?:-[0-9A-Za-z.]+)?)`)
	// "name": "^1.2.3" in a package.json.
	npmDep = regexp.MustCompile(`"((?:@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]{0,213})"\s*:\s*"[\^~=>v ]*([0-9]+(?:\.[0-9]+){0,2}(?:-[0-9A-Za-z.]+)?)"`)
)

// AddPackageHints adds to cfg.PackageVersions the package versions text
// names.
func AddPackageHints(cfg *Config, text []byte) {
	if len(text) == 0 {
		return
	}
	s := string(text)
	add := func(key, v string) {
		if cfg.PackageVersions == nil {
			cfg.PackageVersions = map[string][]string{}
		}
		if !validVersion(v) || slices.Contains(cfg.PackageVersions[key], v) || hintCount(cfg) >= maxHints {
			return
		}
		cfg.PackageVersions[key] = append(cfg.PackageVersions[key], v)
	}
	for _, m := range pyPin.FindAllStringSubmatch(s, -1) {
		v := m[3]
		if strings.Count(v, ".") == 0 {
			v += ".0"
		}
		add("pypi:"+pyNormalize(m[1]), v)
		if v != m[3] {
			add("pypi:"+pyNormalize(m[1]), m[3])
		}
	}
	for _, re := range []*regexp.Regexp{npmPin, npmDep} {
		for _, m := range re.FindAllStringSubmatch(s, -1) {
			name := strings.ToLower(m[1])
			if !npmName.MatchString(name) {
				continue
			}
			v := m[2]
			for strings.Count(v, ".") < 2 && !strings.Contains(v, "-") {
				v += ".0"
			}
			add("npm:"+name, v)
		}
	}
}

func hintCount(cfg *Config) int {
	n := 0
	for _, vs := range cfg.PackageVersions {
		n += len(vs)
	}
	return n
}
