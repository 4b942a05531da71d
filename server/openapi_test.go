package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestOpenAPI checks the served document: OpenAPI 3.1, every route of the
// server described with the methods it serves, every $ref resolving, and
// the answers of a real exchange valid against the document's schemas.
func TestOpenAPI(t *testing.T) {
	fake := newFake()
	f := newFixture(t, fake, nil)
	r := f.do("GET", "/v1/openapi.json", nil, "", nil, nil)
	raw := []byte(body(r))
	if r.StatusCode != 200 || !bytes.Equal(raw, OpenAPI) {
		t.Fatalf("served %d, %d bytes", r.StatusCode, len(raw))
	}
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	// The routes of routes(), as the document names them.
	want := map[string][]string{
		"/v1/health": {"get"}, "/v1/openapi.json": {"get"}, "/metrics": {"get"},
		"/v1/traces": {"get", "post"}, "/v1/traces/{id}": {"delete", "get"}, "/v1/traces/{id}/{report}": {"get"},
	}
	for p, methods := range want {
		var got []string
		for m := range doc.Paths[p] {
			if m != "parameters" {
				got = append(got, m)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, methods) {
			t.Errorf("%s: methods %v, want %v", p, got, methods)
		}
	}
	if len(doc.Paths) != len(want) {
		t.Errorf("the document has %d paths, the server %d", len(doc.Paths), len(want))
	}
	// Every operation lists the statuses its handler answers with.
	ops := map[string][]string{"submitTrace": {"200", "202", "400", "401", "413", "415", "422", "429", "503"}}
	for _, op := range doc.Paths["/v1/traces"] {
		m, _ := op.(map[string]any)
		if id, _ := m["operationId"].(string); ops[id] != nil {
			for _, st := range ops[id] {
				if _, ok := m["responses"].(map[string]any)[st]; !ok {
					t.Errorf("%s lacks a %s response", id, st)
				}
			}
		}
	}

	c := jsonschema.NewCompiler()
	d, err := jsonschema.UnmarshalJSON(bytes.NewReader(OpenAPI))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("openapi.json", d); err != nil {
		t.Fatal(err)
	}
	for _, ref := range regexp.MustCompile(`"\$ref": "(#[^"]+)"`).FindAllStringSubmatch(string(OpenAPI), -1) {
		if _, err := c.Compile("openapi.json" + ref[1]); err != nil {
			t.Errorf("%s: %v", ref[1], err)
		}
	}
	schema := func(name string) *jsonschema.Schema {
		s, err := c.Compile("openapi.json#/components/schemas/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	check := func(name string, r *http.Response) string {
		t.Helper()
		b := body(r)
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := schema(name).Validate(v); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		return b
	}
	b, _ := json.Marshal(jsonSubmission{Files: map[string]string{"SKILL.md": skillMD("o", "exfil")}})
	sub := f.do("POST", "/v1/traces", bytes.NewReader(b), "application/json", nil, nil)
	var s Submitted
	json.Unmarshal([]byte(check("Submitted", sub)), &s)
	f.wait(s.ID)
	check("Trace", f.do("GET", "/v1/traces/"+s.ID, nil, "", nil, nil))
	check("Submitted", f.do("POST", "/v1/traces", bytes.NewReader(b), "application/json", nil, nil))
	check("TraceList", f.do("GET", "/v1/traces", nil, "", nil, nil))
	check("Health", f.do("GET", "/v1/health", nil, "", nil, nil))
	check("Error", f.do("GET", "/v1/traces/nope", nil, "", nil, nil))
	check("Error", f.do("POST", "/v1/traces", strings.NewReader("x"), "text/plain", nil, nil))
}

// TestMetricsFormat checks /metrics line by line against the Prometheus
// text format: HELP and TYPE before each family, samples named by it.
func TestMetricsFormat(t *testing.T) {
	fake := newFake()
	f := newFixture(t, fake, nil)
	_, s := f.submitJSON(map[string]string{"SKILL.md": skillMD("m", "exfil")}, Options{}, nil)
	f.wait(s.ID)
	r := f.do("GET", "/metrics", nil, "", nil, nil)
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("content type %q", r.Header.Get("Content-Type"))
	}
	text := body(r)
	sample := regexp.MustCompile(`^([a-z_]+)(\{[a-z]+="[^"]*"\})? (-?[0-9.e+]+|\+Inf)$`)
	family := ""
	types := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		switch {
		case strings.HasPrefix(l, "# HELP "):
			family = strings.Fields(l)[2]
		case strings.HasPrefix(l, "# TYPE "):
			fs := strings.Fields(l)
			if fs[2] != family {
				t.Errorf("TYPE %s after HELP %s", fs[2], family)
			}
			types[family] = fs[3]
		default:
			m := sample.FindStringSubmatch(l)
			if m == nil {
				t.Errorf("not a sample: %q", l)
				continue
			}
			name := m[1]
			if types[family] == "histogram" {
				name = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
			}
			if name != family {
				t.Errorf("sample %s in family %s", m[1], family)
			}
		}
	}
	for _, want := range []string{`sandboxctl_serve_verdicts{verdict="malicious"} 1`, `sandboxctl_serve_traces{status="done"} 1`,
		"sandboxctl_serve_trace_duration_seconds_count 1", `sandboxctl_serve_trace_duration_seconds_bucket{le="+Inf"} 1`, "sandboxctl_serve_queue_depth 0"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
}
