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

func TestSkeleton(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "capital I for l", in: "react-devtooIs", want: skeleton("react-devtools")},
		{name: "digit one for l", in: "co1ors", want: skeleton("colors")},
		{name: "zero for o", in: "g00gle", want: skeleton("google")},
		{name: "rn for m", in: "rnongoose", want: skeleton("mongoose")},
		{name: "capital M", in: "Mongoose", want: skeleton("mongoose")},
		{name: "vv for w", in: "vvebpack", want: skeleton("webpack")},
		{name: "Cyrillic a and e", in: "r\u0435\u0430ct", want: skeleton("react")},
		{name: "d reads as cl", in: "lodash", want: "loclash"},
		{name: "a name with no look-alike is itself", in: "react", want: "react"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := skeleton(tt.in); got != tt.want {
				t.Errorf("skeleton(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if len(confusables) < 1000 {
		t.Errorf("only %d confusables read from rules/data/confusables.txt", len(confusables))
	}
}

func TestHomoglyphOf(t *testing.T) {
	tests := []struct {
		name, eco, pkg, want string
	}{
		{name: "capital I for l", eco: "npm", pkg: "react-devtooIs", want: "react-devtools"},
		{name: "capital I at the start", eco: "npm", pkg: "Iodash", want: "lodash"},
		{name: "rn for m", eco: "npm", pkg: "react-dorn", want: "react-dom"},
		{name: "zero for o", eco: "npm", pkg: "m0ngoose", want: "mongoose"},
		{name: "one for l on PyPI", eco: "pypi", pkg: "f1ask", want: "flask"},
		{name: "vv for w", eco: "npm", pkg: "vvebpack", want: "webpack"},
		{name: "Cyrillic o", eco: "pypi", pkg: "b\u043eto3", want: "boto3"},
		{name: "rn and a digit together", eco: "pypi", pkg: "nurnpy", want: "numpy"},
		// benign look-alikes: real names that stay clean
		{name: "the popular name itself", eco: "npm", pkg: "mongoose", want: ""},
		{name: "the popular name in capitals", eco: "pypi", pkg: "Flask", want: ""},
		{name: "a word with rn", eco: "npm", pkg: "turndown", want: ""},
		{name: "a word with m", eco: "npm", pkg: "nodemailer", want: ""},
		{name: "digits in a real name", eco: "npm", pkg: "web3", want: ""},
		{name: "a different word", eco: "pypi", pkg: "modern", want: ""},
		{name: "too short", eco: "npm", pkg: "0s", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := homoglyphOf(tt.eco, tt.pkg); got != tt.want {
				t.Errorf("homoglyphOf(%s, %q) = %q, want %q", tt.eco, tt.pkg, got, tt.want)
			}
		})
	}
}

// TestPopularNamesAreNotLookAlikes: no popular name is judged a look-alike
// of another, so installing any of them stays clean.
func TestPopularNamesAreNotLookAlikes(t *testing.T) {
	for eco, list := range popularPkgs {
		for _, p := range list {
			if got := homoglyphOf(eco, p); got != "" {
				t.Errorf("%s: popular %q is judged a look-alike of %q", eco, p, got)
			}
		}
	}
}
