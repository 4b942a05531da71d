package mcptools

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestSample lists this test's own uid: a child it starts is reported once,
// with its argv, its parent and no tracer.
func TestSample(t *testing.T) {
	cmd := exec.Command("sleep", "7.123")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep here: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ctx, cancel := context.WithTimeout(t.Context(), 400*time.Millisecond)
	defer cancel()
	var mu sync.Mutex
	var got []Sampled
	err := Sample(ctx, SampleConfig{UID: os.Getuid(), Every: 20 * time.Millisecond}, func(s Sampled) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range got {
		if s.PID == cmd.Process.Pid {
			n++
			if !slices.Equal(s.Argv, []string{"sleep", "7.123"}) || s.PPID != os.Getpid() || s.TracerPID != 0 {
				t.Errorf("sampled %+v, want sleep 7.123 under %d, untraced", s, os.Getpid())
			}
		}
		if s.PID == os.Getpid() {
			t.Errorf("the sampler listed itself")
		}
	}
	if n != 1 {
		t.Errorf("child reported %d times, want once", n)
	}
}

func TestCommandEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{name: "tracer clock dropped", in: []string{"HOME=/home/u", tracerClock, "PATH=/bin"}, want: []string{"HOME=/home/u", "PATH=/bin"}},
		{name: "any FAKETIME dropped", in: []string{"FAKETIME=-1d"}, want: []string{}},
		{name: "the tracer's libfaketime semaphore dropped", in: []string{"FAKETIME_SHARED=/faketime_sem_9 /faketime_shm_9", "FAKETIME_DONT_FAKE_MONOTONIC=1"},
			want: []string{"FAKETIME_DONT_FAKE_MONOTONIC=1"}},
		{name: "lookalikes kept", in: []string{"FAKETIME_X=1", "MY_FAKETIME=2"}, want: []string{"FAKETIME_X=1", "MY_FAKETIME=2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := commandEnv(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("commandEnv(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
