package netcapture

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAddPackageHints(t *testing.T) {
	var cfg Config
	AddPackageHints(&cfg, []byte("Run:\n\n    pip install requests==2.31.0 'Flask_Login>=0.6' numpy~=1.26\n"+
		"    npm i -g @acme/cli@^3.4.1 lodash.debounce@4.0.8 left-pad@1\n    uvx ruff==0.4.4\n"))
	AddPackageHints(&cfg, []byte(`{"dependencies": {"express": "^4.18.2", "@types/node": "~20.11"}}`))
	AddPackageHints(&cfg, []byte("boto3==1.34.162\npandas>=2\n# mail dev@corp.com, git@github.com:x/y\n"))
	want := map[string][]string{
		"pypi:requests": {"2.31.0"}, "pypi:flask-login": {"0.6"}, "pypi:numpy": {"1.26"}, "pypi:ruff": {"0.4.4"},
		"pypi:boto3": {"1.34.162"}, "pypi:pandas": {"2.0", "2"},
		"npm:@acme/cli": {"3.4.1"}, "npm:lodash.debounce": {"4.0.8"}, "npm:left-pad": {"1.0.0"},
		"npm:express": {"4.18.2"}, "npm:@types/node": {"20.11.0"},
	}
	if diff := cmp.Diff(want, cfg.PackageVersions); diff != "" {
		t.Errorf("hints (-want +got):\n%s", diff)
	}
}

func FuzzAddPackageHints(f *testing.F) {
	f.Add([]byte("pip install a==1 b@2.3.4"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var cfg Config
		AddPackageHints(&cfg, b)
		if hintCount(&cfg) > maxHints {
			t.Fatalf("%d hints", hintCount(&cfg))
		}
	})
}
