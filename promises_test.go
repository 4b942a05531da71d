package sandboxctl_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A promise is something a package's doc.go says the package never does,
// and the uses of the standard library that would break it.
type promise struct {
	what   string
	says   *regexp.Regexp      // matched against the package comment, whitespace folded
	banned map[string][]string // import path -> names used through it
}

var (
	dialNames = map[string][]string{
		"net": {"Dial", "DialTimeout", "DialTCP", "DialUDP", "DialIP", "DialUnix", "Dialer",
			"LookupHost", "LookupIP", "LookupAddr", "LookupCNAME", "LookupMX", "LookupNS", "LookupTXT",
			"LookupSRV", "LookupPort", "Resolver", "DefaultResolver"},
		"net/http":   {"Get", "Head", "Post", "PostForm", "DefaultClient", "DefaultTransport", "Client", "Transport"},
		"crypto/tls": {"Dial", "DialWithDialer", "Dialer"},
	}
	listenNames = map[string][]string{
		"net":      {"Listen", "ListenPacket", "ListenTCP", "ListenUDP", "ListenIP", "ListenUnix", "ListenUnixgram", "ListenMulticastUDP", "ListenConfig"},
		"net/http": {"ListenAndServe", "ListenAndServeTLS", "Serve", "ServeTLS"},
	}
)

func merge(ms ...map[string][]string) map[string][]string {
	out := map[string][]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = append(out[k], v...)
		}
	}
	return out
}

// promises lists the promises TestPromises holds packages to. A package
// makes one by saying it in its doc.go.
var promises = []promise{
	{what: "reads the clock", says: regexp.MustCompile(`never (reads the clock|calls? time\.Now)`),
		banned: map[string][]string{"time": {"Now", "Since", "Until"}}},
	{what: "touches the network", says: regexp.MustCompile(`never touch(es)? the network|does no I/O`),
		banned: merge(dialNames, listenNames)},
	{what: "dials", says: regexp.MustCompile(`never (dials|sends a packet)`), banned: dialNames},
}

// TestPromises: a package whose doc.go says it never reads the clock or
// never touches the network (never dials) uses no time.Now, net.Dial or
// the like in its code. The promise is read from doc.go, so a package
// that makes one is held to it. A use reviewed as keeping the promise (a
// transport whose dialler refuses) says "promises:allow" on its line.
func TestPromises(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	held := 0
	for _, dir := range strings.Fields(string(out)) {
		doc, err := os.ReadFile(filepath.Join(dir, "doc.go"))
		if err != nil {
			continue
		}
		files := map[string]string{}
		names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, n := range names {
			if strings.HasSuffix(n, "_test.go") {
				continue
			}
			b, err := os.ReadFile(n)
			if err != nil {
				t.Fatal(err)
			}
			files[n] = string(b)
		}
		v, n, err := promiseViolations(string(doc), files)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		held += n
		for _, s := range v {
			t.Error(s)
		}
	}
	if held < 5 {
		t.Errorf("only %d promises found in the packages' doc.go: the phrases changed, or this test reads nothing", held)
	}
}

// promiseViolations returns, for the package whose doc.go is doc and whose
// non-test files are files (name -> source), every use that breaks a
// promise the doc makes, and how many promises it makes.
func promiseViolations(doc string, files map[string]string) (violations []string, made int, err error) {
	fset := token.NewFileSet()
	df, err := parser.ParseFile(fset, "doc.go", doc, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		return nil, 0, err
	}
	text := ""
	if df.Doc != nil {
		text = strings.Join(strings.Fields(df.Doc.Text()), " ")
	}
	var kept []promise
	for _, p := range promises {
		if p.says.MatchString(text) {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return nil, 0, nil
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, files[name], 0)
		if err != nil {
			return nil, 0, err
		}
		lines := strings.Split(files[name], "\n")
		local := map[string]string{} // name in the file -> import path
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			n := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				n = imp.Name.Name
			}
			local[n] = path
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok || id.Obj != nil { // a local variable, not a package
				return true
			}
			path, ok := local[id.Name]
			if !ok {
				return true
			}
			pos := fset.Position(sel.Pos())
			if strings.Contains(lines[pos.Line-1], "promises:allow") {
				return true // a reviewed exception, said on its line
			}
			for _, p := range kept {
				if slices.Contains(p.banned[path], sel.Sel.Name) {
					violations = append(violations, fmt.Sprintf("%s: uses %s.%s, but its doc.go says it never %s",
						pos, path, sel.Sel.Name, p.what))
				}
			}
			return true
		})
	}
	return violations, len(kept), nil
}

func TestPromiseViolations(t *testing.T) {
	const pure = "// Package p is pure: it never reads the clock and never touches the network.\npackage p\n"
	tests := []struct {
		name     string
		doc      string
		src      string
		want     []string // substrings, one per violation
		wantMade int
	}{
		{name: "clean", doc: pure, src: "package p\nimport \"time\"\nvar d = time.Second\n", wantMade: 2},
		{name: "time.Now", doc: pure, src: "package p\nimport \"time\"\nvar t = time.Now()\n",
			want: []string{"uses time.Now, but its doc.go says it never reads the clock"}, wantMade: 2},
		{name: "time.Since through an alias", doc: pure, src: "package p\nimport tm \"time\"\nvar d = tm.Since(tm.Time{})\n",
			want: []string{"uses time.Since"}, wantMade: 2},
		{name: "net.Dial", doc: pure, src: "package p\nimport \"net\"\nfunc f() { net.Dial(\"tcp\", \"x:1\") }\n",
			want: []string{"uses net.Dial, but its doc.go says it never touches the network"}, wantMade: 2},
		{name: "a Dialer value", doc: pure, src: "package p\nimport \"net\"\nvar d net.Dialer\n",
			want: []string{"uses net.Dialer"}, wantMade: 2},
		{name: "http.Get", doc: pure, src: "package p\nimport \"net/http\"\nfunc f() { http.Get(\"http://x\") }\n",
			want: []string{"uses net/http.Get"}, wantMade: 2},
		{name: "parsing an IP is no network use", doc: pure, src: "package p\nimport \"net\"\nvar ip = net.ParseIP(\"1.2.3.4\")\n", wantMade: 2},
		{name: "a local variable named time", doc: pure, src: "package p\ntype c struct{}\nfunc (c) Now() int { return 0 }\nfunc f() int { time := c{}; return time.Now() }\n", wantMade: 2},
		{name: "no promise, no check", doc: "// Package p runs things.\npackage p\n",
			src: "package p\nimport \"time\"\nvar t = time.Now()\n"},
		{name: "never dials allows listening", doc: "// Package p never dials.\npackage p\n",
			src:  "package p\nimport \"net\"\nfunc f() { net.Listen(\"tcp\", \":0\"); net.Dial(\"tcp\", \"x:1\") }\n",
			want: []string{"uses net.Dial, but its doc.go says it never dials"}, wantMade: 1},
		{name: "reviewed exception", doc: pure,
			src: "package p\nimport \"net/http\"\nvar t = &http.Transport{} // promises:allow: its dialler refuses\n", wantMade: 2},
		{name: "promise across lines", doc: "// Package p never reads the\n// clock.\npackage p\n",
			src: "package p\nimport \"time\"\nvar t = time.Now()\n", want: []string{"uses time.Now"}, wantMade: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, made, err := promiseViolations(tt.doc, map[string]string{"p.go": tt.src})
			if err != nil {
				t.Fatal(err)
			}
			if made != tt.wantMade {
				t.Errorf("promises made = %d, want %d", made, tt.wantMade)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("violations = %q, want %d like %q", got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("violation %d = %q, want it to contain %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}
