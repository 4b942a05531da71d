package reports_test

import (
	"bytes"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sandboxctl/sandboxctl/reports"

	// The official OASIS SARIF 2.1.0 schema (errata01) ships inside this
	// module, which the Go module proxy serves; the test reads it from the
	// module's source rather than keeping a copy in the repository.
	_ "github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"
)

// officialSARIFSchema returns the schema text from the go-sarif module.
func officialSARIFSchema(t *testing.T) []byte {
	t.Helper()
	pkg, err := build.Import("github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif", ".", build.FindOnly)
	if err != nil {
		t.Fatalf("find the go-sarif module: %v", err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(pkg.Dir, "schema.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if len(vs.Names) == 1 && vs.Names[0].Name == "schema" && len(vs.Values) == 1 {
				lit, ok := vs.Values[0].(*ast.BasicLit)
				if !ok {
					break
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				return []byte(s)
			}
		}
	}
	t.Fatalf("no schema constant in %s", pkg.Dir)
	return nil
}

// TestSARIFOfficialSchema validates every fixture's SARIF, byte for byte,
// against the official SARIF 2.1.0 schema.
func TestSARIFOfficialSchema(t *testing.T) {
	sch := officialSARIFSchema(t)
	if !bytes.Contains(sch, []byte("Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema")) {
		t.Fatalf("not the SARIF 2.1.0 schema")
	}
	s := compileSchema(t, "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json", sch)
	for _, name := range fixtures {
		var buf bytes.Buffer
		if err := reports.WriteSARIF(&buf, fixture(t, name)); err != nil {
			t.Fatal(err)
		}
		if err := validate(t, s, buf.Bytes()); err != nil {
			t.Errorf("%s: SARIF invalid against the official schema: %v", name, err)
		}
	}
	if validate(t, s, []byte(`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"message":{"text":"m"},"level":"severe"}]}]}`)) == nil {
		t.Errorf("the official schema accepted level \"severe\"")
	}
}
