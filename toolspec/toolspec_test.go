package toolspec_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/sandboxctl/sandboxctl/toolspec"
)

// TestCatalogue: every tool has a unique name, a description and an object
// schema whose required arguments are properties of it.
func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range toolspec.All() {
		if s.Name == "" || s.Description == "" || seen[s.Name] {
			t.Errorf("tool %q: empty or duplicate name, or no description", s.Name)
		}
		seen[s.Name] = true
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(s.Parameters, &schema); err != nil {
			t.Errorf("%s: schema is not JSON: %v", s.Name, err)
			continue
		}
		if schema.Type != "object" || len(schema.Properties) == 0 || len(schema.Required) == 0 {
			t.Errorf("%s: schema %s: want an object with properties and required arguments", s.Name, s.Parameters)
		}
		for _, r := range schema.Required {
			if _, ok := schema.Properties[r]; !ok {
				t.Errorf("%s: required argument %q is not a property", s.Name, r)
			}
		}
	}
	want := []string{toolspec.Bash, toolspec.ReadFile, toolspec.WriteFile, toolspec.EditFile,
		toolspec.ListDirectory, toolspec.SearchFiles, toolspec.FetchURL}
	if got := toolspec.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{name: toolspec.Bash, want: true},
		{name: toolspec.FetchURL, want: true},
		{name: "Bash"},
		{name: "run_shell"},
		{name: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := toolspec.Lookup(tt.name)
			if ok != tt.want || toolspec.Known(tt.name) != tt.want || ok && s.Name != tt.name {
				t.Errorf("Lookup(%q) = %q, %v; Known = %v; want found %v", tt.name, s.Name, ok, toolspec.Known(tt.name), tt.want)
			}
		})
	}
}

// TestAllIsACopy: a caller cannot change the catalogue.
func TestAllIsACopy(t *testing.T) {
	a := toolspec.All()
	a[0].Name = "changed"
	a[0].Parameters[0] = 'X'
	if b := toolspec.All(); b[0].Name != toolspec.Bash || b[0].Parameters[0] != '{' {
		t.Errorf("All() shares its storage: %q %s", b[0].Name, b[0].Parameters)
	}
}
