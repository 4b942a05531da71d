package sandboxctl_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxctl/sandboxctl"
	"github.com/sandboxctl/sandboxctl/persona"
)

// vendorList reads sandbox-image/vendor-clis.tsv from the image's build
// context: name → what --version prints.
func vendorList(t *testing.T) (names []string, version map[string]string) {
	t.Helper()
	b, err := sandboxctl.ImageContext.ReadFile("sandbox-image/vendor-clis.tsv")
	if err != nil {
		t.Fatal(err)
	}
	version = map[string]string{}
	for i, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		name, v, ok := strings.Cut(l, "\t")
		if !ok || name == "" || v == "" || strings.ContainsAny(v, `&\'`) {
			t.Errorf("vendor-clis.tsv:%d: want NAME<TAB>VERSION, a version without & \\ or ', got %q", i+1, l)
		}
		names = append(names, name)
		version[name] = v
	}
	return names, version
}

// TestVendorCLIList: the image installs stubs under exactly the names the
// rules recognise.
func TestVendorCLIList(t *testing.T) {
	names, _ := vendorList(t)
	if !slices.Equal(names, persona.VendorCLIs) {
		t.Errorf("sandbox-image/vendor-clis.tsv lists %v;\npersona.VendorCLIs is %v: keep them the same, in order", names, persona.VendorCLIs)
	}
	for _, real := range []string{"gh", "aws", "kubectl", "jq", "yq", "git", "curl", "python3", "node", "npm", "pip"} {
		if slices.Contains(names, real) {
			t.Errorf("%s is in the image for real and must not be stubbed", real)
		}
	}
}

// TestVendorCLIStubs installs the stubs the way the image build does and
// runs them as a skill would.
func TestVendorCLIStubs(t *testing.T) {
	dir := t.TempDir()
	ctx := filepath.Join(dir, "ctx")
	for _, f := range []string{"install-vendor-clis", "vendor-cli", "vendor-clis.tsv"} {
		b, err := sandboxctl.ImageContext.ReadFile("sandbox-image/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(ctx, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ctx, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// PATH holds what the installer needs and a real "vercel": that one
	// must stay real.
	bin := filepath.Join(dir, "bin")
	out := filepath.Join(dir, "out")
	for _, d := range []string{bin, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range []string{"sh", "awk", "chmod"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("no %s on this host", tool)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "vercel"), []byte("#!/bin/sh\necho real\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", filepath.Join(ctx, "install-vendor-clis"), filepath.Join(ctx, "vendor-clis.tsv"), filepath.Join(ctx, "vendor-cli"), out)
	cmd.Env = []string{"PATH=" + bin}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install-vendor-clis: %v\n%s", err, b)
	}
	names, version := vendorList(t)
	for _, n := range names {
		_, err := os.Stat(filepath.Join(out, n))
		if n == "vercel" {
			if err == nil {
				t.Error("vercel was stubbed although the system has it")
			}
			continue
		}
		if err != nil {
			t.Errorf("no stub for %s: %v", n, err)
		}
	}

	tests := []struct {
		name string
		argv []string
		want string
	}{
		{"version flag", []string{"stripe", "--version"}, version["stripe"] + "\n"},
		{"version command", []string{"terraform", "version"}, version["terraform"] + "\n"},
		{"version with a double quote", []string{"helm", "version"}, version["helm"] + "\n"},
		{"help", []string{"gcloud", "--help"}, "Usage: gcloud <command> [options]"},
		{"no arguments", []string{"wrangler"}, "Usage: wrangler <command> [options]"},
		{"subcommand", []string{"netlify", "deploy", "--prod"}, "netlify deploy: done\n"},
		{"subcommand after flags", []string{"supabase", "--debug", "db", "push"}, "supabase db: done\n"},
		{"json output", []string{"az", "account", "show", "--output=json"}, "{}\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := exec.Command(filepath.Join(out, tc.argv[0]), tc.argv[1:]...).Output()
			if err != nil {
				t.Fatalf("%v: %v", tc.argv, err)
			}
			if !strings.Contains(string(b), tc.want) {
				t.Errorf("%v printed %q, want %q", tc.argv, b, tc.want)
			}
			if strings.Contains(strings.ToLower(string(b)), "stub") {
				t.Errorf("%v says what it is: %q", tc.argv, b)
			}
		})
	}
}
