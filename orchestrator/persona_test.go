package orchestrator_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/sandboxctl/sandboxctl/orchestrator"
	"github.com/sandboxctl/sandboxctl/orchestrator/runtimetest"
)

// setupEntries runs a trace of persona on the fake runtime and returns the
// sandbox's spec and the entries of the tar its setup exec unpacks.
func setupEntries(t *testing.T, persona string) (orchestrator.Spec, map[string]*tar.Header, map[string]string) {
	t.Helper()
	var (
		mu      sync.Mutex
		entries = map[string]*tar.Header{}
		bodies  = map[string]string{}
	)
	rt := &runtimetest.Fake{Logs: readyLogs, Exec: func(ctx context.Context, sb *runtimetest.Sandbox, e orchestrator.ExecSpec) (int, error) {
		if len(e.Argv) == 3 && e.Argv[0] == "/bin/sh" && strings.Contains(e.Argv[2], "tar -x") && e.Stdin != nil {
			data, _ := io.ReadAll(e.Stdin)
			br := bytes.NewReader(data)
			mu.Lock()
			defer mu.Unlock()
			// Several archives follow each other (tar -i reads on).
			for br.Len() > 0 {
				tr := tar.NewReader(br)
				n := 0
				for {
					h, err := tr.Next()
					if err != nil {
						break
					}
					n++
					b, _ := io.ReadAll(tr)
					entries["/"+strings.TrimSuffix(h.Name, "/")] = h
					bodies["/"+strings.TrimSuffix(h.Name, "/")] = string(b)
				}
				if n == 0 {
					break
				}
			}
			return 0, nil
		}
		return deadToolServer(ctx, sb, e)
	}}
	p := testPlan(t)
	p.Persona = persona
	p.User = "jdoe"
	r := &orchestrator.Runner{Runtime: rt, Binary: binary(t)}
	out, _ := r.Run(t.Context(), p, "")
	if out.Report == nil {
		t.Fatal("no report")
	}
	var spec orchestrator.Spec
	for _, sb := range rt.Sandboxes {
		if sb.Spec.Role == orchestrator.RoleSandbox {
			spec = sb.Spec
		}
	}
	if out.Report.Sandbox.Persona != persona {
		t.Errorf("report persona %q, want %q", out.Report.Sandbox.Persona, persona)
	}
	return spec, entries, bodies
}

func TestPersonaSetup(t *testing.T) {
	tests := []struct {
		persona, home, tmpfs, shell string
		want, absent                []string
	}{
		{persona: "", home: "/home/jdoe", tmpfs: "/home", shell: "/bin/bash",
			want:   []string{"/home/jdoe/.bashrc", "/home/jdoe/.config/google-chrome/Default/Login Data", "/etc/machine-id", "/etc/timezone", "/home/jdoe/.claude/skills"},
			absent: []string{"/usr/bin/security", "/Users/jdoe"}},
		{persona: "macos", home: "/Users/jdoe", tmpfs: "/Users", shell: "/bin/zsh",
			want: []string{"/Users/jdoe/Library/Keychains/login.keychain-db", "/Users/jdoe/Library/Application Support/Google/Chrome/Default/Login Data",
				"/etc/machine-id", "/usr/bin/security", "/usr/bin/osascript", "/usr/local/bin/base64", "/Users/jdoe/.claude/skills"},
			absent: []string{"/home/jdoe/.bashrc", "/etc/timezone"}},
	}
	for _, tt := range tests {
		t.Run("persona="+tt.persona, func(t *testing.T) {
			spec, entries, _ := setupEntries(t, tt.persona)
			if opts, ok := spec.Tmpfs[tt.tmpfs]; !ok || !strings.HasSuffix(opts, ",exec") {
				t.Errorf("no exec tmpfs at %s: %v", tt.tmpfs, spec.Tmpfs)
			}
			if opts := spec.Tmpfs["/tmp"]; !strings.Contains(opts, "nosuid") || !strings.HasSuffix(opts, ",exec") {
				t.Errorf("/tmp mounted %q, want nosuid and exec", opts)
			}
			for _, p := range tt.want {
				if entries[p] == nil {
					t.Errorf("setup writes no %s", p)
				}
			}
			for _, p := range tt.absent {
				if entries[p] != nil {
					t.Errorf("setup writes %s", p)
				}
			}
			var passwd string
			for _, f := range spec.Files {
				if f.Path == "/etc/passwd" {
					passwd = string(f.Content)
				}
			}
			if line := "jdoe:x:1000:1000:jdoe,,,:" + tt.home + ":" + tt.shell + "\n"; !strings.Contains(passwd, line) {
				t.Errorf("passwd lacks %q", line)
			}
		})
	}
}
