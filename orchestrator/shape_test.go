package orchestrator_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Limits on the shape of the orchestrator's code (issue 15): the pipeline
// reads in a screenful, and no step hides a second pipeline inside it.
const (
	maxFuncLines = 80 // any function of the package, test files aside
	maxRunLines  = 60 // Runner.Run
)

// TestFunctionLengths measures every function declared in the package's
// non-test files, from its signature to its closing brace.
func TestFunctionLengths(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	sawRun := false
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			lines := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			limit := maxFuncLines
			fn := fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				fn = recvName(fd.Recv.List[0].Type) + "." + fn
			}
			if fn == "Runner.Run" {
				limit, sawRun = maxRunLines, true
			}
			if lines > limit {
				t.Errorf("%s: %s is %d lines, over %d", fset.Position(fd.Pos()), fn, lines, limit)
			}
		}
	}
	if !sawRun {
		t.Errorf("Runner.Run not found: the test measures nothing")
	}
}

func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}
