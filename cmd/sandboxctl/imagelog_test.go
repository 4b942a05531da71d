package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildOutput is what EnsureImage writes on a cold build with debootstrap:
// thousands of lines.
func buildOutput(ok bool) string {
	var b strings.Builder
	b.WriteString("pulling debian:bookworm-slim\n")
	b.WriteString("base: no registry answered (lookup registry-1.docker.io: no such host), so a Debian base is made with debootstrap from the host's apt mirror\n")
	b.WriteString("bootstrapping a Debian bookworm base from http://deb.example/debian (once)\n")
	for i := range 400 {
		fmt.Fprintf(&b, "I: Retrieving pkg%d 1.0\nI: Validating pkg%d 1.0\n", i, i)
	}
	for i := range 400 {
		fmt.Fprintf(&b, "I: Extracting pkg%d...\n", i)
	}
	b.WriteString("bootstrap-base: installing the toolset in the root file system: bash git\n")
	b.WriteString("0 upgraded, 600 newly installed, 0 to remove and 0 not upgraded.\n")
	for i := range 600 {
		fmt.Fprintf(&b, "Unpacking tool%d (1.0) ...\nSetting up tool%d (1.0) ...\n", i, i)
	}
	b.WriteString("debootstrap took 43s; importing sandboxctl-base:bookworm\n")
	b.WriteString("building sandboxctl-sandbox:abc from sandboxctl-base:bookworm\n")
	b.WriteString("Step 1/9 : ARG BASE=x\n ---> abc\nStep 2/9 : FROM ${BASE}\nStep 7/9 : RUN sh setup.sh\n")
	for i := range 700 {
		fmt.Fprintf(&b, "Get:%d http://deb.example/debian bookworm/main pkg%d\n", i, i)
	}
	for i := range 700 {
		fmt.Fprintf(&b, "Unpacking pkg%d (1.0) ...\nSetting up pkg%d (1.0) ...\n", i, i)
	}
	if ok {
		b.WriteString("Successfully built abc\nSuccessfully tagged sandboxctl-sandbox:abc\n")
	} else {
		b.WriteString("E: Unable to fetch some archives\n")
	}
	return b.String()
}

func TestImageLog(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tty, ok  bool
		maxLines int
	}{
		{name: "not a terminal, built", ok: true, maxLines: 10},
		{name: "not a terminal, failed", maxLines: 10},
		{name: "terminal, built", tty: true, ok: true, maxLines: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			ui := newProgressUI(&out, tc.tty)
			path := filepath.Join(t.TempDir(), "sandboxctl", "image-build.log")
			l := newImageLog(ui, path)
			in := buildOutput(tc.ok)
			// written in odd-sized pieces, as a stream arrives
			for i := 0; i < len(in); i += 333 {
				l.Write([]byte(in[i:min(i+333, len(in))]))
			}
			l.Close()
			ui.Close()
			got := out.String()
			lines := strings.Count(got, "\n")
			if lines > tc.maxLines {
				t.Errorf("%d lines of %d shown, want at most %d:\n%s", lines, strings.Count(in, "\n"), tc.maxLines, got)
			}
			if !strings.Contains(got, "base: no registry answered") {
				t.Errorf("the base line did not stay:\n%q", got)
			}
			if !strings.Contains(got, "installing the toolset in the base") {
				t.Errorf("the toolset phase was not shown:\n%q", got[:min(len(got), 2000)])
			}
			if tc.tty && !strings.Contains(got, "package steps") {
				t.Errorf("the status line never showed the packages:\n%q", got[:min(len(got), 2000)])
			}
			log, err := os.ReadFile(path)
			if err != nil || string(log) != in {
				t.Errorf("log file holds %d bytes, want the %d written (%v)", len(log), len(in), err)
			}
			if failed := l.Failed(); (failed != "") == tc.ok || !tc.ok && failed != path {
				t.Errorf("Failed() = %q with a build that ok=%t", failed, tc.ok)
			}
		})
	}
}

// TestImageLogTimeLeft: once a tenth of the apt transaction's package steps
// are done, the status line estimates the time left from their pace.
func TestImageLogTimeLeft(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps int           // package steps seen, each a second after the last
		total int           // packages newly installed (0: no such line)
		want  string        // in the estimate, "" for none
		each  time.Duration // time per step
	}{
		{name: "too early", total: 100, steps: 10, each: time.Second},
		{name: "a quarter done", total: 100, steps: 50, each: time.Second, want: "about 2 min left"},
		{name: "nearly done", total: 100, steps: 190, each: time.Second, want: "about 10s left"},
		{name: "all done", total: 100, steps: 200, each: time.Second},
		{name: "no count", steps: 50, each: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			clock := time.Unix(0, 0)
			l := newImageLog(newProgressUI(&out, true), filepath.Join(t.TempDir(), "log"))
			l.now = func() time.Time { return clock }
			if tc.total > 0 {
				fmt.Fprintf(l, "0 upgraded, %d newly installed, 0 to remove and 0 not upgraded.\n", tc.total)
			}
			for i := range tc.steps {
				clock = clock.Add(tc.each)
				fmt.Fprintf(l, "Unpacking pkg%d (1.0) ...\n", i)
			}
			got, ok := l.left()
			if tc.want == "" && ok {
				t.Errorf("an estimate %q, want none", got)
			}
			if tc.want != "" && "about "+got+" left" != tc.want {
				t.Errorf("estimate %q (%v), want %q", got, ok, tc.want)
			}
			l.Close()
			l.ui.Close()
			if tc.want != "" && !strings.Contains(out.String(), tc.want) {
				t.Errorf("the status line does not say %q:\n%q", tc.want, out.String())
			}
		})
	}
}
