package literal

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/sandboxctl/sandboxctl/agent"
	"github.com/sandboxctl/sandboxctl/toolspec"
)

// Example inputs (docs/drivers.md): a step written for the user's own
// files (`mv old/path/file.pdf new/path/file.pdf`, `python3 merge.py
// report.csv`, `jq . alert.json`) stops at "No such file" in a fresh home,
// and whatever the skill does with its input never runs. The user the
// skill was written for has such a file. So before a step that names a
// document, data or image file that does not exist, the driver makes one
// from the home's fixture of that kind (a call of its own, "example
// input"), where the step looks for it. Only what is missing when the
// step runs is made; configuration files, hidden paths, outputs and the
// skill's own files never are.

// inputKinds maps file extensions to fixture kinds (canaryfs fixtures).
var inputKinds = map[string]string{
	".pdf": "pdf", ".docx": "docx", ".xlsx": "xlsx", ".pptx": "pptx", ".csv": "csv", ".json": "json",
	".yaml": "yaml", ".yml": "yaml", ".xml": "xml", ".txt": "txt", ".md": "md", ".html": "html",
	".png": "png", ".jpg": "jpg", ".jpeg": "jpg", ".svg": "svg", ".zip": "zip", ".ipynb": "ipynb",
}

// configNames are files named like data that configure tools: never made.
var configNames = set("package.json", "package-lock.json", "composer.json", "tsconfig.json", "jsconfig.json",
	"deno.json", "app.json", "vercel.json", "netlify.toml", "firebase.json", "manifest.json", "settings.json",
	"pyproject.toml", "docker-compose.yml", "docker-compose.yaml", "compose.yml", "compose.yaml", "mkdocs.yml",
	"readme.md", "skill.md", "agents.md", "claude.md", "changelog.md", "contributing.md", "license.md",
	"requirements.txt", "constraints.txt", "cargo.toml", "pubspec.yaml", "chart.yaml", "values.yaml",
	"kustomization.yaml", "openapi.yaml", "openapi.json", "swagger.json", "eas.json", "turbo.json", "nx.json",
	"pom.xml", "build.xml", "web.xml", "global.json", "angular.json", "project.json", "render.yaml", "fly.toml",
	"app.yaml", "cloudbuild.yaml", "buildspec.yml", "serverless.yml", "template.yaml", "azure-pipelines.yml",
	"prometheus.yml", "alertmanager.yml", "environment.yml", "meta.yaml", ".gitlab-ci.yml", "bitbucket-pipelines.yml")

// outputsOnly are commands whose file arguments are made, not read.
var outputsOnly = set("mkdir", "touch", "rm", "tee", "echo", "printf", "cd", "ls", "which", "open", "xdg-open", "code", "vim", "nano")

// lastIsOutput are commands whose last argument is where they write.
var lastIsOutput = set("cp", "mv", "ln", "rsync", "scp", "install")

// exampleInputs returns the files cmd reads that the driver should make
// if they are missing: literal relative or home paths with a fixture's
// extension, not options' values for output, not the skill's files.
func (p *planner) exampleInputs(cmd string) []string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
	if err != nil {
		return nil
	}
	var out []string
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) < 2 {
			return true
		}
		name := path.Base(call.Args[0].Lit())
		if outputsOnly[name] || name == "" {
			return true
		}
		args := call.Args[1:]
		if lastIsOutput[name] {
			args = args[:len(args)-1]
		}
		skip := false
		for _, a := range args {
			w := a.Lit()
			if skip {
				skip = false
				continue
			}
			if w == "-o" || w == "--output" || w == "--out" || w == "-O" {
				skip = true
				continue
			}
			w = strings.TrimPrefix(w, "@") // curl -d @body.json, a file's content as the argument
			if p.exampleInput(w) && !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
		return true
	})
	return out
}

// exampleInput reports whether the word w names a data file the driver
// may make: a literal path, relative or in the home, not hidden, with a
// fixture's extension, not a configuration file nor one of the skill's.
func (p *planner) exampleInput(w string) bool {
	if w == "" || strings.HasPrefix(w, "-") || strings.Contains(w, "://") || strings.ContainsAny(w, "*?[=:,\\@'\" ") {
		return false
	}
	if strings.HasPrefix(w, "/") || strings.HasPrefix(w, "../") {
		return false
	}
	kind, ok := inputKinds[strings.ToLower(path.Ext(w))]
	if !ok || p.vals.cfg.Fixtures[kind] == "" {
		return false
	}
	clean := strings.TrimPrefix(strings.TrimPrefix(w, "~/"), "./")
	for _, part := range strings.Split(clean, "/") {
		if strings.HasPrefix(part, ".") {
			return false
		}
	}
	if configNames[strings.ToLower(path.Base(w))] || p.vals.skillFiles[clean] {
		return false
	}
	return true
}

// makeInputs proposes the call that makes the example inputs of a step
// (exampleInputs) that are missing when it runs.
func (p *planner) makeInputs(inputs []string, file string, line int) {
	if p.madeInputs == nil {
		p.madeInputs = map[string]bool{}
	}
	var lines []string
	for _, w := range inputs {
		key := p.cwd + "\x00" + w
		if p.madeInputs[key] {
			continue
		}
		p.madeInputs[key] = true
		fix := p.vals.cfg.Fixtures[inputKinds[strings.ToLower(path.Ext(w))]]
		dst := shellQuote(w)
		if rest, ok := strings.CutPrefix(w, "~/"); ok {
			dst = `"$HOME"/` + shellQuote(rest)
		}
		lines = append(lines, "[ -e "+dst+" ] || { mkdir -p \"$(dirname "+dst+")\" && cp "+shellQuote(fix)+" "+dst+"; }")
	}
	if len(lines) == 0 {
		return
	}
	cmd := lines[0]
	if len(lines) > 1 {
		cmd = "{\n" + strings.Join(lines, "\n") + "\n}"
	} else {
		cmd = "{ " + cmd + "; }"
	}
	p.push(toolspec.Bash, map[string]any{"command": p.inDir(cmd, nil)}, file, line, agent.ReasonExampleInput, "")
}
