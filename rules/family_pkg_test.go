package rules

import "testing"

func TestOneEdit(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"lodahs", "lodash", true},  // swap
		{"lodas", "lodash", true},   // deletion
		{"lodassh", "lodash", true}, // insertion
		{"lodesh", "lodash", true},  // substitution
		{"lodash", "lodash", false}, // same
		{"ldoahs", "lodash", false}, // two edits
		{"express", "expres", true}, // deletion at the end
		{"xpress", "express", true}, // deletion at the start
		{"expressjs", "express", false},
	}
	for _, tt := range tests {
		if got := oneEdit(tt.a, tt.b); got != tt.want {
			t.Errorf("oneEdit(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := oneEdit(tt.b, tt.a); got != tt.want {
			t.Errorf("oneEdit(%q, %q) = %v, want %v", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestLookalike(t *testing.T) {
	tests := []struct {
		eco, name, want string
	}{
		{"pypi", "reqeusts", "requests"},
		{"pypi", "colourama", "colorama"},
		{"pypi", "Python_Dateutil", ""}, // the popular name itself, normalised
		{"pypi", "requests", ""},
		{"npm", "axois", "axios"},
		{"npm", "expresss", "express"},
		{"npm", "left-pad", ""},
		{"npm", "ws", ""},              // too short to judge
		{"npm", "requests", "request"}, // one edit from npm's "request"
		{"pypi", "lodahs", ""},         // an npm name, not a PyPI one
	}
	for _, tt := range tests {
		if got := lookalike(tt.eco, tt.name); got != tt.want {
			t.Errorf("lookalike(%s, %q) = %q, want %q", tt.eco, tt.name, got, tt.want)
		}
	}
	for eco, list := range popularPkgs {
		if len(list) < 200 {
			t.Errorf("%s: only %d popular names", eco, len(list))
		}
	}
}
