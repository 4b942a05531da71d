package mcptools

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want procInfo
		ok   bool
	}{
		{name: "plain", in: "4242 (sleep) S 1 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 12345 1000 100",
			want: procInfo{state: "S", ppid: 1, pgid: 4242, sid: 4242, start: 123450 * time.Millisecond}, ok: true},
		{name: "comm with parens and spaces", in: "77 (a) b (c) R 70 70 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0",
			want: procInfo{state: "R", ppid: 70, pgid: 70, sid: 7, start: time.Second}, ok: true},
		{name: "short", in: "1 (x) S 0", ok: false},
		{name: "no paren", in: "1 x S 0 0 0", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseStat([]byte(tt.in))
			if ok != tt.ok || ok && got != tt.want {
				t.Errorf("parseStat = %+v, %t; want %+v, %t", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestFreeze runs a detached process (setsid) and an attached background
// one as an unused uid, and checks that Freeze waits the grace period
// while they run, records both (the setsid one as detached) and ends them.
// It needs root, and kills only processes of a uid it checked was unused.
func TestFreeze(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run processes as another uid")
	}
	uid := 40000 + rand.IntN(20000)
	if len(userPIDs(uid, 0)) > 0 {
		t.Skipf("uid %d is in use here", uid)
	}
	start := func(setsid bool, argv ...string) *exec.Cmd {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}, Setsid: setsid}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	daemon := start(true, "sleep", "60")
	attached := start(false, "sleep", "61")
	brief := start(true, "sleep", "0.3") // ends by itself during the grace period
	t0 := time.Now()
	left, err := Freeze(t.Context(), FreezeConfig{UID: uid, Grace: 600 * time.Millisecond, Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took < 600*time.Millisecond {
		t.Errorf("Freeze returned after %v, before the grace period while processes ran", took)
	}
	byPID := map[int]bool{}
	ended := map[int]bool{}
	for _, l := range left {
		byPID[l.PID] = l.Detached
		ended[l.PID] = l.Ended
		if l.UID != uid || len(l.Argv) == 0 || l.Argv[0] != "sleep" || l.Exe == "" {
			t.Errorf("record %+v, want uid %d, argv sleep, an exe", l, uid)
		}
	}
	if d, ok := byPID[daemon.Process.Pid]; !ok || !d {
		t.Errorf("the setsid process %d: recorded %t, detached %t; records %+v", daemon.Process.Pid, ok, d, left)
	}
	if _, ok := byPID[attached.Process.Pid]; !ok || ended[attached.Process.Pid] {
		t.Errorf("the background process %d was not recorded frozen: %+v", attached.Process.Pid, left)
	}
	if d, ok := byPID[brief.Process.Pid]; !ok || !d || !ended[brief.Process.Pid] {
		t.Errorf("the process that ended during the grace period: recorded %t, detached %t, ended %t", ok, d, ended[brief.Process.Pid])
	}
	for _, c := range []*exec.Cmd{daemon, attached} {
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Errorf("process %d still running after Freeze", c.Process.Pid)
		}
	}
	// Nothing left: the grace period ends at once.
	t0 = time.Now()
	if left, _ := Freeze(t.Context(), FreezeConfig{UID: uid, Grace: 10 * time.Second}); len(left) != 0 || time.Since(t0) > 5*time.Second {
		t.Errorf("Freeze with nothing running: %+v after %v", left, time.Since(t0))
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("4242 (sleep) S 1 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 12345 1000 100"))
	f.Add([]byte("1 ()) ) S"))
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = parseStat(b) })
}
