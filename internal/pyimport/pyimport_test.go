package pyimport

import (
	"slices"
	"testing"
)

func TestDistAndModules(t *testing.T) {
	tests := []struct {
		name, module, dist string
	}{
		{"known", "bs4", "beautifulsoup4"},
		{"submodule", "sklearn.ensemble", "scikit-learn"},
		{"one module, several dists: the shortest", "cv2", "opencv-python"},
		{"unknown is its own", "psutil", "psutil"},
		{"unknown submodule", "scholarly.proxy", "scholarly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Dist(tt.module); got != tt.dist {
				t.Errorf("Dist(%q) = %q, want %q", tt.module, got, tt.dist)
			}
		})
	}
	if got := Modules("Beautifulsoup4"); !slices.Equal(got, []string{"bs4"}) {
		t.Errorf("Modules(Beautifulsoup4) = %q", got)
	}
	if got := Modules("python_dateutil"); !slices.Equal(got, []string{"dateutil"}) {
		t.Errorf("Modules(python_dateutil) = %q", got)
	}
	if got := Modules("requests"); got != nil {
		t.Errorf("Modules(requests) = %q, want nil", got)
	}
	// Every module the table names maps back to a distribution that
	// provides it.
	for dist, mods := range table {
		if Normalize(dist) != dist {
			t.Errorf("table key %q is not normalised", dist)
		}
		for _, m := range mods {
			if !slices.Contains(table[Dist(m)], m) {
				t.Errorf("Dist(%q) = %q, which does not provide it", m, Dist(m))
			}
		}
	}
}
