package mcptools_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sandboxctl/sandboxctl/mcptools"
)

// randomProbe is the test binary as a user's program that asks for random
// bytes (it is the command the Entropy tests run):
//
//	__getrandom N FLAGS [ro]     getrandom(2) once, into a read-only page with ro
//	__getrandom-later TRIG OUT N when TRIG exists, getrandom N bytes, result in OUT
//	__cryptorand N               crypto/rand (the vDSO's getrandom, where the kernel has it)
//	__draws N                    getrandom(2) of 16 bytes N times (the last one printed)
//
// It prints "n=COUNT HEX" (a sha256 past 64 bytes) or "errno NAME".
func randomProbe(name string, args []string) int {
	switch {
	case name == "__getrandom" && len(args) >= 2:
		n, _ := strconv.Atoi(args[0])
		flags, _ := strconv.ParseUint(args[1], 0, 64)
		fmt.Println(getrandomOnce(n, flags, len(args) > 2 && args[2] == "ro"))
	case name == "__getrandom-later" && len(args) == 3:
		n, _ := strconv.Atoi(args[2])
		for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(args[0]); err == nil {
				res := getrandomOnce(n, 0, false)
				if err := os.WriteFile(args[1]+".tmp", []byte(res), 0o644); err != nil {
					return 1
				}
				return exitOf(os.Rename(args[1]+".tmp", args[1]))
			}
		}
		return 1
	case name == "__draws" && len(args) == 1:
		n, _ := strconv.Atoi(args[0])
		var last string
		for range n {
			last = getrandomOnce(16, 0, false)
		}
		fmt.Println(last)
	case name == "__cryptorand" && len(args) == 1:
		n, _ := strconv.Atoi(args[0])
		b := make([]byte, n)
		if _, err := rand.Read(b); err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println(describe(b))
	default:
		fmt.Fprintln(os.Stderr, "usage")
		return 2
	}
	return 0
}

func exitOf(err error) int {
	if err != nil {
		return 1
	}
	return 0
}

func getrandomOnce(n int, flags uint64, readOnly bool) string {
	size := max(n, 1)
	var buf []byte
	if readOnly {
		m, err := unix.Mmap(-1, 0, max(size, 4096), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return "mmap " + err.Error()
		}
		buf = m
	} else {
		buf = make([]byte, size)
	}
	r, _, e := unix.Syscall(unix.SYS_GETRANDOM, uintptr(unsafe.Pointer(&buf[0])), uintptr(n), uintptr(flags))
	if e != 0 {
		return "errno " + unix.ErrnoName(e)
	}
	return describe(buf[:r])
}

func describe(b []byte) string {
	if len(b) > 64 {
		h := sha256.Sum256(b)
		return fmt.Sprintf("n=%d sha256:%x", len(b), h[:8])
	}
	return fmt.Sprintf("n=%d %x", len(b), b)
}

// entropyEnv is newEnv with Entropy seed (nil: none) and the random
// devices in a folder of the test's own.
func entropyEnv(t *testing.T, seed []byte) (*env, string) {
	t.Helper()
	e := newEnv(t)
	e.requireTraced(t)
	dir, err := os.MkdirTemp("", "entropy-dev-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dev := filepath.Join(dir, "urandom")
	// A stand-in for the device: the real one's content, but a file.
	if err := os.WriteFile(dev, []byte("not replaced"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mcptools.SetEntropyDevices([]string{dev, filepath.Join(dir, "random")}))
	e.cfg.Entropy = seed
	return e, dir
}

// serveUntil serves e.cfg like env.start, but stop ends the server when the
// test says (and again, harmlessly, at cleanup).
func (e *env) serveUntil(t *testing.T) (c *mcptools.Client, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- mcptools.Serve(ctx, sr, sw, e.cfg)
		sw.Close()
	}()
	c, err := mcptools.NewClient(ctx, cw, cr)
	if err != nil {
		cancel()
		t.Fatalf("NewClient: %v", err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		c.Close()
		cw.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Serve did not end after its input closed")
		}
		cancel()
	}
	t.Cleanup(func() {
		stop()
		fctx, fcancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer fcancel()
		flush(t, fctx, e.cfg.LogDir)
	})
	return c, stop
}

// TestEntropyReproducible: with one seed, two servers give the same bytes
// to the same commands (getrandom, a Go program's crypto/rand through the
// vDSO, the device); two processes with one command line get different
// bytes; another seed gives other bytes; without a seed the bytes are
// real (they differ between runs) and no filter is added.
func TestEntropyReproducible(t *testing.T) {
	run := func(t *testing.T, seed []byte, untraced bool) []string {
		e, dir := entropyEnv(t, seed)
		e.cfg.NoStrace = untraced
		c, stop := e.serveUntil(t)
		defer stop()
		// Twins run the same command lines: the probe under one name,
		// wherever this env put it.
		a := "(exec -a probe " + e.cfg.Self
		cmd := strings.Join([]string{
			a + " __getrandom 16 0)",
			a + " __getrandom 16 0)", // the same command line: the next stream
			a + " __getrandom 24 1)",
			a + " __cryptorand 16)",
			"od -An -tx1 -N16 " + dir + "/urandom | tr -d ' \\n'; echo",
			"od -An -tx1 -N16 " + dir + "/random | tr -d ' \\n'; echo",
			"grep Seccomp_filters /proc/self/status | tr -s '\\t' ' '",
		}, "; ")
		r := call(t, c, "r", "bash", map[string]any{"command": cmd})
		if r.ExitCode != 0 {
			t.Fatalf("exit %d: %s %s", r.ExitCode, r.Stdout, r.Stderr)
		}
		return strings.Split(strings.TrimSpace(r.Stdout), "\n")
	}
	seedA, seedB := []byte("twin seed A"), []byte("twin seed B")
	a1, a2, b := run(t, seedA, false), run(t, seedA, false), run(t, seedB, false)
	none1, none2 := run(t, nil, false), run(t, nil, false)
	// The unwatched pass (no tracer): the same bytes as the watched one.
	untraced := run(t, seedA, true)
	t.Logf("seed A:\n%s\nseed B:\n%s\nno seed:\n%s", strings.Join(a1, "\n"), strings.Join(b, "\n"), strings.Join(none1, "\n"))
	if len(a1) != 7 || len(b) != 7 || len(none1) != 7 || len(untraced) != 7 {
		t.Fatalf("outputs %q %q %q %q", a1, b, none1, untraced)
	}
	names := []string{"getrandom", "getrandom again", "getrandom nonblock", "crypto/rand", "/dev/urandom", "/dev/random"}
	for i, name := range names {
		if a1[i] != a2[i] {
			t.Errorf("%s: %q then %q with one seed", name, a1[i], a2[i])
		}
		if a1[i] != untraced[i] {
			t.Errorf("%s: %q traced, %q untraced with one seed", name, a1[i], untraced[i])
		}
		if a1[i] == b[i] {
			t.Errorf("%s: %q with both seeds", name, a1[i])
		}
		if i < 4 && none1[i] == none2[i] {
			t.Errorf("%s without a seed: %q twice", name, none1[i])
		}
		if strings.HasPrefix(a1[i], "errno") || strings.HasPrefix(a1[i], "error") {
			t.Errorf("%s: %s", name, a1[i])
		}
	}
	if a1[0] == a1[1] {
		t.Errorf("two processes with one command line got the same bytes %q", a1[0])
	}
	if a1[4] != a1[5] {
		t.Errorf("/dev/urandom %q and /dev/random %q differ", a1[4], a1[5])
	}
	if none1[4] != "not replaced" && !strings.HasPrefix(none1[4], "6e6f74") {
		t.Errorf("without a seed the device was replaced: %q", none1[4])
	}
	// strace's filter is there in every run; Entropy adds exactly one.
	nf := func(s string) int { n, _ := strconv.Atoi(strings.TrimPrefix(s, "Seccomp_filters: ")); return n }
	if nf(a1[6]) != nf(none1[6])+1 {
		t.Errorf("filters with a seed %q, without %q: want one more", a1[6], none1[6])
	}
	if mcptools.ActiveListeners() != 0 {
		t.Errorf("%d listeners still served after the servers stopped", mcptools.ActiveListeners())
	}
}

// TestEntropyGetrandomSemantics: what getrandom returns under the server
// (its count or its errno) is what the kernel returns for the same call.
func TestEntropyGetrandomSemantics(t *testing.T) {
	cases := []struct{ name, args string }{
		{"plain", "16 0"},
		{"nonblock", "16 1"},
		{"random", "16 2"},
		{"insecure", "16 4"},
		{"insecure and random", "16 6"},
		{"unknown flag", "16 8"},
		{"all flags (the vDSO's query)", "16 0xffffffff"},
		{"upper half of flags", "16 0x100000000"},
		{"zero length", "0 0"},
		{"read-only buffer", "16 0 ro"},
		{"a megabyte", "1048576 0"},
	}
	shapes := func(t *testing.T, seed []byte) []string {
		e, _ := entropyEnv(t, seed)
		c, stop := e.serveUntil(t)
		defer stop()
		var cmd []string
		for _, tc := range cases {
			cmd = append(cmd, e.cfg.Self+" __getrandom "+tc.args)
		}
		r := call(t, c, "s", "bash", map[string]any{"command": strings.Join(cmd, "; ")})
		lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
		if len(lines) != len(cases) {
			t.Fatalf("stdout %q stderr %q", r.Stdout, r.Stderr)
		}
		for i, l := range lines {
			lines[i], _, _ = strings.Cut(l, " ") // the count or "errno"
			if lines[i] == "errno" {
				lines[i] = l
			}
		}
		return lines
	}
	kernel, served := shapes(t, nil), shapes(t, []byte("seed"))
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if want, ok := interrupted(kernel[i], tc.args); ok {
				// The kernel stopped a long read early at a page boundary
				// because a signal was pending (the race detector's and the
				// Go scheduler's signals under load): the full count is
				// what it gives without one, and what the server gives.
				t.Logf("getrandom %s: the kernel was interrupted (%s)", tc.args, kernel[i])
				kernel[i] = want
			}
			if served[i] != kernel[i] {
				t.Errorf("getrandom %s: %q under the server, %q from the kernel", tc.args, served[i], kernel[i])
			}
		})
	}
}

// interrupted reports whether got ("n=N") is a getrandom(count, ...) the
// kernel cut short at a page boundary because a signal was pending
// (drivers/char/random.c checks for one every page), and if so the shape of
// the uninterrupted call.
func interrupted(got, args string) (string, bool) {
	f := strings.Fields(args)
	count, err := strconv.Atoi(f[0])
	if err != nil {
		return "", false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(got, "n="))
	if err != nil || !strings.HasPrefix(got, "n=") {
		return "", false
	}
	if n > 0 && n < count && n%4096 == 0 {
		return "n=" + strconv.Itoa(count), true
	}
	return "", false
}

// TestEntropyListenerEnds: a listener is served as long as a process uses
// its filter, and no longer; a process that asks after the server stopped
// gets ENOSYS at once (the kernel's answer without a listener), never a
// wait.
func TestEntropyListenerEnds(t *testing.T) {
	e, _ := entropyEnv(t, []byte("seed"))
	before := mcptools.ActiveListeners()
	c, stop := e.serveUntil(t)
	dir, err := os.MkdirTemp("", "entropy-bg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777) // the user's processes write there
	trig1, out1 := filepath.Join(dir, "t1"), filepath.Join(dir, "o1")
	trig2, out2 := filepath.Join(dir, "t2"), filepath.Join(dir, "o2")
	bg := func(trig, out string) string {
		return "(" + e.cfg.Self + " __getrandom-later " + trig + " " + out + " 8 </dev/null >/dev/null 2>&1 &); echo started"
	}
	if r := call(t, c, "bg1", "bash", map[string]any{"command": bg(trig1, out1)}); r.ExitCode != 0 {
		t.Fatalf("%+v", r)
	}
	if r := call(t, c, "bg2", "bash", map[string]any{"command": bg(trig2, out2)}); r.ExitCode != 0 {
		t.Fatalf("%+v", r)
	}
	if got := mcptools.ActiveListeners() - before; got != 2 {
		t.Errorf("%d listeners served with two calls' processes alive, want 2", got)
	}
	waitFile := func(p string) string {
		t.Helper()
		for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(20 * time.Millisecond) {
			if b, err := os.ReadFile(p); err == nil {
				return string(b)
			}
		}
		t.Fatalf("%s never came", p)
		return ""
	}
	os.WriteFile(trig1, nil, 0o644)
	if got := waitFile(out1); !strings.HasPrefix(got, "n=8 ") {
		t.Errorf("the background process got %q while the server runs", got)
	}
	// Its process gone, the first call's listener is let go.
	deadline := time.Now().Add(10 * time.Second)
	for mcptools.ActiveListeners()-before != 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := mcptools.ActiveListeners() - before; got != 1 {
		t.Errorf("%d listeners served after the first call's last process ended, want 1", got)
	}
	stop()
	if got := mcptools.ActiveListeners() - before; got != 0 {
		t.Errorf("%d listeners served after the server stopped", got)
	}
	start := time.Now()
	os.WriteFile(trig2, nil, 0o644)
	if got := waitFile(out2); got != "errno ENOSYS" {
		t.Errorf("after the server stopped, getrandom gave %q, want errno ENOSYS", got)
	}
	t.Logf("getrandom answered %s after the server stopped", time.Since(start).Round(time.Millisecond))
}

// BenchmarkEntropyHost is what the server's answers cost against the
// kernel's, on this host (root and strace): a call that starts 200
// processes (each draws once, for glibc's malloc), and one whose program
// draws ten thousand times.
func BenchmarkEntropyHost(b *testing.B) {
	for _, w := range []struct{ name, cmd string }{
		{"200 process starts", "for i in $(seq 200); do /bin/true; done"},
		{"10000 draws", "AGENTD __draws 10000"},
	} {
		for _, seed := range []struct {
			name string
			seed []byte
		}{{"none", nil}, {"seed", []byte("bench")}} {
			b.Run(w.name+"/"+seed.name, func(b *testing.B) {
				e := newEnv(b)
				if !e.traced {
					b.Skip("needs root and strace")
				}
				defer mcptools.SetEntropyDevices([]string{filepath.Join(b.TempDir(), "urandom")})()
				e.cfg.Entropy = seed.seed
				c := e.start(b)
				args, err := json.Marshal(map[string]string{"command": strings.ReplaceAll(w.cmd, "AGENTD", e.cfg.Self)})
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if r, err := c.Call(b.Context(), "", "bash", args); err != nil || r.ExitCode != 0 {
						b.Fatalf("%+v %v", r, err)
					}
				}
			})
		}
	}
}
