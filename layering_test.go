package sandboxctl_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const module = "github.com/sandboxctl/sandboxctl"

// importRules says which of our packages may import a third-party module:
// one package wraps each SDK, so that its types stop at that package. A
// module not listed may be imported by anyone.
var importRules = map[string][]string{
	"github.com/moby/moby":              {"orchestrator/docker"},
	"github.com/miekg/dns":              {"netcapture"},
	"github.com/elazarl/goproxy":        {"netcapture"},
	"github.com/mark3labs/mcp-go":       {"mcptools"},
	"github.com/sashabaranov/go-openai": {"agent"},
}

// internalRules lists, for packages with a fixed place in the pipeline, the
// only packages of this module they may import. A key covers its
// subpackages unless a longer key names them.
var internalRules = map[string][]string{
	"trace":      {},
	"canary":     {},
	"skill":      {},
	"canaryfs":   {"canary", "persona"},
	"persona":    {},
	"strace":     {"trace"},
	"netcapture": {"trace", "internal/pyimport"},
	"mcptools":   {"trace", "toolspec", "internal/capbuf"},
	"agent":      {"trace", "skill", "toolspec", "internal/pyimport"},
	"rules":      {"trace", "canary", "skill", "persona", "toolspec"},
	"reports":    {"trace", "rules", "canary", "skill", "safetext", "internal/fsutil", "fingerprint"},
	// fingerprint/store (SQLite) is under the same key: it may import
	// fingerprint.
	"fingerprint": {"trace", "rules", "canary", "skill", "internal/sqlitedb"},
	"safetext":    {},
	// monitor compares the reports of traces a tracing.Tracer given by
	// cmd/ runs, and carries the state a run left (its file changes).
	"monitor":  {"fingerprint", "reports", "rules", "safetext", "trace", "traceplan", "tracing"},
	"toolspec": {},
	// traceplan is the plan of a trace as plain data: no engine.
	"traceplan": {"persona"},
	// tracing is the one contract between the engine and the packages
	// that run traces without one: a plan in, a report out.
	"tracing":   {"traceplan", "reports"},
	"userrules": {"trace", "rules", "reports"},
	// server runs traces through a tracing.Tracer given by cmd/ (no engine
	// of its own) and reuses sweep's result key, archive limits and
	// outcome.
	"server": {"traceplan", "tracing", "reports", "rules", "skill", "sweep", "internal/sqlitedb", "fingerprint"},
	// sweep and evaluation run traces through a tracing.Tracer given by
	// cmd/, as server does: none of them names the engine.
	"sweep":      {"traceplan", "tracing", "reports", "rules", "skill", "internal/fsutil", "internal/sqlitedb"},
	"evaluation": {"traceplan", "tracing", "reports", "rules", "sweep"},
	// orchestrator is the engine: it runs a traceplan.Plan through the
	// agent, the jail, the tracers and the rules. orchestrator/docker
	// (under the same key) wraps the Docker SDK.
	"orchestrator": {"traceplan", "agent", "canary", "canaryfs", "persona", "skill", "trace", "strace", "netcapture", "mcptools",
		"rules", "reports", "internal/capbuf", "internal/fsutil"},
	// internal/capbuf is a leaf; internal/testenv is test support (no
	// production package may import it: see TestLayering).
	"internal/capbuf": {},
	"internal/fsutil": {},
	// internal/sqlitedb opens the SQLite state of sweep, server and
	// fingerprint/store.
	"internal/sqlitedb": {},
}

// engineFree are the packages that run traces without an engine of their
// own, and the plan and the contract they share; engine are the packages
// that run a trace. No engine-free package depends on one, even through
// another package: cmd/ gives them the engine (a tracing.Tracer).
var (
	engineFree = []string{"server", "sweep", "evaluation", "monitor", "traceplan", "tracing"}
	engine     = []string{"orchestrator", "agent", "canaryfs", "netcapture", "mcptools", "strace"}
)

// rulesFor returns the internalRules entry of pkg: the longest key it is
// under.
func rulesFor(pkg string) (allowed []string, key string, ok bool) {
	for k, v := range internalRules {
		if (pkg == k || strings.HasPrefix(pkg, k+"/")) && len(k) > len(key) {
			allowed, key, ok = v, k, true
		}
	}
	return allowed, key, ok
}

// TestLayering fails on an import edge the design does not allow, and on
// flag, environment or exit use outside cmd/ and test helpers.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		for _, imp := range f[1:] {
			for mod, allowed := range importRules {
				if (imp == mod || strings.HasPrefix(imp, mod+"/")) && !underAny(pkg, allowed) {
					t.Errorf("%s imports %s; only %v may", pkg, imp, allowed)
				}
			}
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(imp, module+"/")
			if allowed, key, ok := rulesFor(pkg); ok && !underAny(dep, []string{key}) && !underAny(dep, allowed) {
				t.Errorf("%s imports %s; it may import only %v of this module", pkg, dep, allowed)
			}
			if underAny(dep, []string{"internal/testenv"}) {
				t.Errorf("%s imports %s, which is test support", pkg, dep)
			}
		}
	}

	// Only cmd/ reads flags and the environment, and exits.
	banned := regexp.MustCompile(`\bos\.(Exit|Getenv|LookupEnv|Environ)\(|\bflag\.(Parse|String|Bool|Int|Duration|NewFlagSet)\(|\blog\.Fatal`)
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// cmd/ and bench/ hold commands; internal/testenv is test support;
		// runs/ and bin/ are outputs (traces keep the files skills wrote),
		// testdata/ is not built.
		if d.IsDir() && (path == "cmd" || path == "bench" || path == "internal/testenv" || path == "runs" || path == "bin" ||
			d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if banned.MatchString(line) && !strings.Contains(line, "layering:allow") {
				t.Errorf("%s:%d: only cmd/ may read flags or the environment, or exit: %s", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestEngineFree fails when an engine-free package depends on the engine,
// directly or not (go list -deps ./server names none of it).
func TestEngineFree(t *testing.T) {
	args := []string{"list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}"}
	for _, p := range engineFree {
		args = append(args, "./"+p)
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		pkg := strings.TrimPrefix(f[0], module+"/")
		for _, dep := range f[1:] {
			if d, ok := strings.CutPrefix(dep, module+"/"); ok && underAny(d, engine) {
				t.Errorf("%s depends on %s, which runs traces: take a tracing.Tracer instead", pkg, d)
			}
		}
	}
}

func underAny(pkg string, roots []string) bool {
	for _, r := range roots {
		if pkg == r || strings.HasPrefix(pkg, r+"/") {
			return true
		}
	}
	return false
}
